package tcp

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftsearch/weft/fabric"
)

var benchSizes = []int{64, 1 << 10, 16 << 10, 1 << 20, 16 << 20}

// rawEcho serves a length-prefixed echo: the floor a fabric transport is
// measured against.
func rawEcho(b *testing.B) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				br := bufio.NewReaderSize(nc, 64<<10)
				var hdr [4]byte
				var buf []byte
				for {
					if _, err := io.ReadFull(br, hdr[:]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(hdr[:]))
					if cap(buf) < n {
						buf = make([]byte, n)
					}
					buf = buf[:n]
					if _, err := io.ReadFull(br, buf); err != nil {
						return
					}
					bufs := net.Buffers{hdr[:], buf}
					if _, err := bufs.WriteTo(nc); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() { ln.Close(); wg.Wait() }
}

func BenchmarkRawTCP(b *testing.B) {
	addr, stop := rawEcho(b)
	defer stop()
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			br := bufio.NewReaderSize(nc, 64<<10)
			payload := make([]byte, size)
			var hdr [4]byte
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for range b.N {
				binary.BigEndian.PutUint32(hdr[:], uint32(size))
				bufs := net.Buffers{hdr[:], payload}
				if _, err := bufs.WriteTo(nc); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(br, hdr[:]); err != nil {
					b.Fatal(err)
				}
				reply := make([]byte, binary.BigEndian.Uint32(hdr[:]))
				if _, err := io.ReadFull(br, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// echoServer serves an echo of fabric.MethodUserBase with a default
// transport on loopback until the benchmark ends; it returns the
// transport, to dial with, and the address.
func echoServer(b *testing.B) (*Transport, string) {
	tr, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	l, err := tr.Listen(context.Background(), "127.0.0.1:0", &m)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return tr, l.Addr()
}

func BenchmarkFabricTCP(b *testing.B) {
	tr, addr := echoServer(b)
	ctx := context.Background()
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			c, err := tr.Dial(ctx, addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			payload := make([]byte, size)
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Call(ctx, fabric.MethodUserBase, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFabricTCPParallel16(b *testing.B) {
	tr, addr := echoServer(b)
	ctx := context.Background()
	c, err := tr.Dial(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	payload := make([]byte, 64)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Call(ctx, fabric.MethodUserBase, payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRatioToRaw alternates blocks of raw and fabric round trips on
// the same machine at the same time, so background load hits both alike,
// and reports the ratio of their median round-trip times.
func BenchmarkRatioToRaw(b *testing.B) {
	addr, stop := rawEcho(b)
	defer stop()
	tr, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	// echocopy's handler copies the payload into its reply, as fabricbench's
	// does (Request.Payload is valid only until the handler returns): the
	// difference to echo is the handler's allocation and copy, and the
	// garbage collection they cause, which raw's echo does not pay.
	m.HandleFunc(fabric.MethodUserBase+1, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	l, err := tr.Listen(ctx, "127.0.0.1:0", &m)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, bc := range []struct {
		name   string
		method fabric.Method
		size   int
	}{
		{"ping/64", fabric.MethodPing, 64}, {"echo/64", fabric.MethodUserBase, 64},
		{"ping/1024", fabric.MethodPing, 1 << 10}, {"echo/1024", fabric.MethodUserBase, 1 << 10},
		{"echo/4096", fabric.MethodUserBase, 4 << 10},
		{"ping/16384", fabric.MethodPing, 16 << 10}, {"echo/16384", fabric.MethodUserBase, 16 << 10},
		{"echocopy/16384", fabric.MethodUserBase + 1, 16 << 10},
		{"echo/1048576", fabric.MethodUserBase, 1 << 20}, {"echo/16777216", fabric.MethodUserBase, 16 << 20},
	} {
		size := bc.size
		b.Run(bc.name, func(b *testing.B) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			br := bufio.NewReaderSize(nc, 64<<10)
			c, err := tr.Dial(ctx, l.Addr())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			payload := make([]byte, size)
			raw := func() {
				var hdr [4]byte
				binary.BigEndian.PutUint32(hdr[:], uint32(size))
				bufs := net.Buffers{hdr[:], payload}
				if _, err := bufs.WriteTo(nc); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(br, hdr[:]); err != nil {
					b.Fatal(err)
				}
				reply := make([]byte, binary.BigEndian.Uint32(hdr[:]))
				if _, err := io.ReadFull(br, reply); err != nil {
					b.Fatal(err)
				}
			}
			fab := func() {
				if _, err := c.Call(ctx, bc.method, payload); err != nil {
					b.Fatal(err)
				}
			}
			block := max(1, 200>>(max(0, bitsLen(size)-14)))
			var rawT, fabT []time.Duration
			for done := 0; done < b.N; done += block {
				for _, side := range []struct {
					f   func()
					out *[]time.Duration
				}{{raw, &rawT}, {fab, &fabT}} {
					for range block {
						t0 := time.Now()
						side.f()
						*side.out = append(*side.out, time.Since(t0))
					}
				}
			}
			r50, f50 := median(rawT), median(fabT)
			b.ReportMetric(float64(r50.Nanoseconds()), "raw-p50-ns")
			b.ReportMetric(float64(f50.Nanoseconds()), "fabric-p50-ns")
			b.ReportMetric(float64(f50)/float64(r50), "ratio")
		})
	}
}

func bitsLen(n int) int {
	k := 0
	for n > 0 {
		n >>= 1
		k++
	}
	return k
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkBandwidthRatioToRaw measures bandwidth with 16 calls in flight:
// rounds of 16 raw callers (one socket each, the floor), of 16 callers
// sharing one fabric Conn held to one socket (BulkSockets 0), and of 16
// sharing one Conn with the default bulk sockets take turns, so background
// load hits all alike. It reports each one's median MB/s (payload bytes one
// way) and CPU seconds per GB (process user+system, both ends), and the
// ratios to raw. b.N is the number of rounds of each.
func BenchmarkBandwidthRatioToRaw(b *testing.B) {
	const inFlight = 16
	addr, stop := rawEcho(b)
	defer stop()
	ctx := context.Background()
	server, fabAddr := echoServer(b)
	oneCfg := DefaultConfig()
	oneCfg.BulkSockets = 0
	one, err := New(oneCfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 20, 16 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			perCaller := max(1, (4<<20)/size) // calls per caller per round
			raws := make([]net.Conn, inFlight)
			for i := range raws {
				if raws[i], err = net.Dial("tcp", addr); err != nil {
					b.Fatal(err)
				}
				defer raws[i].Close()
			}
			var conns []fabric.Conn
			for _, tr := range []*Transport{one, server} {
				c, err := tr.Dial(ctx, fabAddr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				conns = append(conns, c)
			}
			payload := make([]byte, size)
			rawCall := func(nc net.Conn) error {
				var hdr [4]byte
				binary.BigEndian.PutUint32(hdr[:], uint32(size))
				bufs := net.Buffers{hdr[:], payload}
				if _, err := bufs.WriteTo(nc); err != nil {
					return err
				}
				if _, err := io.ReadFull(nc, hdr[:]); err != nil {
					return err
				}
				_, err := io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(hdr[:])))
				return err
			}
			sides := []struct {
				name string
				call func(i int) error
				mbs  []time.Duration // MB/s, kept as durations for median
				cpu  time.Duration
			}{
				{name: "raw", call: func(i int) error { return rawCall(raws[i]) }},
				{name: "one", call: func(int) error { _, err := conns[0].Call(ctx, fabric.MethodUserBase, payload); return err }},
				{name: "bulk", call: func(int) error { _, err := conns[1].Call(ctx, fabric.MethodUserBase, payload); return err }},
			}
			// Warm up: the bulk Conn opens its sockets on demand.
			for i := range sides {
				for range 3 {
					var wg sync.WaitGroup
					for w := range inFlight {
						wg.Go(func() { _ = sides[i].call(w) })
					}
					wg.Wait()
				}
			}
			b.ResetTimer()
			for range b.N {
				for i := range sides {
					var wg sync.WaitGroup
					t0, c0 := time.Now(), cpuTime()
					for w := range inFlight {
						wg.Go(func() {
							for range perCaller {
								if err := sides[i].call(w); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					sides[i].cpu += cpuTime() - c0
					mbs := float64(inFlight*perCaller*size) / time.Since(t0).Seconds() / 1e6
					sides[i].mbs = append(sides[i].mbs, time.Duration(mbs))
				}
			}
			gb := float64(b.N*inFlight*perCaller*size) / 1e9
			raw := float64(median(sides[0].mbs))
			for _, s := range sides {
				mbs := float64(median(s.mbs))
				b.ReportMetric(mbs, s.name+"-MB/s")
				b.ReportMetric(s.cpu.Seconds()/gb, s.name+"-cpu-s/GB")
				if s.name != "raw" {
					b.ReportMetric(mbs/raw, s.name+"/raw")
				}
			}
		})
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLanesRatioToRaw measures round trips with many calls in
// flight: rounds of N raw callers (one socket each, the floor) and of N
// callers sharing one Conn with Config.Lanes at 1, 2, 4 and 16 take turns,
// so background load hits all alike. It reports each one's median round
// trip, CPU per call (process user+system, both ends) and calls per
// second (the same calls per round for all), relative to raw's. b.N is the
// number of rounds of each.
func BenchmarkLanesRatioToRaw(b *testing.B) {
	addr, stop := rawEcho(b)
	defer stop()
	ctx := context.Background()
	_, fabAddr := echoServer(b)
	laneCounts := []int{1, 2, 4, 16}
	for _, size := range []int{64, 1 << 10, 16 << 10} {
		for _, inFlight := range []int{16, 64} {
			b.Run(fmt.Sprintf("%d/%d", size, inFlight), func(b *testing.B) {
				payload := make([]byte, size)
				type side struct {
					name      string
					call      func(w int) error
					lat       []time.Duration
					cpu, wall time.Duration
				}
				raws := make([]net.Conn, inFlight)
				brs := make([]*bufio.Reader, inFlight)
				for i := range raws {
					nc, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					defer nc.Close()
					raws[i], brs[i] = nc, bufio.NewReaderSize(nc, 64<<10)
				}
				sides := []*side{{name: "raw", call: func(w int) error {
					var hdr [4]byte
					binary.BigEndian.PutUint32(hdr[:], uint32(size))
					bufs := net.Buffers{hdr[:], payload}
					if _, err := bufs.WriteTo(raws[w]); err != nil {
						return err
					}
					if _, err := io.ReadFull(brs[w], hdr[:]); err != nil {
						return err
					}
					_, err := io.ReadFull(brs[w], make([]byte, binary.BigEndian.Uint32(hdr[:])))
					return err
				}}}
				for _, lanes := range laneCounts {
					cfg := DefaultConfig()
					cfg.Lanes = lanes
					tr, err := New(cfg)
					if err != nil {
						b.Fatal(err)
					}
					c, err := tr.Dial(ctx, fabAddr)
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					sides = append(sides, &side{name: fmt.Sprintf("lanes%d", lanes), call: func(int) error {
						_, err := c.Call(ctx, fabric.MethodUserBase, payload)
						return err
					}})
				}
				perCaller := max(4, 2000/inFlight)
				round := func(s *side, record bool) {
					var wg sync.WaitGroup
					lat := make([][]time.Duration, inFlight)
					c0, t0 := cpuTime(), time.Now()
					for w := range inFlight {
						wg.Go(func() {
							for range perCaller {
								t0 := time.Now()
								if err := s.call(w); err != nil {
									b.Error(err)
									return
								}
								lat[w] = append(lat[w], time.Since(t0))
							}
						})
					}
					wg.Wait()
					if record {
						s.cpu += cpuTime() - c0
						s.wall += time.Since(t0)
						s.lat = append(s.lat, slices.Concat(lat...)...)
					}
				}
				for _, s := range sides { // warm up: lanes open on demand
					for range 3 {
						round(s, false)
					}
				}
				b.ResetTimer()
				for range b.N {
					for _, s := range sides {
						round(s, true)
					}
				}
				raw := sides[0]
				for _, s := range sides[1:] {
					b.ReportMetric(float64(median(s.lat))/float64(median(raw.lat)), s.name+"/raw-p50")
					b.ReportMetric(float64(s.cpu)/float64(raw.cpu), s.name+"/raw-cpu")
					b.ReportMetric(float64(raw.wall)/float64(s.wall), s.name+"/raw-calls-per-s")
				}
				b.ReportMetric(float64(median(raw.lat).Microseconds()), "raw-p50-µs")
			})
		}
	}
}
