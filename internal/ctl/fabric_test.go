package ctl_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
)

// startFabricNode runs a real node whose fabric listens on a free loopback
// port (TCP only), shut down when the test ends.
func startFabricNode(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NodeName = "ctl-fabric-test"
	cfg.FabricAddr = "127.0.0.1:0"
	cfg.FabricRDMA = node.FabricRDMAOff
	cfg.Security.Enabled = false // plain HTTP and fabric: these tests are about the commands
	n, err := node.New(cfg, testlog.NewLevel(t, slog.LevelWarn))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.Shutdown(ctx))
	})
	return n
}

func TestFabricDevicesAgainstRealNode(t *testing.T) {
	addr := startNode(t)

	r := searchctl(t, addr, "fabric", "devices")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "RDMA: ")
	require.Contains(t, r.stdout, "INTERFACE")
	require.Regexp(t, `(?m)^lo\s+\S+\s+\d+\s`, r.stdout, "the loopback interface is listed with its MTU")

	r = searchctl(t, addr, "fabric", "devices", "-o", "json")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	var rep fabricdiag.DevicesReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	var names []string
	for _, ifc := range rep.Interfaces {
		names = append(names, ifc.Name)
	}
	require.Contains(t, names, "lo")
	if len(rep.RDMADevices) == 0 {
		require.Contains(t, r.stdout, `"rdma": "none: `)
	}
	require.Contains(t, r.stdout, `"rdma_transport": null`, "the field is there, null without an RDMA path")
	require.Equal(t, "off: the fabric is off (no --fabric-addr)", rep.RDMAPath)
	require.Nil(t, rep.RDMATransport)

	r = searchctl(t, startFabricNode(t).URL(), "fabric", "devices")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "\nrdma path: off: --fabric-rdma=off\n")
}

// serveJSON answers every GET with v as JSON, standing in for a node with
// an RDMA path (which this host may not have).
func serveJSON(t *testing.T, v any) string {
	t.Helper()
	body, err := json.Marshal(v)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFabricShowsRDMATransportAndKeyScope(t *testing.T) {
	accepting := rdma.TransportInfo{Device: "rxe0", Port: 1, PortState: "ACTIVE", GIDIndex: 1, KeyScope: rdma.KeyScopeWindow}
	refusing := rdma.TransportInfo{Device: "rxe0", Port: 1, PortState: "DOWN", GIDIndex: 1, KeyScope: rdma.KeyScopeRegion,
		Refusing:    "rdma: rxe0 port 1 went down (IBV_EVENT_PORT_ERR) at 2026-11-29T20:00:00Z; connections resume when the port is ACTIVE again: rdma: port down",
		AsyncEvents: 2, ConnsFailedByEvents: 3, LastAsyncEvent: "IBV_EVENT_PORT_ERR at 2026-11-29T20:00:00.5Z"}
	t.Run("devices, accepting", func(t *testing.T) {
		addr := serveJSON(t, fabricdiag.DevicesReport{RDMA: "1 device(s), 1 with an ACTIVE port", RDMAPath: "on", RDMATransport: &accepting})
		r := searchctl(t, addr, "fabric", "devices")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "rdma path: on: rxe0 port 1, port state ACTIVE, GID index 1, key scope mw2-qp, async events 0; accepting connections\n")
	})
	t.Run("devices, refusing", func(t *testing.T) {
		addr := serveJSON(t, fabricdiag.DevicesReport{RDMA: "1 device(s), 0 with an ACTIVE port", RDMAPath: "on", RDMATransport: &refusing})
		r := searchctl(t, addr, "fabric", "devices")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "rdma path: on: rxe0 port 1, port state DOWN, GID index 1, key scope mr-pd, async events 2 (last IBV_EVENT_PORT_ERR at 2026-11-29T20:00:00.5Z), "+
			"3 connection(s) failed by events; refusing new connections: "+refusing.Refusing+"\n")
	})
	t.Run("conns", func(t *testing.T) {
		qp := rdma.ConnInfo{Peer: "10.77.0.1:40000", Dialed: true, LocalQPN: 17, RemoteQPN: 18, QPState: "RTS", SendCredits: 16,
			KeyScope: rdma.KeyScopeWindow, WindowsBound: 12, WindowsRevoked: 11}
		addr := serveJSON(t, fabricdiag.ConnsReport{Fabric: "on", ListenAddr: "tcp:10.77.0.1:9300,rdma:10.77.0.1:40000", RDMA: "on",
			RDMATransport: &accepting, Conns: []fabricdiag.PeerConn{}, RDMAQPs: []rdma.ConnInfo{qp}})
		r := searchctl(t, addr, "fabric", "conns")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "rdma path: on: rxe0 port 1, port state ACTIVE")
		require.Regexp(t, `(?m)^PEER\s+DIALED.*\sERRORS\s+KEY SCOPE\s+WINDOWS BOUND/REVOKED\s+FAILURE$`, r.stdout)
		require.Regexp(t, `(?m)^10\.77\.0\.1:40000\s+true\s+17\s+18\s+RTS\s+16\s.*\s0\s+mw2-qp\s+12/11\s+-$`, r.stdout)
	})
}

func TestFabricConnsAgainstRealNode(t *testing.T) {
	t.Run("fabric off", func(t *testing.T) {
		addr := startNode(t)
		r := searchctl(t, addr, "fabric", "conns")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "fabric: off")
		require.Contains(t, r.stdout, "peers: none")
		require.NotContains(t, r.stdout, "rdma path:")
	})
	t.Run("peer with traffic", func(t *testing.T) {
		n := startFabricNode(t)
		ctx := context.Background()
		ttr, err := tcp.New(tcp.DefaultConfig())
		require.NoError(t, err)
		atr, err := adaptive.New(adaptive.Config{}, ttr)
		require.NoError(t, err)
		conn, err := atr.Dial(ctx, n.FabricAddr())
		require.NoError(t, err)
		defer conn.Close()
		for range 3 {
			_, err := conn.Call(ctx, fabric.MethodShardEnd, []byte("payload"))
			require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})
		}

		r := searchctl(t, n.URL(), "fabric", "conns")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "fabric: on, listening on "+n.FabricAddr())
		require.Regexp(t, `(?m)^127\.0\.0\.1\s+inbound\s+tcp\s+127\.0\.0\.1:\d+\s+[1-9]\d*\s+[1-9]\d*\s`, r.stdout)

		r = searchctl(t, n.URL(), "fabric", "conns", "-o", "json")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		var rep fabricdiag.ConnsReport
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
		require.Contains(t, r.stdout, `"rdma_transport": null`)
		require.Nil(t, rep.RDMATransport)
		require.Len(t, rep.Conns, 1)
		require.Equal(t, "127.0.0.1", rep.Conns[0].Peer)
		require.GreaterOrEqual(t, rep.Conns[0].Paths[0].Messages, uint64(3))
	})
	t.Run("outbound decision table", func(t *testing.T) {
		a, b := startFabricNode(t), startFabricNode(t)
		ctx := context.Background()
		conn, err := a.DialFabric(ctx, b.FabricAddr())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Call(ctx, fabric.MethodPing, []byte("x"))
		require.NoError(t, err)

		r := searchctl(t, a.URL(), "fabric", "conns")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "decision table, peer "+b.FabricAddr())
		require.Regexp(t, `(?m)^`+strings.ReplaceAll(b.FabricAddr(), ".", `\.`)+`\s+outbound\s+tcp\s`, r.stdout)
		require.Contains(t, r.stdout, "64 MiB")
	})
	t.Run("bad output format", func(t *testing.T) {
		r := searchctl(t, "http://127.0.0.1:1", "fabric", "conns", "-o", "yaml")
		require.Equal(t, ctl.ExitUsage, r.code)
	})
	t.Run("unreachable node", func(t *testing.T) {
		r := searchctl(t, "http://127.0.0.1:1", "fabric", "devices")
		require.Equal(t, ctl.ExitUnreachable, r.code, r.stderr)
	})
}
