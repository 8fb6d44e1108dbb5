package fabricbench

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{"64", 64, false},
		{"1KiB", 1 << 10, false},
		{"16MiB", 16 << 20, false},
		{"4k", 4 << 10, false},
		{" 2MB ", 2 << 20, false},
		{"ten", 0, true},
		{"-1", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			if tt.want >= 1<<10 {
				back, err := ParseSize(FormatSize(got))
				require.NoError(t, err)
				require.Equal(t, got, back)
			}
		})
	}
}

// TestRunMeasuresPeers runs two tiny points against the raw and gRPC peers
// and checks that each produced calls, latencies and a plot. It checks that
// the harness works, not how fast anything is.
func TestRunMeasuresPeers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lines bytes.Buffer
	cfg := Config{Transports: []string{"raw", "grpc", "nope"}, Sizes: []int{64, 64 << 10}, InFlight: []int{1, 4},
		Duration: 20 * time.Millisecond}
	rs, err := Run(ctx, cfg, NewPeer, Emitter(&lines, true))
	require.NoError(t, err)
	require.Len(t, rs, 12)
	dec := json.NewDecoder(&lines)
	for _, r := range rs {
		var got map[string]any
		require.NoError(t, dec.Decode(&got))
		for _, k := range []string{"transport", "size", "inflight", "rtt_p50_ns", "rtt_p99_ns", "mb_per_s", "cpu_s_per_gb"} {
			require.Contains(t, got, k)
		}
		if r.Transport == "nope" {
			require.Contains(t, r.Error, "unknown transport")
			continue
		}
		require.Empty(t, r.Error)
		require.GreaterOrEqual(t, r.Calls, 2*r.InFlight)
		require.Positive(t, r.RTTP50ns)
		require.GreaterOrEqual(t, r.RTTP99ns, r.RTTP50ns)
		require.Positive(t, r.MBPerS)
	}
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, rs))
	require.Contains(t, table.String(), "grpc")
	require.NoError(t, Plot(filepath.Join(t.TempDir(), "p.png"), rs))
}
