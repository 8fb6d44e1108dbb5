package nodeproc

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWaitHTTPReportsAnEarlyExitWithTheLog(t *testing.T) {
	p, err := Start("/bin/sh", filepath.Join(t.TempDir(), "log"), nil, "-c", "echo boom >&2; exit 3")
	require.NoError(t, err)
	err = p.WaitHTTP(context.Background(), "http://127.0.0.1:1/", 30*time.Second)
	require.ErrorContains(t, err, "exited")
	require.ErrorContains(t, err, "boom")
	require.True(t, p.Exited())
	require.ErrorContains(t, p.Stop(), "exit status 3")
}

func TestStopWaitsForACleanExit(t *testing.T) {
	p, err := Start("/bin/sh", filepath.Join(t.TempDir(), "log"), nil, "-c", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(p.Tail(), "ready") }, 10*time.Second, 10*time.Millisecond, "the shell set its trap")
	require.False(t, p.Exited())
	require.NoError(t, p.Stop())
	require.True(t, p.Exited())
	require.Contains(t, p.Tail(), "bye")
}
