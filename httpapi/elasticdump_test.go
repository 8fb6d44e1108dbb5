package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// elasticdumpBin finds the elasticdump command (the npm package): the
// WEFT_ELASTICDUMP path, the copy scripts/elasticdump.sh installs under
// ~/.cache/weft/elasticdump, or one on PATH.
func elasticdumpBin() (string, bool) {
	if p := os.Getenv("WEFT_ELASTICDUMP"); p != "" {
		return p, true
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "weft", "elasticdump", "node_modules", ".bin", "elasticdump")
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	p, err := exec.LookPath("elasticdump")
	return p, err == nil
}

// TestElasticdumpRoundTrip exports an index's mapping and documents with
// elasticdump, the common backup tool, and imports them into a new index:
// the copy has the same mapping and the same documents. It needs node and
// the elasticdump package (scripts/elasticdump.sh installs it with npm);
// without them it is skipped, and says so.
func TestElasticdumpRoundTrip(t *testing.T) {
	bin, ok := elasticdumpBin()
	if !ok {
		t.Skip("SKIPPED: elasticdump is not installed; run scripts/elasticdump.sh (needs npm) to install it and run this test")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("SKIPPED: node is not installed; elasticdump needs it")
	}
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/src", `{"settings":{"number_of_shards":3},"mappings":{"properties":{
		"title":{"type":"text","fields":{"raw":{"type":"keyword"}}},"tag":{"type":"keyword"},"n":{"type":"long"},
		"at":{"type":"date"},"price":{"type":"double"},"on":{"type":"boolean"}}}}`)
	var bulk strings.Builder
	want := map[string]map[string]any{}
	for k := 1; k <= 57; k++ {
		doc := map[string]any{"title": fmt.Sprintf("document number %d", k), "tag": fmt.Sprint("t", k%4), "n": k,
			"at": fmt.Sprintf("2024-01-%02dT10:00:00Z", k%28+1), "price": float64(k) / 4, "on": k%2 == 0}
		raw, _ := json.Marshal(doc)
		fmt.Fprintf(&bulk, "{\"index\":{\"_index\":\"src\",\"_id\":\"d%d\"}}\n%s\n", k, raw)
		var back map[string]any
		_ = json.Unmarshal(raw, &back)
		want[fmt.Sprint("d", k)] = back
	}
	r := a.must(200, "POST", "/_bulk?refresh=true", bulk.String())
	require.Equal(t, false, r["errors"])

	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		require.NoError(t, err, "elasticdump %v:\n%s", args, out)
		require.NotContains(t, string(out), "Error", "elasticdump %v:\n%s", args, out)
	}
	src, dst := a.srv.URL+"/src", a.srv.URL+"/dst"
	run("--input="+src, "--output="+filepath.Join(dir, "mapping.json"), "--type=mapping")
	run("--input="+src, "--output="+filepath.Join(dir, "data.json"), "--type=data", "--limit=20")
	run("--input="+filepath.Join(dir, "mapping.json"), "--output="+dst, "--type=mapping")
	run("--input="+filepath.Join(dir, "data.json"), "--output="+dst, "--type=data", "--limit=20")
	a.must(200, "POST", "/dst/_refresh", "")

	srcMap := a.must(200, "GET", "/src/_mapping", "")["src"]
	dstMap := a.must(200, "GET", "/dst/_mapping", "")["dst"]
	require.Equal(t, srcMap, dstMap)
	res := a.must(200, "POST", "/dst/_search", `{"size":100}`)
	hits := res["hits"].(map[string]any)["hits"].([]any)
	require.Len(t, hits, len(want))
	for _, h := range hits {
		hit := h.(map[string]any)
		require.Equal(t, want[hit["_id"].(string)], hit["_source"], hit["_id"])
	}
}
