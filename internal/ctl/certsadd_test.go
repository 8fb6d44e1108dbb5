package ctl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/tcp"
	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/security/certs"
)

// createDir runs certs create for nodes into a fresh directory.
func createDir(t *testing.T, nodes string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "certs")
	r := searchctl(t, "", "certs", "create", "--out", out, "--nodes", nodes)
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	return out
}

// contents maps every file of dir to its bytes.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(data)
	}
	return out
}

func TestCertsAdd(t *testing.T) {
	dir := createDir(t, "n1,n2,n3")
	before := contents(t, dir)
	r := searchctl(t, "", "certs", "add", "--certs", dir, "--nodes", "n4,n5", "--ip", "10.1.2.4", "--dns", "search.example.com")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote 4 files in "+dir)
	require.Regexp(t, `(?m)^  0600  n4\.key$`, r.stdout)
	require.Regexp(t, `(?m)^  0644  n4\.crt$`, r.stdout)
	require.Regexp(t, `(?m)^  0600  n5\.key$`, r.stdout)
	require.Contains(t, r.stdout, "node n4 needs ca.crt, gossip.key, n4.crt and n4.key")

	n1, err := certs.Load(dir, "n1")
	require.NoError(t, err)
	require.Contains(t, r.stdout, "CA certificate SHA-256 fingerprint: "+n1.Fingerprint())
	for _, n := range []string{"n4", "n5"} {
		b, err := certs.Load(dir, n) // verifies against ca.crt and the name
		require.NoError(t, err)
		require.Equal(t, "weft-node:"+n, b.Cert.Leaf.URIs[0].String())
		require.Contains(t, b.Cert.Leaf.DNSNames, "search.example.com")
		require.Equal(t, "10.1.2.4", b.Cert.Leaf.IPAddresses[len(b.Cert.Leaf.IPAddresses)-1].String())
	}
	after := contents(t, dir)
	for name, data := range before {
		require.Equal(t, data, after[name], "%s must not be touched", name)
	}
}

func TestCertsAddRefusesAnExistingNodeUnlessForced(t *testing.T) {
	dir := createDir(t, "n1,n2")
	before := contents(t, dir)
	r := searchctl(t, "", "certs", "add", "--certs", dir, "--nodes", "n2")
	require.Equal(t, ctl.ExitUsage, r.code, r.stdout)
	require.Contains(t, r.stderr, `node "n2" has a certificate`)
	require.Contains(t, r.stderr, "--force")
	require.Equal(t, before, contents(t, dir))

	r = searchctl(t, "", "certs", "add", "--certs", dir, "--nodes", "n2", "--force", "-o", "json")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	var rep struct {
		Files    []string `json:"files"`
		Replaced []string `json:"replaced"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	want := []string{filepath.Join(dir, "n2.key"), filepath.Join(dir, "n2.crt")}
	require.ElementsMatch(t, want, rep.Files)
	require.ElementsMatch(t, want, rep.Replaced)
	after := contents(t, dir)
	require.NotEqual(t, before["n2.crt"], after["n2.crt"])
	require.NotEqual(t, before["n2.key"], after["n2.key"])
	for _, f := range []string{"ca.crt", "ca.key", "gossip.key", "n1.crt", "n1.key"} {
		require.Equal(t, before[f], after[f], f)
	}
	_, err := certs.Load(dir, "n2")
	require.NoError(t, err)
}

func TestCertsAddUsageErrors(t *testing.T) {
	dir := createDir(t, "n1")
	before := contents(t, dir)
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --certs", []string{"--nodes", "n4"}, "--certs"},
		{"no --nodes", []string{"--certs", dir}, "--nodes"},
		{"bad IP", []string{"--certs", dir, "--nodes", "n4", "--ip", "10.1.2"}, `"10.1.2" is not an IP`},
		{"bad node name", []string{"--certs", dir, "--nodes", "../n4"}, "invalid node name"},
		{"--dns naming an existing node", []string{"--certs", dir, "--nodes", "n4", "--dns", "n1"}, `is the name of node "n1"`},
		{"directory without a CA", []string{"--certs", empty, "--nodes", "n4"}, "no cluster CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := searchctl(t, "", append([]string{"certs", "add"}, tc.args...)...)
			require.Equal(t, ctl.ExitUsage, r.code, r.stdout)
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout)
		})
	}
	require.Equal(t, before, contents(t, dir), "nothing is written")
}

// peerEcho answers every fabric request with the peer's name and counts
// the requests that reached it.
type peerEcho struct{ calls atomic.Int64 }

func (h *peerEcho) ServeFabric(_ context.Context, req *fabric.Request) ([]byte, error) {
	h.calls.Add(1)
	return []byte(req.Peer), nil
}

// fabricNode is a fabric/tcp configuration with b's mutual TLS, set up as
// node/security.go sets it; a dial expects the node expect.
func fabricNode(t *testing.T, b *certs.Bundle, expect string) tcp.Config {
	cfg := tcp.DefaultConfig()
	cfg.Logger = testlog.New(t)
	cfg.ServerTLS = certs.ServerConfig(b, nil)
	cfg.ClientTLS = certs.ClientConfig(b, "")
	cfg.TLSServerName = func(string) string { return expect }
	cfg.PeerIdentity = certs.PeerNode
	return cfg
}

// fabricCall serves a peerEcho as server over fabric/tcp on loopback,
// makes one call from client, and returns the reply, how many requests
// reached the handler and the call's error.
func fabricCall(t *testing.T, server, client tcp.Config) (string, int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := tcp.New(server)
	require.NoError(t, err)
	ctr, err := tcp.New(client)
	require.NoError(t, err)
	h := &peerEcho{}
	ln, err := str.Listen(ctx, "127.0.0.1:0", h)
	require.NoError(t, err)
	var reply []byte
	c, err := ctr.Dial(ctx, ln.Addr())
	if err == nil {
		reply, err = c.Call(ctx, fabric.MethodUserBase, []byte("hello"))
		require.NoError(t, c.Close())
	}
	require.NoError(t, ln.Close()) // waits for every handler
	return string(reply), h.calls.Load(), err
}

// A node whose certificate certs add issued talks to a node of certs
// create over the fabric's mutual TLS, both ways; one issued by certs add
// from another cluster's CA gets no request through.
func TestCertsAddNodeTalksOverTheFabric(t *testing.T) {
	dir, stranger := createDir(t, "n1,n2"), createDir(t, "x1")
	for _, d := range []string{dir, stranger} {
		r := searchctl(t, "", "certs", "add", "--certs", d, "--nodes", "n4")
		require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	}
	load := func(dir, node string) *certs.Bundle {
		b, err := certs.Load(dir, node)
		require.NoError(t, err)
		return b
	}
	n1, n4, strangerN4 := load(dir, "n1"), load(dir, "n4"), load(stranger, "n4")

	reply, calls, err := fabricCall(t, fabricNode(t, n1, ""), fabricNode(t, n4, "n1"))
	require.NoError(t, err)
	require.Equal(t, int64(1), calls)
	require.Regexp(t, `^n4@127\.0\.0\.1:\d+$`, reply, "n1 sees the added node's verified name")

	reply, calls, err = fabricCall(t, fabricNode(t, n4, ""), fabricNode(t, n1, "n4"))
	require.NoError(t, err)
	require.Equal(t, int64(1), calls)
	require.Regexp(t, `^n1@`, reply, "the added node sees n1's verified name")

	intruder := fabricNode(t, strangerN4, "n1")
	intruder.ClientTLS.RootCAs = n1.Pool // it trusts this cluster; only n1's check can refuse it
	_, calls, err = fabricCall(t, fabricNode(t, n1, ""), intruder)
	require.Error(t, err)
	require.Zero(t, calls, "no request from another CA's node reaches a handler")
}
