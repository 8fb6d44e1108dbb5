package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node/placement"
	"github.com/weftsearch/weft/shard"
)

func TestMain(m *testing.M) {
	// bleve starts its analysis workers once per process, in an init function.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
		// Raft never resolves a future whose entry its FSM had not applied
		// when it shut down (see cluster.waitFuture).
		goleak.IgnoreAnyFunction("github.com/weftsearch/weft/cluster.waitFuture.func1"))
}

// apiConfig is a small configuration for tests.
func apiConfig() httpapi.Config {
	return httpapi.Config{ClusterName: "test-cluster", NodeName: "node-1", NodeID: "n1", MaxBodyBytes: 1 << 20}
}

// openEngine runs the real engine over a single-node cluster of its own
// (Raft in memory, durable stores in a temporary directory), ready to
// serve; the test's cleanup stops it.
func openEngine(t testing.TB, logger *slog.Logger) *coord.Coordinator {
	t.Helper()
	eng, _ := openEngineCluster(t, logger)
	return eng
}

// openEngineCluster is openEngine, with the cluster whose Raft commits the
// engine's metadata.
func openEngineCluster(t testing.TB, logger *slog.Logger) (*coord.Coordinator, *cluster.Cluster) {
	t.Helper()
	return openEngineWith(t, logger, shard.DefaultConfig())
}

// openEngineWith is openEngineCluster with the data node's configuration.
func openEngineWith(t testing.TB, logger *slog.Logger, scfg shard.Config) (*coord.Coordinator, *cluster.Cluster) {
	t.Helper()
	return openEngineConfig(t, logger, scfg, nil)
}

// openEngineConfig is openEngineWith whose cluster's Config mod changes
// (when not nil).
func openEngineConfig(t testing.TB, logger *slog.Logger, scfg shard.Config, mod func(*cluster.Config)) (*coord.Coordinator, *cluster.Cluster) {
	t.Helper()
	dir := t.TempDir()
	ccfg := cluster.Config{NodeID: "node-1-id", NodeName: "node-1", DataDir: dir, Timing: cluster.LocalTiming(), Logger: logger}
	if mod != nil {
		mod(&ccfg)
	}
	c, err := cluster.New(ccfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	meta := placement.New(c)
	st, err := shard.OpenStore(filepath.Join(dir, "shards"), scfg, meta, nil, logger)
	require.NoError(t, err)
	eng := coord.NewCoordinator(st, coord.DefaultConfig(), logger)
	eng.Start()
	t.Cleanup(func() {
		require.NoError(t, eng.Close())
		require.NoError(t, c.Shutdown(context.Background()))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = meta.AwaitState(ctx, func(*state.State) bool { return meta.Ready() == nil })
	require.NoError(t, err, "the single-node cluster did not elect itself")
	return eng, c
}

// testAPI is an API over a real engine in a temporary directory, served on
// a loopback port.
type testAPI struct {
	t   *testing.T
	srv *httptest.Server
	eng *coord.Coordinator
}

func newTestAPI(t *testing.T, cfg httpapi.Config) *testAPI {
	t.Helper()
	logger := testlog.New(t)
	eng := openEngine(t, logger)
	api, err := httpapi.New(cfg, eng, logger, prometheus.NewRegistry())
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
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
