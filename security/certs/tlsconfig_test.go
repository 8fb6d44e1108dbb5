package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/security/certs"
)

// handshake runs one TLS handshake over a real loopback socket and returns
// both sides' errors and connection states.
func handshake(t *testing.T, server, client *tls.Config) (serr, cerr error, scs, ccs tls.ConnectionState) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		err error
		cs  tls.ConnectionState
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer nc.Close()
		tc := tls.Server(nc, server)
		err = tc.HandshakeContext(ctx)
		if err == nil {
			// TLS 1.3 clients finish first; read until the client closes
			// so that a late alert from this side reaches it.
			_, _ = tc.Read(make([]byte, 1))
		}
		done <- result{err, tc.ConnectionState()}
	}()
	d := tls.Dialer{Config: client}
	nc, cerr := d.DialContext(ctx, "tcp", ln.Addr().String())
	if cerr == nil {
		ccs = nc.(*tls.Conn).ConnectionState()
		_ = nc.Close()
	}
	r := <-done
	return r.err, cerr, r.cs, ccs
}

func TestMutualTLSNamesBothNodes(t *testing.T) {
	dir := create(t, "n1", "n2")
	n1, n2 := load(t, dir, "n1"), load(t, dir, "n2")
	serr, cerr, scs, ccs := handshake(t, certs.ServerConfig(n1, nil), certs.ClientConfig(n2, "n1"))
	require.NoError(t, serr)
	require.NoError(t, cerr)
	got, err := certs.PeerNode(scs)
	require.NoError(t, err)
	require.Equal(t, "n2", got, "the server sees the client's node")
	got, err = certs.PeerNode(ccs)
	require.NoError(t, err)
	require.Equal(t, "n1", got, "the client sees the server's node")
	require.Equal(t, tls.X25519MLKEM768, ccs.CurveID, "Go's default hybrid key exchange must stay on")
	require.Equal(t, uint16(tls.VersionTLS13), ccs.Version)
}

// Every guard of node-to-node TLS, each refused during the handshake.
func TestMutualTLSRefuses(t *testing.T) {
	dir, stranger := create(t, "n1", "n2", "n3"), create(t, "n1", "n2")
	n1, n2 := load(t, dir, "n1"), load(t, dir, "n2")
	otherCA := load(t, stranger, "n2")
	onlyN3 := func(node string) error {
		if node != "n3" {
			return errors.New("not a member")
		}
		return nil
	}
	noCert := certs.ClientConfig(n2, "n1")
	noCert.Certificates = nil
	// A client of another cluster that trusts this one's CA, so that only
	// the server's check of its certificate can refuse it.
	strangerClient := certs.ClientConfig(otherCA, "n1")
	strangerClient.RootCAs = n1.Pool
	tls12 := certs.ClientConfig(n2, "n1")
	tls12.MinVersion, tls12.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	for _, tc := range []struct {
		name           string
		server, client *tls.Config
		clientSees     string // in the client's error, when the client detects it
	}{
		{"client without a certificate", certs.ServerConfig(n1, nil), noCert, ""},
		{"client certificate of another CA", certs.ServerConfig(n1, nil), strangerClient, ""},
		{"client node not admitted", certs.ServerConfig(n1, onlyN3), certs.ClientConfig(n2, "n1"), ""},
		{"server names another node than dialled", certs.ServerConfig(n1, nil), certs.ClientConfig(n2, "n3"), "n3"},
		{"server certificate of another CA", certs.ServerConfig(otherCA, nil), certs.ClientConfig(n1, "n2"), ""},
		{"TLS 1.2 client", certs.ServerConfig(n1, nil), tls12, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serr, cerr, _, _ := handshake(t, tc.server, tc.client)
			require.Error(t, serr, "the server must not complete the handshake")
			if tc.clientSees != "" {
				require.ErrorContains(t, cerr, tc.clientSees)
			}
		})
	}
}

// A client that sets ServerName itself (as fabric/tcp does from the node
// name) gets the standard hostname check against the node's DNS name.
func TestClientConfigWithDialerServerName(t *testing.T) {
	dir := create(t, "n1", "n2")
	n1, n2 := load(t, dir, "n1"), load(t, dir, "n2")
	for _, tc := range []struct {
		serverName string
		ok         bool
	}{{"n1", true}, {"127.0.0.1", true}, {"n2", false}, {"n3", false}} {
		t.Run(tc.serverName, func(t *testing.T) {
			c := certs.ClientConfig(n2, "")
			c.ServerName = tc.serverName
			serr, cerr, _, _ := handshake(t, certs.ServerConfig(n1, nil), c)
			if tc.ok {
				require.NoError(t, cerr)
				require.NoError(t, serr)
				return
			}
			require.Error(t, cerr)
			require.Error(t, serr)
		})
	}
}

func TestHTTPServerConfig(t *testing.T) {
	dir, public := create(t, "n1"), create(t, "web")
	n1 := load(t, dir, "n1")
	pub := load(t, public, "web")
	for _, tc := range []struct {
		name   string
		public *tls.Certificate
		trust  *certs.Bundle
		leaf   string
	}{
		{"node certificate", nil, n1, "n1"},
		{"public certificate", &pub.Cert, pub, "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &tls.Config{RootCAs: tc.trust.Pool, ServerName: "localhost"}
			serr, cerr, _, ccs := handshake(t, certs.HTTPServerConfig(n1, tc.public), client)
			require.NoError(t, cerr)
			require.NoError(t, serr)
			require.Equal(t, tc.leaf, ccs.PeerCertificates[0].Subject.CommonName)
			require.Equal(t, tls.X25519MLKEM768, ccs.CurveID)
			require.Equal(t, uint16(tls.VersionTLS13), ccs.Version)
		})
	}
	t.Run("X25519 for a client without the hybrid", func(t *testing.T) {
		client := &tls.Config{RootCAs: n1.Pool, ServerName: "localhost", CurvePreferences: []tls.CurveID{tls.X25519}}
		_, cerr, _, ccs := handshake(t, certs.HTTPServerConfig(n1, nil), client)
		require.NoError(t, cerr)
		require.Equal(t, tls.X25519, ccs.CurveID)
	})
	t.Run("TLS 1.2 refused", func(t *testing.T) {
		client := &tls.Config{RootCAs: n1.Pool, ServerName: "localhost", MaxVersion: tls.VersionTLS12}
		serr, cerr, _, _ := handshake(t, certs.HTTPServerConfig(n1, nil), client)
		require.Error(t, serr)
		require.Error(t, cerr)
	})
}

func TestPeerNodeNeedsAVerifiedCertificate(t *testing.T) {
	b := load(t, create(t, "n1"), "n1")
	_, err := certs.PeerNode(tls.ConnectionState{})
	require.ErrorIs(t, err, certs.ErrNoNodeIdentity)
	_, err = certs.PeerNode(tls.ConnectionState{PeerCertificates: []*x509.Certificate{b.Cert.Leaf}})
	require.ErrorIs(t, err, certs.ErrNoNodeIdentity, "an unverified certificate names nobody")
}
