package httpapi

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Reply coalescing.
//
// net/http writes a response through a 4 KiB buffer per connection, which
// http.Server does not let anyone size: a reply larger than that (a search
// answer with ten hits' _source is 10–20 kB) reaches the socket in two or
// more write system calls — the buffer's first 4 KiB holding the headers,
// then the rest — and the client's read wakes up for each segment. On
// loopback that cost about 15 µs per search, more than the encoding of the
// reply. A connection accepted through CoalescingListener can instead
// collect the writes of one reply and pass them to the socket as a single
// write; writeJSON does so for every reply it sends (status line, headers
// and body, as net/http formats them: nothing about the reply changes).
// Connections from any other listener, or servers without ConnContext, send
// replies as net/http does.

// CoalescingListener wraps l so that its connections can send a reply in
// one write (see ConnContext). Everything else about the connections is
// l's; Close and Addr are l's.
func CoalescingListener(l net.Listener) net.Listener { return coalescingListener{l} }

// ConnContext is the http.Server ConnContext hook that makes a connection
// from CoalescingListener available to the API's handlers. Set it on the
// server that serves such a listener; other connections pass through
// unchanged.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*coalescingConn); ok {
		return context.WithValue(ctx, coalescingConnKey{}, cc)
	}
	return ctx
}

type coalescingConnKey struct{}

type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &coalescingConn{Conn: c}, nil
}

// Replies longer than maxCoalescedReply are written as net/http does: the
// extra system call is a small share of sending them, and the copy is not.
// Replies of at most minCoalescedReply bytes fit the response's own 2 KiB
// buffer and go out in one write anyway (when the handler returns).
const (
	minCoalescedReply = 2 << 10
	maxCoalescedReply = 256 << 10
)

// heldPool holds the buffers of replies being collected.
var heldPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// coalescingConn is a server connection that can hold back its writes while
// a handler writes one reply, and send them as one write when it is done.
// Only the goroutine serving the connection (net/http's, which runs the
// handler) writes to it; mu guards against anything else that might.
type coalescingConn struct {
	net.Conn
	mu   sync.Mutex
	held *[]byte // non-nil between hold and release
}

// Write sends p, or while holding appends it to the held reply (the
// caller's p may be reused once Write returns, as net/http's buffer is).
func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.held != nil {
		*c.held = append(*c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// CloseWrite half-closes the connection when the underlying one can (net/http
// uses it to close a connection without a reset).
func (c *coalescingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// hold starts collecting writes for a reply of about n bytes.
func (c *coalescingConn) hold(n int) {
	b := heldPool.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, 0, n)
	}
	c.mu.Lock()
	c.held = b
	c.mu.Unlock()
}

// release sends what was collected since hold in one write. If that write
// fails the connection is closed: the reply is lost, and net/http, which
// saw its writes succeed, must not serve another request on it.
func (c *coalescingConn) release() error {
	c.mu.Lock()
	b := c.held
	c.held = nil
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	var err error
	if len(*b) > 0 {
		if _, err = c.Conn.Write(*b); err != nil {
			_ = c.Conn.Close()
		}
	}
	if cap(*b) <= maxCoalescedReply+minCoalescedReply {
		*b = (*b)[:0]
		heldPool.Put(b)
	}
	return err
}

// writeReply writes body, a complete reply whose headers (with its
// Content-Length) are set and whose status is written, to w: in one write
// to the socket when the request came through CoalescingListener and the
// body is of a size where that helps, else as net/http writes.
func writeReply(w http.ResponseWriter, r *http.Request, body []byte) {
	cc, _ := r.Context().Value(coalescingConnKey{}).(*coalescingConn)
	if cc == nil || len(body) <= minCoalescedReply || len(body) > maxCoalescedReply {
		_, _ = w.Write(body)
		return
	}
	cc.hold(len(body) + 1024) // room for the status line and headers
	defer func() { _ = cc.release() }()
	if _, err := w.Write(body); err != nil {
		return
	}
	// Push what net/http still buffers (the body's tail, or all of it)
	// into the held reply; the handler returning would flush it too, but
	// only after release.
	_ = http.NewResponseController(w).Flush()
}
