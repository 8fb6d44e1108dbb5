package fabricbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// RawPeer is the floor: a plain Go TCP server that echoes length-prefixed
// messages (4-byte big-endian length, then the bytes), one message in flight
// per connection, written with writev. It is not multiplexed, so Measure
// opens one connection per call in flight.
type RawPeer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

var _ Peer = (*RawPeer)(nil)

// NewRawPeer listens on addr ("127.0.0.1:0") and serves until Close.
func NewRawPeer(addr string) (*RawPeer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fabricbench: raw listen on %s: %w", addr, err)
	}
	p := &RawPeer{ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *RawPeer) Name() string { return "raw" }
func (p *RawPeer) Shared() bool { return false }

func (p *RawPeer) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() {
			defer func() {
				p.mu.Lock()
				delete(p.conns, c)
				p.mu.Unlock()
				_ = c.Close()
			}()
			var hdr [4]byte
			var buf []byte
			for {
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(hdr[:]))
				if cap(buf) < n {
					buf = make([]byte, n)
				}
				buf = buf[:n]
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				bufs := net.Buffers{hdr[:], buf}
				if _, err := bufs.WriteTo(c); err != nil {
					return
				}
			}
		})
	}
}

// Addr is the address the server listens on, with the real port.
func (p *RawPeer) Addr() string { return p.ln.Addr().String() }

// Dial opens one connection.
func (p *RawPeer) Dial(ctx context.Context) (Caller, error) {
	return dialRaw(ctx, p.ln.Addr().String())
}

// dialRaw opens one connection to a raw echo server at addr.
func dialRaw(ctx context.Context, addr string) (Caller, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fabricbench: raw dial %s: %w", addr, err)
	}
	return &rawCaller{c: c}, nil
}

// Close stops the server and waits for its goroutines.
func (p *RawPeer) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

type rawCaller struct {
	c   net.Conn
	hdr [4]byte
}

// Call is not safe for concurrent use (one message in flight). The reply is
// a fresh slice, as a fabric Conn's is.
func (r *rawCaller) Call(ctx context.Context, payload []byte) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = r.c.SetDeadline(dl)
	}
	binary.BigEndian.PutUint32(r.hdr[:], uint32(len(payload)))
	bufs := net.Buffers{r.hdr[:], payload}
	if _, err := bufs.WriteTo(r.c); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r.c, r.hdr[:]); err != nil {
		return nil, err
	}
	reply := make([]byte, binary.BigEndian.Uint32(r.hdr[:]))
	if _, err := io.ReadFull(r.c, reply); err != nil {
		return nil, err
	}
	return reply, nil
}

func (r *rawCaller) Close() error { return r.c.Close() }
