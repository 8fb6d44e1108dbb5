package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/security/certs"
)

// cluster writes a cluster CA for nodes and returns its directory.
func cluster(t *testing.T, nodes ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, nodes, nil, nil)
	require.NoError(t, err)
	return dir
}

func bundle(t *testing.T, dir, node string) *certs.Bundle {
	t.Helper()
	b, err := certs.Load(dir, node)
	require.NoError(t, err)
	return b
}

// nodeServer is a fabric TCP config serving as b's node with mutual TLS,
// admitting the nodes admit accepts (all when nil).
func nodeServer(t *testing.T, b *certs.Bundle, admit func(string) error) Config {
	cfg := testConfig(t)
	cfg.ServerTLS = certs.ServerConfig(b, admit)
	cfg.PeerIdentity = certs.PeerNode
	return cfg
}

// nodeClient is a fabric TCP config dialling as b's node, expecting the
// node expect at every address.
func nodeClient(t *testing.T, b *certs.Bundle, expect string) Config {
	cfg := testConfig(t)
	cfg.ClientTLS = certs.ClientConfig(b, "")
	cfg.TLSServerName = func(string) string { return expect }
	return cfg
}

// countingHandler counts every request that reaches it and answers with the
// peer's name.
type countingHandler struct{ calls atomic.Int64 }

func (h *countingHandler) ServeFabric(_ context.Context, req *fabric.Request) ([]byte, error) {
	h.calls.Add(1)
	return []byte(req.Peer), nil
}

const methodEcho = fabric.MethodUserBase

func TestMutualTLSNamesThePeerOnBothSides(t *testing.T) {
	dir := cluster(t, "n1", "n2")
	h := &countingHandler{}
	ccfg := nodeClient(t, bundle(t, dir, "n2"), "n1")
	ccfg.Lanes, ccfg.BulkSockets, ccfg.BulkThreshold = 4, 2, 1024
	_, c := listenDial(t, nodeServer(t, bundle(t, dir, "n1"), nil), ccfg, h)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := c.Call(ctx, methodEcho, nil)
	require.NoError(t, err)
	require.Regexp(t, `^n2@127\.0\.0\.1:\d+$`, string(reply), "the handler sees the client's verified node")
	// Bulk calls open extra sockets, each one checked the same way.
	for range 8 {
		reply, err = c.Call(ctx, methodEcho, make([]byte, 4096))
		require.NoError(t, err)
		require.Regexp(t, `^n2@`, string(reply))
	}

	state, ok := c.TLSConnectionState()
	require.True(t, ok)
	server, err := certs.PeerNode(state)
	require.NoError(t, err)
	require.Equal(t, "n1", server, "the client sees the server's verified node")
	require.Equal(t, tls.X25519MLKEM768, state.CurveID, "Go's default hybrid key exchange must stay on")
	require.Equal(t, uint16(tls.VersionTLS13), state.Version)
}

// Each way a peer without the cluster's proof of identity is refused: the
// connection closes during the handshake and the handler never runs.
func TestMutualTLSRefusesBeforeAnyHandler(t *testing.T) {
	dir, stranger := cluster(t, "n1", "n2", "n3"), cluster(t, "n1", "n2")
	n1, n2 := bundle(t, dir, "n1"), bundle(t, dir, "n2")
	otherCA := bundle(t, stranger, "n2")
	onlyN3 := func(node string) error {
		if node != "n3" {
			return errors.New("not in the cluster's configuration")
		}
		return nil
	}
	for _, tc := range []struct {
		name   string
		server Config
		client func(t *testing.T) Config
		calls  int64 // handler invocations after one Call
	}{
		{"valid node", nodeServer(t, n1, nil), func(t *testing.T) Config { return nodeClient(t, n2, "n1") }, 1},
		{"client without a certificate", nodeServer(t, n1, nil), func(t *testing.T) Config {
			c := nodeClient(t, n2, "n1")
			c.ClientTLS.Certificates = nil
			return c
		}, 0},
		{"client certificate of another CA", nodeServer(t, n1, nil), func(t *testing.T) Config {
			c := nodeClient(t, otherCA, "n1")
			c.ClientTLS.RootCAs = n1.Pool // it trusts us; only our check can refuse it
			return c
		}, 0},
		{"client certificate of a node not admitted", nodeServer(t, n1, onlyN3), func(t *testing.T) Config { return nodeClient(t, n2, "n1") }, 0},
		{"server is not the node dialled", nodeServer(t, n1, nil), func(t *testing.T) Config { return nodeClient(t, n2, "n3") }, 0},
		{"peer identity refused", func() Config {
			c := nodeServer(t, n1, nil)
			c.PeerIdentity = func(tls.ConnectionState) (string, error) { return "", errors.New("refused") }
			return c
		}(), func(t *testing.T) Config { return nodeClient(t, n2, "n1") }, 0},
		{"plain TCP client", nodeServer(t, n1, nil), func(t *testing.T) Config { return testConfig(t) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &countingHandler{}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ln, err := newTransport(t, tc.server).Listen(ctx, "127.0.0.1:0", h)
			require.NoError(t, err)
			c, err := newTransport(t, tc.client(t)).Dial(ctx, ln.Addr())
			if err == nil {
				_, err = c.Call(ctx, methodEcho, []byte("delete the index"))
				require.NoError(t, c.Close())
			}
			require.NoError(t, ln.Close()) // waits for every handler
			require.Equal(t, tc.calls, h.calls.Load())
			if tc.calls == 0 {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// A raw socket that skips TLS and sends a well-formed hello and request
// (what an attacker's program would) is closed without an answer.
func TestMutualTLSDropsARawProtocolClient(t *testing.T) {
	dir := cluster(t, "n1")
	h := &countingHandler{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := newTransport(t, nodeServer(t, bundle(t, dir, "n1"), nil)).Listen(ctx, "127.0.0.1:0", h)
	require.NoError(t, err)
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", ln.Addr())
	require.NoError(t, err)
	defer nc.Close()
	p := hello{maxMessage: 1 << 20, window: 8}.encode()
	var hb [headerSize]byte
	putHeader(&hb, typeHello, 0, 0, p, true)
	frames := append(hb[:], p...)
	payload := []byte("delete the index")
	putHeader(&hb, typeRequest, methodEcho, 1, payload, true)
	frames = append(append(frames, hb[:]...), payload...)
	_, err = nc.Write(frames)
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(nc)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server must close the connection, not leave it open")
	require.NotContains(t, string(got), "delete the index")
	require.NoError(t, ln.Close())
	require.Zero(t, h.calls.Load())
}

func TestPeerIdentityNeedsServerTLS(t *testing.T) {
	cfg := testConfig(t)
	cfg.PeerIdentity = certs.PeerNode
	require.ErrorContains(t, cfg.Validate(), "PeerIdentity")
}
