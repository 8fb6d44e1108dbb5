package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSecureByDefault: searchnode started with only a data directory and an
// address serves HTTPS with a CA it made in its data directory, the key
// exchange is the post-quantum hybrid, and every request authenticates:
// the elastic user's password is the one it printed once at its first
// start.
func TestSecureByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the searchnode binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	data := filepath.Join(dir, "data")
	p := startProcArgs(t, bin, "--data-dir", data, "--http-addr", "127.0.0.1:0", "--node-name", "secure", "--log-level", "warn")
	require.True(t, strings.HasPrefix(p.url, "https://"), p.url)

	pem, err := os.ReadFile(filepath.Join(data, "certs", "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(user, password string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, p.url+"/_cluster/health", nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusUnauthorized, get("", "").StatusCode, "a request without credentials was served")
	require.Equal(t, http.StatusUnauthorized, get("elastic", "wrong-password").StatusCode)
	password := p.elasticPassword(t)
	resp := get("elastic", password)
	require.Equal(t, 200, resp.StatusCode)
	require.NotNil(t, resp.TLS)
	require.Equal(t, tls.X25519MLKEM768, resp.TLS.CurveID)
	require.Equal(t, uint16(tls.VersionTLS13), resp.TLS.Version)
}

// TestRunRefusesInsecureSetups: searchnode exits with the usage status and
// a message naming the flags when a setup would expose it.
func TestRunRefusesInsecureSetups(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"security off on all interfaces", []string{"--security=false", "--http-addr", "0.0.0.0:0"}, "--allow-insecure-network"},
		{"cluster node without certificates", []string{"--node-name", "n1", "--gossip-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0",
			"--fabric-addr", "127.0.0.1:0", "--initial-nodes", "n1,n2"}, "searchctl certs create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--data-dir", t.TempDir()}, tc.args...)
			code := run(args, func(string) string { return "" }, &stdout, &stderr)
			require.Equal(t, 2, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
			require.Empty(t, stdout.String())
		})
	}
}
