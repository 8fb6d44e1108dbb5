package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/shard/shardtest"
)

func TestMain(m *testing.M) {
	// bleve starts its analysis workers once per process, in an init function.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}

// tWriter sends log output to the test's log, so passing tests are quiet.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// apiConfig is a small configuration for tests.
func apiConfig() httpapi.Config {
	return httpapi.Config{ClusterName: "test-cluster", NodeName: "node-1", NodeID: "n1", MaxBodyBytes: 1 << 20}
}

// testAPI is an API over a real engine in a temporary directory, served on
// a loopback port.
type testAPI struct {
	t   *testing.T
	srv *httptest.Server
	eng *shardtest.Node
}

func newTestAPI(t *testing.T, cfg httpapi.Config) *testAPI {
	t.Helper()
	logger := testLogger(t)
	eng, err := shardtest.Start(t.TempDir(), shard.DefaultConfig(), logger)
	require.NoError(t, err)
	api, err := httpapi.New(cfg, eng, logger, prometheus.NewRegistry())
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, eng.Close())
	})
	return &testAPI{t: t, srv: srv, eng: eng}
}

// reply is a response read whole.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r reply) JSON(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// do sends one request; a body is sent as JSON unless headers say otherwise.
func (a *testAPI) do(method, path, body string, headers ...string) reply {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	require.NoError(a.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// must sends a request and requires the status.
func (a *testAPI) must(status int, method, path, body string, headers ...string) map[string]any {
	a.t.Helper()
	r := a.do(method, path, body, headers...)
	require.Equal(a.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	if len(bytes.TrimSpace(r.Body)) == 0 || r.Body[0] != '{' {
		return nil
	}
	return r.JSON(a.t)
}

// errorType requires an ES-shaped error reply and returns error.type.
func errorType(t *testing.T, r reply) string {
	t.Helper()
	var e struct {
		Error struct {
			RootCause []struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"root_cause"`
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
		Status int `json:"status"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &e), "body: %s", r.Body)
	require.Equal(t, r.Status, e.Status, "status in body: %s", r.Body)
	require.NotEmpty(t, e.Error.Type, "body: %s", r.Body)
	require.NotEmpty(t, e.Error.Reason, "body: %s", r.Body)
	require.Len(t, e.Error.RootCause, 1)
	require.Equal(t, e.Error.Type, e.Error.RootCause[0].Type)
	return e.Error.Type
}

// path walks a decoded JSON value by keys and array indexes.
func path(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "at %q: not an object: %v", k, v)
			v, ok = m[k]
			require.True(t, ok, "missing key %q in %v", k, m)
		case int:
			s, ok := v.([]any)
			require.True(t, ok, "at [%d]: not an array: %v", k, v)
			require.Less(t, k, len(s))
			v = s[k]
		}
	}
	return v
}
