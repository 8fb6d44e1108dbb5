package adaptive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/fabric/tcp"
)

// memAndTCP serves h on a mem path and a TCP path (two transports of
// different names, as tcp and rdma are in a node) and dials them with
// Config.Pin set to pin, striping forced on for large calls.
func memAndTCP(t *testing.T, h fabric.Handler, pin *adaptive.Pin) (*fabrictest.Network, *adaptive.Conn, []string) {
	t.Helper()
	n := fabrictest.NewNetwork()
	newTCP := func() fabric.Transport {
		tcfg := tcp.DefaultConfig()
		tcfg.MaxMessageSize = 8 << 20
		tr, err := tcp.New(tcfg)
		require.NoError(t, err)
		return tr
	}
	cfg := testConfig(t)
	cfg.Stripe = adaptive.StripeAlways
	cfg.Pin = pin
	srv, err := adaptive.New(cfg, n.Node("server"), newTCP())
	require.NoError(t, err)
	cli, err := adaptive.New(cfg, n.Node("client"), newTCP())
	require.NoError(t, err)
	c, addrs := listenAndDial(t, cli, srv, "mem:server:0,tcp:127.0.0.1:0", h)
	return n, c, addrs
}

// callsByTransport is each path's finished calls, by transport name.
func callsByTransport(c *adaptive.Conn) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range c.Paths() {
		if p.Transport != "stripe" {
			out[p.Transport] = p.Calls
		}
	}
	return out
}

// TestPinSendsEveryCallOnThePinnedPath: while a Pin names a transport,
// calls of every size — large ones that StripeAlways would otherwise
// stripe too — go whole on its path and on no other; Set moves them to
// another path at once, and "" gives the choice back to the adaptive
// logic, which uses both paths again.
func TestPinSendsEveryCallOnThePinnedPath(t *testing.T) {
	var pin adaptive.Pin
	pin.Set("tcp")
	_, c, _ := memAndTCP(t, newCounter(false), &pin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sizes := []int{64, 64 << 10, 2 << 20} // the last is above StripeThreshold
	run := func(key uint64) {
		for i, size := range sizes {
			for j := range 20 {
				_, err := c.Call(ctx, mWork, keyed(key+uint64(100*i+j), size))
				require.NoError(t, err)
			}
		}
	}
	run(0)
	got := callsByTransport(c)
	require.Zero(t, got["mem"], "a call took the mem path while tcp was pinned: %v", got)
	require.Equal(t, uint64(3*20), got["tcp"], "every call went whole on tcp, none striped: %v", got)

	pin.Set("mem")
	run(1000)
	after := callsByTransport(c)
	require.Equal(t, got["tcp"], after["tcp"], "a call took tcp while mem was pinned: %v", after)
	require.Equal(t, uint64(3*20), after["mem"], "%v", after)

	pin.Set("")
	run(2000)
	free := callsByTransport(c)
	require.Greater(t, free["tcp"], after["tcp"], "unpinned, the adaptive choice learns tcp again: %v", free)
}

// TestPinnedPathDownFallsBack: a call on a connection pinned to a path
// that is down takes another healthy path; the pin bends the choice, it
// does not make the connection fail.
func TestPinnedPathDownFallsBack(t *testing.T) {
	var pin adaptive.Pin
	pin.Set("mem")
	n, c, addrs := memAndTCP(t, newCounter(false), &pin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Call(ctx, mWork, keyed(1, 64))
	require.NoError(t, err)
	n.Kill(addrs[0]) // the mem path
	for i := range 10 {
		_, err := c.Call(ctx, mWork, keyed(uint64(2+i), 64))
		require.NoError(t, err)
	}
	got := callsByTransport(c)
	require.Equal(t, uint64(1), got["mem"], "%v", got)
	require.Equal(t, uint64(10), got["tcp"], "the calls after the pinned path failed went on tcp: %v", got)
}

func TestNilPinIsUnpinned(t *testing.T) {
	var p *adaptive.Pin
	require.Equal(t, "", p.Name())
	var q adaptive.Pin
	require.Equal(t, "", q.Name())
	q.Set("rdma")
	require.Equal(t, "rdma", q.Name())
}
