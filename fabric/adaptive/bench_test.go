package adaptive_test

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/tcp"
)

// BenchmarkCall measures one path list over TCP against plain tcp, small
// calls, as many in flight as -cpu × GOMAXPROCS parallelism gives.
func BenchmarkCall(b *testing.B) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	for _, tc := range []struct{ name string }{{"tcp"}, {"adaptive"}} {
		b.Run(tc.name, func(b *testing.B) {
			var c fabric.Conn
			if tc.name == "adaptive" {
				c = tcpPaths(b, echo)
			} else {
				c = plainTCP(b, tcp.DefaultConfig(), echo)
			}
			payload := make([]byte, 64)
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(context.Background(), mWork, payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkCallLarge measures 16 MiB echo calls, 16 in flight, over two
// TCP paths with the default configuration (StripeAuto) against one plain
// tcp connection: the point where the envelope copy and reply retention
// cost most.
func BenchmarkCallLarge(b *testing.B) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	for _, name := range []string{"tcp", "adaptive"} {
		b.Run(name, func(b *testing.B) {
			tcfg := tcp.DefaultConfig()
			tcfg.MaxMessageSize = 80 << 20
			var c fabric.Conn
			if name == "adaptive" {
				c = defaultTCPPaths(b, tcfg, echo)
			} else {
				c = plainTCP(b, tcfg, echo)
			}
			payload := make([]byte, 16<<20)
			b.SetBytes(int64(len(payload)))
			b.SetParallelism(8)
			b.ReportAllocs()
			stop := peakHeap(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(context.Background(), mWork, payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
			stop()
		})
	}
}

// BenchmarkCallEcho measures one call at a time with an echo that returns
// the request's own memory, over two TCP paths against plain tcp: at 4 KiB
// tcp hands the handler its read buffer and the server copies the reply it
// keeps for re-sends; at 64 KiB tcp lends its pooled request buffer and the
// server borrows it instead (fabric.Lender), so adaptive allocates what
// tcp does.
func BenchmarkCallEcho(b *testing.B) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return r.Payload, nil
	})
	for _, size := range []int{64, 4 << 10, 16 << 10, 64 << 10} {
		for _, name := range []string{"tcp", "adaptive"} {
			b.Run(fmt.Sprintf("%s/%dKiB", name, size>>10), func(b *testing.B) {
				var c fabric.Conn
				if name == "adaptive" {
					c = defaultTCPPaths(b, tcp.DefaultConfig(), echo)
				} else {
					c = plainTCP(b, tcp.DefaultConfig(), echo)
				}
				payload := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Call(context.Background(), mWork, payload); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// plainTCP dials one tcp connection to a listener serving h on loopback.
func plainTCP(b *testing.B, tcfg tcp.Config, h fabric.Handler) fabric.Conn {
	tr, err := tcp.New(tcfg)
	if err != nil {
		b.Fatal(err)
	}
	return listenDial(b, tr, tr, "127.0.0.1:0", h)
}

// listenDial serves h with srv at addr and dials it with cli; both end
// with the benchmark.
func listenDial(b *testing.B, srv, cli fabric.Transport, addr string, h fabric.Handler) fabric.Conn {
	l, err := srv.Listen(context.Background(), addr, h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	c, err := cli.Dial(context.Background(), l.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// peakHeap samples the live heap (runtime/metrics, no stop-the-world)
// every 5 ms until the returned function is called, which reports the
// largest sample as the "peak-heap-MB" metric: what replies kept for
// re-sends cost in memory.
func peakHeap(b *testing.B) (stop func()) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
	}
}

// defaultTCPPaths dials two loopback TCP paths with adaptive's default
// configuration.
func defaultTCPPaths(b *testing.B, tcfg tcp.Config, h fabric.Handler) fabric.Conn {
	ts, err := tcp.New(tcfg)
	if err != nil {
		b.Fatal(err)
	}
	tc, err := tcp.New(tcfg)
	if err != nil {
		b.Fatal(err)
	}
	acfg := adaptive.DefaultConfig()
	acfg.MaxMessageSize = 80 << 20
	srv, err := adaptive.New(acfg, ts)
	if err != nil {
		b.Fatal(err)
	}
	cli, err := adaptive.New(acfg, tc)
	if err != nil {
		b.Fatal(err)
	}
	return listenDial(b, srv, cli, "tcp:127.0.0.1:0,tcp:127.0.0.2:0", h)
}
