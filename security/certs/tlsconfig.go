package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
)

// The configurations below set MinVersion to TLS 1.3 and leave
// CurvePreferences empty: Go then offers and prefers the post-quantum
// hybrid X25519MLKEM768, and falls back to X25519 only with a peer that
// lacks it. Each call returns a new *tls.Config that the caller may change
// before first use; they share the Bundle's certificate and pool.

// ServerConfig is the server side of node-to-node mutual TLS (fabric,
// Raft): TLS 1.3 only, b's certificate, and a client certificate required
// and verified against the cluster CA alone. During the handshake, before
// the connection carries any request, it also requires the client's
// certificate to name a node (PeerNode) and, when admit is not nil, admit
// to accept that node's name (the Raft configuration's members, say); an
// error from admit fails the handshake and is wrapped in the error the
// server's handshake returns.
func ServerConfig(b *Bundle, admit func(node string) error) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{b.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    b.Pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			node, err := PeerNode(cs)
			if err != nil {
				return err
			}
			if admit != nil {
				if err := admit(node); err != nil {
					return fmt.Errorf("certs: node %q is not admitted: %w", node, err)
				}
			}
			return nil
		},
	}
}

// ClientConfig is the client side of node-to-node mutual TLS: TLS 1.3 only,
// b's certificate as the client certificate, and the cluster CA as the only
// trust root. With server set, the server's certificate must name that node
// (ServerName is set to it, and PeerNode must return it: ErrWrongNode
// otherwise). With server empty, ServerName is left for the dialer to set:
// a node name (fabric/tcp's Config.TLSServerName) makes the standard
// hostname check require the DNS name that only that node's certificate
// carries; a host or IP only proves the server is some node of the cluster.
// Either way the server's certificate must name a node.
func ClientConfig(b *Bundle, server string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{b.Cert},
		RootCAs:      b.Pool,
		ServerName:   server,
		VerifyConnection: func(cs tls.ConnectionState) error {
			node, err := PeerNode(cs)
			if err != nil {
				return err
			}
			if server != "" && node != server {
				return fmt.Errorf("%w: dialled node %q, the certificate names %q", ErrWrongNode, server, node)
			}
			return nil
		},
	}
}

// HTTPServerConfig is the HTTP layer's server configuration: TLS 1.3 only,
// no client certificate asked (HTTP clients authenticate with passwords or
// API keys), serving public when not nil (a certificate loaded with
// LoadKeyPair from --http-cert and --http-key) and b's node certificate
// otherwise. The node certificate is served with the CA's certificate
// behind it, as Elasticsearch serves its HTTP CA, so that a client
// pinning the CA's fingerprint (the Go client's CertificateFingerprint,
// the JS client's caFingerprint) finds it in the chain.
func HTTPServerConfig(b *Bundle, public *tls.Certificate) *tls.Config {
	cert := b.Cert
	if public != nil {
		cert = *public
	} else if last := cert.Certificate[len(cert.Certificate)-1]; !bytes.Equal(last, b.CA.Raw) {
		cert.Certificate = append(slices.Clone(cert.Certificate), b.CA.Raw)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
}

// PeerNode returns the node named by the peer's verified certificate in cs:
// its one weft-node:NAME URI. It fails with ErrNoNodeIdentity when the
// peer's certificate was not verified (no VerifiedChains) or names no node,
// or several. Call it on the state of a completed handshake, or from
// VerifyConnection.
func PeerNode(cs tls.ConnectionState) (string, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", fmt.Errorf("%w: the peer presented no verified certificate", ErrNoNodeIdentity)
	}
	return nodeOf(cs.VerifiedChains[0][0])
}

// nodeOf returns the node a certificate names.
func nodeOf(cert *x509.Certificate) (string, error) {
	name, found := "", 0
	for _, u := range cert.URIs {
		if u.Scheme == URIScheme {
			name, found = u.Opaque, found+1
		}
	}
	switch {
	case found == 0:
		return "", fmt.Errorf("%w: certificate %q has no %s: URI", ErrNoNodeIdentity, cert.Subject.CommonName, URIScheme)
	case found > 1:
		return "", fmt.Errorf("%w: certificate %q has %d %s: URIs, want one", ErrNoNodeIdentity, cert.Subject.CommonName, found, URIScheme)
	}
	if err := ValidateNodeName(name); err != nil {
		return "", fmt.Errorf("%w: certificate %q: %v", ErrNoNodeIdentity, cert.Subject.CommonName, err)
	}
	return name, nil
}
