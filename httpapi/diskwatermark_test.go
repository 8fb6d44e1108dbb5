package httpapi_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
)

const floodReason = "index [full] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];"

// blocked reads whether the index carries the flood stage block.
func blocked(t *testing.T, a *testAPI, name string) bool {
	r := a.must(200, "GET", "/"+name+"/_settings?flat_settings=true", "")
	return path(t, r, name, "settings").(map[string]any)["index.blocks.read_only_allow_delete"] == "true"
}

// awaitBlocked waits (10 s at most) until the index's block is as wanted.
func awaitBlocked(t *testing.T, a *testAPI, name string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for blocked(t, a, name) != want {
		require.True(t, time.Now().Before(deadline), "index %s never got blocked=%v", name, want)
		time.Sleep(20 * time.Millisecond)
	}
}

// A node's disk past the flood stage: the leader blocks the indices it
// holds; document writes (deletes of documents too) get Elasticsearch's 429
// cluster_block_exception, single or in a bulk, while reads and deleting
// an index work; below the high watermark the block goes by itself.
// _cat/allocation shows the disk.
func TestFloodStageBlockThroughTheAPI(t *testing.T) {
	const gib = 1 << 30
	var pct atomic.Uint64
	pct.Store(50)
	a := newCommittingAPIWith(t, func(c *cluster.Config) {
		c.DiskUsage = func() (state.DiskUsage, error) {
			return state.DiskUsage{UsedBytes: pct.Load() * gib, TotalBytes: 100 * gib}, nil
		}
	})
	for _, name := range []string{"full", "doomed"} {
		a.must(200, "PUT", "/"+name, `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)
		a.must(201, "PUT", "/"+name+"/_doc/1?refresh=true", `{"n":1}`)
	}

	r := a.do("GET", "/_cat/allocation?format=json&bytes=gb", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var rows []map[string]string
	require.NoError(t, json.Unmarshal(r.Body, &rows))
	require.Len(t, rows, 1)
	require.Equal(t, map[string]string{"shards": "2", "disk.used": "50", "disk.avail": "50", "disk.total": "100", "disk.percent": "50",
		"host": rows[0]["host"], "ip": rows[0]["ip"], "node": "node-1"}, rows[0])

	pct.Store(96)
	awaitBlocked(t, a, "full", true)
	requireESError(t, a.do("PUT", "/full/_doc/2", `{"n":2}`), 429, "cluster_block_exception", floodReason)
	requireESError(t, a.do("POST", "/full/_update/1", `{"doc":{"n":3}}`), 429, "cluster_block_exception", floodReason)
	requireESError(t, a.do("DELETE", "/full/_doc/1", ""), 429, "cluster_block_exception", floodReason)
	bulk := a.must(200, "POST", "/_bulk", bulkLines(`{"index":{"_index":"full","_id":"5"}}`, `{"n":5}`, `{"delete":{"_index":"full","_id":"1"}}`))
	require.Equal(t, true, bulk["errors"])
	for k := range 2 {
		item := path(t, bulk, "items", k).(map[string]any)
		for _, res := range item {
			require.EqualValues(t, 429, path(t, res, "status"))
			require.Equal(t, "cluster_block_exception", path(t, res, "error", "type"))
			require.Equal(t, floodReason, path(t, res, "error", "reason"))
		}
	}
	require.EqualValues(t, 1, path(t, a.must(200, "GET", "/full/_doc/1", ""), "_source", "n"), "reads work")
	a.must(200, "DELETE", "/doomed", "")

	pct.Store(50)
	awaitBlocked(t, a, "full", false)
	a.must(201, "PUT", "/full/_doc/2", `{"n":2}`)
}

func TestDiskWatermarkSettings(t *testing.T) {
	a := newCommittingAPI(t)
	defaults := a.must(200, "GET", "/_cluster/settings?include_defaults=true", "")
	for key, want := range map[string]string{
		state.DiskLowSetting: "85%", state.DiskHighSetting: "90%", state.DiskFloodStageSetting: "95%", state.DiskThresholdEnabledSetting: "true",
	} {
		require.Equal(t, want, path(t, defaults, "defaults", key), key)
	}
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"percentages", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":"70%","cluster.routing.allocation.disk.watermark.high":"80%"}}`, 200},
		{"ratios, nested", `{"persistent":{"cluster":{"routing":{"allocation":{"disk":{"watermark":{"low":"0.6","high":0.7,"flood_stage":"0.8"}}}}}}}`, 200},
		{"free space, all three", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":"30gb","cluster.routing.allocation.disk.watermark.high":"20gb","cluster.routing.allocation.disk.watermark.flood_stage":"10gb"}}`, 200},
		{"free space rising is refused", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":"10gb"}}`, 400},
		{"kinds mixed", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":"50%"}}`, 400},
		{"back to percentages", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":null,"cluster.routing.allocation.disk.watermark.high":null,"cluster.routing.allocation.disk.watermark.flood_stage":null}}`, 200},
		{"low above high", `{"persistent":{"cluster.routing.allocation.disk.watermark.low":"91%"}}`, 400},
		{"not a watermark", `{"persistent":{"cluster.routing.allocation.disk.watermark.high":"lots"}}`, 400},
		{"over 100%", `{"persistent":{"cluster.routing.allocation.disk.watermark.flood_stage":"101%"}}`, 400},
		{"threshold off", `{"persistent":{"cluster.routing.allocation.disk.threshold_enabled":false}}`, 200},
		{"threshold not a bool", `{"persistent":{"cluster.routing.allocation.disk.threshold_enabled":"maybe"}}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("PUT", "/_cluster/settings", tc.body)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
		})
	}
	got := a.must(200, "GET", "/_cluster/settings", "")
	require.Equal(t, "false", path(t, got, "persistent", state.DiskThresholdEnabledSetting))
}
