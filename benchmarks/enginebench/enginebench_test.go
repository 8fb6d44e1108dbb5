package enginebench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
)

const (
	sampleCorpus  = "../../testdata/sample/emails.ndjson"
	sampleMapping = "../../testdata/sample/emails.mapping.json"
)

func TestLoadDocs(t *testing.T) {
	all, err := LoadDocs(sampleCorpus, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 300)

	tests := []struct {
		name   string
		n      int
		wantN  int
		lastID string
	}{
		{"a prefix", 5, 5, all[4].ID},
		{"the whole file", 0, len(all), all[len(all)-1].ID},
		{"repeated with new ids", len(all) + 2, len(all) + 2, all[1].ID + "-r1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := LoadDocs(sampleCorpus, tt.n)
			require.NoError(t, err)
			require.Len(t, docs, tt.wantN)
			last := docs[len(docs)-1]
			require.Equal(t, tt.lastID, last.ID)
			var src struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(last.Source, &src))
			require.Equal(t, last.ID, src.ID, "the source's id field follows the document id")
		})
	}
}

func TestLoadDocsRejectsBadCorpus(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"not json", "{\"id\":\"a\"}\nnope\n", "line 2"},
		{"no id", "{\"x\":1}\n", "line 1"},
		{"empty", "\n\n", "no documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			require.NoError(t, os.WriteFile(p, []byte(tt.content), 0o644))
			_, err := LoadDocs(p, 0)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := LoadDocs(filepath.Join(dir, "missing"), 0)
	require.ErrorContains(t, err, "sample-data.sh")
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Microsecond)
	}
	got := Summarize(ds)
	require.Equal(t, Latency{N: 100, P50: 50, P99: 99, Mean: 50.5}, got)
	require.Equal(t, Latency{N: 1, P50: 7, P99: 7, Mean: 7}, Summarize([]time.Duration{7 * time.Microsecond}))
	require.Equal(t, Latency{}, Summarize(nil))
}

func TestMakeQueriesIsDeterministic(t *testing.T) {
	docs, err := LoadDocs(sampleCorpus, 150)
	require.NoError(t, err)
	a, err := MakeQueries(docs, 20, 7)
	require.NoError(t, err)
	b, err := MakeQueries(docs, 20, 7)
	require.NoError(t, err)
	require.Equal(t, a, b)
	for _, kind := range []QueryKind{KindTerm, KindBoolean, KindPhrase} {
		require.Len(t, a[kind], 20)
	}
	_, err = MakeQueries(docs[:1], 5, 1)
	require.ErrorContains(t, err, "too small")
}

// TestRawSideAnswersTheQueries indexes the sample into raw bleve with the
// index package's mapping and checks that every derived term and phrase
// query finds documents: the queries are built from the corpus, so a query
// that finds nothing would mean the two disagree about tokens.
func TestRawSideAnswersTheQueries(t *testing.T) {
	docs, err := LoadDocs(sampleCorpus, 150)
	require.NoError(t, err)
	raw, err := os.ReadFile(sampleMapping)
	require.NoError(t, err)
	m, err := index.ParseMapping(raw)
	require.NoError(t, err)
	ri, err := openRaw(filepath.Join(t.TempDir(), "raw"), m.BleveMapping(), true)
	require.NoError(t, err)
	defer ri.Close()
	_, err = ri.load(context.Background(), docs, 100)
	require.NoError(t, err)
	n, err := ri.idx.DocCount()
	require.NoError(t, err)
	require.Equal(t, uint64(len(docs)), n)

	qs, err := MakeQueries(docs, 20, 1)
	require.NoError(t, err)
	for _, kind := range []QueryKind{KindTerm, KindPhrase} {
		for _, q := range qs[kind] {
			a, err := ri.search(context.Background(), q, 10)
			require.NoError(t, err)
			require.NotZero(t, a.Total, "%s query %q found nothing", kind, q.Terms)
			require.Len(t, a.IDs, min(int(a.Total), 10))
		}
	}
	for _, q := range qs[KindBoolean] {
		a, err := ri.search(context.Background(), q, 10)
		require.NoError(t, err)
		must, err := ri.search(context.Background(), Query{Kind: KindTerm, Terms: q.Terms[:1]}, 10)
		require.NoError(t, err)
		require.LessOrEqual(t, a.Total, must.Total, "must_not can only remove hits from the must clause")
	}
}

func TestSameSetAndScores(t *testing.T) {
	require.True(t, sameSet([]string{"a", "b"}, []string{"b", "a"}))
	require.False(t, sameSet([]string{"a", "b"}, []string{"a", "c"}))
	require.False(t, sameSet([]string{"a"}, []string{"a", "a"}))
	require.True(t, sameScores([]float64{1, 2}, []float64{1 + 1e-9, 2}))
	require.False(t, sameScores([]float64{1, 2}, []float64{1.01, 2}))
	require.False(t, sameScores([]float64{1}, nil))
}

func TestESBodyMatchesTheRawQueryShape(t *testing.T) {
	tests := []struct {
		q    Query
		want string
	}{
		{Query{Kind: KindTerm, Terms: []string{"linux"}}, `{"query":{"term":{"body":"linux"}},"size":10}`},
		{Query{Kind: KindBoolean, Terms: []string{"a", "b", "c"}}, `{"query":{"bool":{"must":[{"term":{"body":"a"}}],"must_not":[{"term":{"body":"c"}}],"should":[{"term":{"subject":"b"}}]}},"size":10}`},
		{Query{Kind: KindPhrase, Terms: []string{"red hat"}}, `{"query":{"match_phrase":{"body":"red hat"}},"size":10}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.q.Kind), func(t *testing.T) {
			require.JSONEq(t, tt.want, string(esBody(tt.q, 10)))
		})
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	r := &Result{
		Docs: 400, CorpusBytes: 510000, BatchSize: 1000, Concurrency: 2, Size: 10, Machine: Machine{GoVersion: "go1.26.8", NumCPU: 2, GOMAXPROCS: 2},
		Bulk:     BulkResult{RawDocsPerSec: 1000, RawUnsafeDocsPerSec: 1250, HTTPDocsPerSec: 900, Ratio: 0.9, RatioUnsafe: 0.72, TargetMet: true},
		EmptyRTT: Latency{N: 30, P50: 100, P99: 200, Mean: 110},
		Queries: []QueryResult{{Kind: KindTerm, Raw: Latency{N: 10, P50: 50}, HTTP: Latency{N: 10, P50: 400}, Empty: Latency{N: 10, P50: 100},
			BudgetUS: 165, Distinct: 8, SameTotals: 8, SameTopIDs: 5, SameScores: 0, FirstMismatch: "x", ClientGCs: 3, RawGCs: 12}},
	}
	var b strings.Builder
	require.NoError(t, WriteTable(&b, r))
	out := b.String()
	for _, want := range []string{
		"400 docs (0.5 MB)",
		"raw bleve, default batches    1000        0.90×",
		"target HTTP ≥ 0.80× raw bleve (default batches): met",
		"term  10       50        0       400         0        100         165  MISSED          8/8           5/8          0/8           3       12\n",
		"first term mismatch: x",
	} {
		require.Contains(t, out, want)
	}
	p := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, WriteJSONFile(p, r))
	var back Result
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, *r, back)
}

// TestRawSideScoresLikeTheNode loads the same documents into raw bleve and
// into the node's index package and checks that every derived term query
// scores its top hits the same on both sides: the raw side searches with
// the node's BM25 statistics (tokens per field), not bleve's own.
func TestRawSideScoresLikeTheNode(t *testing.T) {
	docs, err := LoadDocs(sampleCorpus, 150)
	require.NoError(t, err)
	raw, err := os.ReadFile(sampleMapping)
	require.NoError(t, err)
	m, err := index.ParseMapping(raw)
	require.NoError(t, err)
	ctx := context.Background()
	ri, err := openRaw(filepath.Join(t.TempDir(), "raw"), m.BleveMapping(), true)
	require.NoError(t, err)
	defer ri.Close()
	_, err = ri.load(ctx, docs, 100)
	require.NoError(t, err)
	require.NoError(t, ri.persist(ctx, m.BleveMapping(), docs))

	node, err := index.Create(filepath.Join(t.TempDir(), "node"), m)
	require.NoError(t, err)
	defer node.Close()
	ops := make([]index.Op, len(docs))
	for i, d := range docs {
		ops[i] = index.Op{ID: d.ID, Source: d.Source, SeqNo: uint64(i + 1), Version: 1, PrimaryTerm: 1}
	}
	require.NoError(t, node.Apply(ctx, ops))

	qs, err := MakeQueries(docs, 20, 1)
	require.NoError(t, err)
	for _, q := range qs[KindTerm] {
		a, err := ri.search(ctx, q, 10)
		require.NoError(t, err)
		res, err := node.Search(ctx, bleve.NewSearchRequestOptions(rawQuery(q), 10, 0, false))
		require.NoError(t, err)
		var scores []float64
		for _, h := range res.Hits {
			scores = append(scores, h.Score)
		}
		require.True(t, sameScores(a.Scores, scores), "term %q: raw %v, node %v", q.Terms, a.Scores, scores)
	}
}
