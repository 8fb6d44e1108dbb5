//go:build linux && cgo && rdma

package node_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/node/fabricdiag"
)

// TestFabricRDMAPathOnVerbs runs two nodes whose fabric has an RDMA path on a
// real device (the Soft-RoCE guest of scripts/softroce/run.sh sets
// WEFT_RDMA_ADDR to the address of the netdev under rxe0): one dials the
// other, calls cross, and /_weft/fabric/conns shows the RDMA queue pair,
// the transport's port state and key scope, and the memory windows bound
// and revoked for the rendezvous that crossed the RDMA path. In the guest
// (WEFT_RDMA_GUEST set) a missing device fails the test; there rxe0 has
// type-2 memory windows, so the key scope is rdma.KeyScopeWindow.
func TestFabricRDMAPathOnVerbs(t *testing.T) {
	addr := os.Getenv("WEFT_RDMA_ADDR")
	if addr == "" {
		require.Empty(t, os.Getenv("WEFT_RDMA_GUEST"), "the guest must set WEFT_RDMA_ADDR")
		t.Skip("no RDMA device: set WEFT_RDMA_ADDR (scripts/softroce/run.sh does)")
	}
	cfgFor := func() node.Config {
		cfg := testConfig(t.TempDir())
		cfg.FabricAddr = net.JoinHostPort(addr, "0")
		cfg.FabricRDMA = node.FabricRDMAOn
		return cfg
	}
	a := startNode(t, cfgFor())
	b := startNode(t, cfgFor())
	require.Contains(t, b.FabricAddr(), "rdma:", "fabric=on must add an RDMA path: %s", b.FabricAddr())

	ctx := context.Background()
	conn, err := a.DialFabric(ctx, b.FabricAddr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	for _, size := range []int{64, 256 << 10} {
		reply, err := conn.Call(ctx, fabric.MethodPing, make([]byte, size))
		require.NoError(t, err)
		require.Len(t, reply, size)
	}

	var rep fabricdiag.ConnsReport
	getJSON(t, a.URL()+"/_weft/fabric/conns", &rep)
	require.Equal(t, "on", rep.RDMA)
	require.NotEmpty(t, rep.RDMAQPs, "the dialling node lists its queue pairs")
	qp := rep.RDMAQPs[0]
	require.Equal(t, "RTS", qp.QPState)
	require.NotZero(t, qp.LocalQPN)
	require.NotZero(t, qp.MessagesSent, "the probes crossed the RDMA path")

	scope := rdma.KeyScopeWindow
	if os.Getenv("WEFT_RDMA_GUEST") == "" {
		scope = qp.KeyScope // another device may lack type-2 windows
	}
	ti := rep.RDMATransport
	require.NotNil(t, ti, "a node with an RDMA path describes its transport")
	require.Equal(t, "ACTIVE", ti.PortState)
	require.Empty(t, ti.Refusing, "the port is up: connections are accepted")
	require.Equal(t, scope, ti.KeyScope)
	var devs fabricdiag.DevicesReport
	getJSON(t, a.URL()+"/_weft/fabric/devices", &devs)
	require.Equal(t, "on", devs.RDMAPath)
	require.NotNil(t, devs.RDMATransport)
	require.Equal(t, ti.Device, devs.RDMATransport.Device)

	// Large calls until a rendezvous crosses the RDMA path towards a (the
	// adaptive transport learns each path in turn, and may stripe): a
	// exposes the region it receives into through a memory window bound on
	// its own QP, and invalidates the window when the transfer ends.
	big := make([]byte, 256<<10)
	crossed := func(q rdma.ConnInfo) bool {
		if scope == rdma.KeyScopeWindow {
			return q.WindowsBound > 0
		}
		return q.Rendezvous > 0
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !crossed(dialedQP(t, a)) {
		require.True(t, time.Now().Before(deadline), "no 256 KiB call crossed the RDMA path by rendezvous in 2 minutes")
		reply, err := conn.Call(ctx, fabric.MethodPing, big)
		require.NoError(t, err)
		require.Len(t, reply, len(big))
	}
	require.Equal(t, scope, dialedQP(t, a).KeyScope)
	require.Eventually(t, func() bool {
		q := dialedQP(t, a)
		return q.WindowsBound == q.WindowsRevoked
	}, 10*time.Second, 10*time.Millisecond, "every window bound is invalidated when its transfer ends")
}

// dialedQP returns n's one dialled RDMA queue pair from /_weft/fabric/conns.
func dialedQP(t *testing.T, n *node.Node) rdma.ConnInfo {
	t.Helper()
	var rep fabricdiag.ConnsReport
	getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
	var out []rdma.ConnInfo
	for _, q := range rep.RDMAQPs {
		if q.Dialed {
			out = append(out, q)
		}
	}
	require.Len(t, out, 1, "dialled queue pairs in %+v", rep.RDMAQPs)
	return out[0]
}
