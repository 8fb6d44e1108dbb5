package certs_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/security/certs"
)

// create writes a cluster of nodes into a fresh directory.
func create(t *testing.T, nodes ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, nodes, nil, nil)
	require.NoError(t, err)
	return dir
}

func load(t *testing.T, dir, node string) *certs.Bundle {
	t.Helper()
	b, err := certs.Load(dir, node)
	require.NoError(t, err)
	return b
}

func TestCreateClusterWritesFilesWithModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out, err := certs.CreateCluster(dir, []string{"n1", "n2"}, []net.IP{net.ParseIP("10.0.0.7")}, []string{"search.example.com"})
	require.NoError(t, err)
	want := map[string]fs.FileMode{
		"ca.crt": 0o644, "ca.key": 0o600, "n1.crt": 0o644, "n1.key": 0o600,
		"n2.crt": 0o644, "n2.key": 0o600, "gossip.key": 0o600,
	}
	require.Len(t, out.Files, len(want))
	for _, f := range out.Files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, want[filepath.Base(f)], fi.Mode().Perm(), f)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	blk, _ := pem.Decode(raw)
	sum := sha256.Sum256(blk.Bytes)
	require.Equal(t, hex.EncodeToString(sum[:]), out.Fingerprint)
	require.Regexp(t, `^[0-9a-f]{64}$`, out.Fingerprint)
}

func TestNodeCertificateNamesAndUsages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	_, err := certs.CreateCluster(dir, []string{"n1", "n2"}, []net.IP{net.ParseIP("10.0.0.7")}, []string{"search.example.com"})
	require.NoError(t, err)
	b := load(t, dir, "n2")
	leaf := b.Cert.Leaf
	require.Equal(t, "n2", leaf.Subject.CommonName)
	require.ElementsMatch(t, []string{"n2", "localhost", "search.example.com"}, leaf.DNSNames)
	require.Len(t, leaf.URIs, 1)
	require.Equal(t, "weft-node:n2", leaf.URIs[0].String())
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	require.ElementsMatch(t, []string{"127.0.0.1", "::1", "10.0.0.7"}, ips)
	require.ElementsMatch(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, leaf.ExtKeyUsage)
	require.False(t, leaf.IsCA)
	require.True(t, b.CA.IsCA)
	require.Len(t, b.GossipKey, certs.GossipKeySize)
	require.NotEqual(t, make([]byte, certs.GossipKeySize), b.GossipKey)
	for _, host := range []string{"n2", "localhost", "search.example.com", "127.0.0.1", "10.0.0.7"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: b.Pool, DNSName: host})
		require.NoError(t, err, host)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: b.Pool, DNSName: "n1"})
	require.Error(t, err, "n2's certificate must not pass for n1")
}

func TestCreateClusterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []string
		dns   []string
		want  error
	}{
		{"no nodes", nil, nil, certs.ErrBadNodeName},
		{"empty name", []string{""}, nil, certs.ErrBadNodeName},
		{"slash in name", []string{"../n1"}, nil, certs.ErrBadNodeName},
		{"space in name", []string{"n 1"}, nil, certs.ErrBadNodeName},
		{"leading dash", []string{"-n1"}, nil, certs.ErrBadNodeName},
		{"localhost", []string{"localhost"}, nil, certs.ErrBadNodeName},
		{"duplicate", []string{"n1", "N1"}, nil, certs.ErrBadNodeName},
		{"node name as extra DNS name", []string{"n1", "n2"}, []string{"n2"}, certs.ErrBadNodeName},
		{"empty DNS name", []string{"n1"}, []string{""}, certs.ErrBadNodeName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, err := certs.CreateCluster(dir, tc.nodes, nil, tc.dns)
			require.ErrorIs(t, err, tc.want)
			_, statErr := os.Stat(dir)
			require.ErrorIs(t, statErr, fs.ErrNotExist, "nothing is written")
		})
	}
}

func TestCreateClusterNeverOverwrites(t *testing.T) {
	dir := create(t, "n1")
	before, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	_, err = certs.CreateCluster(dir, []string{"n2"}, nil, nil)
	require.ErrorIs(t, err, certs.ErrExists)
	require.ErrorContains(t, err, filepath.Join(dir, "ca.crt"))
	after, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	require.Equal(t, before, after)
	_, err = os.Stat(filepath.Join(dir, "n2.key"))
	require.ErrorIs(t, err, fs.ErrNotExist, "nothing is written when one file exists")
}

func TestLoadRefusesKeyFilesOthersCanRead(t *testing.T) {
	for _, file := range []string{"n1.key", "gossip.key"} {
		for _, mode := range []fs.FileMode{0o640, 0o604, 0o644, 0o660, 0o700 | 0o007} {
			t.Run(file+"/"+mode.String(), func(t *testing.T) {
				dir := create(t, "n1")
				path := filepath.Join(dir, file)
				require.NoError(t, os.Chmod(path, mode))
				_, err := certs.Load(dir, "n1")
				require.ErrorIs(t, err, certs.ErrKeyPermissions)
				require.ErrorContains(t, err, path)
				require.ErrorContains(t, err, "0"+strconvOctal(mode))
				require.ErrorContains(t, err, "chmod 600 "+path)
			})
		}
	}
}

func strconvOctal(m fs.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

func TestLoadAcceptsOwnerOnlyModes(t *testing.T) {
	for _, mode := range []fs.FileMode{0o600, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := create(t, "n1")
			require.NoError(t, os.Chmod(filepath.Join(dir, "n1.key"), mode))
			b := load(t, dir, "n1")
			require.Equal(t, "n1", b.Node)
		})
	}
}

func TestLoadRefusesFilesThatDoNotBelongTogether(t *testing.T) {
	for _, tc := range []struct {
		name string
		mess func(t *testing.T, dir, other string)
	}{
		{"certificate of another CA", func(t *testing.T, dir, other string) {
			copyFile(t, filepath.Join(other, "n1.crt"), filepath.Join(dir, "n1.crt"))
			copyFile(t, filepath.Join(other, "n1.key"), filepath.Join(dir, "n1.key"))
		}},
		{"key of another certificate", func(t *testing.T, dir, other string) {
			copyFile(t, filepath.Join(other, "n1.key"), filepath.Join(dir, "n1.key"))
		}},
		{"certificate of another node", func(t *testing.T, dir, _ string) {
			copyFile(t, filepath.Join(dir, "n2.crt"), filepath.Join(dir, "n1.crt"))
			copyFile(t, filepath.Join(dir, "n2.key"), filepath.Join(dir, "n1.key"))
		}},
		{"short gossip key", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "gossip.key"), []byte("c2hvcnQ=\n"), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, other := create(t, "n1", "n2"), create(t, "n1")
			tc.mess(t, dir, other)
			_, err := certs.Load(dir, "n1")
			require.ErrorIs(t, err, certs.ErrInvalid)
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	fi, err := os.Stat(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, fi.Mode().Perm()))
}

func TestAutoConfigureCreatesOnceAndReuses(t *testing.T) {
	data := t.TempDir()
	first, err := certs.AutoConfigure(data, "solo", nil, nil)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(data, certs.AutoDir), first.Dir)
	require.NotEmpty(t, first.Files)
	for _, f := range first.Files {
		require.FileExists(t, f)
		require.Equal(t, first.Dir, filepath.Dir(f))
	}
	_, err = os.Stat(filepath.Join(data, certs.AutoDir+".new"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the scratch directory is gone")
	b := load(t, first.Dir, "solo")
	require.Equal(t, first.Fingerprint, b.Fingerprint())

	second, err := certs.AutoConfigure(data, "solo", nil, nil)
	require.NoError(t, err)
	require.Empty(t, second.Files, "a later start writes nothing")
	require.Equal(t, first.Fingerprint, second.Fingerprint)
	require.Equal(t, b.Cert.Leaf.Raw, load(t, second.Dir, "solo").Cert.Leaf.Raw)
}

func TestAutoConfigureIssuesForARenamedNode(t *testing.T) {
	data := t.TempDir()
	first, err := certs.AutoConfigure(data, "old", nil, nil)
	require.NoError(t, err)
	renamed, err := certs.AutoConfigure(data, "new", nil, nil)
	require.NoError(t, err)
	require.Equal(t, first.Fingerprint, renamed.Fingerprint, "same CA")
	require.ElementsMatch(t, []string{filepath.Join(first.Dir, "new.key"), filepath.Join(first.Dir, "new.crt")}, renamed.Files)
	require.Equal(t, "new", load(t, renamed.Dir, "new").Cert.Leaf.Subject.CommonName)
}

func TestAutoConfigureRefusesALooseCAKey(t *testing.T) {
	data := t.TempDir()
	first, err := certs.AutoConfigure(data, "old", nil, nil)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(first.Dir, "ca.key"), 0o644))
	_, err = certs.AutoConfigure(data, "new", nil, nil)
	require.ErrorIs(t, err, certs.ErrKeyPermissions)
}

func TestLoadKeyPairChecksTheKeyMode(t *testing.T) {
	dir := create(t, "web")
	crt, key := filepath.Join(dir, "web.crt"), filepath.Join(dir, "web.key")
	pair, err := certs.LoadKeyPair(crt, key)
	require.NoError(t, err)
	require.Equal(t, "web", pair.Leaf.Subject.CommonName)

	require.NoError(t, os.Chmod(key, 0o644))
	_, err = certs.LoadKeyPair(crt, key)
	require.ErrorIs(t, err, certs.ErrKeyPermissions)
	require.ErrorContains(t, err, "chmod 600 "+key)
}

func TestGossipKeyIsAMemberlistSecretKey(t *testing.T) {
	b := load(t, create(t, "n1"), "n1")
	ring, err := memberlist.NewKeyring(nil, b.GossipKey)
	require.NoError(t, err)
	require.Equal(t, b.GossipKey, ring.GetPrimaryKey())
}
