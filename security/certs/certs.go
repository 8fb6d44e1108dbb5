// Package certs is the cluster's public key infrastructure on disk: it
// creates a cluster CA, one certificate and key per node and a gossip key
// (CreateCluster, AutoConfigure), issues certificates for more nodes from
// an existing CA or replaces one node's (AddNodes), loads them back with their file modes
// checked (Load, LoadKeyPair), and builds the TLS configurations that use
// them (ServerConfig, ClientConfig, HTTPServerConfig).
//
// # Identity
//
// A node's certificate names the node twice: as a DNS name (so that a
// client that sets tls.Config.ServerName to the node name gets the standard
// library's hostname check for free) and as the URI weft-node:NAME, which
// is the identity this package reads back (PeerNode). The URI cannot be
// confused with a host name an operator adds with --dns, so a verified
// certificate with weft-node:n2 was issued for node n2 and nothing else.
// CreateCluster refuses a node name that is also one of the extra DNS names,
// so that the DNS name n2 too appears in n2's certificate only; AddNodes
// keeps that true against the node certificates already in the directory.
//
// # Keys
//
// Keys are ECDSA P-256: every TLS client (curl, browsers, the official
// Elasticsearch clients) accepts them, which Ed25519 certificates are not.
// The key exchange is independent of them: the configurations here leave
// CurvePreferences empty, so Go's default, the post-quantum hybrid
// X25519MLKEM768, is preferred, with X25519 for clients without it.
//
// # Files
//
// A certificate directory holds ca.crt, ca.key, NAME.crt and NAME.key for
// each node, and gossip.key (32 random bytes, base64: memberlist's
// SecretKey for AES-256). Keys are written 0600; Load refuses a key file
// whose group or other permission bits are set. A node needs ca.crt, its
// own NAME.crt and NAME.key and gossip.key; ca.key is only needed to issue
// certificates and is best kept off the nodes.
package certs

import (
	"errors"
	"fmt"
	"strings"
)

// File names inside a certificate directory.
const (
	CACertFile    = "ca.crt"
	CAKeyFile     = "ca.key"
	GossipKeyFile = "gossip.key"
)

// CertFile and KeyFile name node's certificate and key files in a
// certificate directory.
func CertFile(node string) string { return node + ".crt" }

// KeyFile names node's key file; see CertFile.
func KeyFile(node string) string { return node + ".key" }

// URIScheme is the scheme of the URI name that carries a node's identity
// in its certificate: weft-node:NAME.
const URIScheme = "weft-node"

// GossipKeySize is the length of the gossip key: AES-256.
const GossipKeySize = 32

// Errors of this package, wrapped with the file or value concerned.
var (
	// ErrKeyPermissions: a key file is readable or writable by its group or
	// by others.
	ErrKeyPermissions = errors.New("certs: key file permissions too open")
	// ErrExists: CreateCluster would overwrite a file, or AddNodes a
	// node's certificate without force.
	ErrExists = errors.New("certs: file already exists")
	// ErrBadNodeName: a node name cannot be put in a certificate.
	ErrBadNodeName = errors.New("certs: invalid node name")
	// ErrNoNodeIdentity: a peer's certificate is not verified, or names no
	// node (or more than one).
	ErrNoNodeIdentity = errors.New("certs: peer certificate names no node")
	// ErrWrongNode: a peer's certificate names another node than expected.
	ErrWrongNode = errors.New("certs: peer certificate names another node")
	// ErrInvalid: a file holds no usable certificate or key, or the files
	// do not belong together.
	ErrInvalid = errors.New("certs: invalid certificate files")
)

// ValidateNodeName reports whether name can name a node in a certificate
// and a file: 1 to 63 characters among letters, digits, '-', '_' and '.',
// starting with a letter or digit.
func ValidateNodeName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("%w: %q must have 1 to 63 characters", ErrBadNodeName, name)
	}
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%w: %q must start with a letter or digit", ErrBadNodeName, name)
		}
		if !alnum && !strings.ContainsRune("-_.", r) {
			return fmt.Errorf("%w: %q has %q; use letters, digits, '-', '_' and '.'", ErrBadNodeName, name, r)
		}
	}
	if strings.EqualFold(name, "localhost") {
		return fmt.Errorf("%w: %q is every certificate's loopback name; pick another", ErrBadNodeName, name)
	}
	return nil
}
