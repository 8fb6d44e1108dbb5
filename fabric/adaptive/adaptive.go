// Package adaptive is the fabric transport that holds several paths to one
// peer (TCP over two local addresses today; RDMA and TCP next) and sends
// each message on the path that is currently faster for its size, stripes
// large messages over all healthy paths in proportion to their measured
// bandwidth, takes failed paths out and re-sends their in-flight calls on
// another path without losing a call or running one twice, and re-probes
// failed paths until they return.
//
// # Addresses
//
// A peer is named by its path list: comma-separated "transport:address"
// entries, e.g. "tcp:127.0.0.1:7000,tcp:127.0.0.2:7001" or
// "rdma:10.0.0.2:7100,tcp:10.0.0.2:7000". Listen takes the same form (port 0
// picks one per path) and listens on every path with one logical handler;
// its Addr is the list with real ports, which is what peers dial.
//
// # Exactly once
//
// Every call carries (session, request id) in a small envelope; the server
// keeps, per session, each call until the client's watermark says the client
// is done with it: a re-sent call that already ran gets the cached reply; a
// re-sent call still running joins it. The handler's context is detached
// from any one path: it ends when the caller cancels (an explicit cancel
// message), when the session says goodbye, when the listener closes, or when
// no path has carried the call for Config.ResendGrace. One-way messages
// (Conn.Send) are delivered at most once and are not re-sent.
//
// Memory: a finished call's reply stays on the server until every lower
// request id of the session has finished too (the watermark), or until the
// session has been idle for Config.SessionTTL; one long call holds back the
// replies of the calls after it.
//
// # Plain peers
//
// Messages other than MethodEnvelope pass straight to the handler, so a
// peer with only one of the path transports can dial that path directly.
//
// # Ordering
//
// Conn.Send's rule (messages from one goroutine reach the handler in order)
// holds across paths: before a message goes on a path other than the one
// earlier one-way messages took, that path is fenced with a MethodPing,
// which the dispatcher answers only after those messages entered their
// handler.
package adaptive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// Config tunes path choice, striping and recovery. Zero fields take
// DefaultConfig's values.
type Config struct {
	// Logger gets path failures and recoveries; nil discards.
	Logger *slog.Logger
	// MaxMessageSize is the largest payload a Call or Send accepts
	// (fabric.ErrTooLarge above); striped calls may exceed what one path
	// accepts in a frame. It cannot exceed fabric.MaxMessageSize.
	MaxMessageSize int
	// StripeThreshold: calls whose request is at least this long may be
	// striped over every healthy path (see Stripe); replies at least this
	// long to calls that are not sent whole on one path come back striped.
	StripeThreshold int
	// Stripe says when calls at or above StripeThreshold are striped:
	// StripeAuto measures both ways per size bucket and takes the faster
	// (with the same margin as path switches), StripeAlways and StripeNever
	// force it.
	Stripe StripeMode
	// ChunkSize is the stripe chunk per transport name ("tcp", "rdma",
	// "mem"); transports not named use DefaultChunkSize.
	ChunkSize        map[string]int
	DefaultChunkSize int
	// StripeWindow is how many chunks are in flight per path at once.
	StripeWindow int
	// SwitchMargin and SwitchAfter are the hysteresis: a size bucket moves
	// to another path only when that path's estimate is better by
	// SwitchMargin (a fraction) for SwitchAfter samples in a row.
	SwitchMargin float64
	SwitchAfter  int
	// EWMAAlpha weighs each new measurement of a path's striping
	// bandwidth. (Round trips are not averaged: a bucket's estimate is the
	// median of its latest 48, which one stall does not move.)
	EWMAAlpha float64
	// ExploreInterval: a path not chosen for a bucket is sent one live call
	// of that bucket this often (less often while it stays clearly worse),
	// so its estimate stays fresh. Negative disables it.
	ExploreInterval time.Duration
	// DialTimeout bounds dialling and probing one path.
	DialTimeout time.Duration
	// ReprobeMin and ReprobeMax bound the backoff between re-probes of a
	// failed path.
	ReprobeMin, ReprobeMax time.Duration
	// ResendGrace is how long the server keeps a call running after every
	// path that carried it broke, waiting for the re-send to join it.
	ResendGrace time.Duration
	// SessionTTL: server state of a client not heard from for this long is
	// dropped.
	SessionTTL time.Duration
	// Pin, when it names a transport whose path to the peer is healthy,
	// sends every call and ping whole on that path: no striping, no
	// exploring. nil (production) or "" leaves the choice adaptive. See Pin.
	Pin *Pin
}

// StripeMode is Config.Stripe.
type StripeMode int

// Striping modes.
const (
	StripeAuto StripeMode = iota
	StripeAlways
	StripeNever
)

// DefaultConfig returns production settings.
func DefaultConfig() Config {
	return Config{
		MaxMessageSize:   fabric.MaxMessageSize,
		StripeThreshold:  4 << 20,
		ChunkSize:        map[string]int{"tcp": 1 << 20, "rdma": 4 << 20},
		DefaultChunkSize: 1 << 20,
		StripeWindow:     2,
		SwitchMargin:     0.2,
		SwitchAfter:      8,
		EWMAAlpha:        0.2,
		ExploreInterval:  250 * time.Millisecond,
		DialTimeout:      5 * time.Second,
		ReprobeMin:       50 * time.Millisecond,
		ReprobeMax:       5 * time.Second,
		ResendGrace:      2 * time.Second,
		SessionTTL:       2 * time.Minute,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = d.MaxMessageSize
	}
	if c.StripeThreshold == 0 {
		c.StripeThreshold = d.StripeThreshold
	}
	if c.ChunkSize == nil {
		c.ChunkSize = d.ChunkSize
	}
	if c.DefaultChunkSize == 0 {
		c.DefaultChunkSize = d.DefaultChunkSize
	}
	if c.StripeWindow == 0 {
		c.StripeWindow = d.StripeWindow
	}
	if c.SwitchMargin == 0 {
		c.SwitchMargin = d.SwitchMargin
	}
	if c.SwitchAfter == 0 {
		c.SwitchAfter = d.SwitchAfter
	}
	if c.ExploreInterval == 0 {
		c.ExploreInterval = d.ExploreInterval
	}
	if c.EWMAAlpha == 0 {
		c.EWMAAlpha = d.EWMAAlpha
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.ReprobeMin == 0 {
		c.ReprobeMin = d.ReprobeMin
	}
	if c.ReprobeMax == 0 {
		c.ReprobeMax = d.ReprobeMax
	}
	if c.ResendGrace == 0 {
		c.ResendGrace = d.ResendGrace
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = d.SessionTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	switch {
	case c.MaxMessageSize < 1 || c.MaxMessageSize > fabric.MaxMessageSize:
		return fmt.Errorf("adaptive: Config.MaxMessageSize %d is outside [1, %d]", c.MaxMessageSize, fabric.MaxMessageSize)
	case c.StripeThreshold < 1<<10 || c.StripeThreshold > fabric.MaxMessageSize:
		return fmt.Errorf("adaptive: Config.StripeThreshold %d is outside [1024, %d]", c.StripeThreshold, fabric.MaxMessageSize)
	case c.Stripe < StripeAuto || c.Stripe > StripeNever:
		return fmt.Errorf("adaptive: Config.Stripe %d is not StripeAuto, StripeAlways or StripeNever", c.Stripe)
	case c.DefaultChunkSize < 4<<10 || c.DefaultChunkSize > 64<<20:
		return fmt.Errorf("adaptive: Config.DefaultChunkSize %d is outside [4096, %d]", c.DefaultChunkSize, 64<<20)
	case c.StripeWindow < 1 || c.StripeWindow > 64:
		return fmt.Errorf("adaptive: Config.StripeWindow %d is outside [1, 64]", c.StripeWindow)
	case c.SwitchMargin < 0 || c.SwitchMargin >= 1:
		return fmt.Errorf("adaptive: Config.SwitchMargin %v is outside [0, 1)", c.SwitchMargin)
	case c.SwitchAfter < 1:
		return fmt.Errorf("adaptive: Config.SwitchAfter %d must be at least 1", c.SwitchAfter)
	case c.EWMAAlpha <= 0 || c.EWMAAlpha > 1:
		return fmt.Errorf("adaptive: Config.EWMAAlpha %v is outside (0, 1]", c.EWMAAlpha)
	case c.ReprobeMin <= 0 || c.ReprobeMax < c.ReprobeMin:
		return fmt.Errorf("adaptive: Config.ReprobeMin %v and ReprobeMax %v must satisfy 0 < min <= max", c.ReprobeMin, c.ReprobeMax)
	case c.DialTimeout <= 0 || c.ResendGrace <= 0 || c.SessionTTL <= 0:
		return fmt.Errorf("adaptive: Config.DialTimeout %v, ResendGrace %v and SessionTTL %v must be positive",
			c.DialTimeout, c.ResendGrace, c.SessionTTL)
	}
	for name, n := range c.ChunkSize {
		if n < 4<<10 || n > 64<<20 {
			return fmt.Errorf("adaptive: Config.ChunkSize[%q] %d is outside [4096, %d]", name, n, 64<<20)
		}
	}
	return nil
}

func (c Config) chunkFor(transport string) int {
	if n, ok := c.ChunkSize[transport]; ok {
		return n
	}
	return c.DefaultChunkSize
}

// Transport is the adaptive transport. It is safe for concurrent use.
type Transport struct {
	cfg  Config
	trs  map[string]fabric.Transport
	bufs bufPool
}

var _ fabric.Transport = (*Transport)(nil)

// New returns an adaptive transport over the given path transports, which
// must have distinct names (they are looked up by the "transport:" prefix
// of each path address).
func New(cfg Config, transports ...fabric.Transport) (*Transport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(transports) == 0 {
		return nil, errors.New("adaptive: New needs at least one path transport")
	}
	trs := make(map[string]fabric.Transport, len(transports))
	for _, tr := range transports {
		if _, dup := trs[tr.Name()]; dup {
			return nil, fmt.Errorf("adaptive: two transports named %q; each path transport needs its own name", tr.Name())
		}
		trs[tr.Name()] = tr
	}
	return &Transport{cfg: cfg, trs: trs}, nil
}

// Name returns "adaptive".
func (t *Transport) Name() string { return "adaptive" }

// PathAddr is one entry of a path list.
type PathAddr struct {
	Transport string
	Addr      string
}

func (p PathAddr) String() string { return p.Transport + ":" + p.Addr }

// ErrBadAddress is returned for a path list that cannot be parsed.
var ErrBadAddress = errors.New("adaptive: bad path list")

// ParseAddr splits "tcp:127.0.0.1:7000,tcp:127.0.0.2:7001" into its paths.
func ParseAddr(s string) ([]PathAddr, error) {
	var out []PathAddr
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		name, addr, ok := strings.Cut(f, ":")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("%w %q: entry %q is not transport:address (e.g. tcp:127.0.0.1:7000)", ErrBadAddress, s, f)
		}
		out = append(out, PathAddr{Transport: name, Addr: addr})
	}
	return out, nil
}

// FormatAddr joins paths into a path list.
func FormatAddr(ps []PathAddr) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

func (t *Transport) lookup(addr string) ([]PathAddr, []fabric.Transport, error) {
	ps, err := ParseAddr(addr)
	if err != nil {
		return nil, nil, err
	}
	trs := make([]fabric.Transport, len(ps))
	for i, p := range ps {
		tr, ok := t.trs[p.Transport]
		if !ok {
			return nil, nil, fmt.Errorf("%w %q: no transport %q was given to adaptive.New: %w", ErrBadAddress, addr, p.Transport, fabric.ErrNotSupported)
		}
		trs[i] = tr
	}
	return ps, trs, nil
}

// Listen listens on every path of addr and serves h on all of them as one
// handler. It fails, closing what it opened, if any path cannot listen.
func (t *Transport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	ps, trs, err := t.lookup(addr)
	if err != nil {
		return nil, err
	}
	s := newServer(t.cfg, &t.bufs, h)
	l := &listener{srv: s}
	for i, p := range ps {
		ln, err := trs[i].Listen(ctx, p.Addr, s)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("adaptive: listen on path %s: %w", p, err)
		}
		l.lns = append(l.lns, ln)
		l.addrs = append(l.addrs, PathAddr{Transport: p.Transport, Addr: ln.Addr()})
	}
	return l, nil
}

type listener struct {
	srv   *server
	lns   []fabric.Listener
	addrs []PathAddr
	once  sync.Once
	err   error
}

func (l *listener) Addr() string { return FormatAddr(l.addrs) }

// Paths returns each path's listener, for tests that break one path.
func (l *listener) Paths() []fabric.Listener { return l.lns }

// Close ends every running handler's context, closes every path's
// listener (each waits for its handlers) and stops the server's sweeper.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.srv.close()
		var errs []error
		for _, ln := range l.lns {
			errs = append(errs, ln.Close())
		}
		l.srv.wait()
		l.err = errors.Join(errs...)
	})
	return l.err
}

// PathListeners exposes the per-path listeners of an adaptive listener.
type PathListeners interface {
	Paths() []fabric.Listener
}

var _ PathListeners = (*listener)(nil)
