package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWriteTimeoutBoundsTheWait: a write that waits for copies that never
// come (wait_for_active_shards=all, a replica no other node can hold)
// answers 503 once its timeout ends, long before the default minute, and
// a malformed timeout is a 400.
func TestWriteTimeoutBoundsTheWait(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/waits", `{"settings":{"number_of_shards":1,"number_of_replicas":1}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, path := range []string{"/waits/_doc/1?wait_for_active_shards=all&timeout=300ms", "/waits/_bulk?wait_for_active_shards=all&timeout=300ms"} {
		body := `{"v":1}`
		if strings.Contains(path, "_bulk") {
			body = "{\"index\":{\"_id\":\"2\"}}\n{\"v\":2}\n"
		}
		req, err := http.NewRequestWithContext(ctx, "PUT", a.srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.srv.Client().Do(req)
		require.NoError(t, err, "%s: no answer within 20 s: the write's timeout was not honoured", path)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if strings.Contains(path, "_bulk") {
			require.Equal(t, 200, resp.StatusCode, path) // per-item errors
			require.Contains(t, string(b), `"status":503`)
		} else {
			require.Equal(t, 503, resp.StatusCode, path)
		}
	}
	r := a.do("PUT", "/waits/_doc/3?timeout=soon", `{"v":3}`)
	require.Equal(t, 400, r.Status, "%s", r.Body)
}
