//go:build linux && cgo && rdma

package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/testlog"
)

// countingHandler counts executions per call key (the payload's first 8
// bytes) and answers with replySize bytes that start with the key.
type countingHandler struct {
	replySize int
	mu        sync.Mutex
	runs      map[uint64]int
}

func (h *countingHandler) ServeFabric(_ context.Context, r *fabric.Request) ([]byte, error) {
	key := binary.BigEndian.Uint64(r.Payload)
	h.mu.Lock()
	h.runs[key]++
	h.mu.Unlock()
	return keyedPayload(key, h.replySize), nil
}

func keyedPayload(key uint64, n int) []byte {
	p := make([]byte, max(n, 8))
	binary.BigEndian.PutUint64(p, key)
	for i := 8; i < len(p); i++ {
		p[i] = byte(i*31 + int(key))
	}
	return p
}

// Acceptance (issue 4): with the adaptive transport holding an RDMA and a
// TCP path, QPs are driven into an error state mid-call (a rendezvous
// region is deregistered while the call is in flight: the reply's target in
// one case, after the handler ran; the request's target in the other). The
// RDMA path fails its in-flight calls with ErrClosed, the adaptive layer
// finishes them over TCP, and every call completes with its own reply and
// exactly one handler execution.
func TestAdaptiveFinishesCallsOverTCPAfterQPError(t *testing.T) {
	env := rdmaEnv(t)
	tests := []struct {
		name        string
		reqSize     int
		replySize   int
		breakOnRdma func(client, server *Transport) // after the paths are up
	}{
		{"reply lost after the handler ran", 64, 256 << 10, func(c, _ *Transport) { c.breakIn.Store(true) }},
		{"request lost before the handler", 256 << 10, 64, func(_, s *Transport) { s.breakIn.Store(true) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			rc := newTestTransport(t, env, nil)
			rs := newTestTransport(t, env, nil)
			tcfg := tcp.DefaultConfig()
			tcfg.Logger = testlog.New(t)
			tc1, err := tcp.New(tcfg)
			require.NoError(t, err)
			tc2, err := tcp.New(tcfg)
			require.NoError(t, err)
			acfg := adaptive.DefaultConfig()
			acfg.Logger = testlog.New(t)
			acfg.ExploreInterval = 20 * time.Millisecond // keep sending live calls down both paths
			acfg.ReprobeMin, acfg.ReprobeMax = 20*time.Millisecond, 200*time.Millisecond
			cli, err := adaptive.New(acfg, rc, tc1)
			require.NoError(t, err)
			srv, err := adaptive.New(acfg, rs, tc2)
			require.NoError(t, err)

			h := &countingHandler{replySize: tc.replySize, runs: map[uint64]int{}}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			ip := env.addr
			l, err := srv.Listen(ctx, "rdma:"+net.JoinHostPort(ip, "0")+",tcp:"+net.JoinHostPort(ip, "0"), h)
			require.NoError(t, err)
			defer l.Close()
			c, err := cli.Dial(ctx, l.Addr())
			require.NoError(t, err)
			defer c.Close()

			call := func(key uint64) {
				reply, err := c.Call(ctx, fabric.MethodUserBase, keyedPayload(key, tc.reqSize))
				require.NoError(t, err, "call %d", key)
				require.True(t, bytes.Equal(keyedPayload(key, tc.replySize), reply), "call %d got a wrong reply", key)
			}
			// Warm up until the RDMA path carries calls (chosen, or explored).
			var calls uint64
			for ; calls < 400 && rs.callsIn.Load() == 0; calls++ {
				call(calls)
			}
			require.Positive(t, rs.callsIn.Load(), "the adaptive transport sent no call over RDMA in %d calls", calls)
			// From now on every rendezvous on RDMA fails with a QP error, so
			// each call that arrives over RDMA is in flight when its QP breaks.
			tc.breakOnRdma(rc, rs)
			wcErrs := func() uint64 { return rc.wcErrors.Load() + rs.wcErrors.Load() }
			broken := rs.callsIn.Load()
			for start := calls; calls < start+400 && (rs.callsIn.Load() == broken || calls < start+40); calls++ {
				call(calls)
			}
			require.Greater(t, rs.callsIn.Load(), broken, "no call went over RDMA after its memory was deregistered")
			require.Positive(t, wcErrs(), "no RDMA work completion failed")
			h.mu.Lock()
			defer h.mu.Unlock()
			for key := range calls {
				require.Equal(t, 1, h.runs[key], "handler executions of call %d", key)
			}
			require.Len(t, h.runs, int(calls), "executions of calls never made")
			for _, p := range c.(*adaptive.Conn).Paths() {
				t.Logf("path %s healthy=%v calls=%d failures=%d last error=%q", p.Path, p.Healthy, p.Calls, p.Failures, p.LastError)
			}
			t.Logf("%d calls, %d arrived over RDMA (%d after the break), %d RDMA work completions with an error status",
				calls, rs.callsIn.Load(), rs.callsIn.Load()-broken, wcErrs())
		})
	}
}

// lentRegions counts the rendezvous regions t's connections hold as
// request payloads (given back when the request is answered and any loan
// of it returned).
func lentRegions(t *Transport) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, c := range t.byID {
		c.rzMu.Lock()
		n += len(c.rzIn)
		c.rzMu.Unlock()
	}
	return n
}

// The adaptive server keeps each reply until the client has it; an echo's
// reply is the request's own memory, which rdma lends (fabric.Lender)
// rather than the server copying it. Over a lone RDMA path, eager and
// rendezvous requests: every reply is right while buffers are reused,
// the last request's region is still held after its reply was sent (the
// loan), and the session's end gives it back. (With an echo that copies,
// the region goes back at once and the test fails.)
func TestAdaptiveBorrowsRDMARequestMemory(t *testing.T) {
	env := rdmaEnv(t)
	rc := newTestTransport(t, env, nil)
	rs := newTestTransport(t, env, nil)
	acfg := adaptive.DefaultConfig()
	acfg.Logger = testlog.New(t)
	cli, err := adaptive.New(acfg, rc)
	require.NoError(t, err)
	srv, err := adaptive.New(acfg, rs)
	require.NoError(t, err)
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	ctx, cancel := context.WithTimeout(context.Background(), guestPatience)
	defer cancel()
	l, err := srv.Listen(ctx, "rdma:"+net.JoinHostPort(env.addr, "0"), echo)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	c, err := cli.Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer c.Close() // idempotent: closed below once the loans are counted

	large := 4 * TestConfig().RendezvousThreshold
	var wg sync.WaitGroup
	for g := range uint64(4) {
		wg.Go(func() {
			for i := range uint64(12) {
				key := g<<32 | i
				size := 64
				if i%2 == 1 {
					size = large
				}
				p := keyedPayload(key, size)
				reply, err := c.Call(ctx, fabric.MethodUserBase, p)
				if !assert.NoError(t, err, "call %x", key) || !assert.True(t, bytes.Equal(p, reply), "call %x got a wrong reply", key) {
					return
				}
			}
		})
	}
	wg.Wait()
	p := keyedPayload(1<<40, large)
	reply, err := c.Call(ctx, fabric.MethodUserBase, p)
	require.NoError(t, err)
	require.Equal(t, p, reply)
	// Without the loan the region goes back a moment after the reply is
	// sent; with it, it stays until the session ends.
	require.Never(t, func() bool { return lentRegions(rs) != 1 }, 200*time.Millisecond, 5*time.Millisecond,
		"the last request's region stays lent while its reply is kept for re-sends")

	require.NoError(t, c.Close())
	require.Eventually(t, func() bool { return lentRegions(rs) == 0 }, 10*time.Second, 5*time.Millisecond,
		"the session's end returns the loan")
}
