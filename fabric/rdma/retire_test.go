//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

// A closed connection's QP, attached to the shared receive queue, is not
// destroyed until the device raises IBV_EVENT_QP_LAST_WQE_REACHED for it
// (it takes no more receive buffers), or, when the event never comes, until
// Config.LastWQETimeout has passed, with a warning; the connection's Close
// does not wait for either. rxe on the guest's Linux 6.1 never raises the
// event, so "event" hands it to the transport as the event reader does
// (unless the device raised it first); the QP, its move to ERR and its
// destruction are real.
func TestClosedConnQPWaitsForLastWQE(t *testing.T) {
	env := rdmaEnv(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		event   bool
	}{
		{"destroyed when the event arrives", 4 * time.Minute, true},
		{"destroyed after LastWQETimeout with a warning", 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			logs := &logRecorder{t: t}
			client, _, c, ctx := echoPair(t, env, func(c *Config) { c.LastWQETimeout = tc.timeout }, slog.New(logs))
			_, err := c.Call(ctx, fabric.MethodUserBase, make([]byte, 100<<10)) // eager and rendezvous traffic through the SRQ
			require.NoError(t, err)
			qpn := c.(*conn).qpn

			require.NoError(t, c.Close())
			if !tc.event {
				require.Eventually(t, func() bool {
					_, waiting := client.retiredQPState(qpn)
					return !waiting && client.Info().LastWQETimeouts == 1 && logs.has(slog.LevelWarn, "IBV_EVENT_QP_LAST_WQE_REACHED did not arrive")
				}, 30*time.Second, 10*time.Millisecond, "QP %d was never destroyed, counted and warned about after LastWQETimeout", qpn)
				return
			}
			state, waiting := client.retiredQPState(qpn)
			if !waiting {
				require.Positive(t, client.lastWQEEvents.Load(), "QP %d of the closed connection was destroyed before IBV_EVENT_QP_LAST_WQE_REACHED", qpn)
				t.Logf("the device raised IBV_EVENT_QP_LAST_WQE_REACHED for QP %d itself", qpn)
				return
			}
			require.Equal(t, "ERR", state, "QP %d waits in the error state", qpn)
			require.Equal(t, 1, client.Info().QPsAwaitingLastWQE)
			client.onEvent(evLastWQE, qpn, 0)
			_, waiting = client.retiredQPState(qpn)
			require.False(t, waiting, "QP %d still waits after its IBV_EVENT_QP_LAST_WQE_REACHED", qpn)
			info := client.Info()
			require.Zero(t, info.QPsAwaitingLastWQE)
			require.Zero(t, info.LastWQETimeouts)
			require.False(t, logs.has(slog.LevelWarn, "IBV_EVENT_QP_LAST_WQE_REACHED did not arrive"))
		})
	}
}

// logRecorder is a slog.Handler that keeps every record's level and
// message and passes the text on to t.Log.
type logRecorder struct {
	t    testing.TB
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	l.t.Log(r.Level.String() + " " + r.Message + b.String())
	return nil
}

// has reports whether a record of level lvl whose message contains msg was logged.
func (l *logRecorder) has(lvl slog.Level, msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Level == lvl && strings.Contains(r.Message, msg) {
			return true
		}
	}
	return false
}
