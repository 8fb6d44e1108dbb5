package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/security/certs"
	"github.com/weftsearch/weft/security/raftstream"
)

// SecurityConfig is a node's transport security. With Enabled (the
// default) every port speaks TLS 1.3 with the cluster's certificates: the
// HTTP API (server authentication), the fabric and Raft (mutual, each end's
// certificate naming its node), and gossip is encrypted with the cluster's
// gossip key.
type SecurityConfig struct {
	// Enabled turns security on (--security, WEFT_SECURITY; default true).
	// Off, the node logs a warning at every start, and refuses to start
	// when any of its addresses is not loopback unless
	// AllowInsecureNetwork is set.
	Enabled bool
	// AllowInsecureNetwork acknowledges running with security off on
	// addresses others can reach (--allow-insecure-network,
	// WEFT_ALLOW_INSECURE_NETWORK). It has no effect with security on.
	AllowInsecureNetwork bool
	// CertsDir is the certificate directory written by searchctl certs
	// create (--certs, WEFT_CERTS): ca.crt, NODE.crt, NODE.key and
	// gossip.key. Empty, a lone node (not clustered, or whose
	// InitialNodes are itself alone) makes its own CA and certificate in
	// DataDir/certs on first start; a node of a cluster refuses to start.
	CertsDir string
	// HTTPCert and HTTPKey, both or neither, put a certificate (a public
	// one, say) on the HTTP layer instead of the node's cluster
	// certificate (--http-cert, --http-key). The fabric and Raft keep the
	// cluster's.
	HTTPCert, HTTPKey string
	// AuditLog is the file that gets one JSON line per authentication
	// failure and denied request (--audit-log); AuditGranted adds the
	// granted ones (--audit-log-granted). Read by the authentication
	// layer.
	AuditLog     string
	AuditGranted bool
	// ElasticPassword is the password of the elastic superuser at the
	// cluster's first start (WEFT_ELASTIC_PASSWORD; never a flag, since a
	// command line is visible to every user of the machine). Empty, the
	// first start generates one and prints it once (Announce). Only its
	// bcrypt hash is kept, in the Raft state.
	ElasticPassword auth.Secret
	// ResetElasticPassword sets the elastic user's password anew once
	// this node has joined (--reset-elastic-password): to ElasticPassword,
	// or to a generated one printed once. It is how an operator with
	// shell access to a node recovers a lost password.
	ResetElasticPassword bool
	// Announce receives what the operator must see once and no log may
	// hold: a generated elastic password. nil: standard output.
	Announce io.Writer
}

// Errors of the security configuration, wrapped with the values concerned.
var (
	// ErrInsecureNetwork: security is off and an address is not loopback,
	// without --allow-insecure-network.
	ErrInsecureNetwork = errors.New("node: security is off on a non-loopback address")
	// ErrCertsRequired: a node of a cluster has security on and no
	// certificate directory.
	ErrCertsRequired = errors.New("node: a node of a cluster needs the cluster's certificates")
)

// insecureWarning is what a node with security off logs at every start and
// reports (SecurityStatus.Warning).
const insecureWarning = "security is off (--security=false): the HTTP API, the fabric, Raft and gossip accept anyone and travel unencrypted; use it only on a trusted machine or network"

// validateSecurity checks the security fields against the rest of c.
func (c Config) validateSecurity() []error {
	s := c.Security
	var errs []error
	if (s.HTTPCert == "") != (s.HTTPKey == "") {
		errs = append(errs, errors.New("node: --http-cert and --http-key go together; give both (the HTTP layer's certificate and its key) or neither"))
	}
	if s.AuditGranted && s.AuditLog == "" {
		errs = append(errs, errors.New("node: --audit-log-granted needs --audit-log PATH, the file the audit lines go to"))
	}
	if !s.Enabled {
		if s.CertsDir != "" || s.HTTPCert != "" || s.HTTPKey != "" {
			errs = append(errs, errors.New("node: --certs, --http-cert and --http-key need security on; drop --security=false (WEFT_SECURITY=false), or drop them"))
		}
		if !s.AllowInsecureNetwork {
			errs = append(errs, c.insecureAddrs()...)
		}
		return errs
	}
	if s.CertsDir == "" && !c.lone() {
		errs = append(errs, fmt.Errorf("%w: node %q is part of a cluster (--gossip-addr, --raft-addr, --initial-nodes) with security on and no --certs (WEFT_CERTS); create the cluster's certificates once with `searchctl certs create --out DIR --nodes n1,n2,n3`, give each node DIR (or its ca.crt, NODE.crt, NODE.key and gossip.key) with --certs DIR, or run a trusted test cluster with --security=false", ErrCertsRequired, c.NodeName))
	}
	return errs
}

// lone reports whether the node forms a cluster of itself: not clustered,
// or the only one of its initial nodes. Such a node may make its own CA.
func (c Config) lone() bool {
	return !c.Clustered() || len(c.InitialNodes) == 1 && c.InitialNodes[0] == c.NodeName
}

// insecureAddrs is Elasticsearch's bootstrap check for a node with
// security off: one error per address that is not loopback.
func (c Config) insecureAddrs() []error {
	addrs := []struct{ field, flag, val string }{
		{"HTTPAddr", "--http-addr", c.HTTPAddr},
		{"GossipAddr", "--gossip-addr", c.GossipAddr},
		{"RaftAddr", "--raft-addr", c.RaftAddr},
	}
	if c.Hooks.Fabric == nil { // a test transport is no network
		addrs = append(addrs, struct{ field, flag, val string }{"FabricAddr", "--fabric-addr", c.FabricAddr})
	}
	var errs []error
	for _, a := range addrs {
		if a.val != "" && !isLoopback(a.val) {
			errs = append(errs, fmt.Errorf("%w: %s %q (%s) is reachable from other machines, and with security off anyone who reaches it can read and change everything; turn security on (drop --security=false / WEFT_SECURITY=false), bind it to 127.0.0.1, or acknowledge with --allow-insecure-network (WEFT_ALLOW_INSECURE_NETWORK=true)", ErrInsecureNetwork, a.field, a.val, a.flag))
		}
	}
	return errs
}

// isLoopback reports whether hostport's host is a loopback IP or
// "localhost". An empty host (all interfaces) and other names are not.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SecurityStatus is what a node tells about its security: for GET / (the
// API's root), the logs and tests.
type SecurityStatus struct {
	// Enabled is Config.Security.Enabled.
	Enabled bool `json:"enabled"`
	// Warning is set with security off: what is exposed.
	Warning string `json:"warning,omitempty"`
	// CertsDir is the certificate directory in use; AutoConfigured says
	// the node made it itself (DataDir/certs).
	CertsDir       string `json:"certs_dir,omitempty"`
	AutoConfigured bool   `json:"auto_configured,omitempty"`
	// CACert is the path of the cluster CA's certificate, which clients
	// trust (curl --cacert), and CAFingerprint its SHA-256 fingerprint.
	CACert        string `json:"ca_cert,omitempty"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	// HTTPCert is the HTTP layer's own certificate file (--http-cert), ""
	// when it serves the node's cluster certificate.
	HTTPCert string `json:"http_cert,omitempty"`
}

// security is what a node with security on holds: its certificates and
// the TLS configuration of its HTTP layer. Immutable once loaded.
type security struct {
	bundle  *certs.Bundle
	status  SecurityStatus
	created []string // files AutoConfigure wrote at this start
	http    *tls.Config
}

// loadSecurity loads the node's certificates from cfg.Security.CertsDir,
// or makes and loads its own (certs.AutoConfigure) when it has none. The
// caller holds the data directory.
func loadSecurity(cfg Config) (*security, error) {
	s := &security{status: SecurityStatus{Enabled: true, CertsDir: cfg.Security.CertsDir, HTTPCert: cfg.Security.HTTPCert}}
	if s.status.CertsDir == "" {
		ips, dns := autoNames(cfg)
		created, err := certs.AutoConfigure(cfg.DataDir, cfg.NodeName, ips, dns)
		if err != nil {
			return nil, fmt.Errorf("node: making this node's own CA and certificate in %s: %w; fix it, or create certificates with searchctl certs create and pass --certs DIR", cfg.DataDir, err)
		}
		s.status.CertsDir, s.status.AutoConfigured, s.created = created.Dir, true, created.Files
	}
	b, err := certs.Load(s.status.CertsDir, cfg.NodeName)
	if err != nil {
		return nil, fmt.Errorf("node: loading node %q's certificates from %s: %w; it needs ca.crt, %s, %s and gossip.key from `searchctl certs create --out DIR --nodes %s,...`",
			cfg.NodeName, s.status.CertsDir, err, certs.CertFile(cfg.NodeName), certs.KeyFile(cfg.NodeName), cfg.NodeName)
	}
	if len(cfg.GossipKey) > 0 && !bytes.Equal(cfg.GossipKey, b.GossipKey) {
		return nil, fmt.Errorf("node: --gossip-key (WEFT_GOSSIP_KEY) differs from %s/%s; with security on the gossip key comes from the certificate directory: drop --gossip-key", s.status.CertsDir, certs.GossipKeyFile)
	}
	var public *tls.Certificate
	if cfg.Security.HTTPCert != "" {
		pair, err := certs.LoadKeyPair(cfg.Security.HTTPCert, cfg.Security.HTTPKey)
		if err != nil {
			return nil, fmt.Errorf("node: loading the HTTP certificate (--http-cert %s, --http-key %s): %w", cfg.Security.HTTPCert, cfg.Security.HTTPKey, err)
		}
		public = &pair
	}
	s.bundle, s.http = b, certs.HTTPServerConfig(b, public)
	s.status.CACert = filepath.Join(s.status.CertsDir, certs.CACertFile)
	s.status.CAFingerprint = b.Fingerprint()
	return s, nil
}

// autoNames are the extra names of a lone node's own certificate: the
// HTTP address's host when it is a specific IP or a name other than the
// node's (the certificate always names localhost, 127.0.0.1 and ::1).
func autoNames(cfg Config) (ips []net.IP, dns []string) {
	host, _, _ := net.SplitHostPort(cfg.HTTPAddr)
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() && !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
	} else if host != "" && !strings.EqualFold(host, "localhost") && !strings.EqualFold(host, cfg.NodeName) {
		dns = append(dns, host)
	}
	return ips, dns
}

// logSecurity says at every start how the node is secured: a warning with
// security off; the certificates and the CA fingerprint with it on.
func (n *Node) logSecurity() {
	if n.sec == nil {
		n.log.Warn("node: " + insecureWarning)
		return
	}
	st := n.sec.status
	if len(n.sec.created) > 0 {
		n.log.Info("node: security on; made this node's own CA and certificate (trust the CA certificate in clients)",
			"ca_cert", st.CACert, "ca_fingerprint", st.CAFingerprint, "certs_dir", st.CertsDir)
		return
	}
	n.log.Info("node: security on", "ca_cert", st.CACert, "ca_fingerprint", st.CAFingerprint, "certs_dir", st.CertsDir,
		"auto_configured", st.AutoConfigured, "http_cert", st.HTTPCert)
}

// Security reports the node's security, for GET / and diagnostics. It is
// fixed from New on.
func (n *Node) Security() SecurityStatus {
	if n.sec == nil {
		return SecurityStatus{Warning: insecureWarning}
	}
	return n.sec.status
}

// fabricTLS is startFabric's secure argument: nil with security off.
func (n *Node) fabricTLS() func(*tcp.Config) {
	if n.sec == nil {
		return nil
	}
	return func(c *tcp.Config) { n.sec.secureFabric(c, n.fabricNameOf) }
}

// secureFabric makes the TCP fabric mutual TLS: each end's certificate
// must be of the cluster CA and name a node; a dial of a known node's
// address requires that node's certificate (nameOf), and an accepted
// connection's requests carry its node name (fabric.Request.Peer).
func (s *security) secureFabric(tcfg *tcp.Config, nameOf func(addr string) string) {
	tcfg.ServerTLS = certs.ServerConfig(s.bundle, nil)
	tcfg.ClientTLS = certs.ClientConfig(s.bundle, "")
	tcfg.TLSServerName = nameOf
	tcfg.PeerIdentity = certs.PeerNode
}

// raftLayer returns the cluster's RaftLayer hook that puts Raft's streams
// on mutual TLS (security/raftstream): accepted connections must present a
// certificate of the cluster CA naming a node, each RPC they carry must
// speak for that node's server id (speaksFor), and a dial of a known
// node's Raft address requires that node's certificate (nameOf).
func (s *security) raftLayer(nameOf func(raft.ServerAddress) string, speaksFor func(string, raft.ServerID) error, log *slog.Logger) func(raft.StreamLayer) raft.StreamLayer {
	return func(inner raft.StreamLayer) raft.StreamLayer {
		ln, err := raftstream.New(inner, raftstream.Config{
			Server: certs.ServerConfig(s.bundle, nil), Client: certs.ClientConfig(s.bundle, ""),
			ServerName: nameOf, Identify: certs.PeerNode, SpeaksFor: speaksFor, Logger: log,
		})
		if err != nil {
			// Both configurations are set, so New does not fail; if it
			// did, fail closed: no plaintext Raft.
			log.Error("node: Raft over TLS cannot start; Raft is closed", "err", err)
			_ = inner.Close()
			return inner
		}
		return &tlsRaftLayer{Layer: ln, inner: inner, bundle: s.bundle, nameOf: nameOf}
	}
}

// tlsRaftLayer accepts through raftstream and dials through the cluster's
// own layer, so that the connections it dials are closed with it (Raft's
// transport leaves its pooled connections open at shutdown).
type tlsRaftLayer struct {
	*raftstream.Layer
	inner  raft.StreamLayer
	bundle *certs.Bundle
	nameOf func(raft.ServerAddress) string
}

var _ raft.StreamLayer = (*tlsRaftLayer)(nil)

// Dial connects to addr through the inner layer and completes the TLS
// handshake within timeout. When addr is a known node's Raft address, the
// server's certificate must name that node; otherwise it must name some
// node of the cluster and carry addr's host.
func (l *tlsRaftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	name := l.nameOf(addr)
	cfg := certs.ClientConfig(l.bundle, name)
	if name == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(string(addr))
	}
	nc, err := l.inner.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("node: Raft TLS handshake with %s (node %q): %w", addr, name, err)
	}
	return tc, nil
}

// nodeNameAt returns the name of the node whose address (as addrOf reads
// it from a node record or a gossip member) is addr, preferring live
// nodes; "" when none, or when two live nodes claim it.
func nodeNameAt(c *cluster.Cluster, addr string, match func(recorded, addr string) bool, nodeAddr func(*state.Node) string, memberAddr func(cluster.Member) string) string {
	if c == nil || addr == "" {
		return ""
	}
	found, dead := "", ""
	for _, m := range c.Members() {
		if m.Status == "alive" && match(memberAddr(m), addr) {
			if found != "" && found != m.Name {
				return ""
			}
			found = m.Name
		}
	}
	for _, nd := range c.State().Nodes {
		if !match(nodeAddr(nd), addr) {
			continue
		}
		if nd.Live {
			if found != "" && found != nd.Name {
				return ""
			}
			found = nd.Name
		} else {
			dead = nd.Name
		}
	}
	if found == "" {
		found = dead
	}
	return found
}

// fabricNameOf is secureFabric's nameOf: the node whose fabric path list
// has addr as its TCP path (or is addr, with the plain TCP transport).
func (n *Node) fabricNameOf(addr string) string {
	return nodeNameAt(n.cluRef.Load(), addr, fabricPathIs,
		func(nd *state.Node) string { return nd.FabricAddr }, func(m cluster.Member) string { return m.FabricAddr })
}

// fabricPathIs reports whether the recorded fabric address (a path list
// or a plain host:port) has addr as its TCP path.
func fabricPathIs(recorded, addr string) bool {
	if recorded == addr {
		return true
	}
	paths, err := adaptive.ParseAddr(recorded)
	if err != nil {
		return false
	}
	for _, p := range paths {
		if p.Transport == "tcp" && p.Addr == addr {
			return true
		}
	}
	return false
}

// raftNameOf is raftLayer's nameOf: the node whose Raft address is addr.
func (n *Node) raftNameOf(addr raft.ServerAddress) string {
	return nodeNameAt(n.cluRef.Load(), string(addr), func(a, b string) bool { return a == b },
		func(nd *state.Node) string { return nd.RaftAddr }, func(m cluster.Member) string { return m.RaftAddr })
}

// raftSpeaksFor is raftLayer's speaksFor: the Raft server id an RPC
// speaks for must be the id of the node the connection's certificate
// names (peer). The id's node is read from the node records in the Raft
// state, else from gossip (a node not yet recorded); an id no node or
// more than one node claims is refused.
func (n *Node) raftSpeaksFor(peer string, id raft.ServerID) error {
	name := nodeNameOfID(n.cluRef.Load(), string(id))
	switch {
	case name == "":
		return fmt.Errorf("node: Raft server id %q is no node this node knows", id)
	case name != peer:
		return fmt.Errorf("node: Raft server id %q is node %q, not %q", id, name, peer)
	}
	return nil
}

// nodeNameOfID returns the name of the node whose id is id: its record in
// the Raft state, else the gossip members claiming it; "" when
// none, or when members with different names claim it.
func nodeNameOfID(c *cluster.Cluster, id string) string {
	if c == nil || id == "" {
		return ""
	}
	if nd, ok := c.State().Nodes[id]; ok {
		return nd.Name
	}
	found := ""
	for _, m := range c.Members() {
		if m.ID != id {
			continue
		}
		if found != "" && found != m.Name {
			return ""
		}
		found = m.Name
	}
	return found
}

// announceElasticPassword prints a generated elastic password once, to
// SecurityConfig.Announce, never to the log.
func (n *Node) announceElasticPassword(pw auth.Secret) {
	out := n.cfg.Security.Announce
	if out == nil {
		out = os.Stdout
	}
	fmt.Fprintf(out, "\nThe password of the elastic user is:\n\n  %s\n\nIt is shown once; keep it. Reset it with searchnode --reset-elastic-password on any node.\n\n", pw.Reveal())
}

// ResetElasticPassword runs --reset-elastic-password: once the node
// serves, it sets the elastic user's password (a given one, or a
// generated one it announces).
func (n *Node) ResetElasticPassword(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	pw, err := n.clu.ResetElasticPassword(ctx, n.cfg.Security.ElasticPassword)
	if err != nil {
		return fmt.Errorf("node: resetting the elastic user's password: %w", err)
	}
	if n.cfg.Security.ElasticPassword.Reveal() == "" {
		n.announceElasticPassword(pw)
	}
	n.log.Info("node: the elastic user's password was reset")
	return nil
}

// httpSecurity is the HTTP API's authentication and authorization: users,
// roles and API keys from the Raft state, the audit log when asked for.
func (n *Node) httpSecurity() (*httpapi.Security, error) {
	authn, err := auth.NewAuthenticator(n.clu.SecurityStore(), auth.DefaultConfig())
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	sec := &httpapi.Security{Authenticator: authn, Admin: newSecurityAdmin(n.clu)}
	if path := n.cfg.Security.AuditLog; path != "" {
		if sec.Audit, err = audit.Open(path, audit.Options{IncludeGranted: n.cfg.Security.AuditGranted}); err != nil {
			return nil, fmt.Errorf("node: opening the audit log (--audit-log %s): %w", path, err)
		}
		n.audit = sec.Audit
	}
	return sec, nil
}
