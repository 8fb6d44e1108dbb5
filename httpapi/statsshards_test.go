package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// _stats?level=shards reports each copy under its shard number with its
// routing and counts (prometheus-elasticsearch-exporter's --es.shards
// asks for it and disabled its whole index collector on the 400).
func TestIndexStatsAtShardLevel(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/s2", `{"settings":{"number_of_shards":2}}`)
	a.must(200, "POST", "/_bulk?refresh=true", `{"index":{"_index":"s2","_id":"1"}}
{"a":1}
{"index":{"_index":"s2","_id":"2"}}
{"a":2}
{"index":{"_index":"s2","_id":"3"}}
{"a":3}
`)
	r := a.must(200, "GET", "/s2/_stats?level=shards", "")
	shards := path(t, r, "indices", "s2", "shards").(map[string]any)
	require.Len(t, shards, 2)
	docs := 0.0
	for num, copies := range shards {
		list := copies.([]any)
		require.Len(t, list, 1, "shard %s has its one copy", num)
		c := list[0].(map[string]any)
		require.Equal(t, true, path(t, c, "routing", "primary"))
		require.Equal(t, "STARTED", path(t, c, "routing", "state"))
		docs += path(t, c, "docs", "count").(float64)
	}
	require.EqualValues(t, 3, docs, "the copies hold every document")
	require.NotContains(t, path(t, a.must(200, "GET", "/s2/_stats", ""), "indices", "s2"), "shards", "only level=shards reports shards")
	require.Equal(t, 400, a.do("GET", "/s2/_stats?level=segments", "").Status)
}
