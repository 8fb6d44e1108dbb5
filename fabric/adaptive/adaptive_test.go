package adaptive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/internal/testlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testConfig(t testing.TB) adaptive.Config {
	cfg := adaptive.DefaultConfig()
	cfg.Logger = testlog.New(t)
	cfg.StripeThreshold = 1 << 20
	cfg.ChunkSize = map[string]int{"mem": 256 << 10, "tcp": 256 << 10}
	cfg.ExploreInterval = 50 * time.Millisecond
	cfg.ReprobeMin = 20 * time.Millisecond
	cfg.ReprobeMax = 200 * time.Millisecond
	cfg.ResendGrace = 300 * time.Millisecond
	cfg.SessionTTL = 10 * time.Second
	return cfg
}

// memPair returns client and server adaptive transports over a fresh mem
// network.
func memPair(t testing.TB) (*fabrictest.Network, *adaptive.Transport, *adaptive.Transport) {
	n := fabrictest.NewNetwork()
	cli, err := adaptive.New(testConfig(t), n.Node("client"))
	require.NoError(t, err)
	srv, err := adaptive.New(testConfig(t), n.Node("server"))
	require.NoError(t, err)
	return n, cli, srv
}

func TestConformanceOverMemPaths(t *testing.T) {
	fabrictest.RunConformance(t, func(t *testing.T) fabrictest.Setup {
		n, cli, srv := memPair(t)
		return fabrictest.Setup{
			Client: cli, Server: srv, Addr: "mem:server:0,mem:server:0",
			Kill: func(l fabric.Listener) {
				for _, pl := range l.(adaptive.PathListeners).Paths() {
					n.Kill(pl.Addr())
				}
			},
			MaxInFlight: fabrictest.DefaultConfig().MaxInFlight,
		}
	})
}

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want []adaptive.PathAddr
		err  bool
	}{
		{"tcp:127.0.0.1:7000,tcp:127.0.0.2:7001", []adaptive.PathAddr{{"tcp", "127.0.0.1:7000"}, {"tcp", "127.0.0.2:7001"}}, false},
		{"rdma:[fe80::1]:7100", []adaptive.PathAddr{{"rdma", "[fe80::1]:7100"}}, false},
		{"127.0.0.1:7000", []adaptive.PathAddr{{"127.0.0.1", "7000"}}, false},
		{"tcp", nil, true},
		{"tcp:1.2.3.4:1,", nil, true},
		{":7000", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := adaptive.ParseAddr(tt.in)
			if tt.err {
				require.ErrorIs(t, err, adaptive.ErrBadAddress)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.in, adaptive.FormatAddr(got))
		})
	}
}

func TestUnknownPathTransport(t *testing.T) {
	_, cli, _ := memPair(t)
	_, err := cli.Dial(context.Background(), "tcp:127.0.0.1:1")
	require.ErrorIs(t, err, fabric.ErrNotSupported)
}
