package index

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
)

// sampleIndex indexes the checked-in sample emails with their mapping.
func sampleIndex(tb testing.TB) (*Index, []string) {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(tb, err)
	m, err := ParseMapping(raw)
	require.NoError(tb, err)
	idx, err := Create(tb.TempDir(), m)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = idx.Close() })
	f, err := os.Open("../testdata/sample/emails.ndjson")
	require.NoError(tb, err)
	defer f.Close()
	var ops []Op
	var bodies []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d struct {
			ID   string `json:"id"`
			Body string `json:"body"`
		}
		require.NoError(tb, json.Unmarshal(sc.Bytes(), &d))
		ops = append(ops, Op{ID: d.ID, Source: append([]byte(nil), sc.Bytes()...), SeqNo: uint64(len(ops) + 1), Version: 1, PrimaryTerm: 1})
		bodies = append(bodies, d.Body)
	}
	require.NoError(tb, sc.Err())
	require.NoError(tb, idx.Apply(context.Background(), ops))
	return idx, bodies
}

// samplePhrases returns word pairs and triples from the bodies (some
// frequent, some rare), and phrases that take the fallback or match nothing.
func samplePhrases(bodies []string) []string {
	word := regexp.MustCompile(`[a-z]+`)
	var out []string
	for i, b := range bodies {
		if i%7 != 0 {
			continue
		}
		ws := word.FindAllString(strings.ToLower(b), 60)
		for k := 0; k+2 < len(ws); k += 9 {
			out = append(out, ws[k]+" "+ws[k+1], ws[k]+" "+ws[k+1]+" "+ws[k+2])
		}
	}
	return append(out,
		"mailing list", "of the", "in the", "the the", "to to to", "list mailing",
		"linux", "", "no such words here", "spam, spam", "http www", "Mailing   LIST")
}

// TestMatchPhraseAnswersAsBleve compares MatchPhrase with bleve's
// MatchPhraseQuery on real documents: the same total, hits, scores and hit
// locations, alone and inside compound queries (which advance it).
func TestMatchPhraseAnswersAsBleve(t *testing.T) {
	idx, bodies := sampleIndex(t)
	phrases := samplePhrases(bodies)
	require.Greater(t, len(phrases), 100)
	matched := 0
	shapes := map[string]func(p query.Query) query.Query{
		"alone": func(p query.Query) query.Query { return p },
		"must with a term": func(p query.Query) query.Query {
			tq := query.NewTermQuery("the")
			tq.SetField("body")
			return query.NewConjunctionQuery([]query.Query{tq, p})
		},
		"should with a term": func(p query.Query) query.Query {
			tq := query.NewTermQuery("linux")
			tq.SetField("body")
			return query.NewDisjunctionQuery([]query.Query{p, tq})
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, text := range phrases {
				mk := func(fast bool) query.Query {
					q := query.NewMatchPhraseQuery(text)
					q.SetField("body")
					q.SetBoost(1.5)
					if fast {
						return shape(NewMatchPhrase(q))
					}
					return shape(q)
				}
				want, err := idx.Search(context.Background(), bleve.NewSearchRequestOptions(mk(false), 20, 0, false))
				require.NoError(t, err, text)
				got, err := idx.Search(context.Background(), bleve.NewSearchRequestOptions(mk(true), 20, 0, false))
				require.NoError(t, err, text)
				require.Equal(t, want.Total, got.Total, "%q", text)
				require.Equal(t, want.MaxScore, got.MaxScore, "%q", text)
				require.Len(t, got.Hits, len(want.Hits), "%q", text)
				for i := range want.Hits {
					require.Equal(t, want.Hits[i].ID, got.Hits[i].ID, "%q hit %d", text, i)
					require.Equal(t, want.Hits[i].Score, got.Hits[i].Score, "%q hit %d", text, i)
					require.Equal(t, want.Hits[i].Locations, got.Hits[i].Locations, "%q hit %d", text, i)
				}
				if want.Total > 0 {
					matched++
				}
			}
		})
	}
	require.Greater(t, matched, 100, "too few phrases matched for the comparison to mean much")
}

// TestMatchPhraseFallsBackForLocations checks that a search asking for
// locations (as highlighting does) gets bleve's searcher and answer.
func TestMatchPhraseFallsBackForLocations(t *testing.T) {
	idx, _ := sampleIndex(t)
	q := query.NewMatchPhraseQuery("mailing list")
	q.SetField("body")
	req := bleve.NewSearchRequestOptions(NewMatchPhrase(q), 5, 0, false)
	req.IncludeLocations = true
	got, err := idx.Search(context.Background(), req)
	require.NoError(t, err)
	req.Query = q
	want, err := idx.Search(context.Background(), req)
	require.NoError(t, err)
	require.NotZero(t, want.Total)
	require.Equal(t, want.Total, got.Total)
	for i := range want.Hits {
		require.Equal(t, want.Hits[i].ID, got.Hits[i].ID)
		require.Equal(t, want.Hits[i].Locations, got.Hits[i].Locations)
	}
}

// TestMatchPhraseMarshalsAsBleve: remote shards and scroll ids see the
// same JSON as for bleve's query.
func TestMatchPhraseMarshalsAsBleve(t *testing.T) {
	q := query.NewMatchPhraseQuery("mailing list")
	q.SetField("body")
	q.Analyzer = "standard"
	want, err := json.Marshal(q)
	require.NoError(t, err)
	got, err := json.Marshal(NewMatchPhrase(q))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

func BenchmarkMatchPhrase(b *testing.B) {
	idx, _ := sampleIndex(b)
	for _, fast := range []bool{false, true} {
		name := "bleve"
		if fast {
			name = "weft"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				q := query.NewMatchPhraseQuery("mailing list")
				q.SetField("body")
				var qq query.Query = q
				if fast {
					qq = NewMatchPhrase(q)
				}
				req := bleve.NewSearchRequestOptions(qq, 10, 0, false)
				req.Fields = []string{SourceField}
				if _, err := idx.Search(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMatchPhraseTakesTheShortcut checks which searcher each case gets.
func TestMatchPhraseTakesTheShortcut(t *testing.T) {
	idx, _ := sampleIndex(t)
	r, err := idx.bl.Advanced()
	require.NoError(t, err)
	rd, err := r.Reader()
	require.NoError(t, err)
	defer rd.Close()
	for text, fast := range map[string]bool{
		"mailing list": true, "to the list": true, "linux": false, "the the": false, "": false,
	} {
		q := query.NewMatchPhraseQuery(text)
		q.SetField("body")
		s, err := NewMatchPhrase(q).Searcher(context.Background(), rd, idx.im, search.SearcherOptions{})
		require.NoError(t, err, text)
		_, isFast := s.(*phraseSearcher)
		require.Equal(t, fast, isFast, "%q got %T", text, s)
		require.NoError(t, s.Close())
	}
}
