// Package fabricbench measures message transports with one ping-pong
// workload: round-trip latency (p50, p99), bandwidth and CPU cost per GB for
// a payload size and a number of calls in flight. The same functions drive a
// fabric.Transport (tcp, rdma, adaptive, mem), a raw Go TCP length-prefixed
// ping-pong (the floor) and gRPC-Go unary with a raw-bytes codec (what Go
// services usually use), so they are compared side by side in one run.
// Both ends run in one process by default; Serve and Remote split them
// between two hosts.
package fabricbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Caller sends one payload and waits for the echoed reply.
type Caller interface {
	Call(ctx context.Context, payload []byte) ([]byte, error)
	Close() error
}

// Peer is a server and the way to reach it. Start brings the server up;
// Dial makes a Caller. Shared reports whether one Caller may be used by many
// goroutines at once (multiplexed); when false, Measure dials one Caller per
// call in flight.
type Peer interface {
	Name() string
	Shared() bool
	Dial(ctx context.Context) (Caller, error)
	Close() error
}

// Result is one measured point. MBPerS counts payload bytes in one direction
// per second (a 1 MiB ping-pong moves 1 MiB each way); CPUSPerGB is the
// process's user+system CPU seconds per GB of payload counted the same way:
// client and server together in one process, the clients only when the
// servers run elsewhere (Remote). Peers is how many servers the calls in
// flight were spread over (0 in results from before fan-out existed means
// 1); GOMAXPROCS and CPUs say what the measuring process had.
type Result struct {
	Transport  string  `json:"transport"`
	Size       int     `json:"size"`
	InFlight   int     `json:"inflight"`
	Peers      int     `json:"peers,omitempty"`
	Calls      int     `json:"calls"`
	RTTP50ns   int64   `json:"rtt_p50_ns"`
	RTTP99ns   int64   `json:"rtt_p99_ns"`
	MBPerS     float64 `json:"mb_per_s"`
	CPUSPerGB  float64 `json:"cpu_s_per_gb"`
	GOMAXPROCS int     `json:"gomaxprocs,omitempty"`
	CPUs       int     `json:"cpus,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// peers is r.Peers with results from before fan-out read as one peer.
func (r Result) peers() int { return max(r.Peers, 1) }

// Point says what to measure.
type Point struct {
	Size     int
	InFlight int
	// Peers is how many servers the calls in flight are spread over,
	// worker w calling server w mod Peers (a coordinator fanning out to
	// shards); Measure is given that many. 0 means 1.
	Peers int
	// Duration is how long calls are timed, after a short warm-up. At least
	// MinCalls calls are made per worker whatever the duration.
	Duration time.Duration
	MinCalls int
}

// ErrEcho is returned when a reply is not the payload that was sent.
var ErrEcho = errors.New("fabricbench: reply differs from payload")

// Measure runs one point against ps, servers of one transport (at least
// pt.Peers of them; one unless fanning out): InFlight goroutines each call
// in a loop for Duration, worker w calling server w mod Peers through its
// own Caller, or through the Caller it shares with the other workers of
// that server when the peer is Shared (one connection per server, as a
// node keeps). Every reply is checked for length and its first and last
// bytes. It blocks until all workers are done.
func Measure(ctx context.Context, ps []Peer, pt Point) (Result, error) {
	pt.Peers = max(pt.Peers, 1)
	if len(ps) < pt.Peers {
		return Result{}, fmt.Errorf("fabricbench: %d servers given for a point spread over %d", len(ps), pt.Peers)
	}
	p := ps[0]
	res := Result{Transport: p.Name(), Size: pt.Size, InFlight: pt.InFlight, Peers: pt.Peers,
		GOMAXPROCS: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU()}
	if pt.InFlight < 1 {
		pt.InFlight = 1
	}
	if pt.MinCalls < 1 {
		pt.MinCalls = 2
	}
	callers := make([]Caller, pt.InFlight)
	shared := make([]Caller, pt.Peers)
	for i := range callers {
		p := ps[i%pt.Peers]
		if p.Shared() && shared[i%pt.Peers] != nil {
			callers[i] = shared[i%pt.Peers]
			continue
		}
		c, err := p.Dial(ctx)
		if err != nil {
			closeCallers(callers)
			return res, fmt.Errorf("fabricbench: dial %s: %w", p.Name(), err)
		}
		callers[i] = c
		if p.Shared() {
			shared[i%pt.Peers] = c
		}
	}
	defer closeCallers(callers)

	payload := make([]byte, pt.Size)
	for i := range payload {
		payload[i] = byte(i*7 + 1)
	}
	// Warm up every transport alike: connections, buffers, and what the
	// adaptive transport learns per size: at least 8 calls and one per
	// worker, and calls for a fifth of Duration, at most 32.
	warmEnd := time.Now().Add(pt.Duration / 5)
	for i := 0; i < max(8, pt.InFlight) || i < 32 && time.Now().Before(warmEnd); i++ {
		if err := callOnce(ctx, callers[i%len(callers)], payload); err != nil {
			return res, err
		}
	}

	lat := make([][]int64, pt.InFlight)
	errs := make([]error, pt.InFlight)
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(pt.Duration)
	var wg sync.WaitGroup
	for w := range pt.InFlight {
		wg.Go(func() {
			samples := make([]int64, 0, 1024)
			for n := 0; n < pt.MinCalls || time.Now().Before(deadline); n++ {
				t0 := time.Now()
				if err := callOnce(ctx, callers[w], payload); err != nil {
					errs[w] = err
					break
				}
				samples = append(samples, int64(time.Since(t0)))
			}
			lat[w] = samples
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	res.Calls = len(all)
	res.RTTP50ns = percentile(all, 0.50)
	res.RTTP99ns = percentile(all, 0.99)
	bytes := float64(res.Calls) * float64(pt.Size)
	res.MBPerS = bytes / elapsed.Seconds() / 1e6
	if bytes > 0 {
		res.CPUSPerGB = cpu.Seconds() / (bytes / 1e9)
	}
	return res, nil
}

func callOnce(ctx context.Context, c Caller, payload []byte) error {
	reply, err := c.Call(ctx, payload)
	if err != nil {
		return err
	}
	if len(reply) != len(payload) {
		return fmt.Errorf("%w: got %d bytes, sent %d", ErrEcho, len(reply), len(payload))
	}
	if n := len(reply); n > 0 && (reply[0] != payload[0] || reply[n-1] != payload[n-1]) {
		return fmt.Errorf("%w: content of a %d-byte reply", ErrEcho, n)
	}
	return nil
}

func closeCallers(cs []Caller) {
	seen := make(map[Caller]bool)
	for _, c := range cs {
		if c != nil && !seen[c] {
			seen[c] = true
			_ = c.Close()
		}
	}
}

func percentile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
