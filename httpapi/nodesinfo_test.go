package httpapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// GET /_nodes tells metrics from node ids as Elasticsearch does: a lone
// path part made only of metric names is metrics of every node (the
// sniffing of olivere/elastic asks GET /_nodes/http and reads
// nodes.*.http.publish_address); anything else is node ids; two parts are
// node ids and metrics.
func TestNodesInfoTellsMetricsFromNodeIDs(t *testing.T) {
	cfg := apiConfig()
	cfg.NodeID = "node-1-id" // the test engine's node, so that _local names it
	a := newTestAPI(t, cfg)
	nodes := func(path string) map[string]any {
		return path_(t, a.must(200, "GET", path, ""), "nodes").(map[string]any)
	}
	require.Eventually(t, func() bool { return len(nodes("/_nodes")) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the single node records itself")
	for _, p := range []string{"/_nodes/http", "/_nodes/_all", "/_nodes/_all/http", "/_nodes/_all/_all", "/_nodes/_local/http", "/_nodes/node-1", "/_nodes/http,os"} {
		got := nodes(p)
		require.Len(t, got, 1, "%s names this node", p)
		for _, n := range got {
			require.Contains(t, n.(map[string]any)["http"], "publish_address", "%s has the http section", p)
		}
	}
	for _, n := range nodes("/_nodes/_all/os") {
		require.Nil(t, n.(map[string]any)["http"], "a metric not asked for is left out")
		require.Equal(t, "node-1", n.(map[string]any)["name"], "the node's identity is always there")
	}
	require.Empty(t, nodes("/_nodes/nosuchnode"), "a name that is not a metric is a node id")
	require.Empty(t, nodes("/_nodes/nosuchnode/http"))
}

// path_ is path for a test whose parameter named path shadows it.
func path_(t *testing.T, v any, keys ...any) any { t.Helper(); return path(t, v, keys...) }

// GET /_nodes/{node_id}/stats[/{metric}] reports this node when the
// selection names it, and no node when it does not.
func TestNodesStatsByNodeID(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	for _, p := range []string{"/_nodes/_all/stats", "/_nodes/_local/stats", "/_nodes/n1/stats", "/_nodes/node-1/stats/indices", "/_nodes/stats/indices"} {
		r := a.must(200, "GET", p, "")
		require.Len(t, path(t, r, "nodes"), 1, p)
		require.Contains(t, path(t, r, "nodes", "n1"), "indices", p)
	}
	r := a.must(200, "GET", "/_nodes/other/stats", "")
	require.Empty(t, path(t, r, "nodes"))
	require.EqualValues(t, 0, path(t, r, "_nodes", "total"))
}
