package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
)

// getJSON fetches url and decodes a 200 reply into v.
func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	b := getRaw(t, url)
	require.NoError(t, json.Unmarshal([]byte(b), v), "%s", b)
}

// fabricConfig is testConfig with the fabric on a free loopback port, TCP only.
func fabricConfig(dir string) node.Config {
	cfg := testConfig(dir)
	cfg.FabricAddr = "127.0.0.1:0"
	cfg.FabricRDMA = node.FabricRDMAOff
	return cfg
}

func TestFabricDevicesListsLoopback(t *testing.T) {
	n := startNode(t, testConfig(t.TempDir()))
	var rep fabricdiag.DevicesReport
	getJSON(t, n.URL()+"/_weft/fabric/devices", &rep)
	var names []string
	for _, ifc := range rep.Interfaces {
		names = append(names, ifc.Name)
	}
	require.Contains(t, names, "lo")
	require.NotNil(t, rep.RDMADevices)
	require.NotEmpty(t, rep.RDMA)
	if len(rep.RDMADevices) == 0 {
		require.True(t, strings.HasPrefix(rep.RDMA, "none: "), rep.RDMA)
	}
	if !rdma.Available {
		require.Empty(t, rep.VerbsDevices)
		require.Contains(t, rep.VerbsError, "without RDMA support")
	}
	require.Equal(t, "off: the fabric is off (no --fabric-addr)", rep.RDMAPath)
	require.Nil(t, rep.RDMATransport)
	require.Contains(t, getRaw(t, n.URL()+"/_weft/fabric/devices"), `"rdma_transport":null`, "the field is there, null without an RDMA path")
}

// getRaw returns the body of a 200 reply to GET url.
func getRaw(t testing.TB, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

func TestFabricDevicesSaysWhyNoRDMAPath(t *testing.T) {
	n := startNode(t, fabricConfig(t.TempDir()))
	var rep fabricdiag.DevicesReport
	getJSON(t, n.URL()+"/_weft/fabric/devices", &rep)
	require.Equal(t, "off: --fabric-rdma=off", rep.RDMAPath)
	require.Nil(t, rep.RDMATransport)
}

func TestFabricConnsWhenOff(t *testing.T) {
	n := startNode(t, testConfig(t.TempDir()))
	require.Empty(t, n.FabricAddr())
	var rep fabricdiag.ConnsReport
	getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
	require.Equal(t, "off", rep.Fabric)
	require.NotNil(t, rep.Conns)
	require.Empty(t, rep.Conns)
	_, err := n.DialFabric(context.Background(), "tcp:127.0.0.1:1")
	require.ErrorIs(t, err, fabric.ErrNotSupported)
}

func TestFabricConnsWithoutPeers(t *testing.T) {
	n := startNode(t, fabricConfig(t.TempDir()))
	require.True(t, strings.HasPrefix(n.FabricAddr(), "tcp:127.0.0.1:"), n.FabricAddr())
	var rep fabricdiag.ConnsReport
	getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
	require.Equal(t, "on", rep.Fabric)
	require.Equal(t, n.FabricAddr(), rep.ListenAddr)
	require.True(t, strings.HasPrefix(rep.RDMA, "off: "), rep.RDMA)
	require.Empty(t, rep.Conns)
	require.NotNil(t, rep.RDMAQPs)
	require.Nil(t, rep.RDMATransport)
	require.Contains(t, getRaw(t, n.URL()+"/_weft/fabric/conns"), `"rdma_transport":null`)
}

// inbound returns the report's inbound peer host, failing if absent.
func inbound(t *testing.T, rep fabricdiag.ConnsReport, host string) fabricdiag.PeerConn {
	t.Helper()
	for _, c := range rep.Conns {
		if c.Direction == "inbound" && c.Peer == host {
			return c
		}
	}
	require.FailNow(t, "no inbound peer", "host %s in %+v", host, rep.Conns)
	return fabricdiag.PeerConn{}
}

func TestFabricConnsCountsInboundPeer(t *testing.T) {
	n := startNode(t, fabricConfig(t.TempDir()))
	ctx := context.Background()
	ttr, err := tcp.New(tcp.DefaultConfig())
	require.NoError(t, err)
	atr, err := adaptive.New(adaptive.Config{}, ttr)
	require.NoError(t, err)
	conn, err := atr.Dial(ctx, n.FabricAddr())
	require.NoError(t, err)
	defer conn.Close()

	reply, err := conn.Call(ctx, fabric.MethodPing, []byte("hello"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(reply))
	const calls = 5
	for range calls {
		_, err := conn.Call(ctx, fabric.MethodShardEnd, []byte("0123456789"))
		require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod}, "no service answers a method outside the ranges of fabric/methods.go")
	}

	var rep fabricdiag.ConnsReport
	getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
	peer := inbound(t, rep, "127.0.0.1")
	require.Len(t, peer.Paths, 1)
	p := peer.Paths[0]
	require.Equal(t, "tcp", p.Transport)
	require.True(t, strings.HasPrefix(p.Remote, "127.0.0.1:"), p.Remote)
	require.GreaterOrEqual(t, p.Messages, uint64(calls))
	require.GreaterOrEqual(t, p.BytesReceived, uint64(calls*10))
	require.GreaterOrEqual(t, p.Errors, uint64(calls), "each call ended in the unknown-method error")
	require.False(t, p.LastSeen.IsZero())
}

func TestFabricOutboundConnShowsDecisionTable(t *testing.T) {
	a := startNode(t, fabricConfig(t.TempDir()))
	b := startNode(t, fabricConfig(t.TempDir()))
	ctx := context.Background()
	conn, err := a.DialFabric(ctx, b.FabricAddr())
	require.NoError(t, err)
	_, err = conn.Call(ctx, fabric.MethodPing, make([]byte, 100))
	require.NoError(t, err)
	for range 4 {
		_, err := conn.Call(ctx, fabric.MethodShardEnd, make([]byte, 100))
		require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})
	}
	require.NoError(t, conn.Send(ctx, fabric.MethodShardEnd, make([]byte, 300)))

	var rep fabricdiag.ConnsReport
	getJSON(t, a.URL()+"/_weft/fabric/conns", &rep)
	require.Len(t, rep.Conns, 1)
	out := rep.Conns[0]
	require.Equal(t, "outbound", out.Direction)
	require.Equal(t, b.FabricAddr(), out.Peer)
	require.Len(t, out.Paths, 1)
	require.Equal(t, "tcp", out.Paths[0].Transport)
	require.GreaterOrEqual(t, out.Paths[0].BytesSent, uint64(300))
	require.NotNil(t, out.Totals)
	require.EqualValues(t, 5, out.Totals.Calls)
	require.EqualValues(t, 4, out.Totals.CallErrors)
	require.EqualValues(t, 1, out.Totals.Sends)
	require.NotEmpty(t, out.DecisionTable)
	require.Equal(t, "tcp", out.DecisionTable[0].Transport)
	require.NotEmpty(t, out.DecisionTable[0].Buckets)
	resp, err := client.Get(a.URL() + "/_weft/fabric/conns")
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	require.NotContains(t, string(raw), `"next_probe"`, "zero times are left out (omitzero), not sent as year 1")
	require.NotContains(t, string(raw), `"last_seen"`)

	require.NoError(t, conn.Close())
	getJSON(t, a.URL()+"/_weft/fabric/conns", &rep)
	require.Empty(t, rep.Conns, "a closed connection leaves the table")
}

func TestFabricShutdownClosesListenerAndConns(t *testing.T) {
	a := startNode(t, fabricConfig(t.TempDir()))
	b, err := node.New(fabricConfig(t.TempDir()), testlog.New(t))
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	addr := b.FabricAddr()
	ctx := context.Background()
	out, err := b.DialFabric(ctx, a.FabricAddr())
	require.NoError(t, err)

	require.NoError(t, b.Shutdown(ctx))
	_, err = out.Call(ctx, fabric.MethodPing, nil)
	require.ErrorIs(t, err, fabric.ErrClosed, "Shutdown closes the connections the node dialled")
	ttr, err := tcp.New(tcp.DefaultConfig())
	require.NoError(t, err)
	_, err = ttr.Dial(ctx, strings.TrimPrefix(addr, "tcp:"))
	require.Error(t, err, "the fabric listener is closed")
	require.NoError(t, b.Shutdown(ctx), "Shutdown is idempotent")
}

func TestFabricRDMAOnFailsWithoutRDMA(t *testing.T) {
	if rdma.Available {
		t.Skip("this build has RDMA support; the failure needs a build without it")
	}
	cfg := fabricConfig(t.TempDir())
	cfg.FabricRDMA = node.FabricRDMAOn
	n, err := node.New(cfg, testlog.New(t))
	require.NoError(t, err)
	defer n.Shutdown(context.Background())
	err = n.Start(context.Background())
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	require.ErrorContains(t, err, "--fabric-rdma=on")
	require.ErrorContains(t, err, "-tags rdma")
	require.Empty(t, n.URL(), "nothing serves after a failed start")
}

func TestFabricRDMAAutoFallsBackToTCP(t *testing.T) {
	cfg := fabricConfig(t.TempDir())
	cfg.FabricRDMA = node.FabricRDMAAuto
	n := startNode(t, cfg)
	var rep fabricdiag.ConnsReport
	getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
	if rep.RDMA == "on" {
		require.Contains(t, rep.ListenAddr, "rdma:")
		require.NotNil(t, rep.RDMATransport)
		require.NotEmpty(t, rep.RDMATransport.KeyScope)
		return
	}
	require.True(t, strings.HasPrefix(rep.RDMA, "off: "), rep.RDMA)
	require.NotContains(t, rep.ListenAddr, "rdma:")
	require.Nil(t, rep.RDMATransport)
}
