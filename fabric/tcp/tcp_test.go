package tcp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/internal/testlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testLimit admits the suite's 64 MiB payload without 256 MiB allocations.
const testLimit = 80 << 20

func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.MaxMessageSize = testLimit
	cfg.MaxInFlight = 32
	cfg.DrainTimeout = 5 * time.Second
	cfg.Logger = testlog.New(t)
	return cfg
}

func newTransport(t testing.TB, cfg Config) *Transport {
	tr, err := New(cfg)
	require.NoError(t, err)
	return tr
}

// factory builds the conformance Setup; limit is both sides'
// MaxMessageSize, so only one variant pays for the 64 MiB payload.
// listenDial serves h with a transport of scfg on loopback and dials it
// with one of ccfg; both close, without error, when the test ends.
func listenDial(t testing.TB, scfg, ccfg Config, h fabric.Handler) (*Listener, *Conn) {
	t.Helper()
	ctx := context.Background()
	l, err := newTransport(t, scfg).Listen(ctx, "127.0.0.1:0", h)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	c, err := newTransport(t, ccfg).Dial(ctx, l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return l.(*Listener), c.(*Conn)
}

func factory(limit int, mutate func(t *testing.T, server, client *Config)) fabrictest.Factory {
	return func(t *testing.T) fabrictest.Setup {
		scfg, ccfg := testConfig(t), testConfig(t)
		scfg.MaxMessageSize, ccfg.MaxMessageSize = limit, limit
		if mutate != nil {
			mutate(t, &scfg, &ccfg)
		}
		return fabrictest.Setup{
			Client: newTransport(t, ccfg), Server: newTransport(t, scfg), Addr: "127.0.0.1:0",
			Kill:           func(l fabric.Listener) { l.(*Listener).kill() },
			MaxMessageSize: limit, MaxInFlight: 32,
		}
	}
}

func TestConformanceTCP(t *testing.T) { fabrictest.RunConformance(t, factory(testLimit, nil)) }

func TestConformanceTCPChecksum(t *testing.T) {
	fabrictest.RunConformance(t, factory(20<<20, func(_ *testing.T, _, c *Config) { c.Checksum = true }))
}

func TestConformanceTLS(t *testing.T) {
	fabrictest.RunConformance(t, factory(20<<20, func(t *testing.T, s, c *Config) {
		s.ServerTLS, c.ClientTLS = tlsConfigs(t)
	}))
}

// tlsConfigs returns a server config with a fresh self-signed certificate
// for 127.0.0.1 and a client config that trusts it; neither sets curves.
func tlsConfigs(t testing.TB) (server, client *tls.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "weft test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}

func TestTLSNegotiatesPostQuantumKeyExchange(t *testing.T) {
	scfg, ccfg := testConfig(t), testConfig(t)
	scfg.ServerTLS, ccfg.ClientTLS = tlsConfigs(t)
	ctx := context.Background()
	l, err := newTransport(t, scfg).Listen(ctx, "127.0.0.1:0", &fabric.Mux{})
	require.NoError(t, err)
	defer l.Close()
	c, err := newTransport(t, ccfg).Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer c.Close()
	state, ok := c.(*Conn).TLSConnectionState()
	require.True(t, ok)
	require.Equal(t, tls.X25519MLKEM768, state.CurveID, "Go's default hybrid key exchange must stay on")
	require.Equal(t, uint16(tls.VersionTLS13), state.Version)
}

// DefaultConfig gives one lane and one bulk socket per processor, at most
// 16, and at least 4 bulk sockets.
func TestDefaultConfigFollowsProcessors(t *testing.T) {
	for _, procs := range []int{1, 2, 8, 16, 64} {
		t.Run(fmt.Sprint(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			cfg := DefaultConfig()
			require.Equal(t, min(procs, 16), cfg.Lanes)
			require.Equal(t, max(4, min(procs, 16)), cfg.BulkSockets)
			require.NoError(t, cfg.Validate())
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"default is valid", func(*Config) {}, ""},
		{"message size above the contract", func(c *Config) { c.MaxMessageSize = fabric.MaxMessageSize + 1 }, "MaxMessageSize"},
		{"zero window", func(c *Config) { c.MaxInFlight = 0 }, "MaxInFlight 0"},
		{"idle timeout not above keepalive", func(c *Config) { c.IdleTimeout = c.KeepaliveInterval }, "IdleTimeout"},
		{"no keepalive", func(c *Config) { c.KeepaliveInterval = 0 }, "KeepaliveInterval"},
		{"connection budget below the message size", func(c *Config) { c.ConnInFlightBytes = c.MaxMessageSize - 1 }, "ConnInFlightBytes"},
		{"transport budget below one frame's peak", func(c *Config) { c.InFlightBytes = c.MaxMessageSize }, "InFlightBytes 268435456 is below 285212672"},
		{"no stall timeout", func(c *Config) { c.StallTimeout = 0 }, "StallTimeout"},
		{"negative socket buffer", func(c *Config) { c.SocketBuffer = -1 }, "SocketBuffer"},
		{"negative bulk sockets", func(c *Config) { c.BulkSockets = -1 }, "BulkSockets"},
		{"too many bulk sockets", func(c *Config) { c.BulkSockets = 65 }, "BulkSockets"},
		{"bulk without threshold", func(c *Config) { c.BulkThreshold = 0 }, "BulkThreshold"},
		{"no bulk sockets, no threshold", func(c *Config) { c.BulkSockets, c.BulkThreshold = 0, 0 }, ""},
		{"negative lanes", func(c *Config) { c.Lanes = -1 }, "Lanes -1"},
		{"too many lanes", func(c *Config) { c.Lanes = 65 }, "Lanes 65"},
		{"no lanes", func(c *Config) { c.Lanes = 0 }, ""},
		{"server TLS without certificate", func(c *Config) { c.ServerTLS = &tls.Config{} }, "ServerTLS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			_, err := New(cfg)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// silentPeer accepts one connection, answers the hello, then reads and
// ignores everything: a peer that hangs without closing its socket.
func silentPeer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		var hb [headerSize]byte
		if _, _, err := readFrame(nc, &hb, helloPayload, func(n int) []byte { return make([]byte, n) }, nil); err != nil {
			return
		}
		p := hello{maxMessage: 1 << 20, window: 8}.encode()
		putHeader(&hb, typeHello, 0, 0, p, true)
		if _, err := nc.Write(append(hb[:], p...)); err != nil {
			return
		}
		buf := make([]byte, 4096)
		for {
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

func TestDeadPeerDetectedByKeepalive(t *testing.T) {
	cfg := testConfig(t)
	cfg.KeepaliveInterval = 10 * time.Millisecond
	cfg.IdleTimeout = 50 * time.Millisecond
	c, err := newTransport(t, cfg).Dial(context.Background(), silentPeer(t))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Call(ctx, fabric.MethodUserBase, []byte("anyone there?"))
	require.ErrorIs(t, err, fabric.ErrClosed)
	require.ErrorContains(t, err, "presumed dead")
}

func TestPeerLimitFromHandshake(t *testing.T) {
	scfg := testConfig(t)
	scfg.MaxMessageSize = 1000
	ctx := context.Background()
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return make([]byte, 2*len(r.Payload)), nil
	})
	l, err := newTransport(t, scfg).Listen(ctx, "127.0.0.1:0", &m)
	require.NoError(t, err)
	defer l.Close()
	ccfg := testConfig(t)
	ccfg.MaxMessageSize = 1500
	c, err := newTransport(t, ccfg).Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Call(ctx, fabric.MethodUserBase, make([]byte, 1001))
	require.ErrorIs(t, err, fabric.ErrTooLarge, "the server's limit applies to requests")
	_, err = c.Call(ctx, fabric.MethodUserBase, make([]byte, 800))
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeInternal}, "a 1600-byte reply exceeds the client's limit")
	require.ErrorContains(t, err, "exceeds the caller's limit of 1500")
	reply, err := c.Call(ctx, fabric.MethodUserBase, make([]byte, 700))
	require.NoError(t, err)
	require.Len(t, reply, 1400)
}

func TestGarbageFromPeerClosesConnection(t *testing.T) {
	l, err := newTransport(t, testConfig(t)).Listen(context.Background(), "127.0.0.1:0", &fabric.Mux{})
	require.NoError(t, err)
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err, "the server must hang up on a peer that does not speak the protocol")
}

func TestSmallFramesCoalesceIntoOneWrite(t *testing.T) {
	ctx := context.Background()
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	l, err := newTransport(t, testConfig(t)).Listen(ctx, "127.0.0.1:0", &m)
	require.NoError(t, err)
	defer l.Close()
	ccfg := testConfig(t)
	ccfg.Lanes = 1 // every call on the socket whose writer is held
	fc, err := newTransport(t, ccfg).Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer fc.Close()
	c := fc.(*Conn)

	// Hold the writer as a long write would, let calls pile up, then let go.
	require.True(t, c.wstate.CompareAndSwap(0, wBusy), "the writer is idle")
	const n = 24
	errs := make(chan error, n)
	for i := range n {
		go func() {
			p := []byte{byte(i)}
			reply, err := c.Call(ctx, fabric.MethodUserBase, p)
			if err == nil && (len(reply) != 1 || reply[0] != byte(i)) {
				err = fmt.Errorf("call %d got reply %v", i, reply)
			}
			errs <- err
		}()
	}
	require.Eventually(t, func() bool {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return len(c.wq) == n
	}, 20*time.Second, time.Millisecond, "calls must queue behind a busy writer")
	before := c.writes.Load()
	c.kick <- struct{}{}
	for range n {
		require.NoError(t, <-errs)
	}
	require.Equal(t, before+1, c.writes.Load(), "%d queued frames must go out in one writev", n)
}

// A client that ignores the window gets no more handlers running at once
// than the window: the server stops reading until one finishes, and then
// serves the rest.
func TestServerBoundsHandlersToWindow(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(context.Context, *fabric.Request) ([]byte, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for cur := most.Load(); n > cur && !most.CompareAndSwap(cur, n); cur = most.Load() {
		}
		<-release
		return []byte("ok"), nil
	})
	l, err := newTransport(t, testConfig(t)).Listen(context.Background(), "127.0.0.1:0", &m)
	require.NoError(t, err)
	defer l.Close()
	releaseAll := sync.OnceFunc(func() { close(release) })
	defer releaseAll() // before Close, which waits for the handlers
	nc, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	defer nc.Close()
	var hb [headerSize]byte
	p := hello{maxMessage: 1 << 20, window: 2}.encode()
	putHeader(&hb, typeHello, 0, 0, p, false)
	_, err = nc.Write(append(hb[:], p...))
	require.NoError(t, err)
	_, _, err = readFrame(nc, &hb, helloPayload, func(n int) []byte { return make([]byte, n) }, nil)
	require.NoError(t, err)
	const requests = 6
	for id := range uint64(requests) {
		putHeader(&hb, typeRequest, fabric.MethodUserBase, id+1, nil, false)
		_, err = nc.Write(hb[:])
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return running.Load() == 2 }, 20*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // room for a third to start, were the window not kept
	require.Equal(t, int32(2), most.Load(), "handlers running at once with a window of 2")
	releaseAll()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Second)))
	for range requests {
		h, reply, err := readFrame(nc, &hb, 1<<20, func(n int) []byte { return make([]byte, n) }, nil)
		require.NoError(t, err)
		require.Equal(t, uint8(typeReply), h.typ)
		require.Equal(t, "ok", string(reply))
	}
	require.Equal(t, int32(2), most.Load())
}
