//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
)

// testCA is a throw-away certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB, name string) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// node issues a certificate for a node at ip, usable as TLS server and
// client, and returns the mutual-auth config a node uses for both roles.
func (ca *testCA) node(t testing.TB, ip string) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "weft node " + ip},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP(ip)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs:      ca.pool,
		ClientCAs:    ca.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

func TestConformanceTLS(t *testing.T) {
	env := rdmaEnv(t)
	ca := newTestCA(t, "weft test CA")
	fabrictest.RunConformance(t, conformanceSetup(env, func(t testing.TB, c *Config) {
		c.TLS = ca.node(t, env.addr)
	}))
}

// tlsPair starts a listener on a transport with server's TLS config and a
// client transport with client's; it returns the listener, both transports.
func tlsPair(t *testing.T, env testEnv, server, client *tls.Config) (*listener, *Transport, *Transport) {
	st := newTestTransport(t, env, func(c *Config) { c.TLS = server })
	ct := newTestTransport(t, env, func(c *Config) { c.TLS = client })
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	l, err := st.Listen(context.Background(), net.JoinHostPort(env.addr, "0"), &m)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l.(*listener), st, ct
}

// With mutual TLS both ends see a verified peer certificate, the key
// exchange is Go's default hybrid X25519MLKEM768 under TLS 1.3, and calls
// (eager and rendezvous) work over the QP set up through it.
func TestTLSMutualAuthAndPostQuantumKeyExchange(t *testing.T) {
	env := rdmaEnv(t)
	ca := newTestCA(t, "weft test CA")
	l, _, ct := tlsPair(t, env, ca.node(t, env.addr), ca.node(t, env.addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc, err := ct.Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer fc.Close()

	state, ok := fc.(*conn).TLSConnectionState()
	require.True(t, ok, "the control connection must run TLS")
	require.Equal(t, uint16(tls.VersionTLS13), state.Version)
	require.Equal(t, tls.X25519MLKEM768, state.CurveID, "Go's default hybrid key exchange must stay on")
	require.NotEmpty(t, state.VerifiedChains, "the client must have verified the server")

	for _, n := range []int{5, 1 << 20} {
		p := make([]byte, n)
		_, _ = rand.Read(p)
		r, err := fc.Call(ctx, fabric.MethodUserBase, p)
		require.NoError(t, err)
		require.Equal(t, p, r, "echo of %d bytes", n)
	}
	l.mu.Lock()
	var served []*conn
	for c := range l.conns {
		served = append(served, c)
	}
	l.mu.Unlock()
	require.Len(t, served, 1)
	sstate, ok := served[0].TLSConnectionState()
	require.True(t, ok)
	require.NotEmpty(t, sstate.VerifiedChains, "the server must have verified the client's certificate")
	require.Equal(t, tls.X25519MLKEM768, sstate.CurveID)
}

// A client with no certificate, or one from another CA, and a server the
// client does not trust, are refused with a TLS error naming the cause; no
// connection (and so no QP) is left on either side.
func TestTLSRefusesUnauthenticatedPeers(t *testing.T) {
	env := rdmaEnv(t)
	ca, other := newTestCA(t, "weft test CA"), newTestCA(t, "other CA")
	noCert := ca.node(t, env.addr)
	noCert.Certificates = nil
	foreign := other.node(t, env.addr) // trusts the server, is not trusted by it
	foreign.RootCAs = ca.pool
	// Present it even though the server's request names only its own CA
	// (Go's client would otherwise send no certificate at all).
	foreign.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &foreign.Certificates[0], nil
	}
	tests := []struct {
		name           string
		server, client *tls.Config
		want           string
	}{
		{"client without certificate", ca.node(t, env.addr), noCert, "certificate required"},
		{"client from another CA", ca.node(t, env.addr), foreign, "unknown certificate authority"},
		{"server from another CA", other.node(t, env.addr), ca.node(t, env.addr), "certificate signed by unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, st, ct := tlsPair(t, env, tc.server, tc.client)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc, err := ct.Dial(ctx, l.Addr())
			if err == nil {
				fc.Close()
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "rdma:")
			require.Empty(t, ct.Conns(), "no connection may be left on the client")
			require.Eventually(t, func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.conns) == 0 && len(st.Conns()) == 0
			}, 10*time.Second, 10*time.Millisecond, "no connection may be left on the server")
			require.Zero(t, st.callsIn.Load())
		})
	}
}
