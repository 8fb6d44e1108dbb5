package adaptive_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/tcp"
)

// BenchmarkInterleaved measures the adaptive transport against each of its
// single paths call by call in one process: every iteration makes one call
// on each connection, in an order that rotates, so a slow spell of the
// machine (or of an emulator) hits them alike. It reports each
// connection's round-trip p50 (µs) and adaptive's p50 over the best single
// path's ("adaptive/best"). The paths are two TCP paths on loopback or, in
// an rdma build with WEFT_RDMA_ADDR set (the Soft-RoCE guest sets it, and
// WEFT_RDMA_DEVICE and WEFT_RDMA_GID_INDEX), rdma and tcp on that address:
//
//	go test -c -tags rdma -o /tmp/adaptive.test ./fabric/adaptive
//	scripts/softroce/run.sh --tests-only --test-bin /tmp/adaptive.test --bench Interleaved
func BenchmarkInterleaved(b *testing.B) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	names, conns := interleavedPeers(b, echo)
	for _, size := range []int{64, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			payload := make([]byte, size)
			ctx := context.Background()
			call := func(c fabric.Conn) time.Duration {
				t0 := time.Now()
				reply, err := c.Call(ctx, mWork, payload)
				d := time.Since(t0)
				if err != nil || len(reply) != size {
					b.Fatalf("call of %d bytes: %d bytes back, err %v", size, len(reply), err)
				}
				return d
			}
			// Warm up: connections, buffers, and what adaptive learns of
			// this size on each path.
			for range 16 {
				for _, c := range conns {
					call(c)
				}
			}
			lat := make([][]time.Duration, len(conns))
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				for k := range conns {
					j := (i + k) % len(conns)
					lat[j] = append(lat[j], call(conns[j]))
				}
			}
			b.StopTimer()
			p50 := make([]time.Duration, len(conns))
			for j := range conns {
				slices.Sort(lat[j])
				p50[j] = lat[j][len(lat[j])/2]
				b.ReportMetric(float64(p50[j])/1e3, names[j]+"-p50-us")
			}
			best := slices.Min(p50[:len(p50)-1])
			b.ReportMetric(float64(p50[len(p50)-1])/float64(best), "adaptive/best")
		})
	}
}

// interleavedPeers listens with h on each single path and on adaptive over
// all of them, and dials each; adaptive comes last.
func interleavedPeers(b *testing.B, h fabric.Handler) ([]string, []fabric.Conn) {
	ctx := context.Background()
	tcfg := tcp.DefaultConfig()
	newTCP := func() fabric.Transport {
		tr, err := tcp.New(tcfg)
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	addr := os.Getenv("WEFT_RDMA_ADDR")
	type single struct {
		name, listen string
		tr           func() fabric.Transport
	}
	singles := []single{{"tcp", "127.0.0.1:0", newTCP}}
	paths := "tcp:127.0.0.1:0,tcp:127.0.0.2:0"
	if rdma.Available && addr != "" {
		rcfg := rdma.DefaultConfig()
		rcfg.Device = os.Getenv("WEFT_RDMA_DEVICE")
		if gi, err := strconv.Atoi(os.Getenv("WEFT_RDMA_GID_INDEX")); err == nil {
			rcfg.GIDIndex = gi
		}
		newRDMA := func() fabric.Transport {
			tr, err := rdma.New(rcfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = tr.Close() })
			return tr
		}
		at := net.JoinHostPort(addr, "0")
		singles = []single{{"tcp", at, newTCP}, {"rdma", at, newRDMA}}
		paths = "rdma:" + at + ",tcp:" + at
	}
	var names []string
	var conns []fabric.Conn
	serve := func(name string, tr fabric.Transport, listen string) {
		l, err := tr.Listen(ctx, listen, h)
		if err != nil {
			b.Fatalf("%s listen on %s: %v", name, listen, err)
		}
		b.Cleanup(func() { _ = l.Close() })
		c, err := tr.Dial(ctx, l.Addr())
		if err != nil {
			b.Fatalf("%s dial %s: %v", name, l.Addr(), err)
		}
		b.Cleanup(func() { _ = c.Close() })
		names, conns = append(names, name), append(conns, c)
	}
	for _, s := range singles {
		serve(s.name, s.tr(), s.listen)
	}
	// The adaptive peer has transports of its own, as fabricbench's has.
	var trs []fabric.Transport
	for _, s := range singles {
		trs = append(trs, s.tr())
	}
	at, err := adaptive.New(adaptive.Config{}, trs...)
	if err != nil {
		b.Fatal(err)
	}
	serve("adaptive", at, paths)
	b.Logf("interleaved: %s; adaptive over %s", fmt.Sprint(names[:len(names)-1]), paths)
	return names, conns
}
