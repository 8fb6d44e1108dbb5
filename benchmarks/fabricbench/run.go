package fabricbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// Config is one benchmark run: every transport at every size and in-flight
// count, transports side by side for each point.
type Config struct {
	Transports []string
	Sizes      []int
	InFlight   []int
	// Peers lists how many servers the calls in flight are spread over
	// (Point.Peers), each count measured at every size and in-flight
	// count; empty means one.
	Peers    []int
	Duration time.Duration
	// MinCalls per worker per point, whatever Duration says.
	MinCalls int
	// Reps measures each point this many times, the transports taking
	// turns, and reports the median of each figure (calls are summed): on
	// a shared machine one run of one point is at the mercy of the
	// neighbours. 0 means 1.
	Reps int
}

// maxPeers bounds a fan-out: each transport starts that many servers.
const maxPeers = 64

// PeerFactory builds the named peer; NewPeer is the standard one.
type PeerFactory func(ctx context.Context, name string) (Peer, error)

// Run measures every point and calls emit with each result as soon as it is
// known (an unavailable transport or a failed point is emitted with Error
// set, so one broken transport does not hide the others). It returns all
// results.
func Run(ctx context.Context, cfg Config, newPeer PeerFactory, emit func(Result)) ([]Result, error) {
	if len(cfg.Transports) == 0 || len(cfg.Sizes) == 0 || len(cfg.InFlight) == 0 {
		return nil, fmt.Errorf("fabricbench: need at least one transport, size and in-flight count")
	}
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("fabricbench: Duration %v must be positive", cfg.Duration)
	}
	for _, n := range cfg.Peers {
		if n < 1 || n > maxPeers {
			return nil, fmt.Errorf("fabricbench: Peers %d is outside [1, %d]", n, maxPeers)
		}
	}
	fanOut := cfg.Peers
	if len(fanOut) == 0 {
		fanOut = []int{1}
	}
	// Each transport gets as many servers as the widest fan-out, built
	// before measuring; points with fewer use the first ones.
	peers := make(map[string][]Peer)
	defer func() {
		for _, ps := range peers {
			for _, p := range ps {
				_ = p.Close()
			}
		}
	}()
	var out []Result
	add := func(r Result) {
		out = append(out, r)
		if emit != nil {
			emit(r)
		}
	}
	startErr := make(map[string]error)
	for _, name := range cfg.Transports {
		for range slices.Max(fanOut) {
			p, err := newPeer(ctx, name)
			if err != nil {
				startErr[name] = err
				break
			}
			peers[name] = append(peers[name], p)
		}
	}
	runs := make(map[string][]Result)
	for _, size := range cfg.Sizes {
		for _, inflight := range cfg.InFlight {
			for _, fan := range fanOut {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				pt := Point{Size: size, InFlight: inflight, Peers: fan, Duration: cfg.Duration, MinCalls: cfg.MinCalls}
				for _, name := range cfg.Transports {
					if err := startErr[name]; err != nil {
						add(Result{Transport: name, Size: size, InFlight: inflight, Peers: fan, Error: err.Error()})
						continue
					}
					runs[name] = nil
				}
				for rep := 0; rep < max(cfg.Reps, 1); rep++ {
					for k := range cfg.Transports {
						name := cfg.Transports[(k+rep)%len(cfg.Transports)]
						if startErr[name] != nil || (len(runs[name]) > 0 && runs[name][0].Error != "") {
							continue
						}
						r, err := Measure(ctx, peers[name], pt)
						if err != nil {
							r.Error = err.Error()
							runs[name] = []Result{r}
							continue
						}
						runs[name] = append(runs[name], r)
					}
				}
				for _, name := range cfg.Transports {
					if startErr[name] == nil {
						add(median(runs[name]))
					}
				}
			}
		}
	}
	return out, nil
}

// median combines repeated measurements of one point: the median of each
// figure, the sum of calls.
func median(rs []Result) Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := rs[0]
	pick := func(get func(Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out.Calls = 0
	for _, r := range rs {
		out.Calls += r.Calls
	}
	out.RTTP50ns = int64(pick(func(r Result) float64 { return float64(r.RTTP50ns) }))
	out.RTTP99ns = int64(pick(func(r Result) float64 { return float64(r.RTTP99ns) }))
	out.MBPerS = pick(func(r Result) float64 { return r.MBPerS })
	out.CPUSPerGB = pick(func(r Result) float64 { return r.CPUSPerGB })
	return out
}

// Emitter returns an emit function for Run that writes JSON lines to w, or
// nothing when asJSON is false (the table is written at the end).
func Emitter(w io.Writer, asJSON bool) func(Result) {
	if !asJSON {
		return nil
	}
	return func(r Result) { _ = WriteJSON(w, r) }
}
