//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// BenchmarkRendezvousKeys measures what scoping rendezvous keys with type-2
// memory windows costs: two client/server pairs on one device, one with
// windows (a bind and an invalidation per transfer) and one with
// memory-region keys, both from DefaultConfig (write mode). Each iteration
// makes one call of the given size on each pair, in alternating order, so
// the two are measured interleaved in one process; the reply is 8 bytes.
// It reports the mean call time of each as mw2-qp-us/call and mr-pd-us/call
// and their ratio as mw/mr.
func BenchmarkRendezvousKeys(b *testing.B) {
	env := rdmaEnv(b)
	type pair struct {
		c    fabric.Conn
		took time.Duration
	}
	open := func(disable bool) *pair {
		cfg := DefaultConfig()
		cfg.Device, cfg.GIDIndex, cfg.DisableMemoryWindows = env.device, env.gid, disable
		newTr := func() *Transport { // no logger: the debug line per rendezvous would be measured too
			tr, err := New(cfg, nil)
			require.NoError(b, err)
			b.Cleanup(func() { _ = tr.Close() })
			return tr
		}
		client, server := newTr(), newTr()
		want := KeyScopeWindow
		if disable {
			want = KeyScopeRegion
		}
		require.Equal(b, want, server.keyScope, "key scope (%s)", server.keyWhy)
		var m fabric.Mux
		m.HandleFunc(fabric.MethodUserBase, func(context.Context, *fabric.Request) ([]byte, error) { return []byte("received"), nil })
		l, err := server.Listen(context.Background(), net.JoinHostPort(env.addr, "0"), &m)
		require.NoError(b, err)
		b.Cleanup(func() { _ = l.Close() })
		c, err := client.Dial(context.Background(), l.Addr())
		require.NoError(b, err)
		b.Cleanup(func() { _ = c.Close() })
		return &pair{c: c}
	}
	mw, mr := open(false), open(true)
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			payload := make([]byte, size)
			call := func(p *pair) {
				start := time.Now()
				_, err := p.c.Call(context.Background(), fabric.MethodUserBase, payload)
				p.took += time.Since(start)
				require.NoError(b, err)
			}
			for range 3 { // warm the region caches of both pairs
				call(mw)
				call(mr)
			}
			mw.took, mr.took = 0, 0
			b.SetBytes(int64(2 * size))
			n := 0
			for ; b.Loop(); n++ {
				if n%2 == 0 {
					call(mw)
					call(mr)
				} else {
					call(mr)
					call(mw)
				}
			}
			b.ReportMetric(float64(mw.took.Microseconds())/float64(n), "mw2-qp-us/call")
			b.ReportMetric(float64(mr.took.Microseconds())/float64(n), "mr-pd-us/call")
			b.ReportMetric(float64(mw.took)/float64(mr.took), "mw/mr")
		})
	}
}
