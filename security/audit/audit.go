// Package audit writes the security audit log: one JSON line per
// authentication failure and per denied request, and optionally per
// granted one (issue 17, item 6). The field names are those of
// Elasticsearch's audit log ("event.action", "user.name", ...) so its
// tooling reads Weft's.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Kind is an event's "event.action".
type Kind string

const (
	// AuthenticationFailed is a request whose credentials were missing,
	// malformed or refused.
	AuthenticationFailed Kind = "authentication_failed"
	// AccessDenied is an authenticated request refused by authorization.
	AccessDenied Kind = "access_denied"
	// AccessGranted is an authorized request; logged only when
	// Options.IncludeGranted is set.
	AccessGranted Kind = "access_granted"
)

// Event is one audited request. It has no field for credentials: a
// password, an API key secret or an Authorization header has nowhere to go.
type Event struct {
	Kind Kind
	// User and Realm name the principal (for a failed authentication,
	// the user name the request claimed, if any).
	User  string
	Realm string
	// APIKeyID is the key that authenticated (or was claimed).
	APIKeyID string
	// Action is the Elasticsearch action name, Indices the indices it
	// was checked on.
	Action  string
	Indices []string
	// RemoteAddress is the client's address (host:port).
	RemoteAddress string
	// RequestID ties the line to the request (X-Opaque-Id or one made
	// up by the node).
	RequestID string
	// Method and Path are the REST request's; the query string is never
	// logged.
	Method string
	Path   string
	// Reason is why access was refused, when known.
	Reason string
}

// line is the JSON form of an Event.
type line struct {
	Timestamp     string   `json:"@timestamp"`
	EventType     string   `json:"event.type"`
	EventAction   Kind     `json:"event.action"`
	UserName      string   `json:"user.name,omitempty"`
	UserRealm     string   `json:"user.realm,omitempty"`
	APIKeyID      string   `json:"apikey.id,omitempty"`
	Action        string   `json:"action,omitempty"`
	Indices       []string `json:"indices,omitempty"`
	OriginAddress string   `json:"origin.address,omitempty"`
	RequestID     string   `json:"request.id,omitempty"`
	Method        string   `json:"request.method,omitempty"`
	Path          string   `json:"url.path,omitempty"`
	Reason        string   `json:"reason,omitempty"`
}

// Options tune a Logger.
type Options struct {
	// IncludeGranted logs AccessGranted events too.
	IncludeGranted bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ErrClosed is returned by Log after Close.
var ErrClosed = errors.New("audit: the audit log is closed")

// Logger writes events as JSON lines. It is safe for concurrent use: each
// event is one Write of one whole line. A nil *Logger logs nothing, so
// callers need no check when auditing is off.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	opts   Options
	closed bool
}

// New returns a Logger writing to w; Close does not close w.
func New(w io.Writer, opts Options) *Logger {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Logger{w: w, opts: opts}
}

// Open returns a Logger appending to the file at path (--audit-log),
// created with mode 0600 if absent; the audit log names users and
// addresses, so only the node's user reads it. Close closes the file.
func Open(path string, opts Options) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: opening the audit log %s: %w; check --audit-log names a writable file", path, err)
	}
	l := New(f, opts)
	l.closer = f
	return l, nil
}

// Enabled reports whether events of kind would be written.
func (l *Logger) Enabled(kind Kind) bool {
	return l != nil && (kind != AccessGranted || l.opts.IncludeGranted)
}

// Log writes e, unless it is AccessGranted and those are not included.
// It returns the write's error; the caller logs it and goes on.
func (l *Logger) Log(e Event) error {
	if !l.Enabled(e.Kind) {
		return nil
	}
	b, err := json.Marshal(line{
		Timestamp: l.opts.Now().UTC().Format("2006-01-02T15:04:05.000Z"), EventType: "rest", EventAction: e.Kind,
		UserName: e.User, UserRealm: e.Realm, APIKeyID: e.APIKeyID, Action: e.Action, Indices: e.Indices,
		OriginAddress: e.RemoteAddress, RequestID: e.RequestID, Method: e.Method, Path: e.Path, Reason: e.Reason,
	})
	if err != nil {
		return fmt.Errorf("audit: encoding an event: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("audit: writing the audit log: %w", err)
	}
	return nil
}

// Close stops the Logger and closes the file Open opened. It is
// idempotent.
func (l *Logger) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.closer != nil {
		return l.closer.Close()
	}
	return nil
}
