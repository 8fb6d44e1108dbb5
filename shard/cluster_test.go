package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// memPeers reaches the test's other nodes over the in-memory fabric,
// dialling each once and again after its connection broke.
type memPeers struct {
	tr    fabric.Transport
	mu    sync.Mutex
	conns map[string]fabric.Conn
	calls map[peerCall]int // calls made, by node and method
}

type peerCall struct {
	node   string
	method fabric.Method
}

// callsTo counts the calls of method m made to node ("": to any node).
func (p *memPeers) callsTo(node string, m fabric.Method) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c, k := range p.calls {
		if c.method == m && (node == "" || c.node == node) {
			n += k
		}
	}
	return n
}

func (p *memPeers) Call(ctx context.Context, id string, m fabric.Method, payload []byte) ([]byte, error) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[peerCall]int{}
	}
	p.calls[peerCall{id, m}]++
	c := p.conns[id]
	p.mu.Unlock()
	if c == nil {
		var err error
		if c, err = p.tr.Dial(ctx, id); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.conns[id] = c
		p.mu.Unlock()
	}
	reply, err := c.Call(ctx, m, payload)
	if err != nil && ctx.Err() == nil {
		p.mu.Lock()
		if p.conns[id] == c {
			delete(p.conns, id)
			_ = c.Close()
		}
		p.mu.Unlock()
	}
	return reply, err
}

func (p *memPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// testCluster is several nodes of the shard layer sharing a memCluster's
// shard table and talking over an in-memory fabric with fault hooks.
type testCluster struct {
	t     *testing.T
	net   *fabrictest.Network
	mc    *memCluster
	nodes map[string]*testNode
	peers map[string]*memPeers // each node's outbound calls
	dirs  map[string]string
	stops map[string]func()
	cfg   func(id string) Config // each node's configuration
}

func newTestCluster(t *testing.T, ids ...string) *testCluster {
	return newTestClusterWith(t, func(string) Config { return testConfig() }, ids...)
}

// newTestClusterWith starts nodes ids, each with the configuration cfg
// gives it.
func newTestClusterWith(t *testing.T, cfg func(id string) Config, ids ...string) *testCluster {
	tc := &testCluster{t: t, net: fabrictest.NewNetwork(), mc: newMemCluster(t, "", ids...),
		nodes: map[string]*testNode{}, peers: map[string]*memPeers{}, dirs: map[string]string{}, stops: map[string]func(){}, cfg: cfg}
	for _, id := range ids {
		tc.dirs[id] = t.TempDir()
		tc.start(id)
	}
	t.Cleanup(func() {
		for id := range tc.stops {
			tc.stop(id)
		}
	})
	return tc
}

// start starts node id on its data directory, serving the fabric.
func (tc *testCluster) start(id string) *testNode {
	t := tc.t
	mux := &fabric.Mux{}
	streams := fabric.NewStreamReceiver(10 * time.Second)
	mux.Handle(fabric.MethodStream, streams)
	tr := tc.net.Node(id)
	ln, err := tr.Listen(context.Background(), id, mux)
	require.NoError(t, err)
	peers := &memPeers{tr: tr, conns: map[string]fabric.Conn{}}
	tc.peers[id] = peers
	n := startNodeWith(t, tc.mc, id, tc.dirs[id], peers, tc.cfg(id), func(c *Coordinator) { c.store.Register(mux, streams) })
	tc.nodes[id] = n
	tc.stops[id] = func() {
		_ = n.Close()
		peers.close()
		_ = ln.Close()
		_ = streams.Close()
	}
	return n
}

// stop shuts node id down cleanly.
func (tc *testCluster) stop(id string) {
	if stop := tc.stops[id]; stop != nil {
		stop()
		delete(tc.stops, id)
		delete(tc.nodes, id)
	}
}

// kill takes node id down at once: the cluster marks it not live (so it
// reaches no leader any more), its fabric connections break, and it stops.
func (tc *testCluster) kill(id string) {
	tc.mc.setLive(id, false)
	tc.net.Kill(id)
	tc.stop(id)
}

// revive marks node id live again and starts it.
func (tc *testCluster) revive(id string) *testNode {
	tc.mc.setLive(id, true)
	return tc.start(id)
}

// search runs an ES search body over names through node id.
func (tc *testCluster) search(t *testing.T, id string, names []string, body string) *SearchResult {
	t.Helper()
	n := tc.nodes[id]
	srch, err := esdsl.ParseSearch([]byte(body), nil, n.Fields(names))
	require.NoError(t, err, body)
	res, err := n.Search(context.Background(), names, srch)
	require.NoError(t, err, body)
	return res
}

// queryBodies are the acceptance queries of testdata/sample/queries.json.
func queryBodies(t *testing.T) map[string]json.RawMessage {
	raw, err := os.ReadFile("../testdata/sample/queries.json")
	require.NoError(t, err)
	var qs map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &qs))
	require.Len(t, qs, 26)
	return qs
}

// requireSameJSON requires two decoded JSON values to be equal: numbers
// within a relative 1e-9, except under "pct" (percentiles merged from
// several t-digests), within 0.5% of the value.
func requireSameJSON(t *testing.T, want, got any, path string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: %v is not an object", path, got)
		require.Len(t, g, len(w), "%s: keys %v vs %v", path, keysOf(w), keysOf(g))
		for k, v := range w {
			requireSameJSON(t, v, g[k], path+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: %v is not an array", path, got)
		require.Len(t, g, len(w), path)
		for k := range w {
			requireSameJSON(t, w[k], g[k], fmt.Sprintf("%s.%d", path, k))
		}
	case float64:
		g, ok := got.(float64)
		require.True(t, ok, "%s: %v is not a number", path, got)
		tol := 1e-9
		if strings.Contains(path, ".pct.") {
			tol = 5e-3
		}
		require.LessOrEqual(t, math.Abs(w-g), tol*math.Max(math.Abs(w), 1), "%s: %v vs %v", path, w, g)
	default:
		require.Equal(t, want, got, path)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameHits requires two results to rank the same hits with the same scores.
func sameHits(t *testing.T, want, got *bleve.SearchResult, what string) {
	t.Helper()
	require.Equal(t, want.Total, got.Total, what)
	require.Len(t, got.Hits, len(want.Hits), what)
	for k := range want.Hits {
		require.Equal(t, want.Hits[k].ID, got.Hits[k].ID, "%s: hit %d", what, k)
		a, b := want.Hits[k].Score, got.Hits[k].Score
		require.LessOrEqual(t, math.Abs(a-b), 1e-9*math.Max(math.Abs(a), math.Abs(b)), "%s: hit %d (%s): %v vs %v", what, k, want.Hits[k].ID, a, b)
	}
}

// sameSorted requires two results of a search sorted by fields (whose
// response shows no scores) to hold the same hits with the same sort keys.
func sameSorted(t *testing.T, want, got *bleve.SearchResult, what string) {
	t.Helper()
	require.Equal(t, want.Total, got.Total, what)
	require.Len(t, got.Hits, len(want.Hits), what)
	for k := range want.Hits {
		require.Equal(t, want.Hits[k].ID, got.Hits[k].ID, "%s: hit %d", what, k)
		require.Equal(t, want.Hits[k].Sort, got.Hits[k].Sort, "%s: hit %d", what, k)
	}
}

// TestClusterRanksLikeOneShard: six shards spread over three nodes, searched
// through a node that holds only some of them, rank exactly like one shard
// holding every document — every acceptance query, two pages, with sources
// fetched only for the final page — and aggregate, search_after and scroll
// the same way.
func TestClusterRanksLikeOneShard(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "six", IndexSettings{NumberOfShards: 6}, sampleMapping(t)))
	require.NoError(t, n1.CreateIndex(ctx, "one", IndexSettings{NumberOfShards: 1}, sampleMapping(t)))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	ix, err := n1.meta.View().Index("six")
	require.NoError(t, err)
	perNode := map[string]int{}
	for _, sh := range ix.Shards {
		p, _ := sh.Primary()
		perNode[p.NodeID]++
	}
	require.Equal(t, map[string]int{"n1": 2, "n2": 2, "n3": 2}, perNode)

	ids, sources := sampleDocs(t)
	for _, name := range []string{"six", "one"} {
		bulkIndex(t, tc.nodes["n2"], name, ids, sources) // routed from n2 to every primary
		bulkIndex(t, tc.nodes["n3"], name, ids[:30], sources[:30])
	}
	for name, q := range queryBodies(t) {
		t.Run(name, func(t *testing.T) {
			for _, page := range []string{`"from":0,"size":10`, `"from":10,"size":10`} {
				body := fmt.Sprintf(`{"query":%s,%s,"sort":["_score",{"_id":"asc"}]}`, q, page)
				one := tc.search(t, "n1", []string{"one"}, body)
				six := tc.search(t, "n1", []string{"six"}, body)
				require.Zero(t, six.Status.Failed, "%v", six.Status.Errors)
				sameHits(t, one.SearchResult, six.SearchResult, page)
				require.Zero(t, six.Status.Failed)
				require.Equal(t, 6, six.Status.Total)
				for _, h := range six.Hits {
					require.NotEmpty(t, h.Fields[index.SourceField], "hit %s has its source", h.ID)
					require.Equal(t, "six", h.Index)
				}
			}
		})
	}
	t.Run("aggregations", func(t *testing.T) {
		// Every kind of aggregation, nested, over six shards on three
		// nodes (partials from remote copies travel in the query phase)
		// renders as over one shard: counts exactly (shard_size covers
		// every term), averages and percentiles within float tolerance.
		body := `{"size":0,"query":{"match":{"body":"the"}},"aggs":{
			"labels":{"terms":{"field":"label","shard_size":100},"aggs":{
				"days":{"date_histogram":{"field":"date","calendar_interval":"month","format":"yyyy-MM"},"aggs":{"senders":{"cardinality":{"field":"from.keyword"}}}},
				"first":{"min":{"field":"date"}},"spread":{"extended_stats":{"field":"date"}},
				"top":{"top_hits":{"size":2,"sort":[{"date":"desc"},{"id":"asc"}],"_source":["subject"]}}}},
			"groups":{"terms":{"field":"group","size":3,"shard_size":100,"order":{"latest":"desc"}},"aggs":{"latest":{"max":{"field":"date"}}}},
			"weeks":{"histogram":{"field":"date","interval":604800000,"min_doc_count":1}},
			"mean":{"avg":{"field":"date"}},"count":{"value_count":{"field":"id"}},
			"pct":{"percentiles":{"field":"date","percents":[10,50,90]}},
			"senders":{"cardinality":{"field":"from.keyword"}},
			"ranges":{"date_range":{"field":"date","ranges":[{"to":"2002-09-01"},{"from":"2002-09-01"}]}},
			"spam":{"filter":{"term":{"label":"spam"}},"aggs":{"n":{"value_count":{"field":"id"}}}},
			"kinds":{"filters":{"filters":{"re":{"match":{"subject":"re"}},"linux":{"match":{"body":"linux"}}},"other_bucket":true}},
			"nosubject":{"missing":{"field":"subject.keyword"}},
			"pages":{"composite":{"size":5,"sources":[{"l":{"terms":{"field":"label"}}},{"g":{"terms":{"field":"group"}}}]}}}}`
		render := func(name string) map[string]any {
			n := tc.nodes["n3"]
			srch, err := esdsl.ParseSearch([]byte(body), nil, n.Fields([]string{name}))
			require.NoError(t, err)
			res, err := n.Search(ctx, []string{name}, srch)
			require.NoError(t, err)
			require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
			out, err := srch.RenderAggs(res.Aggs)
			require.NoError(t, err)
			raw, err := json.Marshal(out)
			require.NoError(t, err)
			raw = []byte(strings.ReplaceAll(string(raw), `"_index":"`+name+`"`, `"_index":"X"`))
			var v map[string]any
			require.NoError(t, json.Unmarshal(raw, &v))
			return v
		}
		one, six := render("one"), render("six")
		require.NotEmpty(t, one["labels"].(map[string]any)["buckets"])
		requireSameJSON(t, one, six, "aggregations")
	})
	t.Run("matched_queries", func(t *testing.T) {
		// Named queries are tested on the final page's hits: in place on
		// local copies, in the fetch phase on remote ones (even with
		// _source off, which otherwise needs no fetch).
		for _, src := range []string{"true", "false"} {
			body := `{"query":{"bool":{"should":[{"match":{"body":{"query":"linux","_name":"l"}}},{"match":{"subject":{"query":"re","_name":"r"}}}]}},
				"size":30,"sort":[{"_id":"asc"}],"_source":` + src + `}`
			one, six := tc.search(t, "n3", []string{"one"}, body), tc.search(t, "n3", []string{"six"}, body)
			require.Len(t, six.Hits, 30)
			both := 0
			for k := range one.Hits {
				require.Equal(t, one.Hits[k].ID, six.Hits[k].ID)
				m := six.Hits[k].Fields[index.MatchedQueriesField]
				require.Equal(t, one.Hits[k].Fields[index.MatchedQueriesField], m, "hit %s", six.Hits[k].ID)
				require.NotEmpty(t, m, "hit %s matched some named query", six.Hits[k].ID)
				if len(m.([]string)) == 2 {
					both++
				}
			}
			require.Positive(t, both, "some hits match both")
		}
	})
	t.Run("search_after", func(t *testing.T) {
		var after string
		var oneIDs, sixIDs []string
		for page := 0; page < 5; page++ {
			body := `{"query":{"match":{"body":"the"}},"size":7,"sort":[{"date":"desc"},{"_id":"asc"}]` + after + `}`
			one, six := tc.search(t, "n2", []string{"one"}, body), tc.search(t, "n2", []string{"six"}, body)
			sameSorted(t, one.SearchResult, six.SearchResult, body)
			for k := range one.Hits {
				oneIDs, sixIDs = append(oneIDs, one.Hits[k].ID), append(sixIDs, six.Hits[k].ID)
			}
			last := one.Hits[len(one.Hits)-1]
			srch, err := esdsl.ParseSearch([]byte(body), nil, n1.Fields([]string{"one"}))
			require.NoError(t, err)
			resp := srch.Response(one.SearchResult, 0)
			sortVals, err := json.Marshal(resp.Hits.Hits[len(resp.Hits.Hits)-1].Sort)
			require.NoError(t, err)
			require.Equal(t, last.ID, resp.Hits.Hits[len(resp.Hits.Hits)-1].ID)
			after = `,"search_after":` + string(sortVals)
		}
		require.Equal(t, oneIDs, sixIDs)
		require.Len(t, sixIDs, 35)
	})
	t.Run("scroll", func(t *testing.T) {
		scrollAll := func(name string) []string {
			n := tc.nodes["n2"]
			params := map[string][]string{"scroll": {"1m"}}
			srch, err := esdsl.ParseSearch([]byte(`{"query":{"match":{"subject":"re"}},"size":9}`), params, n.Fields([]string{name}))
			require.NoError(t, err)
			pit, err := n.OpenPIT(ctx, []string{name}, time.Minute)
			require.NoError(t, err)
			defer func() { _, _ = n.ClosePIT(ctx, pit) }()
			srch.SetPointInTime(pit.Encode(), time.Minute)
			id, err := srch.ScrollID(pit.Encode(), []string{name})
			require.NoError(t, err)
			sc, err := esdsl.ParseScroll(id, "")
			require.NoError(t, err)
			var got []string
			for {
				res, err := n.Search(ctx, []string{name}, srch)
				require.NoError(t, err)
				require.Empty(t, res.Failures)
				for _, h := range res.Hits {
					got = append(got, h.ID)
				}
				if len(res.Hits) == 0 {
					return got
				}
				page, after := srch.ScrollCursor(res.SearchResult)
				srch, err = sc.Page(n.Fields([]string{name}), page, after)
				require.NoError(t, err)
			}
		}
		one, six := scrollAll("one"), scrollAll("six")
		require.Equal(t, one, six)
		require.Greater(t, len(six), 9)
		sort.Strings(six)
		for k := 1; k < len(six); k++ {
			require.NotEqual(t, six[k-1], six[k], "no hit twice")
		}
	})
}

// TestClusterWritesAndGetsGoToThePrimary: writes coordinated by any node
// land on each shard's primary (wherever it is), realtime gets read from
// it, and a dynamic field added on one node's primary is committed before
// the write is acknowledged and reaches every node's mapping.
func TestClusterWritesAndGetsGoToThePrimary(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	require.NoError(t, tc.nodes["n1"].CreateIndex(ctx, "w", IndexSettings{NumberOfShards: 3}, nil))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	var ops []Op
	for k := range 60 {
		ops = append(ops, Op{Type: OpIndex, Index: "w", ID: fmt.Sprint("d", k), Source: json.RawMessage(fmt.Sprintf(`{"n":%d,"tag%d":"x"}`, k, k%3))})
	}
	res, err := tc.nodes["n2"].Bulk(ctx, ops, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
		require.Equal(t, "created", r.Result)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		for _, f := range []string{"tag0", "tag1", "tag2"} {
			require.Eventually(t, func() bool { return tc.nodes[id].Fields([]string{"w"}).FieldType(f) == "text" }, 10e9, 1e6, "node %s field %s", id, f)
		}
		d, err := tc.nodes[id].Get(ctx, "w", "d7", "")
		require.NoError(t, err)
		require.JSONEq(t, `{"n":7,"tag1":"x"}`, string(d.Source))
		_, err = tc.nodes[id].Get(ctx, "w", "nope", "")
		require.ErrorIs(t, err, ErrDocumentNotFound)
	}
	// Versions and conflicts cross the fabric as they are.
	res, err = tc.nodes["n3"].Bulk(ctx, []Op{
		{Type: OpCreate, Index: "w", ID: "d7", Source: json.RawMessage(`{"n":1}`)},
		{Type: OpUpdate, Index: "w", ID: "d8", Update: &UpdateSpec{Doc: json.RawMessage(`{"m":1}`)}},
		{Type: OpIndex, Index: "w", ID: "d9", Source: json.RawMessage(`{"n":"not a number"}`)},
	}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrVersionConflict)
	require.Equal(t, 409, res[0].Status)
	require.NoError(t, res[1].Err)
	require.Equal(t, int64(2), res[1].Version)
	require.ErrorIs(t, res[2].Err, index.ErrDocParse)
	inf, err := tc.nodes["n1"].Index("w")
	require.NoError(t, err)
	require.Equal(t, uint64(60), inf.DocsCount, "document counts are gathered from every node")
}

// loadSampleIndex creates index name with shards shards (no replicas) and
// the sample mapping through n1, waits until every node has opened its
// copies, and loads the sample documents; it returns their ids.
func (tc *testCluster) loadSampleIndex(t *testing.T, name string, shards int) []string {
	t.Helper()
	require.NoError(t, tc.nodes["n1"].CreateIndex(context.Background(), name, IndexSettings{NumberOfShards: shards}, sampleMapping(t)))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	ids, sources := sampleDocs(t)
	bulkIndex(t, tc.nodes["n1"], name, ids, sources)
	return ids
}

// docOn is one of ids whose shard's primary is on node.
func (tc *testCluster) docOn(t *testing.T, name, node string, ids []string) string {
	t.Helper()
	ix, err := tc.nodes["n1"].meta.View().Index(name)
	require.NoError(t, err)
	for _, id := range ids {
		if p, _ := ix.Shards[ShardFor(id, "", len(ix.Shards))].Primary(); p.NodeID == node {
			return id
		}
	}
	t.Fatalf("no document of %s has its primary on %s", name, node)
	return ""
}

// TestClusterSearchWithDeadNodeGivesPartialResults: a node that dies takes
// its shards out of searches, which answer from the others with the failed
// shards counted, instead of waiting for it.
func TestClusterSearchWithDeadNodeGivesPartialResults(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	ids := tc.loadSampleIndex(t, "p", 6)
	all := tc.search(t, "n1", []string{"p"}, `{"query":{"match_all":{}}}`)
	require.Equal(t, uint64(len(ids)), all.Total)

	// The node dies; the shard table still says it is live (failure
	// detection has not noticed yet): its shards fail fast.
	tc.net.Kill("n3")
	res := tc.search(t, "n1", []string{"p"}, `{"query":{"match_all":{}},"timeout":"5s"}`)
	require.Equal(t, 6, res.Status.Total)
	require.Equal(t, 2, res.Status.Failed)
	require.Len(t, res.Failures, 2)
	require.Less(t, res.Total, all.Total)
	require.Positive(t, res.Total)
	// Once the cluster knows, the node's shards are skipped outright.
	tc.mc.setLive("n3", false)
	res = tc.search(t, "n2", []string{"p"}, `{"query":{"match":{"body":"linux"}}}`)
	require.Equal(t, 2, res.Status.Failed)
	for _, f := range res.Failures {
		require.ErrorIs(t, f.Err, ErrUnavailable)
	}
	// Writes to its shards fail with 503 once their wait for a primary ends.
	wctx, cancel := context.WithTimeout(ctx, 300e6)
	defer cancel()
	onDead := tc.docOn(t, "p", "n3", ids)
	out, err := tc.nodes["n1"].Bulk(wctx, []Op{{Type: OpIndex, Index: "p", ID: onDead, Source: json.RawMessage(`{}`)}}, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	require.Equal(t, 503, out[0].Status, "%v", out[0].Err)
}

// TestClusterReadsReachARestartedNode: a node's process restarts behind
// the others' backs (the shard table never marked it gone, as when it
// comes back before failure detection notices). The connections the
// other nodes pooled to its old process are broken; the first search and
// realtime get through them still find every shard and document, on a
// connection dialled to the new process, instead of failing n3's shards.
func TestClusterReadsReachARestartedNode(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	ids := tc.loadSampleIndex(t, "r", 6)
	onN3 := tc.docOn(t, "r", "n3", ids)
	all := tc.search(t, "n1", []string{"r"}, `{"query":{"match_all":{}}}`)
	require.Equal(t, uint64(len(ids)), all.Total)
	_, err := tc.nodes["n2"].Get(ctx, "r", onN3, "")
	require.NoError(t, err)
	require.Positive(t, tc.peers["n1"].callsTo("n3", methodSearchQuery))
	require.Positive(t, tc.peers["n2"].callsTo("n3", methodMget), "n2 holds a connection to n3")

	tc.stop("n3")
	tc.start("n3").awaitOpen(t)

	res := tc.search(t, "n1", []string{"r"}, `{"query":{"match_all":{}},"timeout":"5s"}`)
	require.Zero(t, res.Status.Failed, "%v", res.Failures)
	require.Equal(t, all.Total, res.Total)
	d, err := tc.nodes["n2"].Get(ctx, "r", onN3, "")
	require.NoError(t, err)
	require.Equal(t, onN3, d.ID)
}

// TestSearchRoutingReachesOnlyRoutedShards: a search with routing values
// searches only the shards they route to (over every node), so documents
// routed elsewhere are not found and _shards counts those shards only.
func TestSearchRoutingReachesOnlyRoutedShards(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	require.NoError(t, tc.nodes["n1"].CreateIndex(ctx, "r", IndexSettings{NumberOfShards: 6}, nil))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	// Two routing values on different shards, a document under each, and
	// one document per shard without routing.
	a, b := "alpha", ""
	for _, c := range []string{"beta", "gamma", "delta", "epsilon", "zeta"} {
		if ShardFor("", c, 6) != ShardFor("", a, 6) {
			b = c
			break
		}
	}
	require.NotEmpty(t, b)
	ops := []Op{
		{Type: OpIndex, Index: "r", ID: "ra", Routing: a, Source: json.RawMessage(`{"k":"x"}`)},
		{Type: OpIndex, Index: "r", ID: "rb", Routing: b, Source: json.RawMessage(`{"k":"x"}`)},
	}
	for k := 0; k < 60; k++ {
		ops = append(ops, Op{Type: OpIndex, Index: "r", ID: fmt.Sprint("d", k), Source: json.RawMessage(`{"k":"x"}`)})
	}
	res, err := tc.nodes["n2"].Bulk(ctx, ops, WriteOptions{Refresh: RefreshTrue})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	count := func(routing string) *SearchResult {
		srch, err := esdsl.ParseSearch([]byte(`{"size":100,"query":{"match":{"k":"x"}}}`), map[string][]string{"routing": {routing}}, tc.nodes["n1"].Fields([]string{"r"}))
		require.NoError(t, err)
		out, err := tc.nodes["n1"].Search(ctx, []string{"r"}, srch)
		require.NoError(t, err)
		return out
	}
	onA := count(a)
	require.Equal(t, 1, onA.Status.Total, "one shard searched")
	var ids []string
	for _, h := range onA.Hits {
		ids = append(ids, h.ID)
		require.Equal(t, ShardFor(h.ID, "", 6) == ShardFor("", a, 6) || h.ID == "ra", true, h.ID)
	}
	require.Contains(t, ids, "ra")
	require.NotContains(t, ids, "rb")
	both := count(a + "," + b)
	require.Equal(t, 2, both.Status.Total)
	require.Greater(t, both.Total, onA.Total)
	all := count("")
	require.Equal(t, 6, all.Status.Total)
	require.EqualValues(t, 62, all.Total)
}

// TestOlderViewDeletesNoCopy: a view older than the one that assigned a
// copy (as a node replaying the cluster's log after a restart goes
// through, where the index does not exist yet) neither closes nor deletes
// it; a newer view without it does.
func TestOlderViewDeletesNoCopy(t *testing.T) {
	tc := newTestCluster(t, "n1")
	n := tc.nodes["n1"]
	require.NoError(t, n.CreateIndex(context.Background(), "keep", IndexSettings{NumberOfShards: 1}, sampleMapping(t)))
	res, err := n.Bulk(context.Background(), []Op{{Type: OpIndex, Index: "keep", ID: "1", Source: json.RawMessage(`{"a":1}`)}}, WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	now := n.meta.View()
	ix, err := now.Index("keep")
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	dir := filepath.Join(n.store.dir, p.AllocationID)

	older := &View{Version: 1, ClusterUUID: now.ClusterUUID, LocalNode: "n1", Nodes: now.Nodes, Indices: map[string]*IndexView{}}
	require.NoError(t, n.store.Reconcile(context.Background(), older))
	require.DirExists(t, dir, "a view older than the copy's assignment deleted it")
	_, open := n.store.copy(p.AllocationID)
	require.True(t, open, "a view older than the copy's assignment closed it")

	newer := &View{Version: now.Version + 1, ClusterUUID: now.ClusterUUID, LocalNode: "n1", Nodes: now.Nodes, Indices: map[string]*IndexView{}}
	require.NoError(t, n.store.Reconcile(context.Background(), newer))
	require.NoDirExists(t, dir, "a newer view without the copy keeps it")
}

// idsOnNodes returns, for each node, n new document ids that route to
// shards of name whose primary is on that node.
func idsOnNodes(t *testing.T, tc *testCluster, name string, n int, nodes ...string) map[string][]string {
	t.Helper()
	ix, err := tc.mc.node("x").View().Index(name)
	require.NoError(t, err)
	out := map[string][]string{}
	for k := 0; len(out) < len(nodes) || func() bool {
		for _, node := range nodes {
			if len(out[node]) < n {
				return true
			}
		}
		return false
	}(); k++ {
		id := fmt.Sprint("new-", k)
		p, _ := ix.Shards[ShardFor(id, "", ix.NumberOfShards)].Primary()
		if slices.Contains(nodes, p.NodeID) && len(out[p.NodeID]) < n {
			out[p.NodeID] = append(out[p.NodeID], id)
		}
	}
	return out
}

// sixAndOne starts nodes n1, n2 and n3 with the sample documents in the
// index "six" (6 shards) and in "one" (1 shard), loaded through n2.
func sixAndOne(t *testing.T) *testCluster {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	for name, shards := range map[string]int{"six": 6, "one": 1} {
		require.NoError(t, tc.nodes["n1"].CreateIndex(ctx, name, IndexSettings{NumberOfShards: shards}, sampleMapping(t)))
	}
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	ids, sources := sampleDocs(t)
	for _, name := range []string{"six", "one"} {
		bulkIndex(t, tc.nodes["n2"], name, ids, sources)
	}
	return tc
}

// addQueryTerms writes new documents full of the terms "linux kernel" to
// "six" (on a shard of n1 and one of n2) and "one", through n3, which
// changes every score of a search for them, and returns their ids.
func addQueryTerms(t *testing.T, tc *testCluster) []string {
	news := idsOnNodes(t, tc, "six", 3, "n1", "n2")
	var newIDs []string
	var newSources []json.RawMessage
	for _, node := range []string{"n1", "n2"} {
		for _, id := range news[node] {
			newIDs = append(newIDs, id)
			newSources = append(newSources, json.RawMessage(`{"subject":"new","body":"linux kernel linux kernel linux"}`))
		}
	}
	for _, name := range []string{"six", "one"} {
		bulkIndex(t, tc.nodes["n3"], name, newIDs, newSources)
	}
	return newIDs
}

// TestClusterKeepsStatisticsUntilAShardChanges: a search repeated while
// no shard changes skips the statistics phase and ranks exactly like one
// shard; after writes to a shard on the coordinating node and to one on
// another node it still does, without a statistics phase: the changed
// copies answer the query phase stale, with their fresh statistics, and
// the query phase runs again. Each phase sends one message per node.
func TestClusterKeepsStatisticsUntilAShardChanges(t *testing.T) {
	tc := sixAndOne(t)
	peers := tc.peers["n1"]
	type counts struct{ stats, query, fetch int }
	calls := func() counts {
		return counts{peers.callsTo("", methodSearchStats), peers.callsTo("", methodSearchQuery), peers.callsTo("", methodSearchFetch)}
	}
	body := `{"query":{"match":{"body":"linux kernel"}},"size":10,"sort":["_score",{"_id":"asc"}]}`
	search := func(what string) counts {
		before := calls()
		six := tc.search(t, "n1", []string{"six"}, body)
		after := calls()
		one := tc.search(t, "n1", []string{"one"}, body)
		require.Zero(t, six.Status.Failed, "%s: %v", what, six.Status.Errors)
		require.Positive(t, one.Total)
		sameHits(t, one.SearchResult, six.SearchResult, what)
		return counts{after.stats - before.stats, after.query - before.query, after.fetch - before.fetch}
	}
	first := search("first search")
	require.Equal(t, 2, first.stats, "one statistics message to each other node")
	require.Equal(t, 2, first.query, "one query message to each other node")
	require.LessOrEqual(t, first.fetch, 2, "at most one fetch message to each other node")
	again := search("repeated")
	require.Zero(t, again.stats, "statistics kept")
	require.Equal(t, 2, again.query)

	addQueryTerms(t, tc)
	changed := search("after writes")
	require.Zero(t, changed.stats, "the changed copies sent their statistics in the query phase")
	require.Equal(t, 4, changed.query, "the query phase ran again")
	settled := search("after writes, repeated")
	require.Zero(t, settled.stats)
	require.Equal(t, 2, settled.query, "the fresh statistics were kept")
}

// TestClusterPointInTimeKeepsNoStatistics: a search of a point in time
// neither uses the statistics kept for the same request nor keeps its own
// (a pinned view's contents are no generation of its copy's): after
// writes it runs its own statistics phase over the pinned views, ranks
// exactly like one pinned shard, and leaves the cache as it was.
func TestClusterPointInTimeKeepsNoStatistics(t *testing.T) {
	tc := sixAndOne(t)
	ctx := context.Background()
	n1 := tc.nodes["n1"]
	peers := tc.peers["n1"]
	body := `{"query":{"match":{"body":"linux kernel"}},"size":10,"sort":["_score",{"_id":"asc"}]}`
	tc.search(t, "n1", []string{"six"}, body) // keeps the request's statistics
	kept := func() (int, int64) {
		n1.stats.mu.Lock()
		defer n1.stats.mu.Unlock()
		return n1.stats.lru.Len(), n1.stats.used
	}
	entries, used := kept()
	require.Positive(t, entries)
	pits := map[string]PIT{}
	for _, name := range []string{"six", "one"} {
		pit, err := n1.OpenPIT(ctx, []string{name}, time.Minute)
		require.NoError(t, err)
		pits[name] = pit
		defer func() { _, _ = n1.ClosePIT(ctx, pit) }()
	}
	newIDs := addQueryTerms(t, tc)
	pitSearch := func(name string) *SearchResult {
		srch, err := esdsl.ParseSearch([]byte(body), nil, n1.Fields([]string{name}))
		require.NoError(t, err)
		srch.SetPointInTime(pits[name].Encode(), time.Minute)
		res, err := n1.Search(ctx, []string{name}, srch)
		require.NoError(t, err)
		require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
		return res
	}
	statsBefore := peers.callsTo("", methodSearchStats)
	six := pitSearch("six")
	require.Positive(t, peers.callsTo("", methodSearchStats)-statsBefore, "the point in time ran its own statistics phase")
	one := pitSearch("one")
	sameHits(t, one.SearchResult, six.SearchResult, "pinned views")
	for _, h := range six.Hits {
		require.NotContains(t, newIDs, h.ID, "a point in time sees no later write")
	}
	gotEntries, gotUsed := kept()
	require.Equal(t, entries, gotEntries, "a point in time keeps no statistics")
	require.Equal(t, used, gotUsed)
}

// TestClusterSearchMovesBatchedShardsToAnotherCopy: two shards whose
// preferred copies are on one node share each phase's message; when that
// node dies (before the cluster notices), both move to their other
// copies and the search loses nothing.
func TestClusterSearchMovesBatchedShardsToAnotherCopy(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	tc := newTestCluster(t, nodes...)
	ctx := context.Background()
	n1 := tc.nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "m", IndexSettings{NumberOfShards: 6}, sampleMapping(t)))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	ix, err := n1.meta.View().Index("m")
	require.NoError(t, err)
	var onN2 []int
	for num, sh := range ix.Shards {
		if p, _ := sh.Primary(); p.NodeID == "n2" {
			tc.mc.addReplica(t, "m", num, "n3")
			onN2 = append(onN2, num)
		}
	}
	require.Len(t, onN2, 2)
	awaitInSync(t, tc, "m", 1)
	require.Eventually(t, func() bool {
		ix, _ := tc.mc.node("x").View().Index("m")
		for _, num := range onN2 {
			active := 0
			for _, c := range ix.Shards[num].Copies {
				if c.Started && slices.Contains(ix.Shards[num].InSync, c.AllocationID) {
					active++
				}
			}
			if active < 2 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)
	ids, sources := sampleDocs(t)
	bulkIndex(t, n1, "m", ids, sources)

	tc.net.Kill("n2")
	peers := tc.peers["n1"]
	res := tc.search(t, "n1", []string{"m"}, `{"query":{"match":{"body":"the"}},"size":20,"timeout":"10s"}`)
	require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
	require.Equal(t, 6, res.Status.Total)
	all := tc.search(t, "n3", []string{"m"}, `{"query":{"match":{"body":"the"}},"size":20}`)
	sameHits(t, all.SearchResult, res.SearchResult, "after n2 died")
	require.Equal(t, 2, peers.callsTo("n2", methodSearchStats), "both shards of n2 were in one message, sent once more when its connection broke (callRead)")
	require.Zero(t, peers.callsTo("n2", methodSearchQuery), "the shards moved to n3 for good")
	for _, h := range res.Hits {
		require.NotEmpty(t, h.Fields[index.SourceField])
	}
}

// TestClusterQueryPhasePrefetchesTheLikelyPage: each other node loads the
// sources of its best hits for its share of the first page (with a
// margin: 5 of a top 10 over two of six shards) in the query phase; a page
// that takes no more than those from it needs no fetch message, one that
// takes more asks for the rest only.
func TestClusterQueryPhasePrefetchesTheLikelyPage(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "p", IndexSettings{NumberOfShards: 6}, nil))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	on := idsOnNodes(t, tc, "p", 12, "n1", "n2", "n3")
	var ops []Op
	add := func(k string, ids []string) {
		for _, id := range ids {
			ops = append(ops, Op{Type: OpIndex, Index: "p", ID: id, Source: json.RawMessage(`{"k":"` + k + `","id":"` + id + `"}`)})
		}
	}
	// Page a: 3 + 4 + 3 documents on n1, n2, n3; page b: 1 + 8 + 1.
	add("a", on["n1"][:3])
	add("a", on["n2"][:4])
	add("a", on["n3"][:3])
	add("b", on["n1"][3:4])
	add("b", on["n2"][4:12])
	add("b", on["n3"][3:4])
	res, err := n1.Bulk(ctx, ops, WriteOptions{Refresh: RefreshTrue})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	peers := tc.peers["n1"]
	page := func(k string) (fetchesN2, fetchesN3 int) {
		f2, f3 := peers.callsTo("n2", methodSearchFetch), peers.callsTo("n3", methodSearchFetch)
		out := tc.search(t, "n1", []string{"p"}, `{"query":{"term":{"k":"`+k+`"}},"size":10,"sort":[{"_id":"asc"}]}`)
		require.Zero(t, out.Status.Failed, "%v", out.Status.Errors)
		require.Len(t, out.Hits, 10)
		for _, h := range out.Hits {
			require.JSONEq(t, `{"k":"`+k+`","id":"`+h.ID+`"}`, h.Fields[index.SourceField].(string))
		}
		return peers.callsTo("n2", methodSearchFetch) - f2, peers.callsTo("n3", methodSearchFetch) - f3
	}
	f2, f3 := page("a")
	require.Zero(t, f2, "n2's 4 hits came with its query phase")
	require.Zero(t, f3)
	f2, f3 = page("b")
	require.Equal(t, 1, f2, "n2's 8 hits: 5 came with the query phase, the rest in a fetch")
	require.Zero(t, f3)
}

// TestClusterUnscoredSearchHasNoStatisticsPhase: a search sorted by a
// field, or with aggregations only, sends no statistics message, and gives
// the hits and aggregations one shard gives.
func TestClusterUnscoredSearchHasNoStatisticsPhase(t *testing.T) {
	tc := sixAndOne(t)
	n1 := tc.nodes["n1"]
	peers := tc.peers["n1"]
	stats := func(body string) int {
		before := peers.callsTo("", methodSearchStats)
		one := tc.search(t, "n1", []string{"one"}, body)
		six := tc.search(t, "n1", []string{"six"}, body)
		require.Zero(t, six.Status.Failed, "%v", six.Status.Errors)
		sameSorted(t, one.SearchResult, six.SearchResult, body)
		srch, err := esdsl.ParseSearch([]byte(body), nil, n1.Fields([]string{"one"}))
		require.NoError(t, err)
		a, err := srch.RenderAggs(one.Aggs)
		require.NoError(t, err)
		b, err := srch.RenderAggs(six.Aggs)
		require.NoError(t, err)
		require.Equal(t, a, b, body)
		return peers.callsTo("", methodSearchStats) - before
	}
	require.Zero(t, stats(`{"query":{"match":{"body":"linux kernel"}},"size":15,"sort":[{"date":"desc"},{"_id":"asc"}]}`))
	require.Zero(t, stats(`{"query":{"match":{"body":"linux"}},"size":0,"aggs":{"l":{"terms":{"field":"label"}}}}`))
	require.Equal(t, 2, stats(`{"query":{"match":{"body":"linux kernel"}},"size":15,"sort":["_score",{"_id":"asc"}]}`), "scored: one message to each other node")
}

// TestClusterSearchTimeoutLeavesASlowNodeOut: a node that does not answer
// within the search's timeout has its shards (sharing one message) counted
// as failed, and the search answers with the others' hits, their sources
// fetched, and timed out.
func TestClusterSearchTimeoutLeavesASlowNodeOut(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "s", IndexSettings{NumberOfShards: 6}, sampleMapping(t)))
	for _, n := range tc.nodes {
		n.awaitOpen(t)
	}
	ids, sources := sampleDocs(t)
	bulkIndex(t, n1, "s", ids, sources)
	body := `{"query":{"match":{"body":"the"}},"size":10,"sort":[{"date":"desc"}],"timeout":"300ms"}`
	all := tc.search(t, "n1", []string{"s"}, body)
	require.False(t, all.TimedOut)

	remove := tc.net.SetDelay("n1", "n3", 10*time.Second)
	defer remove()
	// Sorted by a field (no statistics phase), then scored (the slow
	// node's statistics do not come either).
	for _, body := range []string{body, `{"query":{"match":{"body":"the"}},"size":10,"timeout":"300ms"}`} {
		res := tc.search(t, "n1", []string{"s"}, body)
		require.True(t, res.TimedOut, body)
		require.Equal(t, 6, res.Status.Total)
		require.Equal(t, 2, res.Status.Failed, "n3's two shards: %v", res.Status.Errors)
		require.Len(t, res.Failures, 2)
		for _, f := range res.Failures {
			require.Equal(t, "n3", f.Node)
		}
		require.Positive(t, res.Total)
		require.Less(t, res.Total, all.Total)
		require.Len(t, res.Hits, 10)
		for _, h := range res.Hits {
			require.NotEmpty(t, h.Fields[index.SourceField], "the page's hits were fetched after the timeout")
		}
	}
}

// TestRecoveryRateFollowsTheCluster: the recovery throttle is the
// cluster's indices.recovery.max_bytes_per_sec once set (0 included), and
// the node's own configuration otherwise.
func TestRecoveryRateFollowsTheCluster(t *testing.T) {
	tc := newTestCluster(t, "n1")
	st := tc.nodes["n1"].store
	require.Equal(t, testConfig().RecoveryMaxBytesPerSec, st.recoveryRate())
	for _, rate := range []int64{0, 5 << 20} {
		require.NoError(t, tc.mc.update(func(v *View) error { v.RecoveryMaxBytesPerSec = &rate; return nil }))
		require.Equal(t, rate, st.recoveryRate())
	}
	require.NoError(t, tc.mc.update(func(v *View) error { v.RecoveryMaxBytesPerSec = nil; return nil }))
	require.Equal(t, testConfig().RecoveryMaxBytesPerSec, st.recoveryRate())
}
