//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"

	"github.com/weftsearch/weft/fabric"
)

// listener accepts TCP control connections, runs the handshake on each and
// serves the resulting RC connections with its handler.
type listener struct {
	t  *Transport
	ln net.Listener
	h  fabric.Handler

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup
	once   sync.Once
}

var _ fabric.Listener = (*listener)(nil)

// Listen serves h on addr ("host:port"; port 0 picks one): the TCP control
// listener (TLS when Config.TLS is set; it needs a certificate then) is
// bound there and the RDMA traffic of each accepted connection
// goes over its own QP. The host should be the address of the netdev under
// the RDMA device, so its IPv4-mapped GID is used.
func (t *Transport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	if h == nil {
		return nil, fmt.Errorf("rdma: Listen on %s with a nil handler", addr)
	}
	if err := tlsServerReady(t.cfg.TLS); err != nil {
		return nil, fmt.Errorf("rdma: Listen on %s: %w", addr, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rdma: listening for control connections on %s: %w", addr, err)
	}
	l := &listener{t: t, ln: ln, h: h, conns: map[*conn]struct{}{}}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = ln.Close()
		return nil, fmt.Errorf("rdma: listen on %s: %w", addr, fabric.ErrClosed)
	}
	t.listeners[l] = struct{}{}
	t.mu.Unlock()
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

func (l *listener) accept() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.wg.Add(1)
		go l.serve(nc)
	}
}

// serve handshakes one control connection and owns the resulting conn until
// it fails, then tears it down.
func (l *listener) serve(nc net.Conn) {
	defer l.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tracked *conn
	track := func(c *conn) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return fmt.Errorf("rdma: listener %s closed: %w", l.Addr(), fabric.ErrClosed)
		}
		l.conns[c] = struct{}{}
		tracked = c
		return nil
	}
	peer := nc.RemoteAddr().String()
	if err := l.t.usable(); err != nil {
		_ = nc.Close()
		l.t.log.Warn("rdma: refused a connection", "peer", peer, "err", err)
		return
	}
	nc, err := l.t.secure(ctx, nc, false, peer)
	if err != nil {
		_ = nc.Close()
		l.t.log.Warn("rdma: refused a connection", "peer", peer, "err", err)
		return
	}
	c, err := l.t.handshake(ctx, nc, false, peer, l.h, track)
	if err != nil {
		_ = nc.Close()
		if tracked != nil {
			l.mu.Lock()
			delete(l.conns, tracked)
			l.mu.Unlock()
		}
		l.t.log.Warn("rdma: refused a connection", "peer", nc.RemoteAddr().String(), "err", err)
		return
	}
	<-c.ctx.Done() // the conn failed: peer gone, QP error or listener closing
	_ = c.Close()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// kill breaks every connection of the listener without goodbye, as if its
// process died: the control connections are reset and the QPs moved to
// ERR. Tests use it to simulate peer death.
func (l *listener) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.log.Debug("rdma: killing the connections of a listener", "addr", l.Addr(), "conns", len(l.conns))
	for c := range l.conns {
		raw := c.ctl
		if tc, ok := raw.(*tls.Conn); ok {
			raw = tc.NetConn()
		}
		if tc, ok := raw.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.fail("killed")
	}
}

// Addr implements fabric.Listener.
func (l *listener) Addr() string { return l.ln.Addr().String() }

// Close implements fabric.Listener: it stops accepting, fails every
// connection (the callers see ErrClosed when their control connection
// ends) and waits for the handlers to return. It is idempotent.
func (l *listener) Close() error {
	l.once.Do(func() {
		_ = l.ln.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.conns {
			c.fail("listener closed")
		}
		l.mu.Unlock()
		l.wg.Wait()
		l.t.mu.Lock()
		delete(l.t.listeners, l)
		l.t.mu.Unlock()
	})
	return nil
}

// Dial connects to an rdma listener at addr ("host:port"): it opens the TCP
// control connection, exchanges QP numbers, PSNs, GIDs and MTU, and returns
// a Conn ready for calls. ctx bounds the whole set-up.
func (t *Transport) Dial(ctx context.Context, addr string) (fabric.Conn, error) {
	if err := t.usable(); err != nil {
		return nil, fmt.Errorf("rdma: dial %s refused: %w", addr, err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rdma: dialling the control connection to %s: %w", addr, err)
	}
	if nc, err = t.secure(ctx, nc, true, addr); err != nil {
		_ = nc.Close()
		return nil, err
	}
	c, err := t.handshake(ctx, nc, true, addr, nil, nil)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

// secure runs the TLS handshake on a fresh control connection when
// Config.TLS is set (as client when dialed, else as server) and returns the
// connection to use from then on: nc itself without TLS. It completes
// before any QP exists, so a peer that fails authentication costs no verbs
// resources. It is bounded by ctx and Config.HandshakeTimeout; on error
// the caller closes the returned connection.
func (t *Transport) secure(ctx context.Context, nc net.Conn, dialed bool, peer string) (net.Conn, error) {
	cfg := t.cfg.TLS
	if cfg == nil {
		return nc, nil
	}
	var tc *tls.Conn
	if dialed {
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(peer)
		}
		tc = tls.Client(nc, cfg)
	} else {
		tc = tls.Server(nc, cfg)
	}
	hctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nc, fmt.Errorf("rdma: TLS handshake of the control connection with %s: %w", peer, err)
	}
	return tc, nil
}

// TLSConnectionState returns the TLS state of c's control connection, and
// false when it runs without TLS. Reach it through an interface assertion
// on the fabric.Conn that Dial returned.
func (c *conn) TLSConnectionState() (tls.ConnectionState, bool) {
	tc, ok := c.ctl.(*tls.Conn)
	if !ok {
		return tls.ConnectionState{}, false
	}
	return tc.ConnectionState(), true
}
