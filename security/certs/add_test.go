package certs_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/security/certs"
)

// fileState is a file's contents and mode.
type fileState struct {
	data []byte
	mode fs.FileMode
}

// snapshot is every file of dir with its contents and mode.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := make(map[string]fileState, len(entries))
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		fi, err := os.Stat(p)
		require.NoError(t, err)
		out[e.Name()] = fileState{data, fi.Mode().Perm()}
	}
	return out
}

func TestAddNodesIssuesFromTheExistingCA(t *testing.T) {
	dir := create(t, "n1", "n2")
	before := snapshot(t, dir)
	out, err := certs.AddNodes(dir, []string{"n4", "n5"}, []net.IP{net.ParseIP("10.0.0.4")}, []string{"search.example.com"}, false)
	require.NoError(t, err)
	require.Empty(t, out.Replaced)
	want := map[string]fs.FileMode{"n4.key": 0o600, "n4.crt": 0o644, "n5.key": 0o600, "n5.crt": 0o644}
	require.Len(t, out.Files, len(want))
	for _, f := range out.Files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, want[filepath.Base(f)], fi.Mode().Perm(), f)
	}

	n1 := load(t, dir, "n1")
	require.Equal(t, n1.Fingerprint(), out.Fingerprint)
	n4 := load(t, dir, "n4") // Load verifies it against ca.crt and its name
	leaf := n4.Cert.Leaf
	require.Equal(t, []string{"weft-node:n4"}, []string{leaf.URIs[0].String()})
	require.Len(t, leaf.URIs, 1)
	require.ElementsMatch(t, []string{"n4", "localhost", "search.example.com"}, leaf.DNSNames)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: n1.Pool, DNSName: "n4", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "the existing nodes' CA accepts the new certificate")
	_, err = leaf.Verify(x509.VerifyOptions{Roots: n1.Pool, DNSName: "n1"})
	require.Error(t, err, "n4's certificate must not pass for n1")

	after := snapshot(t, dir)
	for name, st := range before {
		require.Equal(t, st, after[name], "%s must not be touched", name)
	}
	require.Len(t, after, len(before)+len(want))
}

func TestAddNodesRefusesAnExistingNodeWithoutForce(t *testing.T) {
	dir := create(t, "n1", "n2")
	before := snapshot(t, dir)
	_, err := certs.AddNodes(dir, []string{"n4", "n2"}, nil, nil, false)
	require.ErrorIs(t, err, certs.ErrExists)
	require.ErrorContains(t, err, `node "n2"`)
	require.ErrorContains(t, err, "--force")
	require.Equal(t, before, snapshot(t, dir), "nothing is written, n4's files neither")

	// A key without its certificate counts as the node's too.
	require.NoError(t, os.Remove(filepath.Join(dir, "n2.crt")))
	_, err = certs.AddNodes(dir, []string{"n2"}, nil, nil, false)
	require.ErrorIs(t, err, certs.ErrExists)
}

func TestAddNodesForceRotatesOneNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, []string{"n1", "n2"}, []net.IP{net.ParseIP("10.0.0.2")}, []string{"search.example.com"})
	require.NoError(t, err)
	old := load(t, dir, "n2")
	before := snapshot(t, dir)

	out, err := certs.AddNodes(dir, []string{"n2"}, []net.IP{net.ParseIP("10.0.0.22")}, nil, true)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{filepath.Join(dir, "n2.key"), filepath.Join(dir, "n2.crt")}, out.Replaced)

	rotated := load(t, dir, "n2")
	require.NotEqual(t, old.Cert.Leaf.Raw, rotated.Cert.Leaf.Raw)
	require.NotEqual(t, before["n2.key"].data, snapshot(t, dir)["n2.key"].data, "a new key, not only a new certificate")
	require.Equal(t, old.Fingerprint(), rotated.Fingerprint(), "same CA")
	require.ElementsMatch(t, []string{"n2", "localhost", "search.example.com"}, rotated.Cert.Leaf.DNSNames, "the old names are kept")
	var ips []string
	for _, ip := range rotated.Cert.Leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	require.ElementsMatch(t, []string{"127.0.0.1", "::1", "10.0.0.2", "10.0.0.22"}, ips)

	after := snapshot(t, dir)
	require.Equal(t, fs.FileMode(0o600), after["n2.key"].mode)
	require.Equal(t, fs.FileMode(0o644), after["n2.crt"].mode)
	for name, st := range before {
		if name != "n2.key" && name != "n2.crt" {
			require.Equal(t, st, after[name], "%s must not be touched", name)
		}
	}
	require.Len(t, after, len(before), "no scratch file is left")
}

func TestAddNodesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		nodes []string
		dns   []string
		want  error
		says  string
	}{
		{"bad node name", nil, []string{"../n4"}, nil, certs.ErrBadNodeName, ""},
		{"no CA certificate", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "ca.crt")))
		}, []string{"n4"}, nil, certs.ErrNoCA, "ca.crt"},
		{"no CA key", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "ca.key")))
		}, []string{"n4"}, nil, certs.ErrNoCA, "ca.key"},
		{"CA key others can read", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "ca.key"), 0o644))
		}, []string{"n4"}, nil, certs.ErrKeyPermissions, "chmod 600"},
		{"CA key of another CA", func(t *testing.T, dir string) {
			other := create(t, "x")
			copyFile(t, filepath.Join(other, "ca.key"), filepath.Join(dir, "ca.key"))
		}, []string{"n4"}, nil, certs.ErrInvalid, "is not the key of"},
		{"expired CA", func(t *testing.T, dir string) {
			resignCA(t, dir, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
		}, []string{"n4"}, nil, certs.ErrInvalid, "expired"},
		{"name differing in case from a node's", nil, []string{"N1"}, nil, certs.ErrBadNodeName, "differs only in case"},
		{"extra DNS name naming an existing node", nil, []string{"n4"}, []string{"N2"}, certs.ErrBadNodeName, `node "n2"`},
		{"new node named as another's extra DNS name", nil, []string{"web"}, nil, certs.ErrBadNodeName, "n1.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			_, err := certs.CreateCluster(dir, []string{"n1", "n2"}, nil, []string{"web"})
			require.NoError(t, err)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := snapshot(t, dir)
			_, err = certs.AddNodes(dir, tc.nodes, nil, tc.dns, true)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.says)
			require.Equal(t, before, snapshot(t, dir), "nothing is written")
		})
	}
}

func TestAddNodesCertificateEndsWithItsCA(t *testing.T) {
	dir := create(t, "n1")
	caEnd := time.Now().Add(24 * time.Hour).Truncate(time.Second).UTC()
	resignCA(t, dir, time.Now().Add(-48*time.Hour), caEnd)
	_, err := certs.AddNodes(dir, []string{"n4"}, nil, nil, false)
	require.NoError(t, err)
	require.Equal(t, caEnd, load(t, dir, "n4").Cert.Leaf.NotAfter)
}

// resignCA replaces dir's CA certificate by one with the same key and
// subject, valid from notBefore to notAfter, so that the node certificates
// it signed still verify.
func resignCA(t *testing.T, dir string, notBefore, notAfter time.Time) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	blk, _ := pem.Decode(raw)
	ca, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	raw, err = os.ReadFile(filepath.Join(dir, "ca.key"))
	require.NoError(t, err)
	blk, _ = pem.Decode(raw)
	key, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	require.NoError(t, err)
	tmpl := *ca
	tmpl.NotBefore, tmpl.NotAfter = notBefore, notAfter
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, ca.PublicKey, key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
}

// A node added later talks to the nodes created with the CA, both ways,
// with the configurations the fabric uses (ServerConfig, and ClientConfig
// with the dialled node's name as ServerName, as fabric/tcp sets it); a
// node added from another CA is refused by both.
func TestAddedNodeHandshakesWithCreatedNodes(t *testing.T) {
	dir, stranger := create(t, "n1", "n2"), create(t, "x1")
	_, err := certs.AddNodes(dir, []string{"n4"}, nil, nil, false)
	require.NoError(t, err)
	_, err = certs.AddNodes(stranger, []string{"n4"}, nil, nil, false)
	require.NoError(t, err)
	n1, n4, strangerN4 := load(t, dir, "n1"), load(t, dir, "n4"), load(t, stranger, "n4")
	dialling := func(b *certs.Bundle, server string) *tls.Config {
		c := certs.ClientConfig(b, "")
		c.ServerName = server
		return c
	}
	for _, tc := range []struct {
		name       string
		server     *certs.Bundle
		client     *tls.Config
		serverSees string // "" when the handshake must fail
		clientSees string
	}{
		{"added dials created", n1, dialling(n4, "n1"), "n4", "n1"},
		{"created dials added", n4, dialling(n1, "n4"), "n1", "n4"},
		{"created dials added, node named in ClientConfig", n4, certs.ClientConfig(n1, "n4"), "n1", "n4"},
		{"added from another CA dials created", n1, func() *tls.Config {
			c := dialling(strangerN4, "n1")
			c.RootCAs = n1.Pool // it trusts this cluster; only the server's check can refuse it
			return c
		}(), "", ""},
		{"created dials one added from another CA", strangerN4, dialling(n1, "n4"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serr, cerr, scs, ccs := handshake(t, certs.ServerConfig(tc.server, nil), tc.client)
			if tc.serverSees == "" {
				require.Error(t, serr, "the server must not complete the handshake")
				return
			}
			require.NoError(t, serr)
			require.NoError(t, cerr)
			got, err := certs.PeerNode(scs)
			require.NoError(t, err)
			require.Equal(t, tc.serverSees, got)
			got, err = certs.PeerNode(ccs)
			require.NoError(t, err)
			require.Equal(t, tc.clientSees, got)
			require.Equal(t, tls.X25519MLKEM768, ccs.CurveID)
		})
	}
}
