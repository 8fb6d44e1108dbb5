package fabricbench

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftsearch/weft/fabric"
)

// MethodEcho is the method TransportPeer's server answers by echoing the
// payload through a registered handler (not the transport's built-in
// MethodPing), so the handler path is what gets measured.
const MethodEcho = fabric.MethodUserBase

// TransportPeer benchmarks any fabric.Transport: it listens on addr with an
// echo handler and dials the listener's address. One Conn is shared by all
// calls in flight, as nodes share theirs.
type TransportPeer struct {
	tr      fabric.Transport
	ln      fabric.Listener
	closers []func() error // run after the listener closes
}

var _ Peer = (*TransportPeer)(nil)

// NewTransportPeer starts tr's listener on addr (the transport's own address
// form, e.g. "127.0.0.1:0" for tcp).
func NewTransportPeer(ctx context.Context, tr fabric.Transport, addr string) (*TransportPeer, error) {
	var mux fabric.Mux
	mux.HandleFunc(MethodEcho, func(_ context.Context, req *fabric.Request) ([]byte, error) {
		// The payload is valid only until we return; the reply must stay
		// valid until it is sent, so it is a copy.
		return append([]byte(nil), req.Payload...), nil
	})
	ln, err := tr.Listen(ctx, addr, &mux)
	if err != nil {
		return nil, fmt.Errorf("fabricbench: %s listen on %s: %w", tr.Name(), addr, err)
	}
	return &TransportPeer{tr: tr, ln: ln}, nil
}

func (p *TransportPeer) Name() string { return p.tr.Name() }
func (p *TransportPeer) Shared() bool { return true }

// Addr is the listener's address (the transport's form, real port).
func (p *TransportPeer) Addr() string { return p.ln.Addr() }

// Dial connects to the listener.
func (p *TransportPeer) Dial(ctx context.Context) (Caller, error) {
	c, err := p.tr.Dial(ctx, p.ln.Addr())
	if err != nil {
		return nil, err
	}
	return connCaller{c}, nil
}

// Close closes the listener, then whatever the peer's transports hold.
func (p *TransportPeer) Close() error {
	return errors.Join(append([]error{p.ln.Close()}, runAll(p.closers)...)...)
}

type connCaller struct{ c fabric.Conn }

func (c connCaller) Call(ctx context.Context, payload []byte) ([]byte, error) {
	return c.c.Call(ctx, MethodEcho, payload)
}

func (c connCaller) Close() error { return c.c.Close() }
