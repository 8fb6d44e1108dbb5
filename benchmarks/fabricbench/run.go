package fabricbench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Config is one benchmark run: every transport at every size and in-flight
// count, transports side by side for each point.
type Config struct {
	Transports []string
	Sizes      []int
	InFlight   []int
	Duration   time.Duration
	// MinCalls per worker per point, whatever Duration says.
	MinCalls int
}

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
	peers := make(map[string]Peer)
	defer func() {
		for _, p := range peers {
			_ = p.Close()
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
		p, err := newPeer(ctx, name)
		if err != nil {
			startErr[name] = err
			continue
		}
		peers[name] = p
	}
	for _, size := range cfg.Sizes {
		for _, inflight := range cfg.InFlight {
			for _, name := range cfg.Transports {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				if err := startErr[name]; err != nil {
					add(Result{Transport: name, Size: size, InFlight: inflight, Error: err.Error()})
					continue
				}
				r, err := Measure(ctx, peers[name], Point{Size: size, InFlight: inflight, Duration: cfg.Duration, MinCalls: cfg.MinCalls})
				if err != nil {
					r.Error = err.Error()
				}
				add(r)
			}
		}
	}
	return out, nil
}

// Emitter returns an emit function for Run that writes JSON lines to w, or
// nothing when asJSON is false (the table is written at the end).
func Emitter(w io.Writer, asJSON bool) func(Result) {
	if !asJSON {
		return nil
	}
	return func(r Result) { _ = WriteJSON(w, r) }
}
