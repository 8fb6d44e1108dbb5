package main

import (
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/ctl"
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
		})
	}
}
