// Package tcp is Weft's fabric transport over TCP (optionally TLS): a
// framed, versioned protocol that multiplexes concurrent calls over a few
// sockets per peer (lanes.go).
//
// # Wire format
//
// Every frame is a 24-byte header followed by its payload (big-endian):
//
//	offset size field
//	0      2    magic   0x5746 ("WF")
//	2      1    version 1
//	3      1    type    1 hello, 2 request, 3 one-way, 4 reply, 5 error,
//	                    6 done, 7 cancel, 8 ping, 9 pong
//	4      1    flags   bit 0: the CRC field is set
//	5      1    reserved, 0
//	6      2    method  (request and one-way frames)
//	8      8    request id, chosen by the caller, unique per connection
//	16     4    payload length (at most the receiver's advertised limit)
//	20     4    CRC32C (Castagnoli) of header bytes 0–19 and the payload
//
// A connection opens with a hello each way (client first), method and id
// 0, whose 12-byte payload carries the sender's maximum payload size
// (uint32, 1 to fabric.MaxMessageSize), its in-flight window (uint32, 1 to
// 65536), an options byte (bit 0: it wants checksums; other bits 0) and
// three reserved bytes (0); a hello with any field out of range is
// refused. The smaller window applies, and each side sends the other no
// more than the other's limit. Then the client sends
// request, one-way and cancel frames; the server answers each request with
// a reply or an error (code uint16, then the message) and each one-way
// message with done once its handler returned, which frees the window slot.
// Either side sends ping when idle and answers ping with pong. A decoder
// error (bad magic, version, type, flags, length or CRC) closes the
// connection: framing cannot be trusted afterwards.
//
// # Limits on what a peer makes this side hold
//
// An accepted connection checks a request's declared length before it
// allocates anything: above MaxMessageSize the connection is closed;
// within it, the length is reserved against Config.ConnInFlightBytes, and
// the payload is read into buffers that grow as its bytes arrive, each
// charged to the transport-wide Config.InFlightBytes before it is taken.
// When either budget is spent the connection stops reading (back-pressure)
// instead of being closed; a wait for InFlightBytes is bounded by
// Config.StallTimeout, which also bounds how long a begun frame may go
// unfinished. Peers disconnected for a bad or oversized frame, a stall or
// an exhausted budget are logged as warnings with their address.
//
// # Performance
//
// A Call writes its frame from the calling goroutine when nobody else is
// writing (header and payload in one writev, no copy); while a write is in
// progress, other frames queue and one writer goroutine drains the queue
// into a single writev, coalescing small frames. A caller that finds nobody
// reading the socket reads its reply itself (other calls' replies on the
// way are handed to them), and the server serves a quick handler on the
// goroutine that read its request, so a lone call costs no goroutine
// hand-off, hence no wake-up of another thread, at either end. Each socket
// is read through a 64 KiB buffer, so one read system call usually brings
// in a frame's header and payload together. A request whose payload is the
// last thing buffered and whose handler runs on the reader goroutine is
// lent that buffer, no copy; other requests are copied into pooled
// buffers. A reply that the read buffer holds whole is copied into the new
// slice handed to the caller as that slice is allocated (no zeroing pass).
// TCP_NODELAY is on. Concurrent calls are spread over up to one socket
// per processor (Config.Lanes), so that they are read, served and written
// side by side rather than through one socket's single reader and writer;
// calls with large requests go over extra sockets of their own
// (Config.BulkSockets), so that several large transfers move through the
// kernel side by side and small calls do not wait behind them.
package tcp

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// Transport dials and listens over TCP. It holds no goroutines or sockets
// itself; listeners and connections own theirs. Safe for concurrent use.
type Transport struct {
	cfg Config
	log *slog.Logger
	// mem is Config.InFlightBytes: what the request buffers of every
	// accepted connection hold, whatever listener accepted it.
	mem *budget
}

var _ fabric.Transport = (*Transport)(nil)

// New returns a transport with cfg, or cfg's Validate error.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Transport{cfg: cfg, log: log, mem: newBudget(cfg.InFlightBytes)}, nil
}

// Name returns "tcp".
func (t *Transport) Name() string { return "tcp" }

// Listen serves h on addr ("host:port"; port 0 picks a free one).
func (t *Transport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp: listen on %s: %w", addr, err)
	}
	l := &Listener{t: t, ln: ln, h: h, sessions: make(map[*session]struct{}), opening: make(map[net.Conn]struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Dial connects to addr and performs the TLS (if configured) and protocol
// handshakes within ctx. The returned *Conn is ready for calls.
func (t *Transport) Dial(ctx context.Context, addr string) (fabric.Conn, error) {
	return t.dial(ctx, addr, nil)
}

// dial opens one socket to addr as a *Conn: the connection itself, or, when
// parent is set, one of parent's lanes.
func (t *Transport) dial(ctx context.Context, addr string, parent *Conn) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp: dial %s: %w (%w)", addr, err, fabric.ErrClosed)
	}
	raw, _ := nc.(*net.TCPConn)
	t.tune(raw)
	deadline := time.Now().Add(t.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if t.cfg.ClientTLS != nil {
		cfg := t.cfg.ClientTLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = t.serverName(addr)
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithDeadline(ctx, deadline)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("tcp: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	l := newLink(&t.cfg, t.log, nc, raw, addr)
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	err = l.handshake(true, deadline)
	if !stop() || err != nil {
		_ = nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("tcp: handshake with %s: %w", addr, err)
	}
	var ls *lanes
	if parent == nil && (t.cfg.BulkSockets > 0 || t.cfg.Lanes > 1) {
		ls = newLanes(t)
	}
	return newConn(l, parent, ls), nil
}

// serverName is the TLS ServerName a dial of addr expects: the one
// Config.TLSServerName gives, else addr's host.
func (t *Transport) serverName(addr string) string {
	if t.cfg.TLSServerName != nil {
		if name := t.cfg.TLSServerName(addr); name != "" {
			return name
		}
	}
	host, _, _ := net.SplitHostPort(addr)
	return host
}

// tune sets socket options on a fresh connection.
func (t *Transport) tune(c *net.TCPConn) {
	if c == nil {
		return
	}
	_ = c.SetNoDelay(true)
	if n := t.cfg.SocketBuffer; n > 0 {
		_ = c.SetReadBuffer(n)
		_ = c.SetWriteBuffer(n)
	}
}

// TLSConnectionState returns the TLS state of c, and false when c does not
// use TLS.
func (c *Conn) TLSConnectionState() (tls.ConnectionState, bool) {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return tls.ConnectionState{}, false
	}
	return tc.ConnectionState(), true
}

func tlsServer(nc net.Conn, cfg *tls.Config) net.Conn { return tls.Server(nc, cfg) }

// tlsHandshake completes a server-side TLS handshake by deadline and
// returns the peer's name as identify (Config.PeerIdentity) gives it, ""
// when identify is nil; plain connections pass through unnamed.
func tlsHandshake(nc net.Conn, deadline time.Time, identify func(tls.ConnectionState) (string, error)) (string, error) {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return "", err
	}
	if identify == nil {
		return "", nil
	}
	name, err := identify(tc.ConnectionState())
	if err != nil {
		return "", fmt.Errorf("peer identity: %w", err)
	}
	return name, nil
}
