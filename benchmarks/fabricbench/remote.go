package fabricbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/rdma"
)

// Two hosts: Serve starts the echo servers on host A and reports their
// Endpoints; host B passes them to Remote, whose peers dial A instead of
// starting servers of their own, and measures with Run as in one process.

// ErrBadEndpoints is returned for an endpoint list that cannot be parsed.
var ErrBadEndpoints = errors.New("fabricbench: bad endpoint list")

// Endpoint is where one served transport listens: the address, in the
// transport's own form, that the measuring host dials.
type Endpoint struct {
	Transport string
	Addr      string
}

// FormatEndpoints joins endpoints into the -connect form:
// "tcp=10.0.0.1:7400;adaptive=rdma:10.0.0.1:7402,tcp:10.0.0.1:7403"
// (';' between transports, since adaptive addresses contain ',').
func FormatEndpoints(es []Endpoint) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Transport + "=" + e.Addr
	}
	return strings.Join(parts, ";")
}

// ParseEndpoints reads the FormatEndpoints form. Every entry must be
// name=address with a name from PeerNames, each name at most once.
func ParseEndpoints(s string) ([]Endpoint, error) {
	var out []Endpoint
	for f := range strings.SplitSeq(s, ";") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, addr, ok := strings.Cut(f, "=")
		name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("%w %q: entry %q is not transport=address (e.g. tcp=10.0.0.1:7400)", ErrBadEndpoints, s, f)
		}
		if !slices.Contains(PeerNames, name) {
			return nil, fmt.Errorf("%w %q: unknown transport %q; known: %v", ErrBadEndpoints, s, name, PeerNames)
		}
		if slices.ContainsFunc(out, func(e Endpoint) bool { return e.Transport == name }) {
			return nil, fmt.Errorf("%w %q: transport %q given twice", ErrBadEndpoints, s, name)
		}
		out = append(out, Endpoint{Transport: name, Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q: no entries; want e.g. tcp=10.0.0.1:7400;adaptive=tcp:10.0.0.1:7401", ErrBadEndpoints, s)
	}
	return out, nil
}

// Unspecified reports the endpoints that listen on an unspecified host
// (0.0.0.0, ::, or none): another host cannot dial those addresses as
// printed and must be given this host's address instead.
func Unspecified(es []Endpoint) []Endpoint {
	var out []Endpoint
	for _, e := range es {
		addrs := []string{e.Addr}
		if e.Transport == "adaptive" {
			addrs = nil
			if ps, err := adaptive.ParseAddr(e.Addr); err == nil {
				for _, p := range ps {
					addrs = append(addrs, p.Addr)
				}
			}
		}
		for _, a := range addrs {
			host, _, err := net.SplitHostPort(a)
			if ip := net.ParseIP(host); err == nil && (host == "" || ip != nil && ip.IsUnspecified()) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// servedPeer is a Peer whose server other hosts can reach at Addr.
type servedPeer interface {
	Peer
	Addr() string
}

var (
	_ servedPeer = (*RawPeer)(nil)
	_ servedPeer = (*GRPCPeer)(nil)
	_ servedPeer = (*TransportPeer)(nil)
)

// Server is the serving half of a two-host run: one echo server per named
// transport, listening at the addresses Options gives, until Close.
type Server struct {
	peers []Peer
	eps   []Endpoint
	cpu0  time.Duration
}

// Serve starts the named peers' servers ("raw", "grpc", "tcp", "rdma",
// "adaptive") at the addresses in o (RawAddr, GRPCAddr, TCPAddr, RDMAAddr,
// AdaptivePaths). If any fails, those already started are closed and the
// error names the transport. The servers run on their own goroutines until
// Close; ctx bounds only the start.
func (o Options) Serve(ctx context.Context, names []string) (*Server, error) {
	s := &Server{cpu0: cpuTime()}
	for _, name := range names {
		name = strings.TrimSpace(name)
		if !slices.Contains(PeerNames, name) {
			return nil, errors.Join(fmt.Errorf("fabricbench: serve: unknown transport %q; known: %v", name, PeerNames), s.Close())
		}
		if slices.ContainsFunc(s.eps, func(e Endpoint) bool { return e.Transport == name }) {
			continue
		}
		p, err := o.NewPeer(ctx, name)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("fabricbench: serve %s: %w", name, err), s.Close())
		}
		sp, ok := p.(servedPeer)
		if !ok {
			return nil, errors.Join(fmt.Errorf("fabricbench: serve %s: peer %T does not report its address", name, p), p.Close(), s.Close())
		}
		s.peers = append(s.peers, p)
		s.eps = append(s.eps, Endpoint{Transport: name, Addr: sp.Addr()})
	}
	if len(s.eps) == 0 {
		return nil, fmt.Errorf("fabricbench: serve: no transports named")
	}
	return s, nil
}

// Endpoints lists where each server listens, real ports filled in, in the
// order Serve was given. The caller may keep the slice.
func (s *Server) Endpoints() []Endpoint { return slices.Clone(s.eps) }

// CPU is this process's user+system CPU time since Serve began: the
// servers' cost when nothing else runs in the process (as in -serve).
func (s *Server) CPU() time.Duration { return cpuTime() - s.cpu0 }

// Close stops every server and waits for their goroutines.
func (s *Server) Close() error {
	var errs []error
	for _, p := range s.peers {
		errs = append(errs, p.Close())
	}
	s.peers = nil
	return errors.Join(errs...)
}

// Remote returns a PeerFactory whose peers measure the servers at eps
// (started by Serve, usually on another host): they build only the client
// side of each transport, with o's RDMA and Adaptive settings. A name
// without an endpoint fails with an error saying so, which Run reports as
// that transport's rows.
func (o Options) Remote(eps []Endpoint) PeerFactory {
	return func(ctx context.Context, name string) (Peer, error) {
		i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Transport == name })
		if i < 0 {
			return nil, fmt.Errorf("fabricbench: no endpoint for transport %q in -connect %q; add %s=ADDRESS", name, FormatEndpoints(eps), name)
		}
		addr := eps[i].Addr
		logger := o.logger()
		p := &remotePeer{name: name, shared: true}
		switch name {
		case "raw":
			p.shared = false
			p.dial = func(ctx context.Context) (Caller, error) { return dialRaw(ctx, addr) }
			return p, nil
		case "grpc":
			p.dial = func(context.Context) (Caller, error) { return dialGRPC(addr) }
			return p, nil
		case "tcp":
			tr, err := o.tcp(logger)
			if err != nil {
				return nil, err
			}
			p.dial = transportDialer(tr, addr)
			return p, nil
		case "rdma":
			tr, err := rdma.New(o.rdmaConfig(), logger)
			if err != nil {
				return nil, err
			}
			p.dial = transportDialer(tr, addr)
			p.closers = []func() error{tr.Close}
			return p, nil
		case "adaptive":
			tr, closers, err := o.adaptiveTransport(logger, addr)
			if err != nil {
				return nil, err
			}
			p.dial = transportDialer(tr, addr)
			p.closers = closers
			return p, nil
		default:
			return nil, fmt.Errorf("fabricbench: unknown transport %q; known: %v", name, PeerNames)
		}
	}
}

func transportDialer(tr fabric.Transport, addr string) func(context.Context) (Caller, error) {
	return func(ctx context.Context) (Caller, error) {
		c, err := tr.Dial(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("fabricbench: %s dial %s: %w", tr.Name(), addr, err)
		}
		return connCaller{c: c}, nil
	}
}

// remotePeer is the client half of a peer whose server runs elsewhere.
type remotePeer struct {
	name    string
	shared  bool
	dial    func(context.Context) (Caller, error)
	closers []func() error
}

var _ Peer = (*remotePeer)(nil)

func (p *remotePeer) Name() string                             { return p.name }
func (p *remotePeer) Shared() bool                             { return p.shared }
func (p *remotePeer) Dial(ctx context.Context) (Caller, error) { return p.dial(ctx) }
func (p *remotePeer) Close() error                             { return errors.Join(runAll(p.closers)...) }
