package logadapt

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
)

// capture returns a logger at level min and a function that decodes what
// it wrote, one map per record.
func capture(t *testing.T, min slog.Level) (*slog.Logger, func() []map[string]any) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: min}))
	return l, func() []map[string]any {
		var out []map[string]any
		for line := range bytes.Lines(buf.Bytes()) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(line, &m))
			delete(m, "time")
			out = append(out, m)
		}
		buf.Reset()
		return out
	}
}

func TestHclogLevels(t *testing.T) {
	tests := []struct {
		name  string
		log   func(hclog.Logger)
		level string
	}{
		{"trace", func(l hclog.Logger) { l.Trace("m", "k", 1) }, "DEBUG-4"},
		{"debug", func(l hclog.Logger) { l.Debug("m", "k", 1) }, "DEBUG"},
		{"info", func(l hclog.Logger) { l.Info("m", "k", 1) }, "INFO"},
		{"warn", func(l hclog.Logger) { l.Warn("m", "k", 1) }, "WARN"},
		{"error", func(l hclog.Logger) { l.Error("m", "k", 1) }, "ERROR"},
		{"log at a level", func(l hclog.Logger) { l.Log(hclog.Warn, "m", "k", 1) }, "WARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, records := capture(t, LevelTrace)
			tc.log(Hclog(l, "raft"))
			require.Equal(t, []map[string]any{{"level": tc.level, "msg": "m", "logger": "raft", "k": float64(1)}}, records())
		})
	}
}

func TestHclogNamesAndImpliedArgs(t *testing.T) {
	l, records := capture(t, slog.LevelInfo)
	h := Hclog(l, "raft").Named("net").With("peer", "p1")
	h.Info("hello", "n", 2)
	require.Equal(t, []map[string]any{{"level": "INFO", "msg": "hello", "logger": "raft.net", "peer": "p1", "n": float64(2)}}, records())
	require.Equal(t, "raft.net", h.Name())
	require.Equal(t, "other", h.ResetNamed("other").Name())
	require.Equal(t, []any{"peer", "p1"}, h.ImpliedArgs())
}

func TestHclogFollowsTheHandlersLevel(t *testing.T) {
	l, records := capture(t, slog.LevelWarn)
	h := Hclog(l, "")
	h.Info("dropped")
	h.Log(hclog.Off, "dropped too")
	h.Warn("kept")
	require.Equal(t, []map[string]any{{"level": "WARN", "msg": "kept"}}, records())
	require.False(t, h.IsInfo())
	require.True(t, h.IsWarn())
	require.Equal(t, hclog.Warn, h.GetLevel())
}

func TestStdLevels(t *testing.T) {
	tests := []struct {
		name, line, level, msg string
	}{
		{"debug", "[DEBUG] memberlist: Stream connection from=1.2.3.4", "DEBUG", "memberlist: Stream connection from=1.2.3.4"},
		{"info", "[INFO] memberlist: joined", "INFO", "memberlist: joined"},
		{"warn", "[WARN] memberlist: refused", "WARN", "memberlist: refused"},
		{"err", "[ERR] memberlist: failed", "ERROR", "memberlist: failed"},
		{"error", "[ERROR] raft: failed", "ERROR", "raft: failed"},
		{"trace", "[TRACE] x", "DEBUG-4", "x"},
		{"untagged", "plain words", "INFO", "plain words"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, records := capture(t, LevelTrace)
			Std(l, "memberlist").Println(tc.line)
			require.Equal(t, []map[string]any{{"level": tc.level, "msg": tc.msg, "logger": "memberlist"}}, records())
		})
	}
}

func TestStdWritesOneRecordPerLine(t *testing.T) {
	l, records := capture(t, slog.LevelDebug)
	_, err := Hclog(l, "").StandardWriter(nil).Write([]byte("[WARN] a\n\n[DEBUG] b\n"))
	require.NoError(t, err)
	require.Equal(t, []map[string]any{{"level": "WARN", "msg": "a"}, {"level": "DEBUG", "msg": "b"}}, records())
}

// TestHclogFormatsFmtValues: a value made with hclog.Fmt (as Raft logs its
// configuration) is formatted, not printed as a format and its arguments.
func TestHclogFormatsFmtValues(t *testing.T) {
	l, records := capture(t, slog.LevelInfo)
	Hclog(l, "raft").Info("initial configuration", "servers", hclog.Fmt("%+v", []int{1, 2}))
	require.Equal(t, []map[string]any{{"level": "INFO", "msg": "initial configuration", "logger": "raft", "servers": "[1 2]"}}, records())
}
