package node_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/freeport"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/security/certs"
	"github.com/weftsearch/weft/security/raftstream"
)

// testPassword is the elastic user's password of the secure test nodes.
const testPassword = "test-password"

// secureConfig is testConfig with security on (the default of a real
// node), the elastic user's password being testPassword.
func secureConfig(dir string) node.Config {
	cfg := testConfig(dir)
	cfg.Security = node.SecurityConfig{Enabled: true, ElasticPassword: auth.Secret(testPassword)}
	return cfg
}

// caPool reads the CA certificate a node reports.
func caPool(t testing.TB, n *node.Node) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(n.Security().CACert)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return pool
}

// httpsClient trusts pool alone and keeps no idle connections.
func httpsClient(pool *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// getStatus sends GET url as the elastic user and decodes a 200 reply
// into v (when not nil).
func getStatus(t testing.TB, c *http.Client, url string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.SetBasicAuth("elastic", testPassword)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if v != nil && resp.StatusCode == 200 {
		require.NoError(t, json.Unmarshal(body, v), "%s", body)
	}
	return resp.StatusCode
}

// TestHTTPSNegotiatesHybridKeyExchange: a node with security on serves
// HTTPS only, TLS 1.3 only, and the key exchange it agrees with a Go
// client is the post-quantum hybrid X25519MLKEM768 (X25519 with a client
// that offers only that).
func TestHTTPSNegotiatesHybridKeyExchange(t *testing.T) {
	n := startNode(t, secureConfig(t.TempDir()))
	require.True(t, strings.HasPrefix(n.URL(), "https://"), n.URL())
	pool := caPool(t, n)
	dial := func(cfg *tls.Config) (tls.ConnectionState, error) {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: cfg}
		c, err := d.DialContext(context.Background(), "tcp", n.HTTPAddr())
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer c.Close()
		return c.(*tls.Conn).ConnectionState(), nil
	}
	for _, tc := range []struct {
		name    string
		cfg     *tls.Config
		curve   tls.CurveID
		wantErr string
	}{
		{"default Go client", &tls.Config{RootCAs: pool}, tls.X25519MLKEM768, ""},
		{"client without the hybrid", &tls.Config{RootCAs: pool, CurvePreferences: []tls.CurveID{tls.X25519}}, tls.X25519, ""},
		{"TLS 1.2 client", &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}, 0, "protocol version"},
		{"client not trusting the node's CA", &tls.Config{}, 0, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := dial(tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, uint16(tls.VersionTLS13), cs.Version)
			require.Equal(t, tc.curve, cs.CurveID)
		})
	}

	var root map[string]any
	require.Equal(t, 200, getStatus(t, httpsClient(pool), n.URL()+"/", &root))
	require.Equal(t, "test-node", root["name"])
	resp, err := client.Get("http://" + n.HTTPAddr() + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode, "plain HTTP is refused: %s", body)
	require.Contains(t, string(body), "HTTPS")
	require.NotContains(t, string(body), "test-node")
}

// TestLoneNodeMakesItsOwnCAOnce: a lone node with security on and no
// --certs makes a CA and certificate in its data directory at first start,
// logs the CA's fingerprint at every start, and keeps the same CA across
// restarts.
func TestLoneNodeMakesItsOwnCAOnce(t *testing.T) {
	dir := t.TempDir()
	var fingerprints []string
	for start := range 2 {
		var logs syncBuffer
		n, err := node.New(secureConfig(dir), slog.New(slog.NewTextHandler(&logs, nil)))
		require.NoError(t, err)
		require.NoError(t, n.Start(context.Background()))
		st := n.Security()
		require.True(t, st.Enabled)
		require.True(t, st.AutoConfigured)
		require.Empty(t, st.Warning)
		require.Equal(t, filepath.Join(dir, certs.AutoDir, certs.CACertFile), st.CACert)
		require.Regexp(t, `^[0-9a-f]{64}$`, st.CAFingerprint)
		require.Equal(t, 1, strings.Count(logs.String(), st.CAFingerprint), "the fingerprint is logged once per start (start %d):\n%s", start, logs.String())
		fingerprints = append(fingerprints, st.CAFingerprint)
		require.Equal(t, 200, getStatus(t, httpsClient(caPool(t, n)), n.URL()+"/_cluster/health", nil))
		require.NoError(t, n.Shutdown(context.Background()))
	}
	require.Equal(t, fingerprints[0], fingerprints[1], "a restart keeps the node's CA")
	fi, err := os.Stat(filepath.Join(dir, certs.AutoDir, certs.KeyFile("test-node")))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestSecurityOffWarnsAtEveryStart: with security off the node says so in
// its log at each start and in Security (which GET / reports).
func TestSecurityOffWarnsAtEveryStart(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		var logs syncBuffer
		n, err := node.New(testConfig(dir), slog.New(slog.NewTextHandler(&logs, nil)))
		require.NoError(t, err)
		require.NoError(t, n.Start(context.Background()))
		require.Contains(t, logs.String(), "level=WARN")
		require.Contains(t, logs.String(), "security is off")
		st := n.Security()
		require.False(t, st.Enabled)
		require.Contains(t, st.Warning, "security is off")
		require.True(t, strings.HasPrefix(n.URL(), "http://"), n.URL())
		require.NoError(t, n.Shutdown(context.Background()))
	}
}

// TestNodeRefusesBadSecuritySetups: misconfigurations stop New with an
// error naming what to do.
func TestNodeRefusesBadSecuritySetups(t *testing.T) {
	certsDir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(certsDir, []string{"n1", "n2"}, nil, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		mutate  func(*node.Config)
		wantErr error
		wantMsg string
	}{
		{"cluster node without certificates", func(c *node.Config) {
			c.NodeName, c.GossipAddr, c.RaftAddr, c.FabricAddr, c.InitialNodes = "n1", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", []string{"n1", "n2"}
		}, node.ErrCertsRequired, "searchctl certs create"},
		{"no certificate for this node", func(c *node.Config) { c.NodeName, c.Security.CertsDir = "n3", certsDir }, os.ErrNotExist, "n3.crt"},
		{"loose key file", func(c *node.Config) {
			require.NoError(t, os.Chmod(filepath.Join(certsDir, "n2.key"), 0o644))
			c.NodeName, c.Security.CertsDir = "n2", certsDir
		}, certs.ErrKeyPermissions, "chmod 600"},
		{"another gossip key", func(c *node.Config) {
			c.NodeName, c.Security.CertsDir, c.GossipKey = "n1", certsDir, bytes.Repeat([]byte{7}, 32)
		}, nil, "drop --gossip-key"},
		{"security off on the network", func(c *node.Config) {
			c.Security.Enabled, c.HTTPAddr = false, "0.0.0.0:0"
		}, node.ErrInsecureNetwork, "--allow-insecure-network"},
		{"security on and RDMA required", func(c *node.Config) {
			c.FabricAddr, c.FabricRDMA = "127.0.0.1:0", node.FabricRDMAOn
		}, nil, "RDMA payloads are not yet sealed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secureConfig(t.TempDir())
			tc.mutate(&cfg)
			n, err := node.New(cfg, testlog.New(t))
			if err == nil {
				err = n.Start(context.Background())
				_ = n.Shutdown(context.Background())
			}
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			require.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// secureCluster is three nodes n1..n3 with the certificates of one cluster
// CA, on real loopback transports (TCP fabric, Raft, gossip), green.
type secureCluster struct {
	*nodeCluster
	certs  string
	seeds  []string
	client *http.Client
}

func newSecureCluster(t *testing.T) *secureCluster {
	sc := &secureCluster{nodeCluster: &nodeCluster{t: t, cfgs: map[string]node.Config{}, nodes: map[string]*node.Node{}},
		certs: filepath.Join(t.TempDir(), "certs")}
	names := []string{"n1", "n2", "n3"}
	_, err := certs.CreateCluster(sc.certs, names, nil, nil)
	require.NoError(t, err)
	for range names {
		sc.seeds = append(sc.seeds, freeport.Free(t, true))
	}
	for i, name := range names {
		cfg := secureConfig(t.TempDir())
		cfg.NodeName, cfg.Security.CertsDir = name, sc.certs
		cfg.GossipAddr, cfg.RaftAddr, cfg.FabricAddr, cfg.FabricRDMA = sc.seeds[i], "127.0.0.1:0", "127.0.0.1:0", node.FabricRDMAOff
		cfg.Seeds, cfg.InitialNodes = sc.seeds, names
		sc.cfgs[name] = cfg
	}
	for _, name := range names {
		sc.start(name)
	}
	t.Cleanup(func() {
		for name := range sc.nodes {
			sc.stop(name)
		}
	})
	sc.client = httpsClient(caPool(t, sc.nodes["n1"]))
	sc.awaitGreen(3)
	return sc
}

// awaitGreen waits (up to 60 s) for a green cluster of n nodes through n1.
func (sc *secureCluster) awaitGreen(n int) {
	sc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		url := fmt.Sprintf("%s/_cluster/health?wait_for_status=green&wait_for_nodes=%d&timeout=5s", sc.url("n1"), n)
		if getStatus(sc.t, sc.client, url, nil) == 200 {
			return
		}
		require.True(sc.t, time.Now().Before(deadline), "no green cluster of %d nodes through n1", n)
	}
}

// TestSecureClusterRefusesStrangers is issue 17's trial: a stranger that
// knows the seeds but has no certificate of the cluster CA and no gossip
// key — with security off, or with its own CA — gets no membership, no
// metadata and no shard, and the cluster stays green with its three nodes.
// A forged AppendEntries with a high term, from a connection without a
// cluster certificate, leaves the leader leading in its term; fabric
// clients without a cluster certificate cannot connect.
func TestSecureClusterRefusesStrangers(t *testing.T) {
	if testing.Short() {
		t.Skip("forms a three-node cluster and watches strangers for seconds")
	}
	sc := newSecureCluster(t)
	req, err := http.NewRequest("PUT", sc.url("n1")+"/guarded", strings.NewReader(`{"settings":{"number_of_shards":3,"number_of_replicas":1}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("elastic", testPassword)
	resp, err := sc.client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	sc.awaitGreen(3)

	otherCA := filepath.Join(t.TempDir(), "other")
	_, err = certs.CreateCluster(otherCA, []string{"stranger-ca"}, nil, nil)
	require.NoError(t, err)
	strangers := map[string]func(*node.Config){
		"stranger-off": func(c *node.Config) { c.Security.Enabled = false },
		"stranger-ca":  func(c *node.Config) { c.Security.CertsDir = otherCA },
	}
	var started []*node.Node
	for name, mutate := range strangers {
		cfg := secureConfig(t.TempDir())
		cfg.NodeName = name
		cfg.GossipAddr, cfg.RaftAddr, cfg.FabricAddr, cfg.FabricRDMA = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", node.FabricRDMAOff
		cfg.Seeds = sc.seeds
		mutate(&cfg)
		started = append(started, startNode(t, cfg))
	}

	// Gossip with LocalTiming converges in about a second; a stranger that
	// could join would have done so well within the watch.
	leader := sc.nodes["n1"].Cluster().Raft()
	require.NotZero(t, leader.Term)
	watch := time.Now().Add(6 * time.Second)
	for time.Now().Before(watch) {
		for _, s := range started {
			require.Len(t, s.Cluster().Members(), 1, "the stranger sees only itself")
			require.Empty(t, s.Cluster().State().Indices, "the stranger got metadata")
		}
		for name, n := range sc.nodes {
			require.Len(t, n.Cluster().Members(), 3, "%s's membership", name)
			require.Len(t, n.Cluster().State().Nodes, 3, "%s's cluster state", name)
		}
		var h struct {
			Status string `json:"status"`
			Nodes  int    `json:"number_of_nodes"`
		}
		require.Equal(t, 200, getStatus(t, sc.client, sc.url("n2")+"/_cluster/health", &h))
		require.Equal(t, "green", h.Status)
		require.Equal(t, 3, h.Nodes)
		time.Sleep(300 * time.Millisecond)
	}

	// A stranger with this cluster's gossip key but a certificate of
	// another CA gets into gossip, and no further: the leader admits a
	// member to Raft and to the node records (so to shard allocation) only
	// once it has passed the fabric's mutual TLS.
	t.Run("a gossip key without a certificate", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "keyholder")
		_, err := certs.CreateCluster(dir, []string{"keyholder"}, nil, nil)
		require.NoError(t, err)
		key, err := os.ReadFile(filepath.Join(sc.certs, certs.GossipKeyFile))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, certs.GossipKeyFile), key, 0o600))
		cfg := secureConfig(t.TempDir())
		cfg.NodeName, cfg.Security.CertsDir = "keyholder", dir
		cfg.GossipAddr, cfg.RaftAddr, cfg.FabricAddr, cfg.FabricRDMA = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", node.FabricRDMAOff
		cfg.Seeds = sc.seeds
		kh := startNode(t, cfg)
		require.Eventually(t, func() bool { return len(sc.nodes["n1"].Cluster().Members()) == 4 }, 20*time.Second, 100*time.Millisecond,
			"the key holder joins gossip (the test would prove nothing if it did not)")
		watch := time.Now().Add(6 * time.Second)
		for time.Now().Before(watch) {
			require.Empty(t, kh.Cluster().State().Indices, "the key holder got metadata")
			for name, n := range sc.nodes {
				require.Len(t, n.Cluster().State().Nodes, 3, "%s's node records", name)
				cfg := n.Cluster().Raft()
				require.Len(t, append(cfg.Voters, cfg.Nonvoters...), 3, "%s's Raft configuration", name)
			}
			var h struct {
				Status string `json:"status"`
				Nodes  int    `json:"number_of_nodes"`
			}
			require.Equal(t, 200, getStatus(t, sc.client, sc.url("n3")+"/_cluster/health", &h))
			require.Equal(t, "green", h.Status)
			require.Equal(t, 3, h.Nodes)
			time.Sleep(300 * time.Millisecond)
		}
	})

	t.Run("dials name the node they expect", func(t *testing.T) {
		for _, from := range sc.nodes {
			for name, to := range sc.nodes {
				paths, err := adaptive.ParseAddr(to.FabricAddr())
				require.NoError(t, err)
				require.Equal(t, name, from.FabricNameOf(paths[0].Addr))
				require.Equal(t, name, from.RaftNameOf(from.Cluster().State().Nodes[to.ID()].RaftAddr))
			}
			require.Empty(t, from.FabricNameOf("127.0.0.1:1"), "an unknown address names no node")
		}
	})

	t.Run("forged AppendEntries", func(t *testing.T) {
		var lead *node.Node
		for _, n := range sc.nodes {
			if n.Cluster().Raft().State == "Leader" {
				lead = n
			}
		}
		require.NotNil(t, lead)
		before := lead.Cluster().Raft()
		st := lead.Cluster().State().Nodes[lead.ID()]
		forger, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
		require.NoError(t, err)
		defer forger.Close()
		var out raft.AppendEntriesResponse
		err = forger.AppendEntries(raft.ServerID(lead.ID()), raft.ServerAddress(st.RaftAddr), &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("forger"), Addr: []byte(forger.LocalAddr())},
			Term:      before.Term + 1000, Leader: []byte(forger.LocalAddr()),
		}, &out)
		require.Error(t, err, "a plaintext Raft RPC gets no answer")
		after := lead.Cluster().Raft()
		require.Equal(t, "Leader", after.State)
		require.Equal(t, before.Term, after.Term, "the leader keeps its term")
	})

	// A node of the cluster, with its own certificate, that sends an RPC
	// in another node's name (a follower's, with a term far ahead) is
	// dropped before Raft reads it: the leader keeps leading in its term.
	t.Run("an RPC in another node's name", func(t *testing.T) {
		var lead, impersonated *node.Node
		leadName, otherName := "", ""
		for name, n := range sc.nodes {
			switch {
			case n.Cluster().Raft().State == "Leader":
				lead, leadName = n, name
			case otherName == "":
				otherName = name
			default:
				impersonated = n
			}
		}
		require.NotNil(t, lead)
		require.NotNil(t, impersonated)
		before := lead.Cluster().Raft()
		st := lead.Cluster().State().Nodes[lead.ID()]
		b, err := certs.Load(sc.certs, otherName)
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		layer, err := raftstream.New(ln, raftstream.Config{
			Server: certs.ServerConfig(b, nil), Client: certs.ClientConfig(b, leadName), Logger: testlog.New(t),
		})
		require.NoError(t, err)
		forger := raft.NewNetworkTransport(layer, 1, 5*time.Second, io.Discard)
		defer forger.Close()
		var out raft.AppendEntriesResponse
		err = forger.AppendEntries(raft.ServerID(lead.ID()), raft.ServerAddress(st.RaftAddr), &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(impersonated.ID()), Addr: []byte(st.RaftAddr)},
			Term:      before.Term + 1000,
		}, &out)
		require.Error(t, err, "an RPC in another node's name gets no answer")
		after := lead.Cluster().Raft()
		require.Equal(t, "Leader", after.State)
		require.Equal(t, before.Term, after.Term, "the leader keeps its term")
	})

	t.Run("fabric clients without a cluster certificate", func(t *testing.T) {
		paths, err := adaptive.ParseAddr(sc.nodes["n1"].FabricAddr())
		require.NoError(t, err)
		addr := paths[0].Addr
		n2, err := certs.Load(sc.certs, "n2")
		require.NoError(t, err)
		stranger, err := certs.Load(otherCA, "stranger-ca")
		require.NoError(t, err)
		noCert := certs.ClientConfig(n2, "n1")
		noCert.Certificates = nil
		otherCA := certs.ClientConfig(n2, "n1")
		otherCA.Certificates = nil // sent even though the server names only its CA as acceptable
		otherCA.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger.Cert, nil }
		for _, tc := range []struct {
			name   string
			client *tls.Config
			ok     bool
		}{
			{"a node of the cluster", certs.ClientConfig(n2, "n1"), true},
			{"no client certificate", noCert, false},
			{"a certificate of another CA", otherCA, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := tcp.DefaultConfig()
				cfg.ClientTLS = tc.client
				tr, err := tcp.New(cfg)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := tr.Dial(ctx, addr)
				if !tc.ok {
					require.Error(t, err, "the fabric let a client without a cluster certificate in")
					return
				}
				require.NoError(t, err)
				require.NoError(t, c.Close())
			})
		}
	})
}
