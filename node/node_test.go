package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// bleve starts its analysis workers once per process, in an init function.
		goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
		// memberlist's Shutdown does not wait for a probe in flight: the
		// probe ends on its own once its ack timer (the probe interval)
		// fires, which under the Soft-RoCE guest's emulation can be after
		// goleak's last look.
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
		// Raft never resolves a future whose entry its FSM had not applied
		// when it shut down (see cluster.waitFuture).
		goleak.IgnoreAnyFunction("github.com/weftsearch/weft/cluster.waitFuture.func1"))
}

// client keeps no idle connections, so no goroutine outlives a test.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// testConfig is a small, fast configuration on a free loopback port, with
// security off (security_test.go turns it on).
func testConfig(dir string) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NodeName = "test-node"
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.Hooks.ClusterTiming = cluster.LocalTiming()
	cfg.Security.Enabled = false
	return cfg
}

func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	n, err := node.New(cfg, testlog.New(t))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	return n
}

// call sends a request and decodes a JSON object reply (nil otherwise).
func call(t testing.TB, method, url, body string) (int, map[string]any) {
	t.Helper()
	code, b := callRaw(t, method, url, body)
	var v map[string]any
	if len(b) > 0 && b[0] == '{' {
		require.NoError(t, json.Unmarshal(b, &v), "%s", b)
	}
	return code, v
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*node.Config)
		wantErr string
	}{
		{"defaults are valid", func(*node.Config) {}, ""},
		{"empty data dir", func(c *node.Config) { c.DataDir = "" }, "DataDir"},
		{"address without port", func(c *node.Config) { c.HTTPAddr = "localhost" }, "HTTPAddr"},
		{"empty port", func(c *node.Config) { c.HTTPAddr = "127.0.0.1:" }, "no port"},
		{"empty node name", func(c *node.Config) { c.NodeName = "" }, "NodeName"},
		{"empty cluster name", func(c *node.Config) { c.ClusterName = "" }, "ClusterName"},
		{"tiny body limit", func(c *node.Config) { c.MaxBodyBytes = 10 }, "MaxBodyBytes 10"},
		{"no shutdown time", func(c *node.Config) { c.ShutdownTimeout = 0 }, "ShutdownTimeout"},
		{"no http connections", func(c *node.Config) { c.HTTPMaxConnections = 0 }, "HTTPMaxConnections 0"},
		{"no header timeout", func(c *node.Config) { c.HTTPHeaderTimeout = 0 }, "--http-header-timeout"},
		{"no idle timeout", func(c *node.Config) { c.HTTPIdleTimeout = 0 }, "HTTPIdleTimeout"},
		{"no body timeout", func(c *node.Config) { c.HTTPBodyTimeout = -time.Second }, "HTTPBodyTimeout"},
		{"no body rate rule", func(c *node.Config) { c.HTTPBodyMinRate = 0 }, ""},
		{"negative body rate", func(c *node.Config) { c.HTTPBodyMinRate = -1 }, "HTTPBodyMinRate -1"},
		{"recovery unthrottled", func(c *node.Config) { c.RecoveryMaxBytesPerSec = 0 }, ""},
		{"negative recovery throttle", func(c *node.Config) { c.RecoveryMaxBytesPerSec = -1 }, "RecoveryMaxBytesPerSec -1"},
		{"memory limit", func(c *node.Config) { c.MemoryLimit = 1 << 30 }, ""},
		{"memory limit below the minimum", func(c *node.Config) { c.MemoryLimit = 1 << 20 }, "--memory-limit"},
		{"negative memory limit", func(c *node.Config) { c.MemoryLimit = -1 }, "MemoryLimit -1"},
		{"fabric on loopback", func(c *node.Config) { c.FabricAddr = "127.0.0.1:9300" }, ""},
		{"fabric address without port", func(c *node.Config) { c.FabricAddr = "127.0.0.1" }, "FabricAddr"},
		{"fabric address with empty port", func(c *node.Config) { c.FabricAddr = "127.0.0.1:" }, "no port"},
		{"fabric rdma off", func(c *node.Config) { c.FabricRDMA = node.FabricRDMAOff }, ""},
		{"fabric rdma unknown", func(c *node.Config) { c.FabricRDMA = "maybe" }, `FabricRDMA "maybe"`},
		{"one processor", func(c *node.Config) { c.Processors = 1 }, ""},
		{"negative processors", func(c *node.Config) { c.Processors = -2 }, "Processors -2"},
		{"more processors than CPUs", func(c *node.Config) { c.Processors = runtime.NumCPU() + 1 }, "set --processors"},
		{"security off on loopback", func(c *node.Config) { c.Security.Enabled = false; c.FabricAddr = "localhost:9300" }, ""},
		{"security off on all interfaces", func(c *node.Config) { c.Security.Enabled = false; c.HTTPAddr = "0.0.0.0:9200" },
			`HTTPAddr "0.0.0.0:9200" (--http-addr) is reachable from other machines`},
		{"security off on a host name", func(c *node.Config) { c.Security.Enabled = false; c.HTTPAddr = "search.example.com:9200" },
			"--allow-insecure-network"},
		{"security off on the network, acknowledged", func(c *node.Config) {
			c.Security = node.SecurityConfig{AllowInsecureNetwork: true}
			c.HTTPAddr = ":9200"
		}, ""},
		{"security off on a network Raft address", func(c *node.Config) {
			c.Security.Enabled = false
			c.GossipAddr, c.RaftAddr, c.FabricAddr, c.Seeds = "127.0.0.1:9400", "10.0.0.2:9500", "127.0.0.1:9300", []string{"127.0.0.1:9400"}
		}, `RaftAddr "10.0.0.2:9500" (--raft-addr)`},
		{"security off with certificates", func(c *node.Config) { c.Security = node.SecurityConfig{CertsDir: "/c"} }, "need security on"},
		{"http key without certificate", func(c *node.Config) { c.Security.HTTPKey = "/k" }, "--http-cert and --http-key go together"},
		{"security on, cluster without certificates", func(c *node.Config) {
			c.NodeName, c.GossipAddr, c.RaftAddr, c.FabricAddr, c.InitialNodes = "n1", "127.0.0.1:9400", "127.0.0.1:9500", "127.0.0.1:9300", []string{"n1", "n2"}
		}, "searchctl certs create"},
		{"security on, cluster with certificates", func(c *node.Config) {
			c.NodeName, c.GossipAddr, c.RaftAddr, c.FabricAddr, c.InitialNodes = "n1", "127.0.0.1:9400", "127.0.0.1:9500", "127.0.0.1:9300", []string{"n1", "n2"}
			c.Security.CertsDir = "/c"
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := node.DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	split, _, err := node.DefaultConfig().MemoryBudget()
	require.NoError(t, err, "the default memory limit is a share of what the process may use")
	require.Positive(t, split.IndexingPressure)
	split, from, err := node.Config{MemoryLimit: 1 << 30}.MemoryBudget()
	require.NoError(t, err)
	require.Equal(t, "--memory-limit", from)
	require.Equal(t, int64(1<<30)/100*10, split.IndexingPressure)
	d := node.DefaultConfig()
	require.Equal(t, "./data", d.DataDir)
	require.Equal(t, "127.0.0.1:9200", d.HTTPAddr)
	require.Equal(t, "weft", d.ClusterName)
	require.EqualValues(t, 100<<20, d.MaxBodyBytes)
	require.NotEmpty(t, d.NodeName)
	require.Empty(t, d.FabricAddr)
	require.Equal(t, node.FabricRDMAAuto, d.FabricRDMA)
	require.Equal(t, node.SecurityConfig{Enabled: true}, d.Security, "security is on by default")
}

func TestIndexesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(dir))
	url := n.URL()
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"))
	status, info := call(t, "GET", url+"/", "")
	require.Equal(t, 200, status)
	uuid := info["cluster_uuid"].(string)
	require.NotEmpty(t, uuid)

	status, _ = call(t, "PUT", url+"/kept", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"integer"}}}}`)
	require.Equal(t, 200, status)
	status, _ = call(t, "PUT", url+"/kept/_doc/1", `{"title":"kept across restarts","n":7,"dyn":"new field"}`)
	require.Equal(t, 201, status)

	// A second node on the same directory is refused while the first runs.
	_, err := node.New(testConfig(dir), testlog.New(t))
	require.ErrorContains(t, err, "in use by another node")

	require.NoError(t, n.Shutdown(context.Background()))
	require.NoError(t, n.Shutdown(context.Background()), "Shutdown is idempotent")

	n = startNode(t, testConfig(dir))
	url = n.URL()
	status, info = call(t, "GET", url+"/", "")
	require.Equal(t, 200, status)
	require.Equal(t, uuid, info["cluster_uuid"], "the cluster keeps its identity")
	status, got := call(t, "GET", url+"/kept", "")
	require.Equal(t, 200, status)
	idx := got["kept"].(map[string]any)
	settings := idx["settings"].(map[string]any)["index"].(map[string]any)
	require.Equal(t, "3", settings["number_of_shards"])
	require.Equal(t, "0", settings["number_of_replicas"])
	props := idx["mappings"].(map[string]any)["properties"].(map[string]any)
	require.Equal(t, "integer", props["n"].(map[string]any)["type"])
	require.Equal(t, "text", props["dyn"].(map[string]any)["type"], "dynamically added fields are kept")
	status, doc := call(t, "GET", url+"/kept/_doc/1", "")
	require.Equal(t, 200, status)
	require.Equal(t, "kept across restarts", doc["_source"].(map[string]any)["title"])
	status, res := call(t, "POST", url+"/kept/_search", `{"query":{"match":{"title":"restarts"}}}`)
	require.Equal(t, 200, status)
	require.EqualValues(t, 1, res["hits"].(map[string]any)["total"].(map[string]any)["value"])
}

// TestShutdownFinishesInFlightRequest starts a bulk request, begins the
// shutdown while its body is still arriving, then sends the rest: the
// request must complete and its documents must be there after a restart.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	dir := t.TempDir()
	n, err := node.New(testConfig(dir), testlog.New(t))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	addr := n.HTTPAddr()

	body := "{\"index\":{\"_index\":\"inflight\",\"_id\":\"1\"}}\n{\"a\":1}\n{\"index\":{\"_index\":\"inflight\",\"_id\":\"2\"}}\n{\"a\":2}\n"
	half := len(body) / 2
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /_bulk HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:half])
	require.NoError(t, err)

	// Wait until the server is inside the handler: the in-flight gauge then
	// counts the bulk and the scrape asking for it.
	require.Eventually(t, func() bool { return inFlight(t, "http://"+addr) >= 2 }, 10*time.Second, 10*time.Millisecond)

	done := make(chan error, 1)
	go func() { done <- n.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	_, err = io.WriteString(conn, body[half:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	reply, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "%s", reply)
	require.Contains(t, string(reply), `"errors":false`)
	require.NoError(t, <-done)

	n2 := startNode(t, testConfig(dir))
	for _, id := range []string{"1", "2"} {
		status, _ := call(t, "GET", n2.URL()+"/inflight/_doc/"+id, "")
		require.Equal(t, 200, status, "document %s", id)
	}
}

func inFlight(t *testing.T, url string) float64 {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "weft_http_requests_in_flight "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestRunAppliesProcessors: Run sets the process's GOMAXPROCS from
// Config.Processors before the node serves, and _nodes/stats reports it.
func TestRunAppliesProcessors(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	cfg := testConfig(t.TempDir())
	cfg.Processors = 1
	go func() { done <- node.Run(ctx, cfg, testlog.New(t), func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	require.Equal(t, 1, runtime.GOMAXPROCS(0))
	status, body := callRaw(t, "GET", url+"/_nodes/stats", "")
	require.Equal(t, 200, status)
	var stats struct {
		Nodes map[string]struct {
			OS struct {
				Available int `json:"available_processors"`
				Allocated int `json:"allocated_processors"`
			} `json:"os"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(body, &stats))
	require.Len(t, stats.Nodes, 1)
	for _, n := range stats.Nodes {
		require.Equal(t, 1, n.OS.Allocated)
		require.Equal(t, runtime.NumCPU(), n.OS.Available)
	}
	cancel()
	require.NoError(t, <-done)
}

// TestRunAppliesMemoryLimit: --memory-limit is Go's soft memory limit, and
// its indexing pressure share (10%) is the limit _nodes/stats reports.
func TestRunAppliesMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	cfg := testConfig(t.TempDir())
	cfg.MemoryLimit = 1 << 30
	go func() { done <- node.Run(ctx, cfg, testlog.New(t), func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
	status, body := callRaw(t, "GET", url+"/_nodes/stats", "")
	require.Equal(t, 200, status)
	var stats struct {
		Nodes map[string]struct {
			IndexingPressure struct {
				Memory struct {
					Limit int64 `json:"limit_in_bytes"`
				} `json:"memory"`
			} `json:"indexing_pressure"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(body, &stats))
	require.Len(t, stats.Nodes, 1)
	for _, n := range stats.Nodes {
		require.Equal(t, int64(1<<30)/100*10, n.IndexingPressure.Memory.Limit)
	}
	cancel()
	require.NoError(t, <-done)
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, testConfig(t.TempDir()), testlog.New(t), func(u string) { urls <- u }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	status, _ := call(t, "GET", url+"/_cluster/health", "")
	require.Equal(t, 200, status)
	cancel()
	require.NoError(t, <-done)
}
