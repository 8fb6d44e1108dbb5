package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard/shardlog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
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
			require.Equal(t, tc.want, Murmur3(tc.in))
		})
	}
	// Routing never changes: these placements are on disk in existing indexes.
	require.Equal(t, int(0x248bfa47%5), ShardFor("hello", "", 5))
	require.Equal(t, ShardFor("hello", "", 5), ShardFor("other-id", "hello", 5), "routing overrides the id")
	require.Len(t, NewID(), 20)
}

func TestValidateIndexName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"logs-2024.01", true}, {"a", true}, {"Upper", false}, {"", false}, {"_hidden", false}, {"-x", false},
		{"+x", false}, {"a b", false}, {"a,b", false}, {"a*", false}, {"a/b", false}, {"a#b", false}, {"..", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateIndexName(tc.name)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidIndexName)
			}
		})
	}
}

func TestIndexLifecycle(t *testing.T) {
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "logs-a", IndexSettings{NumberOfShards: 3}, nil))
	require.NoError(t, m.CreateIndex(ctx, "logs-b", IndexSettings{NumberOfShards: 1, NumberOfReplicas: 0}, nil))
	require.NoError(t, m.CreateIndex(ctx, "other", IndexSettings{}, nil))
	require.ErrorIs(t, m.CreateIndex(ctx, "other", IndexSettings{}, nil), ErrIndexExists)
	require.ErrorIs(t, m.CreateIndex(ctx, "Bad", IndexSettings{}, nil), ErrInvalidIndexName)

	inf, err := m.Index("logs-a")
	require.NoError(t, err)
	require.Equal(t, 3, inf.Settings.NumberOfShards)
	require.Equal(t, 0, inf.Settings.NumberOfReplicas)
	require.Equal(t, "green", inf.Health)
	inf, err = m.Index("other")
	require.NoError(t, err)
	require.Equal(t, IndexSettings{NumberOfShards: 1, NumberOfReplicas: 0}, inf.Settings)

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
		{"missing", nil, ErrIndexNotFound},
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
	require.NoError(t, m.UpdateSettings(ctx, "other", SettingsUpdate{NumberOfReplicas: &two}))
	inf, err = m.Index("other")
	require.NoError(t, err)
	require.Equal(t, "yellow", inf.Health)

	require.NoError(t, m.DeleteIndex(ctx, "logs-b"))
	require.ErrorIs(t, m.DeleteIndex(ctx, "logs-b"), ErrIndexNotFound)
	names := []string{}
	for _, i := range m.Indices() {
		names = append(names, i.Name)
	}
	require.Equal(t, []string{"logs-a", "other"}, names)
}

func TestBulkItemSemantics(t *testing.T) {
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	mp, err := index.ParseMapping([]byte(`{"properties":{"n":{"type":"long"},"o":{"properties":{"a":{"type":"keyword"},"b":{"type":"keyword"}}}}}`))
	require.NoError(t, err)
	require.NoError(t, m.CreateIndex(ctx, "i", IndexSettings{NumberOfShards: 2}, mp))
	type want struct {
		status  int
		result  string
		version int64
		err     error
	}
	steps := []struct {
		name string
		op   Op
		want want
	}{
		{"index new", Op{Type: OpIndex, ID: "1", Source: json.RawMessage(`{"n":1,"o":{"a":"x"}}`)}, want{http.StatusCreated, "created", 1, nil}},
		{"index again", Op{Type: OpIndex, ID: "1", Source: json.RawMessage(`{"n":2,"o":{"a":"x"}}`)}, want{http.StatusOK, "updated", 2, nil}},
		{"create existing", Op{Type: OpCreate, ID: "1", Source: json.RawMessage(`{"n":3}`)}, want{http.StatusConflict, "", 0, ErrVersionConflict}},
		{"create new", Op{Type: OpCreate, ID: "2", Source: json.RawMessage(`{"n":3}`)}, want{http.StatusCreated, "created", 1, nil}},
		{"partial update merges objects", Op{Type: OpUpdate, ID: "1", Update: &UpdateSpec{Doc: json.RawMessage(`{"o":{"b":"y"}}`)}}, want{http.StatusOK, "updated", 3, nil}},
		{"update with same values is noop", Op{Type: OpUpdate, ID: "1", Update: &UpdateSpec{Doc: json.RawMessage(`{"n":2}`)}}, want{http.StatusOK, "noop", 3, nil}},
		{"update missing", Op{Type: OpUpdate, ID: "9", Update: &UpdateSpec{Doc: json.RawMessage(`{"n":1}`)}}, want{http.StatusNotFound, "", 0, ErrDocumentNotFound}},
		{"doc_as_upsert", Op{Type: OpUpdate, ID: "9", Update: &UpdateSpec{Doc: json.RawMessage(`{"n":9}`), DocAsUpsert: true}}, want{http.StatusCreated, "created", 1, nil}},
		{"upsert", Op{Type: OpUpdate, ID: "8", Update: &UpdateSpec{Doc: json.RawMessage(`{"n":1}`), Upsert: json.RawMessage(`{"n":8}`)}}, want{http.StatusCreated, "created", 1, nil}},
		{"wrong type fails the item", Op{Type: OpIndex, ID: "3", Source: json.RawMessage(`{"n":"abc"}`)}, want{http.StatusBadRequest, "", 0, index.ErrDocParse}},
		{"malformed source fails the item", Op{Type: OpIndex, ID: "3", Source: json.RawMessage(`{"n":`)}, want{http.StatusBadRequest, "", 0, index.ErrDocParse}},
		{"delete", Op{Type: OpDelete, ID: "2"}, want{http.StatusOK, "deleted", 2, nil}},
		{"delete missing", Op{Type: OpDelete, ID: "2"}, want{http.StatusNotFound, "not_found", 0, ErrDocumentNotFound}},
		{"update needs an id", Op{Type: OpUpdate, Update: &UpdateSpec{Doc: json.RawMessage(`{}`)}}, want{http.StatusBadRequest, "", 0, ErrInvalidRequest}},
	}
	for _, st := range steps {
		st.op.Index = "i"
		res, err := m.Bulk(ctx, []Op{st.op}, WriteOptions{Refresh: RefreshFalse})
		require.NoError(t, err, st.name)
		r := res[0]
		require.Equal(t, st.want.status, r.Status, "%s: %v", st.name, r.Err)
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
	res, err := m.Bulk(ctx, []Op{{Type: OpIndex, Index: "i", ID: "1", Source: json.RawMessage(`{"n":5}`), IfSeqNo: &stale, IfPrimaryTerm: &term}}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, res[0].Status)
	require.ErrorIs(t, res[0].Err, ErrVersionConflict)
	cur := d.SeqNo
	res, err = m.Bulk(ctx, []Op{{Type: OpIndex, Index: "i", ID: "1", Source: json.RawMessage(`{"n":2,"o":{"a":"x","b":"y"}}`), IfSeqNo: &cur, IfPrimaryTerm: &term}}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.Equal(t, int64(4), res[0].Version)
	res, err = m.Bulk(ctx, []Op{{Type: OpDelete, Index: "i", ID: "nope", IfSeqNo: &cur}}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, res[0].Status, "a condition on a missing document is a conflict")
	_, err = m.Get(ctx, "i", "2", "")
	require.ErrorIs(t, err, ErrDocumentNotFound)
	_, err = m.Get(ctx, "nope", "2", "")
	require.ErrorIs(t, err, ErrIndexNotFound)

	// One request mixing good and bad items; results stay in op order.
	res, err = m.Bulk(ctx, []Op{
		{Type: OpIndex, Index: "i", ID: "a", Source: json.RawMessage(`{"n":1}`)},
		{Type: OpIndex, Index: "i", ID: "b", Source: json.RawMessage(`[1]`)},
		{Type: OpIndex, Index: "i", ID: "a", Source: json.RawMessage(`{"n":2}`)},
		{Type: OpUpdate, Index: "i", ID: "a", Update: &UpdateSpec{Doc: json.RawMessage(`{"n":3}`)}},
	}, WriteOptions{Refresh: RefreshTrue})
	require.NoError(t, err)
	require.Equal(t, []string{"created", "", "updated", "updated"}, []string{res[0].Result, res[1].Result, res[2].Result, res[3].Result})
	require.Equal(t, []int64{1, 0, 2, 3}, []int64{res[0].Version, res[1].Version, res[2].Version, res[3].Version})
	require.Less(t, res[0].SeqNo, res[2].SeqNo)
	d, err = m.Get(ctx, "i", "a", "")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":3}`, string(d.Source))
}

func TestBulkAutoCreateAndGeneratedIDs(t *testing.T) {
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	res, err := m.Bulk(ctx, []Op{
		{Type: OpIndex, Index: "auto", Source: json.RawMessage(`{"msg":"hello world","when":"2024-01-02T03:04:05Z","n":1}`)},
		{Type: OpDelete, Index: "absent", ID: "x"},
		{Type: OpIndex, Index: "BAD", ID: "x", Source: json.RawMessage(`{}`)},
	}, WriteOptions{Refresh: RefreshWaitFor})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res[0].Status, "%v", res[0].Err)
	require.Len(t, res[0].ID, 20)
	require.Equal(t, http.StatusNotFound, res[1].Status)
	require.ErrorIs(t, res[1].Err, ErrIndexNotFound)
	require.Equal(t, http.StatusBadRequest, res[2].Status)
	require.ErrorIs(t, res[2].Err, ErrInvalidIndexName)

	inf, err := m.Index("auto")
	require.NoError(t, err)
	require.Equal(t, IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, inf.Settings)
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
	sr0, err := m.searchBleve(ctx, []string{"auto"}, bleve.NewSearchRequest(mq))
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
	m := openManager(t, dir)
	require.NoError(t, m.CreateIndex(ctx, "i", IndexSettings{NumberOfShards: 3, NumberOfReplicas: 0}, nil))
	ids, sources := sampleDocs(t)
	bulkIndex(t, m, "i", ids[:100], sources[:100])
	res, err := m.Bulk(ctx, []Op{{Type: OpDelete, Index: "i", ID: ids[0]}}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	put, err := index.ParseMapping([]byte(`{"properties":{"extra":{"type":"keyword"}}}`))
	require.NoError(t, err)
	require.NoError(t, m.PutMapping(ctx, "i", put))
	require.ErrorIs(t, m.PutMapping(ctx, "i", mustMapping(t, `{"properties":{"extra":{"type":"long"}}}`)), index.ErrMappingConflict)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")
	_, err = m.Bulk(ctx, nil, WriteOptions{})
	require.ErrorIs(t, err, ErrClosed)

	m = openManager(t, dir)
	defer m.Close()
	inf, err := m.Index("i")
	require.NoError(t, err)
	require.Equal(t, uint64(99), inf.DocsCount)
	require.Equal(t, 3, inf.Settings.NumberOfShards)
	require.Equal(t, "keyword", inf.Mapping.FieldType("extra"))
	require.Equal(t, "text", inf.Mapping.FieldType("subject"), "dynamic fields persist")
	_, err = m.Get(ctx, "i", ids[0], "")
	require.ErrorIs(t, err, ErrDocumentNotFound)
	d, err := m.Get(ctx, "i", ids[1], "")
	require.NoError(t, err)
	require.JSONEq(t, string(sources[1]), string(d.Source))
	// Sequence numbers continue after a restart.
	res, err = m.Bulk(ctx, []Op{{Type: OpIndex, Index: "i", ID: ids[1], Source: sources[1]}}, WriteOptions{Refresh: RefreshFalse})
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
func (f failingSearcher) TermStats(context.Context, query.Query) (ShardStats, error) {
	return ShardStats{}, errors.New("shard unreachable")
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
func (f tiedSearcher) TermStats(context.Context, query.Query) (ShardStats, error) {
	return ShardStats{Stats: &index.TermStats{DocCount: 1}}, nil
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
			ss := make([]ShardSearcher, 3)
			for k := range ss {
				f := tiedSearcher{name: fmt.Sprint("i/", k), id: fmt.Sprint("d", k)}
				if k == slow {
					f.delay = 50 * time.Millisecond
				}
				ss[k] = f
			}
			// The searchers are given in another order than their names'.
			ss[0], ss[2] = ss[2], ss[0]
			res, err := SearchShards(context.Background(), ss, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
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
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "i", IndexSettings{NumberOfShards: 2}, nil))
	ids, sources := sampleDocs(t)
	bulkIndex(t, m, "i", ids[:50], sources[:50])
	ss, err := m.Searchers([]string{"i"})
	require.NoError(t, err)
	ss = append(ss, failingSearcher{"i/9"})
	res, err := SearchShards(ctx, ss, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	require.NoError(t, err)
	require.Equal(t, uint64(50), res.Total)
	require.Equal(t, 3, res.Status.Total)
	require.Equal(t, 1, res.Status.Failed)
	require.Equal(t, 2, res.Status.Successful)
	require.Contains(t, res.Status.Errors, "i/9")

	_, err = SearchShards(ctx, []ShardSearcher{failingSearcher{"a"}, failingSearcher{"b"}}, bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	require.ErrorIs(t, err, ErrAllShardsFailed)
	require.ErrorContains(t, err, "shard unreachable")

	// A malformed query fails on every shard: an error, not partial results.
	bad := bleve.NewQueryStringQuery("body:\"unclosed")
	_, err = m.searchBleve(ctx, []string{"i"}, bleve.NewSearchRequest(bad))
	require.ErrorIs(t, err, ErrAllShardsFailed)
	require.NoError(t, m.CreateIndex(ctx, "one", IndexSettings{}, nil))
	_, err = m.searchBleve(ctx, []string{"one"}, bleve.NewSearchRequest(bleve.NewQueryStringQuery("body:\"unclosed")))
	require.ErrorIs(t, err, ErrAllShardsFailed)
}

// TestSearchFeatures checks what the DSL layer builds on: term locations
// in text fields (its highlighter cuts fragments from them and _source;
// text fields are not stored apart from _source), facets and sorting on
// keyword/date doc values, _source.
func TestSearchFeatures(t *testing.T) {
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "s", IndexSettings{NumberOfShards: 3}, sampleMapping(t)))
	ids, sources := sampleDocs(t)
	ids, sources = ids[:150], sources[:150]
	bulkIndex(t, m, "s", ids, sources)

	q := bleve.NewMatchQuery("linux")
	q.SetField("body")
	req := bleve.NewSearchRequestOptions(q, 5, 0, false)
	req.IncludeLocations = true
	req.Fields = []string{index.SourceField}
	req.AddFacet("labels", bleve.NewFacetRequest("label", 5))
	res, err := m.searchBleve(ctx, []string{"s"}, req)
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
	res, err = m.searchBleve(ctx, []string{"s"}, all)
	require.NoError(t, err)
	require.Len(t, res.Hits, 3)
	require.GreaterOrEqual(t, res.Hits[0].Sort[0], res.Hits[1].Sort[0])

	// Two indexes at once: each hit names its own index.
	require.NoError(t, m.CreateIndex(ctx, "t", IndexSettings{}, nil))
	bulkIndex(t, m, "t", ids[:10], sources[:10])
	res, err = m.searchBleve(ctx, []string{"s", "t"}, bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1000, 0, false))
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
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "c", IndexSettings{NumberOfShards: 2}, nil))
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
			if _, err := m.searchBleve(ctx, []string{"c"}, bleve.NewSearchRequest(bleve.NewMatchAllQuery())); err != nil {
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
				res, err := m.Bulk(ctx, []Op{
					{Type: OpIndex, Index: "c", ID: fmt.Sprintf("w%d-%d", w, k), Source: json.RawMessage(fmt.Sprintf(`{"w":%d,"k":%d}`, w, k))},
					{Type: OpIndex, Index: "c", ID: "hot", Source: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w))},
				}, WriteOptions{Refresh: RefreshFalse})
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

// TestShardLogTrimmedOncePersisted: log segments wholly below the seq that
// scorch has persisted are deleted by later writes; the newest stays.
func TestShardLogTrimmedOncePersisted(t *testing.T) {
	cfg := testConfig()
	cfg.LogSegmentBytes = 4096
	dir := t.TempDir()
	m := startNodeWith(t, newMemCluster(t, "", "n1"), "n1", dir, nil, cfg, nil)
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "t", IndexSettings{NumberOfShards: 1}, nil))
	ids, sources := sampleDocs(t)
	for k := 0; k < 100; k += 10 {
		bulkIndex(t, m, "t", ids[k:k+10], sources[k:k+10])
	}
	sh := m.primary(t, "t", 0)
	// Scorch persists in the background; wait for it (no timing assertion:
	// the test only proceeds once it has happened).
	deadline := time.Now().Add(time.Minute)
	for sh.idx.PersistedSeq() < sh.idx.AppliedSeq() {
		require.True(t, time.Now().Before(deadline), "scorch never persisted seq %d", sh.idx.AppliedSeq())
		runtime.Gosched()
	}
	bulkIndex(t, m, "t", ids[100:101], sources[100:101])
	require.LessOrEqual(t, sh.log.Segments(), 2)
	var replayed int
	require.NoError(t, sh.log.Replay(0, func(*shardlog.Record) error { replayed++; return nil }))
	require.Less(t, replayed, 100)
}

// TestStoreKeepsOnlyAssignedCopies: on reopen the store opens the copies
// the shard table assigns to the node, deletes the copy directories it does
// not (an index deleted while the node was away) and finishes interrupted
// deletions, but leaves alone a directory that holds no copy.
func TestStoreKeepsOnlyAssignedCopies(t *testing.T) {
	dir := t.TempDir()
	m := openManager(t, dir)
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "keep", IndexSettings{}, nil))
	require.NoError(t, m.CreateIndex(ctx, "gone", IndexSettings{NumberOfShards: 2}, nil))
	gone, err := m.meta.View().Index("gone")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	// The index is deleted while the node is down.
	require.NoError(t, m.mc.node("n1").DeleteIndex(ctx, "gone", gone.UUID))
	root := filepath.Join(dir, "shards")
	require.NoError(t, os.MkdirAll(filepath.Join(root, deletedPrefix+"abc", "index"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "not-a-copy"), 0o755))

	m = openManager(t, dir)
	defer m.Close()
	require.Equal(t, []string{"keep"}, func() (names []string) {
		for _, i := range m.Indices() {
			names = append(names, i.Name)
		}
		return names
	}())
	require.Eventually(t, func() bool {
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		return len(entries) == 2 // keep's copy and not-a-copy
	}, 10*time.Second, 10*time.Millisecond)
	_, err = os.Stat(filepath.Join(root, "not-a-copy"))
	require.NoError(t, err)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		err  string
	}{
		{"default", func(*Config) {}, ""},
		{"tiny segments", func(c *Config) { c.LogSegmentBytes = 10 }, "LogSegmentBytes 10"},
		{"no shards", func(c *Config) { c.MaxShards = 0 }, "MaxShards 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			_, err = OpenStore(t.TempDir(), c, nil, nil, nil)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestConcurrentBulksShareFsyncs: while one bulk's fsync is in progress,
// eight more bulks to the same shard queue up; the next commit takes them
// all, so nine acknowledged bulks cost two fsyncs.
func TestConcurrentBulksShareFsyncs(t *testing.T) {
	m := openManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "g", IndexSettings{NumberOfShards: 1}, nil))
	sh := m.primary(t, "g", 0)
	const followers = 8
	release := make(chan struct{})
	var once sync.Once
	sh.log.SetBeforeSync(func() { once.Do(func() { <-release }) })
	before := sh.log.Fsyncs()
	bulk := func(id string) error {
		res, err := m.Bulk(ctx, []Op{{Type: OpIndex, Index: "g", ID: id, Source: json.RawMessage(`{"a":1}`)}}, WriteOptions{Refresh: RefreshFalse})
		if err != nil {
			return err
		}
		return res[0].Err
	}
	errs := make(chan error, followers+1)
	go func() { errs <- bulk("leader") }()
	// Wait until the leader is inside its fsync (it holds the commit lock).
	for sh.leader.TryLock() {
		sh.leader.Unlock()
		runtime.Gosched()
	}
	for k := range followers {
		go func() { errs <- bulk(fmt.Sprint("f", k)) }()
	}
	for {
		sh.qmu.Lock()
		n := len(sh.queue)
		sh.qmu.Unlock()
		if n == followers {
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range followers + 1 {
		require.NoError(t, <-errs)
	}
	require.Equal(t, uint64(2), sh.log.Fsyncs()-before)
	inf, err := m.Index("g")
	require.NoError(t, err)
	require.Equal(t, uint64(followers+1), inf.DocsCount)
}
