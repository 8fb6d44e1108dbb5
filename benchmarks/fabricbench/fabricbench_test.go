package fabricbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
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

// countingPeer counts the calls its server is sent and the Callers dialled
// to it, so a test can see how Measure spread the calls in flight.
type countingPeer struct {
	Peer
	calls, dials *atomic.Int64
}

func (p countingPeer) Dial(ctx context.Context) (Caller, error) {
	c, err := p.Peer.Dial(ctx)
	if err != nil {
		return nil, err
	}
	p.dials.Add(1)
	return countingCaller{c, p.calls}, nil
}

type countingCaller struct {
	Caller
	calls *atomic.Int64
}

func (c countingCaller) Call(ctx context.Context, payload []byte) ([]byte, error) {
	c.calls.Add(1)
	return c.Caller.Call(ctx, payload)
}

// TestRunFansOut spreads 6 calls in flight over 3 servers of each
// transport: every server gets calls, a shared (multiplexed) transport
// gets one connection per server, raw one per call in flight, and each row
// says how many peers it was spread over.
func TestRunFansOut(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type counts struct{ calls, dials atomic.Int64 }
	servers := make(map[string][]*counts)
	factory := func(ctx context.Context, name string) (Peer, error) {
		p, err := NewPeer(ctx, name)
		if err != nil {
			return nil, err
		}
		c := new(counts)
		servers[name] = append(servers[name], c)
		return countingPeer{p, &c.calls, &c.dials}, nil
	}
	cfg := Config{Transports: []string{"raw", "tcp"}, Sizes: []int{64}, InFlight: []int{6}, Peers: []int{3},
		Duration: 20 * time.Millisecond}
	rs, err := Run(ctx, cfg, factory, nil)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		require.Empty(t, r.Error)
		require.Equal(t, 3, r.Peers)
		require.Equal(t, runtime.GOMAXPROCS(0), r.GOMAXPROCS)
		require.Equal(t, runtime.NumCPU(), r.CPUs)
	}
	for name, perServer := range map[string]int64{"raw": 2, "tcp": 1} {
		require.Len(t, servers[name], 3, "%s: one server per peer", name)
		for i, c := range servers[name] {
			require.Positive(t, c.calls.Load(), "%s server %d got no calls", name, i)
			require.Equal(t, perServer, c.dials.Load(), "%s server %d: connections dialled", name, i)
		}
	}
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, rs))
	require.NoError(t, WriteTargets(&table, rs))
	machine := fmt.Sprintf("machine: GOMAXPROCS %d, %d CPUs (2 points)", runtime.GOMAXPROCS(0), runtime.NumCPU())
	require.Equal(t, 2, strings.Count(table.String(), machine), "each table says what it ran on:\n%s", table.String())

	_, err = Run(ctx, Config{Transports: []string{"raw"}, Sizes: []int{64}, InFlight: []int{1}, Peers: []int{0},
		Duration: time.Millisecond}, factory, nil)
	require.ErrorContains(t, err, "Peers 0 is outside")
}

// TestWriteMachineOldResults: results saved before GOMAXPROCS was recorded
// say so instead of claiming a machine.
func TestWriteMachineOldResults(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMachine(&b, []Result{{Transport: "tcp"}, {Transport: "raw", GOMAXPROCS: 16, CPUs: 16}, {Transport: "x", Error: "no"}}))
	require.Equal(t, "machine: not recorded (1 points); GOMAXPROCS 16, 16 CPUs (1 points)\n", b.String())
}
