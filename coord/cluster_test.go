package coord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// TestClusterRanksLikeOneShard: six shards spread over three nodes, searched
// through a node that holds only some of them, rank exactly like one shard
// holding every document — every acceptance query, two pages, with sources
// fetched only for the final page — and aggregate, search_after and scroll
// the same way.
func TestClusterRanksLikeOneShard(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.Nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "six", coord.IndexSettings{NumberOfShards: 6}, coordtest.SampleMapping(t)))
	require.NoError(t, n1.CreateIndex(ctx, "one", coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	ix, err := n1.Meta.State().Index("six")
	require.NoError(t, err)
	perNode := map[string]int{}
	for _, sh := range ix.Shards {
		p, _ := sh.Primary()
		perNode[p.NodeID]++
	}
	require.Equal(t, map[string]int{"n1": 2, "n2": 2, "n3": 2}, perNode)

	ids, sources := coordtest.SampleDocs(t)
	for _, name := range []string{"six", "one"} {
		coordtest.BulkIndex(t, tc.Nodes["n2"], name, ids, sources) // routed from n2 to every primary
		coordtest.BulkIndex(t, tc.Nodes["n3"], name, ids[:30], sources[:30])
	}
	for name, q := range coordtest.QueryBodies(t) {
		t.Run(name, func(t *testing.T) {
			for _, page := range []string{`"from":0,"size":10`, `"from":10,"size":10`} {
				body := fmt.Sprintf(`{"query":%s,%s,"sort":["_score",{"_id":"asc"}]}`, q, page)
				one := tc.Search(t, "n1", []string{"one"}, body)
				six := tc.Search(t, "n1", []string{"six"}, body)
				require.Zero(t, six.Status.Failed, "%v", six.Status.Errors)
				coordtest.SameHits(t, one.SearchResult, six.SearchResult, page)
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
			n := tc.Nodes["n3"]
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
		coordtest.RequireSameJSON(t, one, six, "aggregations")
	})
	t.Run("post_filter", func(t *testing.T) {
		// The data nodes translate post_filter again from the request
		// (esdsl.FromWire): over six shards on three nodes the hits and
		// total are those of the query and the filter together, the
		// aggregations those of the query alone.
		q, pf := `{"match":{"body":"the"}}`, `{"term":{"label":"spam"}}`
		aggs := `"aggs":{"labels":{"terms":{"field":"label","shard_size":100}}}`
		n := tc.Nodes["n3"]
		run := func(name, body string) (*coord.SearchResult, map[string]any) {
			srch, err := esdsl.ParseSearch([]byte(body), nil, n.Fields([]string{name}))
			require.NoError(t, err, body)
			res, err := n.Search(ctx, []string{name}, srch)
			require.NoError(t, err, body)
			require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
			out, err := srch.RenderAggs(res.Aggs)
			require.NoError(t, err)
			raw, err := json.Marshal(out)
			require.NoError(t, err)
			var v map[string]any
			require.NoError(t, json.Unmarshal(raw, &v))
			return res, v
		}
		page := `"size":50,"sort":[{"_id":"asc"}]`
		filtered, filteredAggs := run("six", `{"query":`+q+`,"post_filter":`+pf+`,`+aggs+`,`+page+`}`)
		both, _ := run("six", `{"query":{"bool":{"must":`+q+`,"filter":`+pf+`}},`+page+`}`)
		_, plainAggs := run("six", `{"query":`+q+`,"size":0,`+aggs+`}`)
		one, _ := run("one", `{"query":`+q+`,"post_filter":`+pf+`,`+aggs+`,`+page+`}`)
		require.Positive(t, both.Total)
		require.Equal(t, both.Total, filtered.Total)
		require.Equal(t, one.Total, filtered.Total)
		coordtest.SameSorted(t, both.SearchResult, filtered.SearchResult, "post_filter vs bool filter")
		coordtest.SameSorted(t, one.SearchResult, filtered.SearchResult, "one shard vs six")
		coordtest.RequireSameJSON(t, plainAggs, filteredAggs, "aggregations")
		require.Greater(t, len(filteredAggs["labels"].(map[string]any)["buckets"].([]any)), 1, "labels other than spam are counted")
	})
	t.Run("matched_queries", func(t *testing.T) {
		// Named queries are tested on the final page's hits: in place on
		// local copies, in the fetch phase on remote ones (even with
		// _source off, which otherwise needs no fetch).
		for _, src := range []string{"true", "false"} {
			body := `{"query":{"bool":{"should":[{"match":{"body":{"query":"linux","_name":"l"}}},{"match":{"subject":{"query":"re","_name":"r"}}}]}},
				"size":30,"sort":[{"_id":"asc"}],"_source":` + src + `}`
			one, six := tc.Search(t, "n3", []string{"one"}, body), tc.Search(t, "n3", []string{"six"}, body)
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
			one, six := tc.Search(t, "n2", []string{"one"}, body), tc.Search(t, "n2", []string{"six"}, body)
			coordtest.SameSorted(t, one.SearchResult, six.SearchResult, body)
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
			n := tc.Nodes["n2"]
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
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	require.NoError(t, tc.Nodes["n1"].CreateIndex(ctx, "w", coord.IndexSettings{NumberOfShards: 3}, nil))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	var ops []vocab.Op
	for k := range 60 {
		ops = append(ops, vocab.Op{Type: vocab.OpIndex, Index: "w", ID: fmt.Sprint("d", k), Source: json.RawMessage(fmt.Sprintf(`{"n":%d,"tag%d":"x"}`, k, k%3))})
	}
	res, err := tc.Nodes["n2"].Bulk(ctx, ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
		require.Equal(t, "created", r.Result)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		for _, f := range []string{"tag0", "tag1", "tag2"} {
			require.Eventually(t, func() bool { return tc.Nodes[id].Fields([]string{"w"}).FieldType(f) == "text" }, 10e9, 1e6, "node %s field %s", id, f)
		}
		d, err := tc.Nodes[id].Get(ctx, "w", "d7", "")
		require.NoError(t, err)
		require.JSONEq(t, `{"n":7,"tag1":"x"}`, string(d.Source))
		_, err = tc.Nodes[id].Get(ctx, "w", "nope", "")
		require.ErrorIs(t, err, vocab.ErrDocumentNotFound)
	}
	// Versions and conflicts cross the fabric as they are.
	res, err = tc.Nodes["n3"].Bulk(ctx, []vocab.Op{
		{Type: vocab.OpCreate, Index: "w", ID: "d7", Source: json.RawMessage(`{"n":1}`)},
		{Type: vocab.OpUpdate, Index: "w", ID: "d8", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"m":1}`)}},
		{Type: vocab.OpIndex, Index: "w", ID: "d9", Source: json.RawMessage(`{"n":"not a number"}`)},
	}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, vocab.ErrVersionConflict)
	require.NoError(t, res[1].Err)
	require.Equal(t, int64(2), res[1].Version)
	require.ErrorIs(t, res[2].Err, index.ErrDocParse)
	inf, err := tc.Nodes["n1"].Index("w")
	require.NoError(t, err)
	require.Equal(t, uint64(60), inf.DocsCount, "document counts are gathered from every node")
}

// TestClusterSearchWithDeadNodeGivesPartialResults: a node that dies takes
// its shards out of searches, which answer from the others with the failed
// shards counted, instead of waiting for it.
func TestClusterSearchWithDeadNodeGivesPartialResults(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	ids := tc.LoadSampleIndex(t, "p", 6)
	all := tc.Search(t, "n1", []string{"p"}, `{"query":{"match_all":{}}}`)
	require.Equal(t, uint64(len(ids)), all.Total)

	// The node dies; the shard table still says it is live (failure
	// detection has not noticed yet): its shards fail fast.
	tc.Net.Kill("n3")
	res := tc.Search(t, "n1", []string{"p"}, `{"query":{"match_all":{}},"timeout":"5s"}`)
	require.Equal(t, 6, res.Status.Total)
	require.Equal(t, 2, res.Status.Failed)
	require.Len(t, res.Failures, 2)
	require.Less(t, res.Total, all.Total)
	require.Positive(t, res.Total)
	// Once the cluster knows, the node's shards are skipped outright.
	tc.MC.SetLive("n3", false)
	res = tc.Search(t, "n2", []string{"p"}, `{"query":{"match":{"body":"linux"}}}`)
	require.Equal(t, 2, res.Status.Failed)
	for _, f := range res.Failures {
		require.ErrorIs(t, f.Err, vocab.ErrUnavailable)
	}
	// Writes to its shards fail with 503 once their wait for a primary ends.
	wctx, cancel := context.WithTimeout(ctx, 300e6)
	defer cancel()
	onDead := tc.DocOn(t, "p", "n3", ids)
	out, err := tc.Nodes["n1"].Bulk(wctx, []vocab.Op{{Type: vocab.OpIndex, Index: "p", ID: onDead, Source: json.RawMessage(`{}`)}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.ErrorIs(t, out[0].Err, vocab.ErrUnavailable)
}

// TestClusterReadsReachARestartedNode: a node's process restarts behind
// the others' backs (the shard table never marked it gone, as when it
// comes back before failure detection notices). The connections the
// other nodes pooled to its old process are broken; the first search and
// realtime get through them still find every shard and document, on a
// connection dialled to the new process, instead of failing n3's shards.
func TestClusterReadsReachARestartedNode(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	ids := tc.LoadSampleIndex(t, "r", 6)
	onN3 := tc.DocOn(t, "r", "n3", ids)
	all := tc.Search(t, "n1", []string{"r"}, `{"query":{"match_all":{}}}`)
	require.Equal(t, uint64(len(ids)), all.Total)
	_, err := tc.Nodes["n2"].Get(ctx, "r", onN3, "")
	require.NoError(t, err)
	require.Positive(t, tc.Peers["n1"].CallsTo("n3", shard.MethodSearchQuery))
	require.Positive(t, tc.Peers["n2"].CallsTo("n3", shard.MethodMget), "n2 holds a connection to n3")

	tc.Stop("n3")
	tc.Start("n3").AwaitOpen(t)

	res := tc.Search(t, "n1", []string{"r"}, `{"query":{"match_all":{}},"timeout":"5s"}`)
	require.Zero(t, res.Status.Failed, "%v", res.Failures)
	require.Equal(t, all.Total, res.Total)
	d, err := tc.Nodes["n2"].Get(ctx, "r", onN3, "")
	require.NoError(t, err)
	require.Equal(t, onN3, d.ID)
}

// TestSearchRoutingReachesOnlyRoutedShards: a search with routing values
// searches only the shards they route to (over every node), so documents
// routed elsewhere are not found and _shards counts those shards only.
func TestSearchRoutingReachesOnlyRoutedShards(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	require.NoError(t, tc.Nodes["n1"].CreateIndex(ctx, "r", coord.IndexSettings{NumberOfShards: 6}, nil))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	// Two routing values on different shards, a document under each, and
	// one document per shard without routing.
	a, b := "alpha", ""
	for _, c := range []string{"beta", "gamma", "delta", "epsilon", "zeta"} {
		if coord.ShardFor("", c, 6) != coord.ShardFor("", a, 6) {
			b = c
			break
		}
	}
	require.NotEmpty(t, b)
	ops := []vocab.Op{
		{Type: vocab.OpIndex, Index: "r", ID: "ra", Routing: a, Source: json.RawMessage(`{"k":"x"}`)},
		{Type: vocab.OpIndex, Index: "r", ID: "rb", Routing: b, Source: json.RawMessage(`{"k":"x"}`)},
	}
	for k := 0; k < 60; k++ {
		ops = append(ops, vocab.Op{Type: vocab.OpIndex, Index: "r", ID: fmt.Sprint("d", k), Source: json.RawMessage(`{"k":"x"}`)})
	}
	res, err := tc.Nodes["n2"].Bulk(ctx, ops, coord.WriteOptions{Refresh: coord.RefreshTrue})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	count := func(routing string) *coord.SearchResult {
		srch, err := esdsl.ParseSearch([]byte(`{"size":100,"query":{"match":{"k":"x"}}}`), map[string][]string{"routing": {routing}}, tc.Nodes["n1"].Fields([]string{"r"}))
		require.NoError(t, err)
		out, err := tc.Nodes["n1"].Search(ctx, []string{"r"}, srch)
		require.NoError(t, err)
		return out
	}
	onA := count(a)
	require.Equal(t, 1, onA.Status.Total, "one shard searched")
	var ids []string
	for _, h := range onA.Hits {
		ids = append(ids, h.ID)
		require.Equal(t, coord.ShardFor(h.ID, "", 6) == coord.ShardFor("", a, 6) || h.ID == "ra", true, h.ID)
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

// idsOnNodes returns, for each node, n new document ids that route to
// shards of name whose primary is on that node.
func idsOnNodes(t *testing.T, tc *coordtest.Cluster, name string, n int, nodes ...string) map[string][]string {
	t.Helper()
	ix, err := tc.MC.Node("x").State().Index(name)
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
		p, _ := ix.Shards[coord.ShardFor(id, "", ix.NumberOfShards)].Primary()
		if slices.Contains(nodes, p.NodeID) && len(out[p.NodeID]) < n {
			out[p.NodeID] = append(out[p.NodeID], id)
		}
	}
	return out
}

// sixAndOne starts nodes n1, n2 and n3 with the sample documents in the
// index "six" (6 shards) and in "one" (1 shard), loaded through n2.
func sixAndOne(t *testing.T) *coordtest.Cluster {
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	for name, shards := range map[string]int{"six": 6, "one": 1} {
		require.NoError(t, tc.Nodes["n1"].CreateIndex(ctx, name, coord.IndexSettings{NumberOfShards: shards}, coordtest.SampleMapping(t)))
	}
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	ids, sources := coordtest.SampleDocs(t)
	for _, name := range []string{"six", "one"} {
		coordtest.BulkIndex(t, tc.Nodes["n2"], name, ids, sources)
	}
	return tc
}

// addQueryTerms writes new documents full of the terms "linux kernel" to
// "six" (on a shard of n1 and one of n2) and "one", through n3, which
// changes every score of a search for them, and returns their ids.
func addQueryTerms(t *testing.T, tc *coordtest.Cluster) []string {
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
		coordtest.BulkIndex(t, tc.Nodes["n3"], name, newIDs, newSources)
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
	peers := tc.Peers["n1"]
	type counts struct{ stats, query, fetch int }
	calls := func() counts {
		return counts{peers.CallsTo("", shard.MethodSearchStats), peers.CallsTo("", shard.MethodSearchQuery), peers.CallsTo("", shard.MethodSearchFetch)}
	}
	body := `{"query":{"match":{"body":"linux kernel"}},"size":10,"sort":["_score",{"_id":"asc"}]}`
	search := func(what string) counts {
		before := calls()
		six := tc.Search(t, "n1", []string{"six"}, body)
		after := calls()
		one := tc.Search(t, "n1", []string{"one"}, body)
		require.Zero(t, six.Status.Failed, "%s: %v", what, six.Status.Errors)
		require.Positive(t, one.Total)
		coordtest.SameHits(t, one.SearchResult, six.SearchResult, what)
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
	n1 := tc.Nodes["n1"]
	peers := tc.Peers["n1"]
	body := `{"query":{"match":{"body":"linux kernel"}},"size":10,"sort":["_score",{"_id":"asc"}]}`
	tc.Search(t, "n1", []string{"six"}, body) // keeps the request's statistics
	kept := func() (int, int64) { return coord.StatsCacheUsage(n1.Coordinator) }
	entries, used := kept()
	require.Positive(t, entries)
	pits := map[string]coord.PIT{}
	for _, name := range []string{"six", "one"} {
		pit, err := n1.OpenPIT(ctx, []string{name}, time.Minute)
		require.NoError(t, err)
		pits[name] = pit
		defer func() { _, _ = n1.ClosePIT(ctx, pit) }()
	}
	newIDs := addQueryTerms(t, tc)
	pitSearch := func(name string) *coord.SearchResult {
		srch, err := esdsl.ParseSearch([]byte(body), nil, n1.Fields([]string{name}))
		require.NoError(t, err)
		srch.SetPointInTime(pits[name].Encode(), time.Minute)
		res, err := n1.Search(ctx, []string{name}, srch)
		require.NoError(t, err)
		require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
		return res
	}
	statsBefore := peers.CallsTo("", shard.MethodSearchStats)
	six := pitSearch("six")
	require.Positive(t, peers.CallsTo("", shard.MethodSearchStats)-statsBefore, "the point in time ran its own statistics phase")
	one := pitSearch("one")
	coordtest.SameHits(t, one.SearchResult, six.SearchResult, "pinned views")
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
	tc := coordtest.NewCluster(t, nodes...)
	ctx := context.Background()
	n1 := tc.Nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "m", coord.IndexSettings{NumberOfShards: 6}, coordtest.SampleMapping(t)))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	ix, err := n1.Meta.State().Index("m")
	require.NoError(t, err)
	var onN2 []int
	for num, sh := range ix.Shards {
		if p, _ := sh.Primary(); p.NodeID == "n2" {
			tc.MC.AddReplica(t, "m", num, "n3")
			onN2 = append(onN2, num)
		}
	}
	require.Len(t, onN2, 2)
	coordtest.AwaitInSync(t, tc, "m", 1)
	require.Eventually(t, func() bool {
		ix, _ := tc.MC.Node("x").State().Index("m")
		for _, num := range onN2 {
			active := 0
			for _, c := range ix.Shards[num].Copies {
				if (c.State == state.CopyStarted) && slices.Contains(ix.Shards[num].InSync, c.AllocationID) {
					active++
				}
			}
			if active < 2 {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, n1, "m", ids, sources)

	tc.Net.Kill("n2")
	peers := tc.Peers["n1"]
	res := tc.Search(t, "n1", []string{"m"}, `{"query":{"match":{"body":"the"}},"size":20,"timeout":"10s"}`)
	require.Zero(t, res.Status.Failed, "%v", res.Status.Errors)
	require.Equal(t, 6, res.Status.Total)
	all := tc.Search(t, "n3", []string{"m"}, `{"query":{"match":{"body":"the"}},"size":20}`)
	coordtest.SameHits(t, all.SearchResult, res.SearchResult, "after n2 died")
	require.Equal(t, 2, peers.CallsTo("n2", shard.MethodSearchStats), "both shards of n2 were in one message, sent once more when its connection broke (callRead)")
	require.Zero(t, peers.CallsTo("n2", shard.MethodSearchQuery), "the shards moved to n3 for good")
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
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.Nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "p", coord.IndexSettings{NumberOfShards: 6}, nil))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	on := idsOnNodes(t, tc, "p", 12, "n1", "n2", "n3")
	var ops []vocab.Op
	add := func(k string, ids []string) {
		for _, id := range ids {
			ops = append(ops, vocab.Op{Type: vocab.OpIndex, Index: "p", ID: id, Source: json.RawMessage(`{"k":"` + k + `","id":"` + id + `"}`)})
		}
	}
	// Page a: 3 + 4 + 3 documents on n1, n2, n3; page b: 1 + 8 + 1.
	add("a", on["n1"][:3])
	add("a", on["n2"][:4])
	add("a", on["n3"][:3])
	add("b", on["n1"][3:4])
	add("b", on["n2"][4:12])
	add("b", on["n3"][3:4])
	res, err := n1.Bulk(ctx, ops, coord.WriteOptions{Refresh: coord.RefreshTrue})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	peers := tc.Peers["n1"]
	page := func(k string) (fetchesN2, fetchesN3 int) {
		f2, f3 := peers.CallsTo("n2", shard.MethodSearchFetch), peers.CallsTo("n3", shard.MethodSearchFetch)
		out := tc.Search(t, "n1", []string{"p"}, `{"query":{"term":{"k":"`+k+`"}},"size":10,"sort":[{"_id":"asc"}]}`)
		require.Zero(t, out.Status.Failed, "%v", out.Status.Errors)
		require.Len(t, out.Hits, 10)
		for _, h := range out.Hits {
			require.JSONEq(t, `{"k":"`+k+`","id":"`+h.ID+`"}`, h.Fields[index.SourceField].(string))
		}
		return peers.CallsTo("n2", shard.MethodSearchFetch) - f2, peers.CallsTo("n3", shard.MethodSearchFetch) - f3
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
	n1 := tc.Nodes["n1"]
	peers := tc.Peers["n1"]
	stats := func(body string) int {
		before := peers.CallsTo("", shard.MethodSearchStats)
		one := tc.Search(t, "n1", []string{"one"}, body)
		six := tc.Search(t, "n1", []string{"six"}, body)
		require.Zero(t, six.Status.Failed, "%v", six.Status.Errors)
		coordtest.SameSorted(t, one.SearchResult, six.SearchResult, body)
		srch, err := esdsl.ParseSearch([]byte(body), nil, n1.Fields([]string{"one"}))
		require.NoError(t, err)
		a, err := srch.RenderAggs(one.Aggs)
		require.NoError(t, err)
		b, err := srch.RenderAggs(six.Aggs)
		require.NoError(t, err)
		require.Equal(t, a, b, body)
		return peers.CallsTo("", shard.MethodSearchStats) - before
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
	tc := coordtest.NewCluster(t, "n1", "n2", "n3")
	ctx := context.Background()
	n1 := tc.Nodes["n1"]
	require.NoError(t, n1.CreateIndex(ctx, "s", coord.IndexSettings{NumberOfShards: 6}, coordtest.SampleMapping(t)))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, n1, "s", ids, sources)
	body := `{"query":{"match":{"body":"the"}},"size":10,"sort":[{"date":"desc"}],"timeout":"300ms"}`
	all := tc.Search(t, "n1", []string{"s"}, body)
	require.False(t, all.TimedOut)

	remove := tc.Net.SetDelay("n1", "n3", 10*time.Second)
	defer remove()
	// Sorted by a field (no statistics phase), then scored (the slow
	// node's statistics do not come either).
	for _, body := range []string{body, `{"query":{"match":{"body":"the"}},"size":10,"timeout":"300ms"}`} {
		res := tc.Search(t, "n1", []string{"s"}, body)
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
