//go:build linux && cgo && rdma && rdmacalib

package rdma

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// TestRendezvousCalibration moves 16 MiB requests under several rendezvous
// settings and logs the time of each; it checks only that the data arrived.
// Build with -tags 'rdma rdmacalib'; it is a measurement, run by hand.
func TestRendezvousCalibration(t *testing.T) {
	env := rdmaEnv(t)
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	for _, tc := range []struct {
		mode            string
		chunk, inflight int
	}{
		{"write", 1 << 20, 1}, {"write", 1 << 20, 2}, {"write", 1 << 20, 8},
		{"write", 256 << 10, 1}, {"write", 256 << 10, 4}, {"write", 64 << 10, 1}, {"write", 64 << 10, 8},
		{"read", 1 << 20, 1}, {"read", 256 << 10, 1}, {"read", 64 << 10, 4},
	} {
		t.Run(fmt.Sprintf("%s-%dK-x%d", tc.mode, tc.chunk>>10, tc.inflight), func(t *testing.T) {
			mod := func(c *Config) { c.RendezvousMode, c.ReadChunk, c.ReadsInFlight = tc.mode, tc.chunk, tc.inflight }
			client := newTestTransport(t, env, mod)
			server := newTestTransport(t, env, mod)
			var m fabric.Mux
			m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) {
				if !bytes.Equal(r.Payload, payload) {
					return nil, fmt.Errorf("payload corrupted")
				}
				return nil, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, c := listenAndDial(t, ctx, env, server, client, &m)
			for i := range 3 {
				start := time.Now()
				_, err := c.Call(ctx, fabric.MethodUserBase, payload)
				require.NoError(t, err)
				d := time.Since(start)
				t.Logf("CALIB mode=%s chunk=%dK inflight=%d run=%d: 16 MiB in %v = %.1f MB/s", tc.mode, tc.chunk>>10, tc.inflight, i, d, float64(size)/d.Seconds()/1e6)
			}
		})
	}
}

// TestLatencyCalibration times 64-byte calls under several SpinTime values
// and logs the median, and how many empty polls one spin took; it checks
// only that the replies are right.
func TestLatencyCalibration(t *testing.T) {
	env := rdmaEnv(t)
	for _, spin := range []time.Duration{0, 20 * time.Microsecond, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		t.Run(fmt.Sprintf("spin-%v", spin), func(t *testing.T) {
			client, _, c, ctx := echoPair(t, env, func(c *Config) { c.SpinTime = spin }, nil)
			p := make([]byte, 64)
			var ds []time.Duration
			for range 2000 {
				start := time.Now()
				r, err := c.Call(ctx, fabric.MethodUserBase, p)
				require.NoError(t, err)
				require.Len(t, r, 64)
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			t.Logf("CALIB spin=%v 64 B call RTT p50=%v p10=%v p90=%v; client poller slept %d times, its latest spin %d empty polls",
				spin, ds[len(ds)/2], ds[len(ds)/10], ds[len(ds)*9/10], client.pollSleeps.Load(), client.lastSpinPolls.Load())
		})
	}
}
