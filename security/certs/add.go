package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AddNodes issues certificates for nodes with the cluster CA kept in dir
// (ca.crt and ca.key, as CreateCluster wrote them), so that new nodes can
// join a running cluster: each certificate is signed by the same CA, so the
// nodes already running trust it at once. Every certificate names its node,
// localhost, 127.0.0.1, ::1, ips and dnsNames, as CreateCluster's do, and
// NODE.key is written 0600. AddNodes never writes ca.crt, ca.key or
// gossip.key, nor the files of a node it is not asked for.
//
// A node that has a certificate or key in dir already is refused
// (ErrExists) unless force is set; force replaces that node's certificate
// and key (a rotation), keeping the extra IPs and DNS names of the old
// certificate besides ips and dnsNames. Each file is replaced by a rename,
// the key before the certificate: a crash between the two leaves a pair
// that Load refuses (ErrInvalid), and running AddNodes with force again
// repairs it.
//
// Beyond CreateCluster's checks (ErrBadNodeName), it refuses, reading the
// node certificates of this CA that dir holds: a node name that differs
// only in case from an existing node's; an extra DNS name that is a node's
// name; and a new node whose name is an extra DNS name of another node's
// certificate. Each of these would let one node's certificate pass the
// host name check for another node. A CA that has expired is refused
// (ErrInvalid); a certificate never outlives its CA. Nothing is written
// when a check fails.
func AddNodes(dir string, nodes []string, ips []net.IP, dnsNames []string, force bool) (*Created, error) {
	if err := checkNames(nodes, dnsNames); err != nil {
		return nil, err
	}
	caPath := filepath.Join(dir, CACertFile)
	caCert, err := readCert(caPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w; run certs add on the directory certs create wrote (with ca.crt and ca.key)", ErrNoCA, dir, err)
	}
	ca, err := loadAuthority(dir, caCert)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s; it is needed to issue certificates, run certs add where the CA key is kept", ErrNoCA, dir, CAKeyFile)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if now.After(caCert.NotAfter) {
		return nil, fmt.Errorf("%w: the CA in %s expired on %s; a new CA means new certificates for every node (certs create, then restart every node)",
			ErrInvalid, caPath, caCert.NotAfter.Format(time.DateOnly))
	}
	existing, err := nodeCerts(dir, caCert)
	if err != nil {
		return nil, err
	}
	plan, err := planAdd(dir, existing, nodes, ips, dnsNames, force)
	if err != nil {
		return nil, err
	}
	out := &Created{Dir: dir, Fingerprint: Fingerprint(caCert)}
	for _, p := range plan {
		if err := out.issueAdded(ca, p, now); err != nil {
			return out, err
		}
	}
	return out, syncDir(dir)
}

// ErrNoCA: AddNodes found no CA certificate or no CA key to issue with.
var ErrNoCA = errors.New("certs: no cluster CA to issue certificates with")

// nodeCert is a node certificate found in a certificate directory.
type nodeCert struct {
	node string // the weft-node: name it carries
	file string // its path
	cert *x509.Certificate
}

// nodeCerts returns the node certificates in dir that ca signed. Files that
// are not such certificates (another CA's, an HTTP certificate kept beside
// them, a damaged file) are not this cluster's nodes and are skipped.
func nodeCerts(dir string, ca *x509.Certificate) ([]nodeCert, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return nil, fmt.Errorf("certs: listing %s: %w", dir, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	var found []nodeCert
	for _, p := range paths {
		if filepath.Base(p) == CACertFile {
			continue
		}
		c, err := readCert(p)
		if err != nil {
			continue
		}
		// Checked at its own start, so that an expired node certificate
		// (which --force may be rotating) is still counted.
		opts := x509.VerifyOptions{Roots: pool, CurrentTime: c.NotBefore, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
		if _, err := c.Verify(opts); err != nil {
			continue
		}
		node, err := nodeOf(c)
		if err != nil {
			continue
		}
		found = append(found, nodeCert{node: node, file: p, cert: c})
	}
	return found, nil
}

// addPlan is one certificate AddNodes will write.
type addPlan struct {
	node     string
	ips      []net.IP
	dnsNames []string
	replace  bool // the node's files exist; force replaces them
}

// planAdd makes AddNodes's checks against the existing node certificates
// and returns what to write.
func planAdd(dir string, existing []nodeCert, nodes []string, ips []net.IP, dnsNames []string, force bool) ([]addPlan, error) {
	known := make(map[string]string, len(existing)+len(nodes)) // lower-case name -> name
	for _, e := range existing {
		known[strings.ToLower(e.node)] = e.node
	}
	var plan []addPlan
	for _, n := range nodes {
		if have, ok := known[strings.ToLower(n)]; ok && have != n {
			return nil, fmt.Errorf("%w: %q differs only in case from node %q of this CA; host names ignore case, so pick another name", ErrBadNodeName, n, have)
		}
		p := addPlan{node: n, ips: ips, dnsNames: dnsNames}
		for _, f := range []string{certPath(dir, n), keyPath(dir, n)} {
			if _, err := os.Lstat(f); err == nil {
				p.replace = true
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("certs: checking %s: %w", f, err)
			}
		}
		if p.replace && !force {
			return nil, fmt.Errorf("%w: node %q has a certificate in %s already (%s); give --force to replace it with a new one (rotation)",
				ErrExists, n, dir, CertFile(n))
		}
		if p.replace {
			p.ips, p.dnsNames = oldNames(existing, n, ips, dnsNames)
		}
		plan = append(plan, p)
	}
	for _, n := range nodes {
		known[strings.ToLower(n)] = n
	}
	for _, p := range plan {
		for _, d := range p.dnsNames {
			if other, ok := known[strings.ToLower(d)]; ok && other != p.node {
				return nil, fmt.Errorf("%w: the extra DNS name %q of node %q is the name of node %q; a node's name must appear in its own certificate only",
					ErrBadNodeName, d, p.node, other)
			}
		}
		for _, e := range existing {
			if e.node == p.node {
				continue
			}
			for _, d := range e.cert.DNSNames {
				if strings.EqualFold(d, p.node) {
					return nil, fmt.Errorf("%w: %q is an extra DNS name in %s (node %q), which would pass for node %q; pick another name, or reissue %q without that name",
						ErrBadNodeName, p.node, e.file, e.node, p.node, e.node)
				}
			}
		}
	}
	return plan, nil
}

// oldNames adds the extra IPs and DNS names of node's existing certificate
// to ips and dnsNames, so that a rotation keeps the names it had.
func oldNames(existing []nodeCert, node string, ips []net.IP, dnsNames []string) ([]net.IP, []string) {
	outIPs := append([]net.IP(nil), ips...)
	outDNS := append([]string(nil), dnsNames...)
	for _, e := range existing {
		if e.node != node {
			continue
		}
		outIPs = appendUniqueIP(outIPs, e.cert.IPAddresses...)
		for _, d := range e.cert.DNSNames {
			if d != node && d != "localhost" {
				outDNS = appendUnique(outDNS, d)
			}
		}
	}
	return outIPs, outDNS
}

// issueAdded signs p's certificate and writes it with its key: new files
// with O_EXCL, or, for a replacement, scratch files renamed over the old.
func (c *Created) issueAdded(ca *authority, p addPlan, now time.Time) error {
	if !p.replace {
		return c.issue(ca, p.node, p.ips, p.dnsNames, now)
	}
	der, key, err := ca.issue(p.node, p.ips, p.dnsNames, now)
	if err != nil {
		return err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
		mode fs.FileMode
	}{{keyPath(c.Dir, p.node), kp, keyMode}, {certPath(c.Dir, p.node), certPEM(der), certMode}} {
		if err := replaceFile(f.path, f.data, f.mode); err != nil {
			return err
		}
		c.Files = append(c.Files, f.path)
		c.Replaced = append(c.Replaced, f.path)
	}
	return nil
}

// replaceFile writes data to a scratch file beside path (mode set exactly)
// and renames it over path.
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	tmp := path + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("certs: removing the leftover %s: %w", tmp, err)
	}
	if err := writeNew(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("certs: replacing %s: %w", path, err)
	}
	return nil
}
