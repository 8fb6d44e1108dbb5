package certs

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
)

// Bundle is what a node loads from a certificate directory: the cluster CA,
// its own certificate and key, and the gossip key. Its fields are not
// modified after Load; the TLS configurations built from it share them.
type Bundle struct {
	// Node is the node these files are for.
	Node string
	// CA is the cluster CA certificate; Pool holds it alone, the only
	// trust root of node-to-node TLS.
	CA   *x509.Certificate
	Pool *x509.CertPool
	// Cert is the node's certificate and key, Leaf set.
	Cert tls.Certificate
	// GossipKey is memberlist's SecretKey (GossipKeySize bytes).
	GossipKey []byte
}

// Fingerprint is the CA's SHA-256 fingerprint (see the Fingerprint function).
func (b *Bundle) Fingerprint() string { return Fingerprint(b.CA) }

// Load reads dir's ca.crt, NODE.crt, NODE.key and gossip.key. Key files
// whose group or other permission bits are set are refused
// (ErrKeyPermissions, naming the file, its mode and the chmod to run). It
// checks that the node certificate was signed by the CA, is valid now for
// both server and client authentication, and names node.
func Load(dir, node string) (*Bundle, error) {
	if err := ValidateNodeName(node); err != nil {
		return nil, err
	}
	ca, err := readCert(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, err
	}
	pair, err := LoadKeyPair(certPath(dir, node), keyPath(dir, node))
	if err != nil {
		return nil, err
	}
	b := &Bundle{Node: node, CA: ca, Pool: x509.NewCertPool(), Cert: pair}
	b.Pool.AddCert(ca)
	if err := b.checkLeaf(dir); err != nil {
		return nil, err
	}
	if b.GossipKey, err = readGossipKey(filepath.Join(dir, GossipKeyFile)); err != nil {
		return nil, err
	}
	return b, nil
}

// checkLeaf verifies the node certificate against the CA and its name.
func (b *Bundle) checkLeaf(dir string) error {
	leaf := b.Cert.Leaf
	opts := x509.VerifyOptions{Roots: b.Pool}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		opts.KeyUsages = []x509.ExtKeyUsage{usage}
		if _, err := leaf.Verify(opts); err != nil {
			return fmt.Errorf("%w: %s does not verify against %s: %v; use files created together by searchctl certs create",
				ErrInvalid, certPath(dir, b.Node), filepath.Join(dir, CACertFile), err)
		}
	}
	name, err := nodeOf(leaf)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, certPath(dir, b.Node), err)
	}
	if name != b.Node {
		return fmt.Errorf("%w: %s names node %q, not %q", ErrInvalid, certPath(dir, b.Node), name, b.Node)
	}
	return nil
}

// readGossipKey reads a mode-checked base64 gossip key.
func readGossipKey(path string) ([]byte, error) {
	data, err := readSecret(path)
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not base64: %v", ErrInvalid, path, err)
	}
	if len(key) != GossipKeySize {
		return nil, fmt.Errorf("%w: %s holds %d bytes, want %d (AES-256)", ErrInvalid, path, len(key), GossipKeySize)
	}
	return key, nil
}

// parseKey parses a PEM private key (PKCS #8 or SEC 1) that can sign.
func parseKey(path string, data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%w: %s holds no PEM private key", ErrInvalid, path)
		}
		var key any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: %s holds a %T, which cannot sign", ErrInvalid, path, key)
		}
		return s, nil
	}
}
