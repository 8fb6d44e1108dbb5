package adaptive_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/fabric/tcp"
)

const mWork = fabric.MethodUserBase + 1

// counter is a handler that counts executions per payload key (its first
// 8 bytes), optionally blocks until released, and echoes the payload
// without copying it.
type counter struct {
	mu      sync.Mutex
	runs    map[uint64]int
	entered chan struct{}
	release chan struct{}
}

func newCounter(block bool) *counter {
	c := &counter{runs: make(map[uint64]int), entered: make(chan struct{}, 1024)}
	if block {
		c.release = make(chan struct{})
	}
	return c
}

func (c *counter) ServeFabric(ctx context.Context, r *fabric.Request) ([]byte, error) {
	key := binary.BigEndian.Uint64(r.Payload)
	c.mu.Lock()
	c.runs[key]++
	c.mu.Unlock()
	c.entered <- struct{}{}
	if c.release != nil {
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.Payload, nil // aliasing: the server borrows or copies it for re-sends
}

func (c *counter) executions() map[uint64]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[uint64]int, len(c.runs))
	for k, v := range c.runs {
		out[k] = v
	}
	return out
}

func keyed(key uint64, size int) []byte {
	p := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(p, key)
	for i := 8; i < len(p); i++ {
		p[i] = byte(i*13 + int(key))
	}
	return p
}

// setup listens with h on two mem paths and dials them; it returns the
// per-path listener addresses too.
func setup(t *testing.T, h fabric.Handler) (*fabrictest.Network, *adaptive.Conn, []string) {
	t.Helper()
	n, cli, srv := memPair(t)
	c, addrs := listenAndDial(t, cli, srv, "mem:server:0,mem:server:0", h)
	return n, c, addrs
}

// listenAndDial serves h on the path list addr through srv and dials it
// through cli; it returns the connection and each path's listener address.
// Both close when the test ends.
func listenAndDial(t testing.TB, cli, srv *adaptive.Transport, addr string, h fabric.Handler) (*adaptive.Conn, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := srv.Listen(ctx, addr, h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	var addrs []string
	for _, pl := range l.(adaptive.PathListeners).Paths() {
		addrs = append(addrs, pl.Addr())
	}
	c, err := cli.Dial(ctx, l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c.(*adaptive.Conn), addrs
}

// table0 summarises bucket 0 of every path for failure messages.
func table0(c *adaptive.Conn) string {
	var s string
	for _, p := range c.Paths() {
		b := p.Buckets[0]
		s += fmt.Sprintf("[%s rtt=%v n=%d chosen=%v switches=%d] ", p.Path, time.Duration(b.RTTns), b.Samples, b.Chosen, b.Switches)
	}
	return s
}

// chosen returns the index of the path chosen for the smallest bucket and
// the total number of switches of that bucket.
func chosen(c *adaptive.Conn) (idx int, switches uint64) {
	idx = -1
	for i, p := range c.Paths() {
		if p.Buckets[0].Chosen {
			idx = i
		}
		switches += p.Buckets[0].Switches
	}
	return idx, switches
}

func callN(t *testing.T, c fabric.Conn, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		p := keyed(uint64(i), 64)
		reply, err := c.Call(ctx, mWork, p)
		require.NoError(t, err)
		require.Equal(t, p, reply)
	}
}

func TestSwitchesToFasterPathWithoutFlapping(t *testing.T) {
	n, c, addrs := setup(t, newCounter(false))
	// Two equally slow paths: close enough that hysteresis must hold the
	// choice still. The delays are large against this machine's timer
	// jitter (about a millisecond under -race), but a shared 2-core box
	// can still make one path look slower for a while, so one settling
	// switch is allowed; a selector without hysteresis switches dozens of
	// times here.
	for _, a := range addrs {
		defer n.SetDelay("*", a, 10*time.Millisecond)()
	}
	callN(t, c, 60)
	first, settled := chosen(c)
	require.GreaterOrEqual(t, first, 0)
	require.LessOrEqual(t, settled, uint64(1), "equal paths must not flap: %s", table0(c))

	// Slow the chosen path down: the choice moves to the other one once.
	defer n.SetDelay("*", addrs[first], 30*time.Millisecond)()
	callN(t, c, 40)
	now, switches := chosen(c)
	require.Equal(t, 1-first, now, "the choice must move to the faster path: %s", table0(c))
	require.Equal(t, settled+1, switches, "one switch, no flapping back: %s", table0(c))

	// It stays there while the other path remains slow.
	callN(t, c, 30)
	again, switches := chosen(c)
	require.Equal(t, now, again)
	require.Equal(t, settled+1, switches, "%s", table0(c))
}

func TestInFlightCallsMoveToOtherPathAndRunOnce(t *testing.T) {
	h := newCounter(true)
	n, c, addrs := setup(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	victim, _ := chosen(c)
	const calls = 16
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			p := keyed(uint64(i), 100)
			reply, err := c.Call(ctx, mWork, p)
			if err == nil && !bytes.Equal(reply, p) {
				err = fmt.Errorf("call %d: wrong reply", i)
			}
			errs <- err
		}()
	}
	for range calls {
		<-h.entered
	}
	// The path most calls took dies with every call still in its handler.
	n.Kill(addrs[victim])
	require.Eventually(t, func() bool { return !c.Paths()[victim].Healthy }, 5*time.Second, time.Millisecond)
	// Give the re-sends time to reach the server and join their calls.
	time.Sleep(50 * time.Millisecond)
	close(h.release)
	for range calls {
		require.NoError(t, <-errs)
	}
	runs := h.executions()
	require.Len(t, runs, calls)
	for k, v := range runs {
		require.Equal(t, 1, v, "call %d ran %d times", k, v)
	}
	require.Positive(t, c.Paths()[victim].Failures)
}

func TestFinishedCallReSentGetsCachedReplyAndPathReturns(t *testing.T) {
	h := newCounter(false)
	n, c, addrs := setup(t, h)
	// Break whichever path carries the reply of the 1000-byte call: the
	// handler has run, the reply is lost with the connection.
	var broke atomic.Bool
	for _, a := range addrs {
		defer n.AddFault(a, "*", func(m fabrictest.Message) fabrictest.Action {
			if m.Reply && m.Size == 1000 && broke.CompareAndSwap(false, true) {
				return fabrictest.Action{Corrupt: true}
			}
			return fabrictest.Action{}
		})()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := keyed(42, 1000)
	reply, err := c.Call(ctx, mWork, p)
	require.NoError(t, err)
	require.Equal(t, p, reply)
	require.True(t, broke.Load(), "the fault fired")
	require.Equal(t, map[uint64]int{42: 1}, h.executions(), "the re-send must not run the call again")

	failed := -1
	for i, ps := range c.Paths() {
		if ps.Failures > 0 {
			failed = i
		}
	}
	require.GreaterOrEqual(t, failed, 0, "one path failed: %+v", c.Paths())
	require.Eventually(t, func() bool { return c.Paths()[failed].Healthy }, 10*time.Second, 5*time.Millisecond,
		"the failed path is re-probed and returns")
	callN(t, c, 10)
}

func TestStripedCallSurvivesPathFailure(t *testing.T) {
	h := newCounter(false)
	n, c, addrs := setup(t, h) // StripeAuto tries striping first
	var broke atomic.Bool
	// Break the path that carries the third 256 KiB chunk request.
	var chunks atomic.Int32
	for _, a := range addrs {
		defer n.AddFault("*", a, func(m fabrictest.Message) fabrictest.Action {
			if !m.Reply && m.Size > 200<<10 && m.Method == adaptive.MethodEnvelope && chunks.Add(1) == 3 && broke.CompareAndSwap(false, true) {
				return fabrictest.Action{Corrupt: true}
			}
			return fabrictest.Action{}
		})()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := keyed(7, 8<<20)
	reply, err := c.Call(ctx, mWork, p)
	require.NoError(t, err)
	require.True(t, bytes.Equal(p, reply), "striped echo differs")
	require.True(t, broke.Load())
	require.Equal(t, map[uint64]int{7: 1}, h.executions())
}

// tcpPaths serves h on two TCP paths, 127.0.0.1 and 127.0.0.2 (both
// loopback), and dials them.
func tcpPaths(t testing.TB, h fabric.Handler) *adaptive.Conn {
	t.Helper()
	tcfg := tcp.DefaultConfig()
	tcfg.MaxMessageSize = 80 << 20
	ts, err := tcp.New(tcfg)
	require.NoError(t, err)
	tc, err := tcp.New(tcfg)
	require.NoError(t, err)
	acfg := testConfig(t)
	acfg.ChunkSize = map[string]int{"tcp": 1 << 20}
	acfg.Stripe = adaptive.StripeAlways
	srv, err := adaptive.New(acfg, ts)
	require.NoError(t, err)
	cli, err := adaptive.New(acfg, tc)
	require.NoError(t, err)
	c, _ := listenAndDial(t, cli, srv, "tcp:127.0.0.1:0,tcp:127.0.0.2:0", h)
	return c
}

func TestStriping64MiBOverTwoTCPPaths(t *testing.T) {
	h := newCounter(false)
	c := tcpPaths(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := keyed(64, 64<<20)
	reply, err := c.Call(ctx, mWork, p)
	require.NoError(t, err)
	require.True(t, bytes.Equal(p, reply), "64 MiB echo arrived corrupted")
	require.Equal(t, map[uint64]int{64: 1}, h.executions())
	ps := c.Paths()
	require.Len(t, ps, 3, "two paths and the striping row")
	require.Equal(t, "stripe", ps[2].Transport)
	ps = ps[:2]
	for _, path := range ps {
		t.Logf("%s: sent %d B, received %d B, %.0f MB/s", path.Path, path.BytesSent, path.BytesReceived, path.StripeMBps)
		require.Greater(t, path.BytesSent, uint64(4<<20), "path %s carried too little of the request", path.Path)
		require.Greater(t, path.BytesReceived, uint64(4<<20), "path %s carried too little of the reply", path.Path)
	}
	require.GreaterOrEqual(t, ps[0].BytesSent+ps[1].BytesSent, uint64(64<<20))
	require.GreaterOrEqual(t, ps[0].BytesReceived+ps[1].BytesReceived, uint64(64<<20))
}

func TestConformanceOverTCPPaths(t *testing.T) {
	fabrictest.RunConformance(t, func(t *testing.T) fabrictest.Setup {
		tcfg := tcp.DefaultConfig()
		tcfg.MaxMessageSize = 80 << 20
		tcfg.MaxInFlight = 32
		ts, err := tcp.New(tcfg)
		require.NoError(t, err)
		tc, err := tcp.New(tcfg)
		require.NoError(t, err)
		acfg := testConfig(t)
		acfg.MaxMessageSize = 80 << 20
		srv, err := adaptive.New(acfg, ts)
		require.NoError(t, err)
		cli, err := adaptive.New(acfg, tc)
		require.NoError(t, err)
		return fabrictest.Setup{
			Client: cli, Server: srv, Addr: "tcp:127.0.0.1:0,tcp:127.0.0.2:0",
			// tcp's listener offers no exported way to die without
			// goodbye; peer death is covered over mem paths.
			MaxMessageSize: 80 << 20, MaxInFlight: 32,
		}
	})
}

// TestStripeAutoPicksFasterWay: under StripeAuto a large bucket tries both
// ways and keeps the faster. Here one mem path is slow, so sending whole on
// the fast path beats striping (which waits for the slow path's chunks).
func TestStripeAutoPicksFasterWay(t *testing.T) {
	h := newCounter(false)
	n, c, addrs := setup(t, h)
	defer n.SetDelay("*", addrs[1], 40*time.Millisecond)()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const calls = 30 // enough for the path choice of this bucket to settle too
	for i := range calls {
		p := keyed(uint64(i), 1<<20+4096)
		reply, err := c.Call(ctx, mWork, p)
		require.NoError(t, err)
		require.True(t, bytes.Equal(p, reply))
	}
	ps := c.Paths()
	stripe := ps[len(ps)-1]
	b := 0
	for stripe.Buckets[b].MaxSize < 1<<20+4096 {
		b++
	}
	require.Positive(t, stripe.Buckets[b].Samples, "striping was tried")
	require.False(t, stripe.Buckets[b].Chosen, "whole on the fast path must win: %+v", stripe.Buckets[b])
	require.True(t, ps[0].Buckets[b].Chosen, "the fast path carries the bucket")
	require.Len(t, h.executions(), calls)
}

func TestPathsTableIsJSON(t *testing.T) {
	_, c, _ := setup(t, newCounter(false))
	callN(t, c, 5)
	b, err := json.Marshal(c.Paths())
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(b, &rows))
	require.Len(t, rows, 3, "two paths and the striping row")
	for _, k := range []string{"path", "transport", "healthy", "calls", "bytes_sent", "buckets"} {
		require.Contains(t, rows[0], k)
	}
	bucket := rows[0]["buckets"].([]any)[0].(map[string]any)
	for _, k := range []string{"max_size", "rtt_ns", "mb_per_s", "samples", "chosen", "switches"} {
		require.Contains(t, bucket, k)
	}
}
