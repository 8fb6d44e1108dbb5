package main

import (
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/testlog"
)

// TestBinary builds searchctl and checks that the process exits with the
// codes internal/ctl documents, reading WEFT_ADDR from its environment.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "searchctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	// An address where nothing listens: a port that was free a moment ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	tests := []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{"help", []string{"--help"}, nil, ctl.ExitOK, "Exit codes: 0 ok"},
		{"usage error", []string{"search"}, nil, ctl.ExitUsage, "want INDEX and QUERY"},
		{"unreachable via flag", []string{"health", "--addr", dead}, nil, ctl.ExitUnreachable, "is searchnode running there?"},
		{"unreachable via WEFT_ADDR", []string{"health"}, []string{"WEFT_ADDR=" + dead}, ctl.ExitUnreachable, dead},
		{"help shows no password from the environment", []string{"--help"}, []string{"WEFT_PASSWORD=env-secret-pw", "WEFT_API_KEY=env-secret-key"}, ctl.ExitOK, "--api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(cmd.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.code, code, "%s", out)
			require.Contains(t, string(out), tt.want)
			require.NotContains(t, string(out), "env-secret")
		})
	}
}

// TestSSLCertFile: SSL_CERT_FILE still names the trusted roots, and
// --cacert adds to them rather than replacing them. It runs the binary,
// since Go reads SSL_CERT_FILE once per process.
func TestSSLCertFile(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "searchctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"cluster_name":"weft","status":"green","number_of_nodes":1}`)
	}))
	srv.Config.ErrorLog = slog.NewLogLogger(testlog.New(t).Handler(), slog.LevelWarn)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	serverCA := filepath.Join(dir, "server.pem")
	require.NoError(t, os.WriteFile(serverCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	// Another CA, which did not sign the server's certificate.
	out, err = exec.Command(bin, "certs", "create", "--out", filepath.Join(dir, "other"), "--nodes", "n1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	otherCA := filepath.Join(dir, "other", "ca.crt")
	emptyDir := t.TempDir()

	tests := []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{"untrusted", nil, nil, ctl.ExitUnreachable, "pass --cacert"},
		{"trusted through SSL_CERT_FILE", nil, []string{"SSL_CERT_FILE=" + serverCA}, ctl.ExitOK, "weft: green"},
		{"SSL_CERT_FILE stays trusted beside --cacert", []string{"--cacert", otherCA}, []string{"SSL_CERT_FILE=" + serverCA}, ctl.ExitOK, "weft: green"},
		{"--cacert of another CA alone", []string{"--cacert", otherCA}, nil, ctl.ExitUnreachable, "pass --cacert"},
		{"--cacert of the server's CA", []string{"--cacert", serverCA}, nil, ctl.ExitOK, "weft: green"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"--addr", srv.URL, "health"}, tt.args...)...)
			// An empty SSL_CERT_DIR keeps the machine's own roots out of it.
			cmd.Env = append(os.Environ(), append([]string{"SSL_CERT_FILE=" + filepath.Join(dir, "none.pem"), "SSL_CERT_DIR=" + emptyDir}, tt.env...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.code, code, "%s", out)
			require.Contains(t, string(out), tt.want)
		})
	}
}
