package testlog_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/testlog"
)

// recorder is a testing.TB that keeps what is logged to it and the cleanups
// registered on it, so a test can run them when it chooses.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	lines    []string
	cleanups []func()
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range args {
		r.lines = append(r.lines, a.(string))
	}
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// runCleanups runs the cleanups last-registered first, as testing does.
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name  string
		log   func(l *slog.Logger)
		level slog.Leveler // nil: New
		want  []string
	}{
		{name: "one record is one line without its newline", log: func(l *slog.Logger) { l.Info("hello", "k", 1) },
			want: []string{`level=INFO msg=hello k=1`}},
		{name: "New keeps debug records", log: func(l *slog.Logger) { l.Debug("fine") },
			want: []string{`level=DEBUG msg=fine`}},
		{name: "NewLevel drops records below its level", level: slog.LevelWarn,
			log:  func(l *slog.Logger) { l.Info("dropped"); l.Warn("kept") },
			want: []string{`level=WARN msg=kept`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			var l *slog.Logger
			if tc.level == nil {
				l = testlog.New(r)
			} else {
				l = testlog.NewLevel(r, tc.level)
			}
			tc.log(l)
			require.Len(t, r.lines, len(tc.want))
			for i, line := range r.lines {
				require.Contains(t, line, tc.want[i])
				require.NotContains(t, line, "\n")
			}
		})
	}
}

func TestLaterCleanupsStillLog(t *testing.T) {
	r := &recorder{TB: t}
	l := testlog.New(r)
	r.Cleanup(func() { l.Info("shutting down") }) // registered after New: runs first
	r.runCleanups()
	l.Info("after the test")
	require.Len(t, r.lines, 1)
	require.Contains(t, r.lines[0], "msg=\"shutting down\"")
}
