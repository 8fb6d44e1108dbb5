package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterSettings: PUT _cluster/settings commits the allocation
// exclusion, the recovery throttle and the API's settings (partial results,
// destructive names) through Raft, in one structure; GET _cluster/settings
// and _cluster/state show them; null resets one; bad names and values are
// 400s that change nothing.
func TestClusterSettings(t *testing.T) {
	n := startNode(t, testConfig(t.TempDir()))
	url := n.URL() + "/_cluster/settings"
	code, res := call(t, "PUT", url, `{"persistent":{"indices.recovery.max_bytes_per_sec":"10mb","cluster.routing.allocation.exclude._name":"gone-a, gone-b","search.default_allow_partial_results":false},"transient":{"action.destructive_requires_name":"false"}}`)
	require.Equal(t, 200, code, "%v", res)
	require.Equal(t, true, res["acknowledged"])
	want := map[string]any{"indices.recovery.max_bytes_per_sec": "10485760b", "cluster.routing.allocation.exclude._name": "gone-a,gone-b",
		"search.default_allow_partial_results": "false", "action.destructive_requires_name": "false"}
	code, res = call(t, "GET", url, "")
	require.Equal(t, 200, code)
	require.Equal(t, want, res["persistent"])
	code, res = call(t, "GET", n.URL()+"/_cluster/state", "")
	require.Equal(t, 200, code)
	require.Equal(t, want, res["metadata"].(map[string]any)["persistent_settings"])

	for _, bad := range []string{
		`{"persistent":{"indices.recovery.max_bytes_per_sec":"fast"}}`,
		`{"persistent":{"indices.recovery.max_bytes_per_sec":"-1mb"}}`,
		`{"persistent":{"cluster.routing.allocation.exclude._name":7}}`,
		`{"persistent":{"cluster.no_such_setting":"x"}}`,
		`{"persistent":{"indices.recovery.max_bytes_per_sec":"5mb","cluster.no_such_setting":"x"}}`,
	} {
		code, res = call(t, "PUT", url, bad)
		require.Equal(t, 400, code, "%s: %v", bad, res)
		require.Equal(t, "illegal_argument_exception", res["error"].(map[string]any)["type"], bad)
	}
	code, res = call(t, "GET", url, "")
	require.Equal(t, 200, code)
	require.Equal(t, want, res["persistent"], "a refused PUT changed the settings")

	code, res = call(t, "PUT", url, `{"transient":{"indices":{"recovery":{"max_bytes_per_sec":null}}}}`)
	require.Equal(t, 200, code, "%v", res)
	code, res = call(t, "GET", url, "")
	require.Equal(t, 200, code)
	require.Equal(t, map[string]any{"cluster.routing.allocation.exclude._name": "gone-a,gone-b",
		"search.default_allow_partial_results": "false", "action.destructive_requires_name": "false"}, res["persistent"])
}
