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

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/rdma"
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
	cfg := Config{Transports: []string{"raw", "grpc", "tcp", "adaptive", "rdma", "nope"}, Sizes: []int{64, 64 << 10}, InFlight: []int{1, 4},
		Duration: 20 * time.Millisecond, Reps: 2}
	rs, err := Run(ctx, cfg, NewPeer, Emitter(&lines, true))
	jsonCopy := bytes.Clone(lines.Bytes())
	require.NoError(t, err)
	require.Len(t, rs, 24)
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
		if r.Transport == "rdma" && !rdma.Available {
			require.Contains(t, r.Error, fabric.ErrNotSupported.Error())
			continue
		}
		require.Empty(t, r.Error)
		require.GreaterOrEqual(t, r.Calls, 2*2*r.InFlight, "%s: two reps of at least two calls per worker", r.Transport)
		require.Positive(t, r.RTTP50ns)
		require.GreaterOrEqual(t, r.RTTP99ns, r.RTTP50ns)
		require.Positive(t, r.MBPerS)
	}
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, rs))
	require.Contains(t, table.String(), "grpc")
	require.NoError(t, WriteTargets(&table, rs))
	require.Contains(t, table.String(), "adaptive/best p50")
	back, err := ReadJSON(bytes.NewReader(jsonCopy))
	require.NoError(t, err)
	require.Equal(t, rs, back, "JSON lines read back as written")
	require.NoError(t, Plot(filepath.Join(t.TempDir(), "p.png"), rs))
}
