package fabrictest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memLimit keeps the suite's allocations modest while admitting 64 MiB.
const memLimit = 80 << 20

func memFactory(t *testing.T) Setup {
	cfg := DefaultConfig()
	cfg.MaxInFlight = 32
	cfg.MaxMessageSize = memLimit
	n, err := NewNetworkWithConfig(cfg)
	require.NoError(t, err)
	return Setup{
		Client: n.Node("client"), Server: n.Node("server"), Addr: "server:0",
		Kill:           func(l fabric.Listener) { n.Kill(l.Addr()) },
		MaxMessageSize: memLimit, MaxInFlight: cfg.MaxInFlight,
	}
}

func TestConformanceMem(t *testing.T) { RunConformance(t, memFactory) }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"default is valid", func(*Config) {}, ""},
		{"zero window", func(c *Config) { c.MaxInFlight = 0 }, "MaxInFlight 0"},
		{"message size above the contract", func(c *Config) { c.MaxMessageSize = fabric.MaxMessageSize + 1 }, "MaxMessageSize"},
		{"no drain timeout", func(c *Config) { c.DrainTimeout = 0 }, "DrainTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			_, err := NewNetworkWithConfig(cfg)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// pair starts an echo listener on node b and dials it from node a.
func pair(t *testing.T, n *Network) (fabric.Listener, fabric.Conn) {
	t.Helper()
	ctx := context.Background()
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	l, err := n.Node("b").Listen(ctx, "b:1", &m)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	c, err := n.Node("a").Dial(ctx, l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return l, c
}

func TestFaultDelayKeepsOrderAndDelays(t *testing.T) {
	n := NewNetwork()
	_, c := pair(t, n)
	remove := n.SetDelay("a", "b", 30*time.Millisecond)
	start := time.Now()
	reply, err := c.Call(context.Background(), mEcho, []byte("slow"))
	require.NoError(t, err)
	require.Equal(t, "slow", string(reply))
	// A lower bound only: the delay is a floor the wire must honour.
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	remove()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Call(ctx, mEcho, nil)
	require.NoError(t, err)
}

func TestFaultDropLosesRequest(t *testing.T) {
	n := NewNetwork()
	_, c := pair(t, n)
	remove := n.AddFault("a", "*", func(m Message) Action { return Action{Drop: m.Method == mEcho} })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, mEcho, []byte("lost"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	reply, err := c.Call(context.Background(), fabric.MethodPing, []byte("ping passes"))
	require.NoError(t, err, "only the matching method is dropped")
	require.Equal(t, "ping passes", string(reply))
	remove()
	_, err = c.Call(context.Background(), mEcho, nil)
	require.NoError(t, err)
}

func TestFaultDropLosesReply(t *testing.T) {
	n := NewNetwork()
	_, c := pair(t, n)
	n.AddFault("b", "a", func(m Message) Action { return Action{Drop: m.Reply} })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, mEcho, []byte("answered into the void"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestFaultPartitionAndHeal(t *testing.T) {
	n := NewNetwork()
	l, c := pair(t, n)
	heal := n.Partition([]string{"a"}, []string{"b"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, mEcho, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = n.Node("a").Dial(context.Background(), l.Addr())
	require.ErrorIs(t, err, fabric.ErrClosed)
	require.ErrorContains(t, err, "partition")
	heal()
	reply, err := c.Call(context.Background(), mEcho, []byte("healed"))
	require.NoError(t, err)
	require.Equal(t, "healed", string(reply))
}

func TestFaultCorruptIsDetectedNotDelivered(t *testing.T) {
	for _, dir := range []struct{ name, from, to string }{{"request", "a", "b"}, {"reply", "b", "a"}} {
		t.Run(dir.name, func(t *testing.T) {
			n := NewNetwork()
			delivered := make(chan []byte, 1)
			var m fabric.Mux
			m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) {
				delivered <- append([]byte(nil), r.Payload...)
				return r.Payload, nil
			})
			l, err := n.Node("b").Listen(context.Background(), "b:1", &m)
			require.NoError(t, err)
			defer l.Close()
			c, err := n.Node("a").Dial(context.Background(), l.Addr())
			require.NoError(t, err)
			defer c.Close()
			n.AddFault(dir.from, dir.to, func(Message) Action { return Action{Corrupt: true} })
			_, err = c.Call(context.Background(), mEcho, []byte("precious bytes"))
			require.ErrorIs(t, err, fabric.ErrClosed)
			require.ErrorContains(t, err, "CRC32C")
			if dir.name == "request" {
				require.Empty(t, delivered, "a corrupted request reached the handler")
			} else {
				require.Equal(t, "precious bytes", string(<-delivered))
			}
		})
	}
}

func TestKillNodeFailsItsDialledConns(t *testing.T) {
	n := NewNetwork()
	_, c := pair(t, n)
	n.Kill("a")
	_, err := c.Call(context.Background(), mEcho, nil)
	require.ErrorIs(t, err, fabric.ErrClosed)
	require.ErrorContains(t, err, "killed")
}

func TestListenAddressInUse(t *testing.T) {
	n := NewNetwork()
	l, _ := pair(t, n)
	_, err := n.Node("c").Listen(context.Background(), l.Addr(), &fabric.Mux{})
	require.ErrorContains(t, err, "already in use")
}
