//go:build linux && cgo && rdma

package node_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/rdma/rdmatest"
	"github.com/weftsearch/weft/node"
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
	a, b := rdmaNodes(t, rdmaAddr(t))
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

// rdmaNodes starts two nodes whose fabric listens on addr (the address of
// the netdev under the RDMA device) with an RDMA path required.
func rdmaNodes(t *testing.T, addr string) (a, b *node.Node) {
	t.Helper()
	cfg := func() node.Config {
		c := testConfig(t.TempDir())
		c.FabricAddr = net.JoinHostPort(addr, "0")
		c.FabricRDMA = node.FabricRDMAOn
		// RDMA needs security off (its payloads are not sealed yet), on
		// the guest's own veth, which the test setup created for it.
		c.Security.AllowInsecureNetwork = true
		return c
	}
	return startNode(t, cfg()), startNode(t, cfg())
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

// TestFabricRDMAPathComesBackAfterDeviceLoss deletes the RDMA device under
// two nodes (`rdma link delete`; the Soft-RoCE guest only) while one calls
// the other over the adaptive fabric, and adds it again: every call is
// answered throughout (what was on the RDMA path is re-sent over TCP), the
// adaptive connection takes the RDMA path out, both nodes' RDMA transports
// rebuild themselves once the device is back (Rebuilds 1 and nothing
// refused in /_weft/fabric/conns), the connection's re-probe finds the RDMA
// path healthy again on a new queue pair, and calls cross that queue pair:
// the node does not stay on TCP for good.
//
// The calls name a method no package of the node serves (the first number
// past every range of fabric/methods.go): each comes back from b's handler
// as CodeUnknownMethod after a full envelope round trip on the path the
// adaptive connection picks, learning and exploring both paths (pings would
// stay on the probes' choice), and changes nothing on b.
func TestFabricRDMAPathComesBackAfterDeviceLoss(t *testing.T) {
	if os.Getenv("WEFT_RDMA_GUEST") == "" {
		t.Skip("deletes the RDMA device: runs only in the Soft-RoCE guest (WEFT_RDMA_GUEST=1)")
	}
	addr, dev, netdev := os.Getenv("WEFT_RDMA_ADDR"), os.Getenv("WEFT_RDMA_DEVICE"), os.Getenv("WEFT_RDMA_NETDEV")
	require.True(t, addr != "" && dev != "" && netdev != "", "the guest sets WEFT_RDMA_ADDR, WEFT_RDMA_DEVICE and WEFT_RDMA_NETDEV")
	a, b := rdmaNodes(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, err := a.DialFabric(ctx, b.FabricAddr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	rdmaPath := func() adaptive.PathStats {
		for _, p := range conn.(adaptive.PathReporter).Paths() {
			if p.Transport == "rdma" {
				return p
			}
		}
		return adaptive.PathStats{}
	}

	stop := make(chan struct{})
	callErr := make(chan error, 1)
	var calls atomic.Int64
	go func() {
		sizes := []int{64, 4 << 10, 64 << 10, 256 << 10}
		for i := 0; ; i++ {
			select {
			case <-stop:
				callErr <- nil
				return
			default:
			}
			_, err := conn.Call(ctx, fabric.MethodShardEnd, make([]byte, sizes[i%len(sizes)]))
			if !errors.Is(err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod}) {
				callErr <- fmt.Errorf("call %d: want b's CodeUnknownMethod, got %v", i, err)
				return
			}
			calls.Add(1)
		}
	}()
	defer func() {
		close(stop)
		require.NoError(t, <-callErr, "a call was lost while the RDMA device went away and came back")
		t.Logf("%d calls, all answered by b", calls.Load())
	}()
	first := dialedQP(t, a)
	require.Eventually(t, func() bool { return dialedQP(t, a).MessagesSent > first.MessagesSent }, time.Minute, 20*time.Millisecond,
		"calls never crossed the RDMA path")

	var deleted *rdmatest.Deletion
	t.Cleanup(func() { // leave the device for the tests after this one
		require.NoError(t, rdmatest.Restore(deleted, dev, netdev))
	})
	deleted = rdmatest.DeleteLink(dev, 60*time.Second)
	<-deleted.Done()
	require.NoError(t, deleted.Err(), "the deletion finishes once both nodes' transports let go of the device")
	require.Eventually(t, func() bool { return !rdmaPath().Healthy }, time.Minute, 20*time.Millisecond,
		"the adaptive connection never took the RDMA path out")
	var rep fabricdiag.ConnsReport
	getJSON(t, a.URL()+"/_weft/fabric/conns", &rep)
	require.NotNil(t, rep.RDMATransport)
	require.Contains(t, rep.RDMATransport.Refusing, "removed", "while the device is gone")
	t.Logf("while the device is gone: rdma path %+v; transport %+v", rdmaPath(), *rep.RDMATransport)

	require.NoError(t, rdmatest.AddRxe(dev, netdev))
	require.Eventually(t, func() bool { return rdmaPath().Healthy }, 2*time.Minute, 50*time.Millisecond,
		"the RDMA path never came back into service")
	again := dialedQP(t, a)
	require.NotEqual(t, first.LocalQPN, again.LocalQPN, "the path came back on a new queue pair")
	require.Equal(t, "RTS", again.QPState)
	require.Eventually(t, func() bool { return dialedQP(t, a).MessagesSent > again.MessagesSent }, time.Minute, 20*time.Millisecond,
		"calls never crossed the new queue pair")
	for _, n := range []*node.Node{a, b} {
		var rep fabricdiag.ConnsReport
		getJSON(t, n.URL()+"/_weft/fabric/conns", &rep)
		require.Equal(t, "on", rep.RDMA)
		require.NotNil(t, rep.RDMATransport)
		require.Equal(t, uint64(1), rep.RDMATransport.Rebuilds)
		require.Empty(t, rep.RDMATransport.Refusing)
		require.Equal(t, "ACTIVE", rep.RDMATransport.PortState)
		t.Logf("rebuilt: %s", rep.RDMATransport.LastRebuild)
	}
	t.Logf("the rdma path after: %+v", rdmaPath())
}
