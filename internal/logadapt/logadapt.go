// Package logadapt routes the loggers of hashicorp/raft (hclog) and
// hashicorp/memberlist (*log.Logger) into a node's *slog.Logger, mapping
// their levels onto slog's, so that a node has one log with one format.
package logadapt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of hclog's Trace: below Debug.
const LevelTrace = slog.LevelDebug - 4

// Hclog returns an hclog.Logger that writes to l, with name as the
// "logger" attribute (sub-loggers append ".name"). Levels map to slog's
// (Trace to LevelTrace); which records are written is l's handler's
// choice, so SetLevel does nothing.
func Hclog(l *slog.Logger, name string) hclog.Logger {
	return &hcLogger{l: l, name: name}
}

type hcLogger struct {
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*hcLogger)(nil)

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	attrs := make([]any, 0, len(h.implied)+len(args)+2)
	if h.name != "" {
		attrs = append(attrs, "logger", h.name)
	}
	attrs = append(append(attrs, h.implied...), args...)
	for k, a := range attrs {
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			// hclog.Fmt: a format and its arguments, formatted when logged.
			if format, ok := f[0].(string); ok {
				attrs[k] = fmt.Sprintf(format, f[1:]...)
			}
		}
	}
	h.l.Log(context.Background(), slogLevel(level), msg, attrs...)
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled(level hclog.Level) bool {
	return h.l.Enabled(context.Background(), slogLevel(level))
}

func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []any { return h.implied }

func (h *hcLogger) With(args ...any) hclog.Logger {
	c := *h
	c.implied = append(append([]any(nil), h.implied...), args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hcLogger) SetLevel(hclog.Level) {}

func (h *hcLogger) GetLevel() hclog.Level {
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn} {
		if h.enabled(level) {
			return level
		}
	}
	return hclog.Error
}

func (h *hcLogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return Std(h.l, h.name)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &stdWriter{l: h.l, name: h.name}
}

// Std returns a *log.Logger (what memberlist takes) whose lines go to l:
// a line that starts with "[LEVEL]" (memberlist's and raft's habit: TRACE,
// DEBUG, INFO, WARN, ERR, ERROR) is logged at that level without the tag,
// any other at Info; name is the "logger" attribute.
func Std(l *slog.Logger, name string) *log.Logger {
	return log.New(&stdWriter{l: l, name: name}, "", 0)
}

type stdWriter struct {
	l    *slog.Logger
	name string
}

var tags = []struct {
	tag   string
	level slog.Level
}{
	{"[TRACE]", LevelTrace},
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

// Write logs each line of p as one record.
func (w *stdWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		msg := strings.TrimSpace(string(line))
		if msg == "" {
			continue
		}
		level := slog.LevelInfo
		for _, t := range tags {
			if rest, ok := strings.CutPrefix(msg, t.tag); ok {
				level, msg = t.level, strings.TrimSpace(rest)
				break
			}
		}
		if w.name != "" {
			w.l.Log(context.Background(), level, msg, "logger", w.name)
		} else {
			w.l.Log(context.Background(), level, msg)
		}
	}
	return len(p), nil
}
