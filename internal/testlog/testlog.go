// Package testlog gives a test a *slog.Logger that writes to the test's own
// log (t.Log), so a passing test is quiet and a failing one shows what the
// code under test logged. It is for _test.go files only.
package testlog

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// New returns a text logger at slog.LevelDebug that writes each record to
// t.Log as one line. Call it from the test (or benchmark) that owns t, or
// from a goroutine that test waits for.
//
// New registers a cleanup on t that silences the logger; as cleanups run
// last-registered first, it runs after every cleanup registered later (a
// node's shutdown, say), whose log lines are kept. Records logged after it
// has run, by a goroutine that outlives the test, are dropped rather than
// panicking t.Log. The logger is safe for concurrent use.
func New(t testing.TB) *slog.Logger { return NewLevel(t, slog.LevelDebug) }

// NewLevel is New with records below level dropped, for tests whose code
// under test is too talkative at Debug.
func NewLevel(t testing.TB, level slog.Leveler) *slog.Logger {
	w := &writer{t: t}
	t.Cleanup(func() { w.done.Store(true) })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// writer passes each record's line to t.Log until done is set.
type writer struct {
	t    testing.TB
	done atomic.Bool
}

func (w *writer) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
