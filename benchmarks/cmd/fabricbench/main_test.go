package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

// The test binary runs the command itself when this variable is set, so
// the two-host test starts real fabricbench processes without a build step.
const mainEnv = "WEFT_FABRICBENCH_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

var connectArg = regexp.MustCompile(`-connect '([^']+)'`)

// TestTwoProcesses runs -serve in one process and -connect in another over
// loopback sockets: the serving process prints the -connect argument, the
// measuring one gets rows for tcp and adaptive from it, and the server stops
// cleanly on SIGINT.
func TestTwoProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	srv := command(ctx, "-serve", "-transports", "tcp,adaptive", "-tcp-addr", "127.0.0.1:0",
		"-adaptive-paths", "tcp:127.0.0.1:0,tcp:127.0.0.2:0")
	out, err := srv.StdoutPipe()
	require.NoError(t, err)
	// A file, not a buffer: it is read while the process may still write.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "serve.stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	srv.Stderr = stderr
	serveErr := func() string { b, _ := os.ReadFile(stderr.Name()); return string(b) }
	require.NoError(t, srv.Start())
	defer func() { _ = srv.Process.Kill() }() // a no-op once it has exited

	var spec string
	var printed strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if m := connectArg.FindStringSubmatch(sc.Text()); m != nil {
			spec = m[1]
			break
		}
	}
	require.NotEmpty(t, spec, "serve printed no -connect argument; stdout:\n%s\nstderr:\n%s", printed.String(), serveErr())
	t.Logf("serve printed:\n%s", printed.String())
	eps, err := fabricbench.ParseEndpoints(spec)
	require.NoError(t, err)
	require.Len(t, eps, 2)
	require.Empty(t, fabricbench.Unspecified(eps))

	cl := command(ctx, "-connect", spec, "-json", "-sizes", "64,64KiB", "-inflight", "1,4", "-duration", "20ms")
	var clErr bytes.Buffer
	cl.Stderr = &clErr
	lines, err := cl.Output()
	require.NoError(t, err, "connect side: %s", clErr.String())
	rs, err := fabricbench.ReadJSON(bytes.NewReader(lines))
	require.NoError(t, err)
	require.Len(t, rs, 8)
	seen := make(map[string]int)
	for _, r := range rs {
		require.Empty(t, r.Error, r.Transport)
		require.GreaterOrEqual(t, r.Calls, 2*r.InFlight, r.Transport)
		require.Positive(t, r.RTTP50ns, r.Transport)
		seen[r.Transport]++
	}
	require.Equal(t, map[string]int{"tcp": 4, "adaptive": 4}, seen)

	require.NoError(t, srv.Process.Signal(syscall.SIGINT))
	rest, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, srv.Wait(), "serve side: %s", serveErr())
	require.Contains(t, string(rest), "fabricbench: served for")
}

// TestBadFlags checks that wrong mode flags fail with a message saying what
// is wrong, before anything is served or measured.
func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"serve and connect", []string{"-serve", "-connect", "tcp=127.0.0.1:1"}, "exclude each other"},
		{"connect and from", []string{"-connect", "tcp=127.0.0.1:1", "-from", "x.jsonl"}, "exclude each other"},
		{"connect without =", []string{"-connect", "tcp127.0.0.1:1"}, "is not transport=address"},
		{"serve unknown", []string{"-serve", "-transports", "udp"}, `serve: unknown transport "udp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			msg, err := command(ctx, tt.args...).CombinedOutput()
			require.Error(t, err)
			require.Contains(t, string(msg), tt.want)
			require.True(t, strings.HasPrefix(string(msg), "fabricbench: "), "%s", msg)
		})
	}
}
