//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/internal/testlog"
)

// The RDMA tests need a verbs device. The Soft-RoCE guest
// (scripts/softroce/run.sh) sets WEFT_RDMA_DEVICE, WEFT_RDMA_ADDR (the IPv4
// address of the netdev under the device) and WEFT_RDMA_GUEST=1; there a
// missing device is a failure, elsewhere the tests skip.

type testEnv struct {
	device string
	addr   string
	gid    int
}

func rdmaEnv(t testing.TB) testEnv {
	t.Helper()
	guest := os.Getenv("WEFT_RDMA_GUEST") != ""
	env := testEnv{device: os.Getenv("WEFT_RDMA_DEVICE"), addr: os.Getenv("WEFT_RDMA_ADDR"), gid: -1}
	if g := os.Getenv("WEFT_RDMA_GID_INDEX"); g != "" {
		n, err := strconv.Atoi(g)
		require.NoError(t, err, "WEFT_RDMA_GID_INDEX")
		env.gid = n
	}
	if env.device == "" || env.addr == "" {
		if guest {
			t.Fatal("WEFT_RDMA_GUEST is set but WEFT_RDMA_DEVICE or WEFT_RDMA_ADDR is empty")
		}
		t.Skip("no RDMA device: set WEFT_RDMA_DEVICE and WEFT_RDMA_ADDR (scripts/softroce/run.sh does)")
	}
	return env
}

func newTestTransport(t testing.TB, env testEnv, mod func(*Config)) *Transport {
	t.Helper()
	return newLoggedTransport(t, env, mod, testlog.New(t))
}

// newLoggedTransport is newTestTransport logging to log.
func newLoggedTransport(t testing.TB, env testEnv, mod func(*Config), log *slog.Logger) *Transport {
	t.Helper()
	cfg := TestConfig()
	cfg.Device = env.device
	cfg.GIDIndex = env.gid
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg, log)
	if err != nil && errors.Is(err, fabric.ErrNotSupported) && os.Getenv("WEFT_RDMA_GUEST") == "" {
		t.Skipf("RDMA not usable here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	return tr
}

// listenAndDial serves h on server at env's address and dials it from
// client; the connection and the listener close when the test ends.
func listenAndDial(t testing.TB, ctx context.Context, env testEnv, server, client *Transport, h fabric.Handler) (fabric.Listener, fabric.Conn) {
	t.Helper()
	l, err := server.Listen(ctx, net.JoinHostPort(env.addr, "0"), h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	c, err := client.Dial(ctx, l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return l, c
}

// echoPair makes a client transport (logging to clientLog, or to the
// test's log when nil) and a server transport, both changed by mod, and a
// connection between them whose MethodUserBase echoes the payload; all close
// when the test ends. ctx bounds the test's calls (60 s).
func echoPair(t *testing.T, env testEnv, mod func(*Config), clientLog *slog.Logger) (client, server *Transport, c fabric.Conn, ctx context.Context) {
	t.Helper()
	if clientLog == nil {
		clientLog = testlog.New(t)
	}
	client = newLoggedTransport(t, env, mod, clientLog)
	server = newTestTransport(t, env, mod)
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	_, c = listenAndDial(t, ctx, env, server, client, &m)
	return client, server, c, ctx
}

// heldPair is two transports and two connections between them, for tests
// that fail connections under calls: the server's MethodUserBase holds each
// call until the call's context ends (a token on held as it enters), and
// MethodUserBase+1 echoes.
type heldPair struct {
	client, server *Transport
	l              fabric.Listener
	first, other   fabric.Conn
	held           chan struct{}
	ctx            context.Context
}

// newHeldPair makes a heldPair whose calls ctx bounds by timeout; it checks
// for leaked goroutines when the test ends.
func newHeldPair(t *testing.T, env testEnv, timeout time.Duration) *heldPair {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	p := &heldPair{client: newTestTransport(t, env, nil), server: newTestTransport(t, env, nil), held: make(chan struct{}, 8)}
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		p.held <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	m.HandleFunc(fabric.MethodUserBase+1, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	var cancel context.CancelFunc
	p.ctx, cancel = context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	p.l, p.first = listenAndDial(t, p.ctx, env, p.server, p.client, &m)
	var err error
	p.other, err = p.client.Dial(p.ctx, p.l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.other.Close() })
	return p
}

// holdFirst starts a call on first that the server holds, waits until it
// is held, and returns where its outcome arrives.
func (p *heldPair) holdFirst(t *testing.T) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := p.first.Call(p.ctx, fabric.MethodUserBase, []byte("wait"))
		errc <- err
	}()
	select {
	case <-p.held:
	case <-p.ctx.Done():
		t.Fatal("the call never reached the held handler")
	}
	return errc
}

// guestPatience bounds the conformance suite's payload-size calls. Under
// QEMU TCG, Soft-RoCE moves 6–14 MB/s (see docs/rdma.md), so the suite's
// 64 MiB echo (128 MiB on the wire plus copies) takes about half a minute,
// longer than the suite's usual 20 s guard against hangs.
const guestPatience = 3 * time.Minute

func TestConformance(t *testing.T) {
	env := rdmaEnv(t)
	fabrictest.RunConformance(t, conformanceSetup(env, nil))
}

// conformanceSetup builds the suite's client and server transports, both
// changed by mod (nil: TestConfig as is) for each subtest.
func conformanceSetup(env testEnv, mod func(testing.TB, *Config)) func(t *testing.T) fabrictest.Setup {
	return func(t *testing.T) fabrictest.Setup {
		var m func(*Config)
		if mod != nil {
			m = func(c *Config) { mod(t, c) }
		}
		client := newTestTransport(t, env, m)
		server := newTestTransport(t, env, m)
		return fabrictest.Setup{
			Client: client, Server: server,
			Addr:        net.JoinHostPort(env.addr, "0"),
			Kill:        func(l fabric.Listener) { l.(*listener).kill() },
			MaxInFlight: TestConfig().MaxInFlight,
			Patience:    guestPatience,
		}
	}
}

// A work completion with an error status, driven mid-call by dropping the
// registration of the memory the peer is to reach (the sender's copy in
// read mode, the receiver's target in write mode), fails the connection and
// its in-flight call with ErrClosed promptly, and the handler never runs.
func TestQPErrorFailsInFlightCalls(t *testing.T) {
	env := rdmaEnv(t)
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			mod := func(c *Config) { c.RendezvousMode = mode }
			client := newTestTransport(t, env, mod)
			server := newTestTransport(t, env, mod)
			if mode == "read" {
				client.breakOut.Store(true) // the server's READ of the request fails
			} else {
				server.breakIn.Store(true) // the client's WRITE of the request fails
			}
			var ran atomic.Int64
			var m fabric.Mux
			m.HandleFunc(fabric.MethodUserBase, func(context.Context, *fabric.Request) ([]byte, error) {
				ran.Add(1)
				return []byte("ok"), nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, c := listenAndDial(t, ctx, env, server, client, &m)

			start := time.Now()
			_, err := c.Call(ctx, fabric.MethodUserBase, make([]byte, 1<<20))
			require.ErrorIs(t, err, fabric.ErrClosed)
			t.Logf("call failed after %v: %v", time.Since(start), err)
			require.Zero(t, ran.Load(), "the handler must not run for a message that never arrived")
			require.Positive(t, client.wcErrors.Load()+server.wcErrors.Load(), "no work completion with an error status")
			_, err = c.Call(ctx, fabric.MethodUserBase, []byte("again"))
			require.ErrorIs(t, err, fabric.ErrClosed)
		})
	}
}

// Many callers with payloads on both sides of the rendezvous threshold keep
// within the credits (no receiver-not-ready) and get their own replies.
func TestMixedSizesUnderCreditPressure(t *testing.T) {
	env := rdmaEnv(t)
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) { testMixedSizes(t, env, mode) })
	}
}

func testMixedSizes(t *testing.T, env testEnv, mode string) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	mod := func(c *Config) {
		c.Credits, c.RecvBuffers, c.SendQueueDepth = 4, 64, 16
		c.RendezvousThreshold, c.RendezvousMode, c.ReadChunk = 1024, mode, 16<<10
	}
	client := newTestTransport(t, env, mod)
	server := newTestTransport(t, env, mod)
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second) // a guard for -race under TCG
	defer cancel()
	_, fc := listenAndDial(t, ctx, env, server, client, &m)
	c := fc
	sizes := []int{0, 100, 1023, 1024, 5000, 70000, 300000}
	errs := make(chan error, 16)
	for g := range 16 {
		go func() {
			for i := range 10 {
				n := sizes[(g+i)%len(sizes)]
				p := make([]byte, n)
				for j := range p {
					p[j] = byte(g + i + j)
				}
				r, err := c.Call(ctx, fabric.MethodUserBase, p)
				if err != nil {
					errs <- err
					return
				}
				if string(r) != string(p) {
					errs <- errors.New("reply differs from request of " + strconv.Itoa(n) + " bytes")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		require.NoError(t, <-errs)
	}
	infos := client.Conns()
	require.Len(t, infos, 1)
	require.Equal(t, "RTS", infos[0].QPState)
	require.Positive(t, infos[0].Rendezvous)
	require.Zero(t, infos[0].Errors)
	require.Equal(t, client.keyScope, infos[0].KeyScope)
	if client.keyScope == KeyScopeWindow { // requests (read) or replies (write) were exposed through windows
		require.Positive(t, infos[0].WindowsBound)
		require.Equal(t, infos[0].WindowsBound, infos[0].WindowsRevoked, "windows bound but not invalidated after every transfer")
	}
	require.Eventually(t, func() bool {
		c := fc.(*conn)
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.rzOut) == 0 && len(c.rzW) == 0
	}, 10*time.Second, 10*time.Millisecond, "rendezvous regions still held after every call returned")
}

func TestDevicesListsTheTestDevice(t *testing.T) {
	env := rdmaEnv(t)
	devs, err := Devices()
	require.NoError(t, err)
	var found bool
	for _, d := range devs {
		if d.Name != env.device {
			continue
		}
		found = true
		require.NotEmpty(t, d.Ports)
		require.Equal(t, "ACTIVE", d.Ports[0].State)
		_, err := chooseGID(d.Ports[0].GIDs, -1, net.ParseIP(env.addr), d.Ports[0].LinkLayer)
		require.NoError(t, err, "a RoCE v2 GID for %s", env.addr)
	}
	require.True(t, found, "device %s in %v", env.device, devs)
}

func TestNewRejectsMissingDevice(t *testing.T) {
	env := rdmaEnv(t)
	cfg := TestConfig()
	cfg.Device = env.device + "-missing"
	_, err := New(cfg, testlog.New(t))
	require.ErrorIs(t, err, fabric.ErrNotSupported)
	require.ErrorContains(t, err, env.device+"-missing")
}
