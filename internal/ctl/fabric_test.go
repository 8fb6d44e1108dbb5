package ctl_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/node/fabricdiag"
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
	n, err := node.New(cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
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
}

func TestFabricConnsAgainstRealNode(t *testing.T) {
	t.Run("fabric off", func(t *testing.T) {
		addr := startNode(t)
		r := searchctl(t, addr, "fabric", "conns")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "fabric: off")
		require.Contains(t, r.stdout, "peers: none")
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
			_, err := conn.Call(ctx, fabric.MethodUserBase, []byte("payload"))
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
