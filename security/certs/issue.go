package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"time"
)

// Validity is how long issued certificates (the CA's and the nodes') are
// valid: three years, as elasticsearch-certutil issues them. A node's
// certificate is rotated with AddNodes (force) from the same CA; a new CA
// means new certificates for every node and restarting them all, since
// nodes of different CAs do not talk.
const Validity = 3 * 365 * 24 * time.Hour

// clockSkew backdates NotBefore so that a peer whose clock is a little
// behind accepts a certificate issued just now.
const clockSkew = time.Hour

// authority is a CA that can sign node certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newKey returns a fresh P-256 key.
func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating a P-256 key: %w", err)
	}
	return k, nil
}

// serial returns a random 128-bit serial number.
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: generating a serial number: %w", err)
	}
	return n, nil
}

// newAuthority creates a self-signed CA named after label (the cluster's
// node names, so that two clusters' CAs read differently).
func newAuthority(label string, now time.Time) (*authority, []byte, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "Weft cluster CA " + label, Organization: []string{"Weft"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(Validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: parsing the new CA certificate: %w", err)
	}
	return &authority{cert: cert, key: key}, der, nil
}

// issue signs a certificate for node, usable for both server and client
// authentication, naming it as weft-node:NODE and as the DNS name NODE, plus
// localhost, 127.0.0.1, ::1 and the extra ips and dnsNames. It returns the
// certificate's DER and its new key. The certificate expires with the CA
// if the CA expires first.
func (a *authority) issue(node string, ips []net.IP, dnsNames []string, now time.Time) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: node, Organization: []string{"Weft"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     minTime(now.Add(Validity), a.cert.NotAfter),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     appendUnique([]string{node, "localhost"}, dnsNames...),
		IPAddresses:  appendUniqueIP([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, ips...),
		URIs:         []*url.URL{NodeURI(node)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: signing the certificate of node %q: %w", node, err)
	}
	return der, key, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// NodeURI is the URI name that carries node's identity: weft-node:NODE.
func NodeURI(node string) *url.URL { return &url.URL{Scheme: URIScheme, Opaque: node} }

func appendUnique(dst []string, more ...string) []string {
	seen := make(map[string]bool, len(dst)+len(more))
	for _, s := range dst {
		seen[s] = true
	}
	for _, s := range more {
		if !seen[s] {
			seen[s] = true
			dst = append(dst, s)
		}
	}
	return dst
}

func appendUniqueIP(dst []net.IP, more ...net.IP) []net.IP {
	for _, ip := range more {
		dup := false
		for _, have := range dst {
			dup = dup || have.Equal(ip)
		}
		if !dup {
			dst = append(dst, ip)
		}
	}
	return dst
}
