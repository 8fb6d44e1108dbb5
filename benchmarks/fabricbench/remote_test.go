package fabricbench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestParseEndpoints(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Endpoint
		err  string
	}{
		{"one", "tcp=10.0.0.1:7400", []Endpoint{{"tcp", "10.0.0.1:7400"}}, ""},
		{"adaptive keeps its commas", " tcp=10.0.0.1:7400 ; adaptive=rdma:10.0.0.1:7402,tcp:10.0.0.1:7403;",
			[]Endpoint{{"tcp", "10.0.0.1:7400"}, {"adaptive", "rdma:10.0.0.1:7402,tcp:10.0.0.1:7403"}}, ""},
		{"empty", " ; ", nil, "no entries"},
		{"no equals", "tcp 10.0.0.1:7400", nil, "is not transport=address"},
		{"no address", "tcp=", nil, "is not transport=address"},
		{"unknown", "udp=10.0.0.1:1", nil, `unknown transport "udp"`},
		{"twice", "tcp=a:1;tcp=b:2", nil, `"tcp" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEndpoints(tt.in)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrBadEndpoints)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			back, err := ParseEndpoints(FormatEndpoints(got))
			require.NoError(t, err)
			require.Equal(t, got, back)
		})
	}
}

func TestUnspecified(t *testing.T) {
	eps := []Endpoint{
		{"raw", "0.0.0.0:7404"},
		{"grpc", "[::]:7405"},
		{"tcp", "10.0.0.1:7400"},
		{"rdma", "10.0.0.1:7401"},
		{"adaptive", "rdma:10.0.0.1:7402,tcp:0.0.0.0:7403"},
	}
	require.Equal(t, []Endpoint{eps[0], eps[1], eps[4]}, Unspecified(eps))
	require.Empty(t, Unspecified(eps[2:4]))
}

// TestServeRemote runs the two-host code paths in one process over real
// loopback sockets: Serve starts the servers, Remote's peers only dial the
// endpoints Serve reports, and Run measures them. It checks that rows come
// back, not how fast they are.
func TestServeRemote(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := DefaultOptions()
	srv, err := o.Serve(ctx, []string{"raw", "grpc", "tcp", "adaptive"})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	eps := srv.Endpoints()
	require.Len(t, eps, 4)
	for _, e := range eps {
		require.NotContains(t, e.Addr, ":0", "%s: real port reported", e.Transport)
	}

	// The measuring side knows nothing but the printed endpoints.
	spec := FormatEndpoints(eps)
	back, err := ParseEndpoints(spec)
	require.NoError(t, err)
	cfg := Config{Transports: []string{"raw", "grpc", "tcp", "adaptive", "rdma"}, Sizes: []int{64, 64 << 10}, InFlight: []int{1, 4},
		Duration: 20 * time.Millisecond}
	rs, err := Run(ctx, cfg, DefaultOptions().Remote(back), nil)
	require.NoError(t, err)
	require.Len(t, rs, 20)
	seen := make(map[string]int)
	for _, r := range rs {
		if r.Transport == "rdma" {
			require.Contains(t, r.Error, "no endpoint for transport \"rdma\"")
			continue
		}
		require.Empty(t, r.Error, r.Transport)
		require.GreaterOrEqual(t, r.Calls, 2*r.InFlight, r.Transport)
		require.Positive(t, r.RTTP50ns)
		require.Positive(t, r.MBPerS)
		seen[r.Transport]++
	}
	require.Equal(t, map[string]int{"raw": 4, "grpc": 4, "tcp": 4, "adaptive": 4}, seen)
	require.Positive(t, srv.CPU())
}

func TestServeFailsCleanly(t *testing.T) {
	defer goleak.VerifyNone(t)
	o := DefaultOptions()
	o.AdaptivePaths = "udp:127.0.0.1:0"
	_, err := o.Serve(context.Background(), []string{"tcp", "adaptive"})
	require.ErrorContains(t, err, "serve adaptive")
	require.ErrorContains(t, err, `"udp"`)
	_, err = o.Serve(context.Background(), nil)
	require.Error(t, err)
}

// FuzzParseEndpoints: any input either fails with ErrBadEndpoints or parses
// to entries that format and parse back to themselves.
func FuzzParseEndpoints(f *testing.F) {
	f.Add("tcp=10.0.0.1:7400;adaptive=rdma:10.0.0.1:7402,tcp:10.0.0.1:7403")
	f.Add("raw=[::1]:1;grpc=h:2;rdma=10.0.0.1:7401")
	f.Add(";=;tcp==;")
	f.Fuzz(func(t *testing.T, s string) {
		eps, err := ParseEndpoints(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadEndpoints)
			return
		}
		require.NotEmpty(t, eps)
		back, err := ParseEndpoints(FormatEndpoints(eps))
		require.NoError(t, err)
		require.Equal(t, eps, back)
	})
}
