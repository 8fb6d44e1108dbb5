package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Created says what CreateCluster, AutoConfigure or AddNodes wrote.
type Created struct {
	// Dir is the certificate directory.
	Dir string
	// Files are the paths written, in the order written; empty when
	// AutoConfigure reused what was there.
	Files []string
	// Replaced are the files of Files that AddNodes wrote over (a
	// rotation with force).
	Replaced []string
	// Fingerprint is the CA certificate's SHA-256 fingerprint (see
	// Fingerprint).
	Fingerprint string
}

// Fingerprint returns cert's SHA-256 fingerprint in lowercase hex without
// separators, as Elasticsearch prints its CA's (ca_trusted_fingerprint).
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// CreateCluster writes a new cluster CA into dir (created 0700 if missing):
// ca.crt, ca.key, for every node NAME.crt and NAME.key, and gossip.key (see
// the package doc). Every node certificate names its node (weft-node:NAME
// and the DNS name NAME), localhost, 127.0.0.1, ::1, ips and dnsNames, and
// serves both server and client authentication. Node names must be valid
// (ValidateNodeName), distinct, and not among dnsNames. It writes nothing
// when any of the files exists already (ErrExists).
func CreateCluster(dir string, nodes []string, ips []net.IP, dnsNames []string) (*Created, error) {
	if err := checkNames(nodes, dnsNames); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certs: creating directory %s: %w", dir, err)
	}
	files := []string{CACertFile, CAKeyFile, GossipKeyFile}
	for _, n := range nodes {
		files = append(files, CertFile(n), KeyFile(n))
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%w: %s; choose an empty directory or move the old files away", ErrExists, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("certs: checking %s: %w", p, err)
		}
	}
	now := time.Now()
	ca, der, err := newAuthority(strings.Join(nodes, ","), now)
	if err != nil {
		return nil, err
	}
	out := &Created{Dir: dir, Fingerprint: Fingerprint(ca.cert)}
	if err := out.writePair(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), der, ca.key); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if err := out.issue(ca, n, ips, dnsNames, now); err != nil {
			return nil, err
		}
	}
	if err := out.writeGossipKey(filepath.Join(dir, GossipKeyFile)); err != nil {
		return nil, err
	}
	return out, syncDir(dir)
}

// checkNames validates node names as CreateCluster's doc says.
func checkNames(nodes, dnsNames []string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("%w: no node names given; name at least one node", ErrBadNodeName)
	}
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if err := ValidateNodeName(n); err != nil {
			return err
		}
		if seen[strings.ToLower(n)] {
			return fmt.Errorf("%w: %q is given twice", ErrBadNodeName, n)
		}
		seen[strings.ToLower(n)] = true
	}
	for _, d := range dnsNames {
		if d == "" {
			return fmt.Errorf("%w: an empty DNS name was given", ErrBadNodeName)
		}
		if seen[strings.ToLower(d)] {
			return fmt.Errorf("%w: %q is both a node name and an extra DNS name; a node's name must appear in its own certificate only", ErrBadNodeName, d)
		}
	}
	return nil
}

// issue signs node's certificate with ca and writes it with its key.
func (c *Created) issue(ca *authority, node string, ips []net.IP, dnsNames []string, now time.Time) error {
	der, key, err := ca.issue(node, ips, dnsNames, now)
	if err != nil {
		return err
	}
	return c.writePair(certPath(c.Dir, node), keyPath(c.Dir, node), der, key)
}

// writePair writes a certificate (0644) and its key (0600).
func (c *Created) writePair(certFile, keyFile string, der []byte, key crypto.Signer) error {
	kp, err := keyPEM(key)
	if err != nil {
		return err
	}
	if err := writeNew(keyFile, kp, keyMode); err != nil {
		return err
	}
	c.Files = append(c.Files, keyFile)
	if err := writeNew(certFile, certPEM(der), certMode); err != nil {
		return err
	}
	c.Files = append(c.Files, certFile)
	return nil
}

// writeGossipKey writes GossipKeySize random bytes, base64, 0600.
func (c *Created) writeGossipKey(path string) error {
	key := make([]byte, GossipKeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("certs: generating the gossip key: %w", err)
	}
	if err := writeNew(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), keyMode); err != nil {
		return err
	}
	c.Files = append(c.Files, path)
	return nil
}

// AutoDir is the directory, inside a node's data directory, where
// AutoConfigure keeps the lone node's certificates.
const AutoDir = "certs"

// AutoConfigure gives a node started with security on and no certificate
// directory its own CA, certificate and gossip key, in dataDir/certs, as
// Elasticsearch 8 configures itself on first start. The first call creates
// them (CreateCluster for node alone, with ips and dnsNames, written to a
// scratch directory and renamed into place, so a crash leaves either
// nothing or everything); later calls reuse them and write nothing, even if
// ips or dnsNames changed. If the directory holds no certificate for node
// (the node was renamed), one is issued with the CA key kept there. The
// result's Fingerprint is the CA's, for the node to print; Load(Dir, node)
// loads the files. Only the node owning dataDir may call it.
func AutoConfigure(dataDir, node string, ips []net.IP, dnsNames []string) (*Created, error) {
	if err := ValidateNodeName(node); err != nil {
		return nil, err
	}
	dir := filepath.Join(dataDir, AutoDir)
	caCert, err := readCert(filepath.Join(dir, CACertFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return autoCreate(dataDir, dir, node, ips, dnsNames)
	case err != nil:
		return nil, err
	}
	out := &Created{Dir: dir, Fingerprint: Fingerprint(caCert)}
	if _, err := os.Stat(certPath(dir, node)); err == nil {
		return out, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("certs: checking %s: %w", certPath(dir, node), err)
	}
	ca, err := loadAuthority(dir, caCert)
	if err != nil {
		return nil, fmt.Errorf("certs: %s has no certificate for node %q and cannot issue one: %w", dir, node, err)
	}
	if err := out.issue(ca, node, ips, dnsNames, time.Now()); err != nil {
		return nil, err
	}
	return out, syncDir(dir)
}

// autoCreate is AutoConfigure's first start.
func autoCreate(dataDir, dir, node string, ips []net.IP, dnsNames []string) (*Created, error) {
	scratch := filepath.Join(dataDir, AutoDir+".new")
	if err := os.RemoveAll(scratch); err != nil {
		return nil, fmt.Errorf("certs: removing the leftover %s: %w", scratch, err)
	}
	out, err := CreateCluster(scratch, []string{node}, ips, dnsNames)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(scratch, dir); err != nil {
		return nil, fmt.Errorf("certs: moving %s to %s: %w", scratch, dir, err)
	}
	if err := syncDir(dataDir); err != nil {
		return nil, err
	}
	out.Dir = dir
	for i, f := range out.Files {
		out.Files[i] = filepath.Join(dir, filepath.Base(f))
	}
	return out, nil
}

// loadAuthority reads dir's CA key (mode-checked) to sign with caCert.
func loadAuthority(dir string, caCert *x509.Certificate) (*authority, error) {
	path := filepath.Join(dir, CAKeyFile)
	data, err := readSecret(path)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(path, data)
	if err != nil {
		return nil, err
	}
	if pub, ok := caCert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(key.Public()) {
		return nil, fmt.Errorf("%w: %s is not the key of %s", ErrInvalid, path, filepath.Join(dir, CACertFile))
	}
	return &authority{cert: caCert, key: key}, nil
}
