package httpapi

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limit.
//
// A LimitedListener holds at most max connections open. Over the limit it
// refuses a new connection at once — accepts it and closes it with a reset
// — rather than leaving it unaccepted as golang.org/x/net/netutil's
// LimitListener does. Left unaccepted, a connection sits complete in the
// kernel's accept queue: the client sees it connected, sends its request
// and waits for a reply until its own timeout, and once the queue is full
// further clients' handshakes are dropped and retried for seconds. Refused,
// the client learns within a round trip that this node is full and can
// retry another node of the cluster (the Elasticsearch clients move on to
// the next node on a connection error). A refused connection costs one
// accept and one close; nothing is read from it or allocated for it.

// refusalLogEvery is how often at most a listener logs that it refuses
// connections: a flood of refusals must not become a flood of log lines.
const refusalLogEvery = time.Minute

// LimitedListener is a net.Listener that holds at most a fixed number of
// connections open; see LimitListener.
type LimitedListener struct {
	net.Listener
	max int64
	log *slog.Logger

	open    atomic.Int64
	refused atomic.Uint64
	// lastLog is when a refusal was last logged (UnixNano; 0: never), and
	// loggedRefused the refused count then.
	lastLog       atomic.Int64
	loggedRefused atomic.Uint64
}

// LimitListener wraps l so that at most max of its connections are open at
// once (max ≥ 1). A connection counts from its accept until its Close
// (closing it more than once counts once), TLS handshake included when a
// tls.Listener wraps the result. Accept refuses a connection over the limit
// (closes it with a TCP reset) and waits for the next one, so it returns
// only connections within the limit, or l's error. Refusals are counted
// (Refused) and logged at most once a minute, with the count.
func LimitListener(l net.Listener, max int, log *slog.Logger) *LimitedListener {
	return &LimitedListener{Listener: l, max: int64(max), log: log}
}

// Accept returns the next connection within the limit.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

// refuse closes c at once, with a reset where it can so that the client's
// next read or write fails rather than waiting, and no TIME_WAIT is left on
// this side.
func (l *LimitedListener) refuse(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if last != 0 && time.Duration(now-last) < refusalLogEvery || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	since := n - l.loggedRefused.Swap(n)
	l.log.Warn("httpapi: refusing HTTP connections: the node holds its maximum of open connections; raise --http-max-connections (WEFT_HTTP_MAX_CONNECTIONS) if the clients are legitimate",
		"max_connections", l.max, "refused", since, "refused_total", n)
}

// Open is the number of connections open now.
func (l *LimitedListener) Open() int64 { return l.open.Load() }

// Refused is the number of connections refused since the listener was made.
func (l *LimitedListener) Refused() uint64 { return l.refused.Load() }

// limitedConn gives back its place under the limit when it is closed.
type limitedConn struct {
	net.Conn
	l    *LimitedListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// CloseWrite half-closes the connection when the underlying one can (net/http
// uses it to close a connection without a reset).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
