//go:build linux && cgo && rdma

package node_test

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/node/fabricdiag"
)

// TestFabricRDMAPathOnVerbs runs two nodes whose fabric has an RDMA path on a
// real device (the Soft-RoCE guest of scripts/softroce/run.sh sets
// WEFT_RDMA_ADDR to the address of the netdev under rxe0): one dials the
// other, calls cross, and /_weft/fabric/conns shows the RDMA queue pair. In
// the guest (WEFT_RDMA_GUEST set) a missing device fails the test.
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
}
