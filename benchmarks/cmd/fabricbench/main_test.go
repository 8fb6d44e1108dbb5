package main

import (
	"bufio"
	"bytes"
	"cmp"
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
	"github.com/weftsearch/weft/fabric/rdma"
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
// real sockets: the serving process prints the -connect argument, the
// measuring one gets rows for every served transport from it, and the
// server stops cleanly on SIGINT. The rdma case needs an RDMA device and
// WEFT_RDMA_ADDR (an IPv4 address of its netdev), as fabric/rdma's tests do:
// it skips without them, except in the Soft-RoCE guest (WEFT_RDMA_GUEST=1),
// where it fails.
func TestTwoProcesses(t *testing.T) {
	rdmaAddr := os.Getenv("WEFT_RDMA_ADDR")
	tests := []struct {
		name  string
		rdma  bool
		serve []string
	}{
		{"tcp and adaptive on loopback", false, []string{"-transports", "tcp,adaptive", "-tcp-addr", "127.0.0.1:0",
			"-adaptive-paths", "tcp:127.0.0.1:0,tcp:127.0.0.2:0"}},
		{"rdma", true, []string{"-transports", "tcp,rdma,adaptive", "-tcp-addr", rdmaAddr + ":0", "-rdma-addr", rdmaAddr + ":0",
			"-adaptive-paths", "rdma:" + rdmaAddr + ":0,tcp:" + rdmaAddr + ":0",
			"-rdma-device", os.Getenv("WEFT_RDMA_DEVICE"), "-rdma-gid-index", cmp.Or(os.Getenv("WEFT_RDMA_GID_INDEX"), "-1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rdma && (!rdma.Available || rdmaAddr == "") {
				require.NotEqual(t, "1", os.Getenv("WEFT_RDMA_GUEST"), "in the Soft-RoCE guest: rdma.Available=%v, WEFT_RDMA_ADDR=%q", rdma.Available, rdmaAddr)
				t.Skipf("needs an RDMA build (-tags rdma) and WEFT_RDMA_ADDR; rdma.Available=%v, WEFT_RDMA_ADDR=%q", rdma.Available, rdmaAddr)
			}
			twoProcesses(t, tt.serve)
		})
	}
}

func twoProcesses(t *testing.T, serveArgs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := command(ctx, append([]string{"-serve"}, serveArgs...)...)
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
	require.Empty(t, fabricbench.Unspecified(eps))

	// The measuring side gets the same RDMA flags (device, GID index).
	args := []string{"-connect", spec, "-json", "-sizes", "64,64KiB", "-inflight", "1,4", "-duration", "20ms"}
	for i, a := range serveArgs {
		if a == "-rdma-device" || a == "-rdma-gid-index" {
			args = append(args, a, serveArgs[i+1])
		}
	}
	cl := command(ctx, args...)
	clErr, err := os.Create(filepath.Join(t.TempDir(), "connect.stderr"))
	require.NoError(t, err)
	defer clErr.Close()
	cl.Stderr = clErr
	lines, err := cl.Output()
	if err != nil {
		b, _ := os.ReadFile(clErr.Name())
		require.NoError(t, err, "connect side: %s", b)
	}
	rs, err := fabricbench.ReadJSON(bytes.NewReader(lines))
	require.NoError(t, err)
	require.Len(t, rs, 4*len(eps))
	seen := make(map[string]int)
	for _, r := range rs {
		require.Empty(t, r.Error, r.Transport)
		require.GreaterOrEqual(t, r.Calls, 2*r.InFlight, r.Transport)
		require.Positive(t, r.RTTP50ns, r.Transport)
		seen[r.Transport]++
	}
	want := make(map[string]int)
	for _, e := range eps {
		want[e.Transport] = 4
	}
	require.Equal(t, want, seen)

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
		{"zero peers", []string{"-peers", "0"}, `-peers "0": want positive integers`},
		{"fan-out with connect", []string{"-connect", "tcp=127.0.0.1:1", "-peers", "1,8"}, "-peers 1,8 needs the servers in this process"},
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

// TestProfiles runs a short measurement with the three profile flags and
// checks that each file is a pprof profile (gzipped protocol buffer) and
// that the table says what processors it ran with.
func TestProfiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	out, err := command(ctx, "-transports", "tcp", "-sizes", "64", "-inflight", "4", "-duration", "50ms",
		"-cpuprofile", filepath.Join(dir, "cpu"), "-mutexprofile", filepath.Join(dir, "mutex"),
		"-blockprofile", filepath.Join(dir, "block")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `machine: GOMAXPROCS \d+, \d+ CPUs \(1 points\)`, string(out))
	for _, name := range []string{"cpu", "mutex", "block"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, []byte{0x1f, 0x8b}), "%s profile is not gzipped pprof data", name)
	}
}
