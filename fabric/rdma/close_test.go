//go:build linux && cgo && rdma

package rdma

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Close returns even when the event reader (and with it the poller) never
// stops, leaving it the device rather than hanging the node's shutdown.
// No device: a transport whose event reader never ends is plain Go.
func TestCloseDoesNotWaitForeverForAStuckEventReader(t *testing.T) {
	defer func(l time.Duration) { closeLimit = l }(closeLimit)
	closeLimit = 200 * time.Millisecond
	tr := newTransport(TestConfig(), slog.New(slog.DiscardHandler)) // its event reader never runs
	closed := make(chan struct{})
	go func() {
		_ = tr.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits forever for an event reader that never stops")
	}
	require.True(t, tr.stop.Load(), "the event reader was told to stop")
}
