package ctl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/security/certs"
)

func TestCertsCreate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "certs")
	r := searchctl(t, "", "certs", "create", "--out", out, "--nodes", "n1,n2,n3", "--ip", "10.1.2.3", "--dns", "search.example.com")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote 9 files in "+out)
	require.Regexp(t, `(?m)^  0600  n2\.key$`, r.stdout)
	require.Regexp(t, `(?m)^  0644  n2\.crt$`, r.stdout)
	require.Regexp(t, `(?m)^  0600  gossip\.key$`, r.stdout)
	m := regexp.MustCompile(`CA certificate SHA-256 fingerprint: ([0-9a-f]{64})`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	for _, n := range []string{"n1", "n2", "n3"} {
		b, err := certs.Load(out, n)
		require.NoError(t, err)
		require.Equal(t, m[1], b.Fingerprint())
		require.Contains(t, b.Cert.Leaf.DNSNames, "search.example.com")
		require.Equal(t, "10.1.2.3", b.Cert.Leaf.IPAddresses[len(b.Cert.Leaf.IPAddresses)-1].String())
	}
}

func TestCertsCreateJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "certs")
	r := searchctl(t, "", "certs", "create", "--out", out, "--nodes", "solo", "-o", "json")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	var rep struct {
		Dir           string   `json:"dir"`
		Files         []string `json:"files"`
		CAFingerprint string   `json:"ca_fingerprint"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Equal(t, out, rep.Dir)
	require.Len(t, rep.Files, 5)
	b, err := certs.Load(out, "solo")
	require.NoError(t, err)
	require.Equal(t, b.Fingerprint(), rep.CAFingerprint)
}

func TestCertsCreateUsageErrors(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(existing, []string{"n1"}, nil, nil)
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(existing, "n1.key"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"--nodes", "n1"}, "--out"},
		{"no --nodes", []string{"--out", "DIR"}, "--nodes"},
		{"bad IP", []string{"--out", "DIR", "--nodes", "n1", "--ip", "10.1.2"}, `"10.1.2" is not an IP`},
		{"bad node name", []string{"--out", "DIR", "--nodes", "n1,../n2"}, "invalid node name"},
		{"node name as --dns", []string{"--out", "DIR", "--nodes", "n1", "--dns", "n1"}, "both a node name and an extra DNS name"},
		{"files exist", []string{"--out", existing, "--nodes", "n1"}, "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			args := []string{"certs", "create"}
			for _, a := range tc.args {
				if a == "DIR" {
					a = dir
				}
				args = append(args, a)
			}
			r := searchctl(t, "", args...)
			require.Equal(t, ctl.ExitUsage, r.code, r.stdout)
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout)
		})
	}
	after, err := os.ReadFile(filepath.Join(existing, "n1.key"))
	require.NoError(t, err)
	require.Equal(t, before, after, "an existing key is never overwritten")
}
