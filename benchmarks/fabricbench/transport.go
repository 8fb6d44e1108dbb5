package fabricbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
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
	pathsTo io.Writer      // Options.PathsTo
}

var _ Peer = (*TransportPeer)(nil)

// NewTransportPeer starts tr's listener on addr (the transport's own address
// form, e.g. "127.0.0.1:0" for tcp).
func NewTransportPeer(ctx context.Context, tr fabric.Transport, addr string) (*TransportPeer, error) {
	var mux fabric.Mux
	mux.HandleFunc(MethodEcho, func(_ context.Context, req *fabric.Request) ([]byte, error) {
		// The fabric contract lets a reply alias the request (the
		// transport keeps it until the reply is sent), so the echo does
		// not copy, as the raw peer does not.
		return req.Payload, nil
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
	return connCaller{c, p.pathsTo}, nil
}

// Close closes the listener, then whatever the peer's transports hold.
func (p *TransportPeer) Close() error {
	return errors.Join(append([]error{p.ln.Close()}, runAll(p.closers)...)...)
}

type connCaller struct {
	c       fabric.Conn
	pathsTo io.Writer
}

func (c connCaller) Call(ctx context.Context, payload []byte) ([]byte, error) {
	return c.c.Call(ctx, MethodEcho, payload)
}

func (c connCaller) Close() error {
	if r, ok := c.c.(adaptive.PathReporter); ok && c.pathsTo != nil {
		WritePaths(c.pathsTo, r.Paths())
	}
	return c.c.Close()
}

// WritePaths writes an adaptive connection's decision table in one line
// per path: health, calls, and each size bucket it has samples of or
// chose, as "max size: round trip (samples, switches to this path), *
// where chosen".
func WritePaths(w io.Writer, ps []adaptive.PathStats) {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "fabricbench: adaptive path %s healthy=%v calls=%d", p.Path, p.Healthy, p.Calls)
		for _, bs := range p.Buckets {
			if bs.Samples == 0 && !bs.Chosen {
				continue
			}
			mark := ""
			if bs.Chosen {
				mark = "*"
			}
			fmt.Fprintf(&b, " | %s: %v (%d, %d switches)%s", FormatSize(bs.MaxSize), time.Duration(bs.RTTns).Round(time.Microsecond), bs.Samples, bs.Switches, mark)
		}
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(w, b.String())
}
