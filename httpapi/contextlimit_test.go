package httpapi_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/shard"
)

// raftAdmin commits the cluster settings through the engine's own Raft, as
// the node does, so that the data node reads them from the committed
// state.
type raftAdmin struct {
	*memAdmin // Raft and Move
	c         *cluster.Cluster
}

func (a raftAdmin) Settings() state.Settings { return a.c.State().Settings }

func (a raftAdmin) DiskUsage() map[string]state.DiskUsage { return a.c.DiskUsage() }

func (a raftAdmin) PutSettings(ctx context.Context, s state.Settings) error {
	_, err := a.c.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdSetSettings,
		SetSettings: &cluster.SetSettings{Settings: s}})
	return err
}

// newCommittingAPI is newTestAPI whose PUT _cluster/settings is committed
// through Raft.
func newCommittingAPI(t *testing.T) *testAPI {
	t.Helper()
	return newCommittingAPIWith(t, nil)
}

// newCommittingAPIWith is newCommittingAPI whose cluster's Config mod
// changes (when not nil).
func newCommittingAPIWith(t *testing.T, mod func(*cluster.Config)) *testAPI {
	t.Helper()
	logger := testlog.New(t)
	eng, c := openEngineConfig(t, logger, shard.DefaultConfig(), mod)
	cfg := apiConfig()
	cfg.Cluster = raftAdmin{memAdmin: &memAdmin{}, c: c}
	api, err := httpapi.New(cfg, eng, logger, prometheus.NewRegistry())
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &testAPI{t: t, srv: srv, eng: eng}
}

func requireESError(t *testing.T, r reply, status int, typ, reason string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	e := readError(t, r) // validate_test.go: the body's shape is checked there
	require.Equal(t, typ, e.Type)
	require.Equal(t, reason, e.Reason)
}

// TestSearchContextLimits: PUT _cluster/settings lowers the node's limits
// on open scroll and point-in-time contexts; an open beyond them is 429 in
// Elasticsearch's shape; _nodes/stats counts the open contexts.
func TestSearchContextLimits(t *testing.T) {
	a := newCommittingAPI(t)
	a.must(200, "PUT", "/cl", `{"settings":{"number_of_shards":2}}`)
	a.must(200, "POST", "/cl/_bulk?refresh=true", bulkLines(`{"index":{"_id":"1"}}`, `{"n":1}`, `{"index":{"_id":"2"}}`, `{"n":2}`))

	defaults := a.must(200, "GET", "/_cluster/settings?include_defaults=true", "")
	require.Equal(t, "500", path(t, defaults, "defaults", "search.max_open_scroll_context"))
	require.Equal(t, "300", path(t, defaults, "defaults", "search.max_open_pit_context"))
	require.Equal(t, 400, a.do("PUT", "/_cluster/settings", `{"persistent":{"search.max_open_pit_context":-1}}`).Status)
	require.Equal(t, 400, a.do("PUT", "/_cluster/settings", `{"persistent":{"search.max_open_scroll_context":"many"}}`).Status)

	// Each point in time or scroll over the two shards holds two contexts.
	r := a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"search.max_open_pit_context":2},"transient":{"search":{"max_open_scroll_context":"2"}}}`)
	require.Equal(t, "2", path(t, r, "persistent", "search.max_open_pit_context"))
	require.Equal(t, "2", path(t, r, "transient", "search.max_open_scroll_context"))

	pit := a.must(200, "POST", "/cl/_pit?keep_alive=1m", "")["id"].(string)
	requireESError(t, a.do("POST", "/cl/_pit?keep_alive=1m", ""), 429, "es_rejected_execution_exception",
		"Trying to create too many Point In Time contexts. Must be less than or equal to: [2]. This limit can be set by changing the [search.max_open_pit_context] setting.")

	scroll := a.must(200, "POST", "/cl/_search?scroll=1m&size=1", "")["_scroll_id"].(string)
	requireESError(t, a.do("POST", "/cl/_search?scroll=1m&size=1", ""), 429, "too_many_scroll_contexts_exception",
		"Trying to create too many scroll contexts. Must be less than or equal to: [2]. This limit can be set by changing the [search.max_open_scroll_context] setting.")

	stats := a.must(200, "GET", "/_nodes/stats", "")
	search := func(field string) any { return path(t, stats, "nodes", "n1", "indices", "search", field) }
	require.EqualValues(t, 4, search("open_contexts"))
	require.EqualValues(t, 2, search("scroll_current"))
	require.EqualValues(t, 2, search("point_in_time_current"))

	a.must(200, "DELETE", "/_pit", `{"id":"`+pit+`"}`)
	a.must(200, "DELETE", "/_search/scroll", `{"scroll_id":"`+scroll+`"}`)
	a.must(200, "POST", "/cl/_pit?keep_alive=1m", "")
	a.must(200, "POST", "/cl/_search?scroll=1m&size=1", "")

	// Raising the limit lets the next one open.
	a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"search.max_open_pit_context":null}}`)
	a.must(200, "POST", "/cl/_pit?keep_alive=1m", "")
}
