package coord_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

func TestMurmur3KnownValues(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
	}{
		{"", 0},
		{"a", 0x3c2569b2},
		{"abc", 0xb3dd93fa},
		{"hello", 0x248bfa47},
		{"The quick brown fox jumps over the lazy dog", 0x2e4ff723},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, coord.Murmur3(tc.in))
		})
	}
	// Routing never changes: these placements are on disk in existing indexes.
	require.Equal(t, int(0x248bfa47%5), coord.ShardFor("hello", "", 5))
	require.Equal(t, coord.ShardFor("hello", "", 5), coord.ShardFor("other-id", "hello", 5), "routing overrides the id")
	require.Len(t, coord.NewID(), 20)
}

func TestValidateIndexName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"logs-2024.01", true}, {"a", true}, {"Upper", false}, {"", false}, {"_hidden", false}, {"-x", false},
		{"+x", false}, {"a b", false}, {"a,b", false}, {"a*", false}, {"a/b", false}, {"a#b", false}, {"..", false},
		{"a:b", false}, {"a\x00b", false}, {"a\x1fb", false}, {"a\tb", false}, {"a\x7fb", false}, {"a\u0085b", false},
		{"a\xffb", false}, {"a\xc3", false}, {"caf\u00e9", true}, {"\u65e5\u672c", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := coord.ValidateIndexName(tc.name)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, vocab.ErrInvalidIndexName)
			}
		})
	}
}

func TestValidateIndexNameReasons(t *testing.T) {
	tests := []struct{ name, reason string }{
		{"Upper", "Invalid index name [Upper], must be lowercase"},
		{"a\x00b", "Invalid index name [a\x00b], must not contain control characters: U+0000 at offset 1"},
		{"ab\x7f", "Invalid index name [ab\x7f], must not contain control characters: U+007F at offset 2"},
		{"a\xffb", "Invalid index name [a\ufffdb], must be valid UTF-8: invalid byte 0xff at offset 1"},
		{"a#b", "Invalid index name [a#b], must not contain '#'"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			err := coord.ValidateIndexName(tc.name)
			require.ErrorIs(t, err, vocab.ErrInvalidIndexName)
			require.Equal(t, "invalid index name: "+tc.reason, err.Error())
		})
	}
}

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"1", true}, {"a b/c?d", true}, {"..", true}, {"caf\u00e9", true},
		{"a\x00b", false}, {"\n", false}, {"a\x7f", false}, {"a\u009fb", false}, {"a\xff", false}, {"\xed\xa0\x80", false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			err := coord.ValidateID(tc.id)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, vocab.ErrInvalidRequest)
			}
		})
	}
}

func TestIndexLifecycle(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "logs-a", coord.IndexSettings{NumberOfShards: 3}, nil))
	require.NoError(t, m.CreateIndex(ctx, "logs-b", coord.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 0}, nil))
	require.NoError(t, m.CreateIndex(ctx, "other", coord.IndexSettings{}, nil))
	require.ErrorIs(t, m.CreateIndex(ctx, "other", coord.IndexSettings{}, nil), state.ErrIndexExists)
	require.ErrorIs(t, m.CreateIndex(ctx, "Bad", coord.IndexSettings{}, nil), vocab.ErrInvalidIndexName)

	inf, err := m.Index("logs-a")
	require.NoError(t, err)
	require.Equal(t, 3, inf.Settings.NumberOfShards)
	require.Equal(t, 0, inf.Settings.NumberOfReplicas)
	require.Equal(t, "green", inf.Health)
	inf, err = m.Index("other")
	require.NoError(t, err)
	require.Equal(t, coord.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 0}, inf.Settings)

	resolve := []struct {
		expr string
		want []string
		err  error
	}{
		{"", []string{"logs-a", "logs-b", "other"}, nil},
		{"_all", []string{"logs-a", "logs-b", "other"}, nil},
		{"logs-*", []string{"logs-a", "logs-b"}, nil},
		{"other,logs-b,other", []string{"logs-b", "other"}, nil},
		{"nomatch-*", []string{}, nil},
		{"missing", nil, state.ErrIndexNotFound},
	}
	for _, tc := range resolve {
		got, err := m.ResolveIndices(tc.expr)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.expr)
			continue
		}
		require.NoError(t, err, tc.expr)
		require.Equal(t, tc.want, got, tc.expr)
	}

	two := 2
	require.NoError(t, m.UpdateSettings(ctx, "other", coord.SettingsUpdate{NumberOfReplicas: &two}))
	inf, err = m.Index("other")
	require.NoError(t, err)
	require.Equal(t, "yellow", inf.Health)

	require.NoError(t, m.DeleteIndex(ctx, "logs-b"))
	require.ErrorIs(t, m.DeleteIndex(ctx, "logs-b"), state.ErrIndexNotFound)
	names := []string{}
	for _, i := range m.Indices() {
		names = append(names, i.Name)
	}
	require.Equal(t, []string{"logs-a", "other"}, names)
}

func TestBulkItemSemantics(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	mp, err := index.ParseMapping([]byte(`{"properties":{"n":{"type":"long"},"o":{"properties":{"a":{"type":"keyword"},"b":{"type":"keyword"}}}}}`))
	require.NoError(t, err)
	require.NoError(t, m.CreateIndex(ctx, "i", coord.IndexSettings{NumberOfShards: 2}, mp))
	type want struct {
		result  string
		version int64
		err     error
	}
	steps := []struct {
		name string
		op   vocab.Op
		want want
	}{
		{"index new", vocab.Op{Type: vocab.OpIndex, ID: "1", Source: json.RawMessage(`{"n":1,"o":{"a":"x"}}`)}, want{"created", 1, nil}},
		{"index again", vocab.Op{Type: vocab.OpIndex, ID: "1", Source: json.RawMessage(`{"n":2,"o":{"a":"x"}}`)}, want{"updated", 2, nil}},
		{"create existing", vocab.Op{Type: vocab.OpCreate, ID: "1", Source: json.RawMessage(`{"n":3}`)}, want{"", 0, vocab.ErrVersionConflict}},
		{"create new", vocab.Op{Type: vocab.OpCreate, ID: "2", Source: json.RawMessage(`{"n":3}`)}, want{"created", 1, nil}},
		{"partial update merges objects", vocab.Op{Type: vocab.OpUpdate, ID: "1", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"o":{"b":"y"}}`)}}, want{"updated", 3, nil}},
		{"update with same values is noop", vocab.Op{Type: vocab.OpUpdate, ID: "1", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":2}`)}}, want{"noop", 3, nil}},
		{"update missing", vocab.Op{Type: vocab.OpUpdate, ID: "9", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":1}`)}}, want{"", 0, vocab.ErrDocumentNotFound}},
		{"doc_as_upsert", vocab.Op{Type: vocab.OpUpdate, ID: "9", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":9}`), DocAsUpsert: true}}, want{"created", 1, nil}},
		{"upsert", vocab.Op{Type: vocab.OpUpdate, ID: "8", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":1}`), Upsert: json.RawMessage(`{"n":8}`)}}, want{"created", 1, nil}},
		{"wrong type fails the item", vocab.Op{Type: vocab.OpIndex, ID: "3", Source: json.RawMessage(`{"n":"abc"}`)}, want{"", 0, index.ErrDocParse}},
		{"malformed source fails the item", vocab.Op{Type: vocab.OpIndex, ID: "3", Source: json.RawMessage(`{"n":`)}, want{"", 0, index.ErrDocParse}},
		{"delete", vocab.Op{Type: vocab.OpDelete, ID: "2"}, want{"deleted", 2, nil}},
		{"delete missing", vocab.Op{Type: vocab.OpDelete, ID: "2"}, want{"not_found", 0, vocab.ErrDocumentNotFound}},
		{"update needs an id", vocab.Op{Type: vocab.OpUpdate, Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{}`)}}, want{"", 0, vocab.ErrInvalidRequest}},
	}
	for _, st := range steps {
		st.op.Index = "i"
		res, err := m.Bulk(ctx, []vocab.Op{st.op}, coord.WriteOptions{Refresh: coord.RefreshFalse})
		require.NoError(t, err, st.name)
		r := res[0]
		require.Equal(t, st.want.result, r.Result, st.name)
		if st.want.err != nil {
			require.ErrorIs(t, r.Err, st.want.err, st.name)
		} else {
			require.NoError(t, r.Err, st.name)
			require.Equal(t, st.want.version, r.Version, st.name)
		}
	}
	d, err := m.Get(ctx, "i", "1", "")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":2,"o":{"a":"x","b":"y"}}`, string(d.Source))
	require.Equal(t, int64(3), d.Version)

	// Optimistic concurrency control (if_seq_no / if_primary_term).
	stale, term := d.SeqNo-1, d.PrimaryTerm
	res, err := m.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "i", ID: "1", Source: json.RawMessage(`{"n":5}`), IfSeqNo: &stale, IfPrimaryTerm: &term}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, vocab.ErrVersionConflict)
	cur := d.SeqNo
	res, err = m.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "i", ID: "1", Source: json.RawMessage(`{"n":2,"o":{"a":"x","b":"y"}}`), IfSeqNo: &cur, IfPrimaryTerm: &term}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.Equal(t, int64(4), res[0].Version)
	res, err = m.Bulk(ctx, []vocab.Op{{Type: vocab.OpDelete, Index: "i", ID: "nope", IfSeqNo: &cur}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, vocab.ErrVersionConflict, "a condition on a missing document is a conflict")
	_, err = m.Get(ctx, "i", "2", "")
	require.ErrorIs(t, err, vocab.ErrDocumentNotFound)
	_, err = m.Get(ctx, "nope", "2", "")
	require.ErrorIs(t, err, state.ErrIndexNotFound)

	// One request mixing good and bad items; results stay in op order.
	res, err = m.Bulk(ctx, []vocab.Op{
		{Type: vocab.OpIndex, Index: "i", ID: "a", Source: json.RawMessage(`{"n":1}`)},
		{Type: vocab.OpIndex, Index: "i", ID: "b", Source: json.RawMessage(`[1]`)},
		{Type: vocab.OpIndex, Index: "i", ID: "a", Source: json.RawMessage(`{"n":2}`)},
		{Type: vocab.OpUpdate, Index: "i", ID: "a", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":3}`)}},
	}, coord.WriteOptions{Refresh: coord.RefreshTrue})
	require.NoError(t, err)
	require.Equal(t, []string{"created", "", "updated", "updated"}, []string{res[0].Result, res[1].Result, res[2].Result, res[3].Result})
	require.Equal(t, []int64{1, 0, 2, 3}, []int64{res[0].Version, res[1].Version, res[2].Version, res[3].Version})
	require.Less(t, res[0].SeqNo, res[2].SeqNo)
	d, err = m.Get(ctx, "i", "a", "")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":3}`, string(d.Source))
}

func TestBulkAutoCreateAndGeneratedIDs(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	res, err := m.Bulk(ctx, []vocab.Op{
		{Type: vocab.OpIndex, Index: "auto", Source: json.RawMessage(`{"msg":"hello world","when":"2024-01-02T03:04:05Z","n":1}`)},
		{Type: vocab.OpDelete, Index: "absent", ID: "x"},
		{Type: vocab.OpIndex, Index: "BAD", ID: "x", Source: json.RawMessage(`{}`)},
	}, coord.WriteOptions{Refresh: coord.RefreshWaitFor})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.Equal(t, "created", res[0].Result)
	require.Len(t, res[0].ID, 20)
	require.ErrorIs(t, res[1].Err, state.ErrIndexNotFound)
	require.ErrorIs(t, res[2].Err, vocab.ErrInvalidIndexName)

	inf, err := m.Index("auto")
	require.NoError(t, err)
	require.Equal(t, coord.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, inf.Settings)
	f := m.Fields([]string{"auto"})
	require.Equal(t, "text", f.FieldType("msg"))
	require.Equal(t, "keyword", f.FieldType("msg.keyword"))
	require.Equal(t, "date", f.FieldType("when"))
	require.Equal(t, "long", f.FieldType("n"))
	terms, err := f.AnalyzeField("msg", "", "Hello World")
	require.NoError(t, err)
	require.Equal(t, []string{"hello", "world"}, terms)
	terms, err = f.AnalyzeField("msg.keyword", "", "Hello World")
	require.NoError(t, err)
	require.Equal(t, []string{"Hello World"}, terms)
	bn, ok := f.BleveAnalyzer("standard")
	require.True(t, ok)
	mq := bleve.NewMatchQuery("HELLO")
	mq.SetField("msg")
	mq.Analyzer = bn
	sr0, err := m.SearchBleve(ctx, []string{"auto"}, bleve.NewSearchRequest(mq))
	require.NoError(t, err)
	require.Equal(t, uint64(1), sr0.Total, "a query-chosen analyzer resolves in the index mapping")
	require.Equal(t, "", f.DateFormat("when"))
	require.Contains(t, f.Paths(), "msg.keyword")

	d, err := m.Get(ctx, "auto", res[0].ID, "")
	require.NoError(t, err)
	require.Equal(t, uint64(1), d.PrimaryTerm)
	srch, err := esdsl.ParseSearch([]byte(`{"query":{"match":{"msg":"hello"}}}`), nil, m.Fields([]string{"auto"}))
	require.NoError(t, err)
	sr, err := m.Search(ctx, []string{"auto"}, srch)
	require.NoError(t, err)
	require.Equal(t, uint64(1), sr.Total, "searchable when Bulk returns")
	st := m.Stats().Indices["auto"]
	require.Equal(t, uint64(1), st.Docs)
	require.Equal(t, uint64(1), st.IndexTotal)
	require.Equal(t, uint64(1), st.SearchTotal)
}

func TestReopenKeepsIndexesMappingsAndDocs(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := coordtest.OpenManager(t, dir)
	require.NoError(t, m.CreateIndex(ctx, "i", coord.IndexSettings{NumberOfShards: 3, NumberOfReplicas: 0}, nil))
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, m, "i", ids[:100], sources[:100])
	res, err := m.Bulk(ctx, []vocab.Op{{Type: vocab.OpDelete, Index: "i", ID: ids[0]}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	put, err := index.ParseMapping([]byte(`{"properties":{"extra":{"type":"keyword"}}}`))
	require.NoError(t, err)
	require.NoError(t, m.PutMapping(ctx, "i", put))
	require.ErrorIs(t, m.PutMapping(ctx, "i", mustMapping(t, `{"properties":{"extra":{"type":"long"}}}`)), index.ErrMappingConflict)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")
	_, err = m.Bulk(ctx, nil, coord.WriteOptions{})
	require.ErrorIs(t, err, vocab.ErrClosed)

	m = coordtest.OpenManager(t, dir)
	defer m.Close()
	inf, err := m.Index("i")
	require.NoError(t, err)
	require.Equal(t, uint64(99), inf.DocsCount)
	require.Equal(t, 3, inf.Settings.NumberOfShards)
	require.Equal(t, "keyword", inf.Mapping.FieldType("extra"))
	require.Equal(t, "text", inf.Mapping.FieldType("subject"), "dynamic fields persist")
	_, err = m.Get(ctx, "i", ids[0], "")
	require.ErrorIs(t, err, vocab.ErrDocumentNotFound)
	d, err := m.Get(ctx, "i", ids[1], "")
	require.NoError(t, err)
	require.JSONEq(t, string(sources[1]), string(d.Source))
	// Sequence numbers continue after a restart.
	res, err = m.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "i", ID: ids[1], Source: sources[1]}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.Greater(t, res[0].SeqNo, d.SeqNo)
	require.Equal(t, int64(2), res[0].Version)
}

func mustMapping(t *testing.T, raw string) *index.Mapping {
	t.Helper()
	mp, err := index.ParseMapping([]byte(raw))
	require.NoError(t, err)
	return mp
}

// failingSearcher is a shard that cannot answer.
type failingSearcher struct{ name string }

func (f failingSearcher) Name() string { return f.name }
func (f failingSearcher) TermStats(context.Context, query.Query) (coord.ShardStats, error) {
	return coord.ShardStats{}, errors.New("shard unreachable")
}
func (f failingSearcher) Search(context.Context, *bleve.SearchRequest) (*bleve.SearchResult, error) {
	return nil, errors.New("shard unreachable")
}

// tiedSearcher is a shard whose one hit ties with every other such
// shard's: the same score and the same hit number within its shard. It
// answers after delay.
type tiedSearcher struct {
	name, id string
	delay    time.Duration
}

func (f tiedSearcher) Name() string { return f.name }
func (f tiedSearcher) TermStats(context.Context, query.Query) (coord.ShardStats, error) {
	return coord.ShardStats{Stats: &index.TermStats{DocCount: 1}}, nil
}
func (f tiedSearcher) Search(ctx context.Context, _ *bleve.SearchRequest) (*bleve.SearchResult, error) {
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &bleve.SearchResult{Total: 1, MaxScore: 1, Status: &bleve.SearchStatus{Total: 1, Successful: 1},
		Hits: search.DocumentMatchCollection{{Index: f.name, ID: f.id, Score: 1, HitNumber: 1}}}, nil
}

// TestTiedHitsOfShardsSortByShard: hits of different shards that tie in
// score and in their place within their shards come in the order of their
// shards' names, whichever shard answers first, so every node that
// coordinates the search pages them alike.
func TestTiedHitsOfShardsSortByShard(t *testing.T) {
	for _, slow := range []int{0, 1, 2} {
		t.Run(fmt.Sprint("slow shard ", slow), func(t *testing.T) {
			ss := make([]coord.ShardSearcher, 3)
			for k := range ss {
				f := tiedSearcher{name: fmt.Sprint("i/", k), id: fmt.Sprint("d", k)}
				if k == slow {
					f.delay = 50 * time.Millisecond
				}
				ss[k] = f
			}
			// The searchers are given in another order than their names'.
			ss[0], ss[2] = ss[2], ss[0]
			res, err := coord.SearchShards(context.Background(), ss, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
			require.NoError(t, err)
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			require.Equal(t, []string{"d0", "d1", "d2"}, got)
		})
	}
}

func TestSearchWithFailingShardGivesPartialResults(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "i", coord.IndexSettings{NumberOfShards: 2}, nil))
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, m, "i", ids[:50], sources[:50])
	ss, err := m.Searchers([]string{"i"})
	require.NoError(t, err)
	ss = append(ss, failingSearcher{"i/9"})
	res, err := coord.SearchShards(ctx, ss, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	require.NoError(t, err)
	require.Equal(t, uint64(50), res.Total)
	require.Equal(t, 3, res.Status.Total)
	require.Equal(t, 1, res.Status.Failed)
	require.Equal(t, 2, res.Status.Successful)
	require.Contains(t, res.Status.Errors, "i/9")

	_, err = coord.SearchShards(ctx, []coord.ShardSearcher{failingSearcher{"a"}, failingSearcher{"b"}}, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	require.ErrorIs(t, err, coord.ErrAllShardsFailed)
	require.ErrorContains(t, err, "shard unreachable")

	// A malformed query fails on every shard: an error, not partial results.
	bad := bleve.NewQueryStringQuery("body:\"unclosed")
	_, err = m.SearchBleve(ctx, []string{"i"}, bleve.NewSearchRequest(bad))
	require.ErrorIs(t, err, coord.ErrAllShardsFailed)
	require.NoError(t, m.CreateIndex(ctx, "one", coord.IndexSettings{}, nil))
	_, err = m.SearchBleve(ctx, []string{"one"}, bleve.NewSearchRequest(bleve.NewQueryStringQuery("body:\"unclosed")))
	require.ErrorIs(t, err, coord.ErrAllShardsFailed)
}

// TestSearchFeatures checks what the DSL layer builds on: term locations
// in text fields (its highlighter cuts fragments from them and _source;
// text fields are not stored apart from _source), facets and sorting on
// keyword/date doc values, _source.
func TestSearchFeatures(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "s", coord.IndexSettings{NumberOfShards: 3}, coordtest.SampleMapping(t)))
	ids, sources := coordtest.SampleDocs(t)
	ids, sources = ids[:150], sources[:150]
	coordtest.BulkIndex(t, m, "s", ids, sources)

	q := bleve.NewMatchQuery("linux")
	q.SetField("body")
	req := bleve.NewSearchRequestOptions(q, 5, 0, false)
	req.IncludeLocations = true
	req.Fields = []string{index.SourceField}
	req.AddFacet("labels", bleve.NewFacetRequest("label", 5))
	res, err := m.SearchBleve(ctx, []string{"s"}, req)
	require.NoError(t, err)
	require.Positive(t, res.Total)
	require.NotEmpty(t, res.Hits[0].Locations["body"]["linux"])
	require.NotEmpty(t, res.Facets["labels"].Terms.Terms())
	var facetTotal int
	for _, tf := range res.Facets["labels"].Terms.Terms() {
		facetTotal += tf.Count
	}
	require.Equal(t, int(res.Total), facetTotal)

	all := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 3, 0, false)
	all.SortBy([]string{"-date", "_id"})
	all.Fields = []string{"date"}
	res, err = m.SearchBleve(ctx, []string{"s"}, all)
	require.NoError(t, err)
	require.Len(t, res.Hits, 3)
	require.GreaterOrEqual(t, res.Hits[0].Sort[0], res.Hits[1].Sort[0])

	// Two indexes at once: each hit names its own index.
	require.NoError(t, m.CreateIndex(ctx, "t", coord.IndexSettings{}, nil))
	coordtest.BulkIndex(t, m, "t", ids[:10], sources[:10])
	res, err = m.SearchBleve(ctx, []string{"s", "t"}, bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1000, 0, false))
	require.NoError(t, err)
	require.Equal(t, uint64(len(ids)+10), res.Total)
	seen := map[string]int{}
	for _, h := range res.Hits {
		seen[h.Index]++
	}
	require.Equal(t, map[string]int{"s": len(ids), "t": 10}, seen)
}

// TestConcurrentBulksAndSearches writes from several goroutines into the
// same shards while searching (group commit across requests; run with -race).
func TestConcurrentBulksAndSearches(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "c", coord.IndexSettings{NumberOfShards: 2}, nil))
	const writers, perWriter = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if _, err := m.SearchBleve(ctx, []string{"c"}, bleve.NewSearchRequest(bleve.NewMatchAllQuery())); err != nil {
				errs <- err
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perWriter {
				// Every writer also bumps the shared document "hot".
				res, err := m.Bulk(ctx, []vocab.Op{
					{Type: vocab.OpIndex, Index: "c", ID: fmt.Sprintf("w%d-%d", w, k), Source: json.RawMessage(fmt.Sprintf(`{"w":%d,"k":%d}`, w, k))},
					{Type: vocab.OpIndex, Index: "c", ID: "hot", Source: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w))},
				}, coord.WriteOptions{Refresh: coord.RefreshFalse})
				if err == nil {
					err = errors.Join(res[0].Err, res[1].Err)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-errs)
	inf, err := m.Index("c")
	require.NoError(t, err)
	require.Equal(t, uint64(writers*perWriter+1), inf.DocsCount)
	d, err := m.Get(ctx, "c", "hot", "")
	require.NoError(t, err)
	require.Equal(t, int64(writers*perWriter), d.Version, "every write of the hot document got its own version")
}
