package fabricbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/tcp"
)

// PeerNames lists the names NewPeer knows, in the order the command runs
// them by default.
var PeerNames = []string{"raw", "grpc", "tcp", "adaptive", "rdma"}

// Options says where the peers listen and how their transports are set up.
type Options struct {
	// RawAddr and GRPCAddr are where the raw and grpc peers listen; empty
	// means "127.0.0.1:0".
	RawAddr  string
	GRPCAddr string
	// TCPAddr is where the tcp peer listens ("127.0.0.1:0").
	TCPAddr string
	// RDMAAddr is the rdma peer's control address: an address of the
	// netdev bound to the RDMA device (e.g. the rxe0 netdev's IP, port 0).
	RDMAAddr string
	// AdaptivePaths is the adaptive peer's path list
	// ("tcp:127.0.0.1:0,tcp:127.0.0.2:0", or with an "rdma:" path).
	AdaptivePaths string
	// RDMA configures every rdma transport (the rdma peer's and an
	// adaptive peer's rdma path); the zero Config means rdma.DefaultConfig.
	RDMA rdma.Config
	// Adaptive tunes the adaptive peer; zero fields take its defaults.
	Adaptive adaptive.Config
	// TCPLanes and TCPBulkSockets, when not negative, replace
	// tcp.DefaultConfig's Lanes and BulkSockets in every tcp transport
	// (the tcp peer's and adaptive's tcp paths), to compare settings on
	// one machine.
	TCPLanes, TCPBulkSockets int
	// Logger gets the transports' logs; nil discards.
	Logger *slog.Logger
	// PathsTo, when not nil, gets the adaptive peer's decision table
	// (adaptive.PathReporter) each time a measured connection closes: the
	// buckets it measured, which path each chose, and every path's health.
	PathsTo io.Writer
}

// DefaultOptions: everything on loopback, adaptive over two TCP paths.
func DefaultOptions() Options {
	return Options{
		RawAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RDMAAddr: "127.0.0.1:0",
		AdaptivePaths: "tcp:127.0.0.1:0,tcp:127.0.0.2:0", RDMA: rdma.DefaultConfig(),
		TCPLanes: -1, TCPBulkSockets: -1,
	}
}

// NewPeer builds a peer with DefaultOptions.
func NewPeer(ctx context.Context, name string) (Peer, error) {
	return DefaultOptions().NewPeer(ctx, name)
}

// NewPeer builds the named peer: "raw", "grpc", "tcp", "adaptive" or
// "rdma" (which fails with fabric.ErrNotSupported where this build or
// machine has no RDMA).
func (o Options) NewPeer(ctx context.Context, name string) (Peer, error) {
	logger := o.logger()
	switch name {
	case "raw":
		return NewRawPeer(cmp.Or(o.RawAddr, "127.0.0.1:0"))
	case "grpc":
		return NewGRPCPeer(cmp.Or(o.GRPCAddr, "127.0.0.1:0"))
	case "tcp":
		tr, err := o.tcp(logger)
		if err != nil {
			return nil, err
		}
		return NewTransportPeer(ctx, tr, o.TCPAddr)
	case "rdma":
		tr, err := rdma.New(o.rdmaConfig(), logger)
		if err != nil {
			return nil, err
		}
		p, err := NewTransportPeer(ctx, tr, o.RDMAAddr)
		if err != nil {
			_ = tr.Close()
			return nil, err
		}
		p.closers = append(p.closers, tr.Close)
		return p, nil
	case "adaptive":
		return o.adaptive(ctx, logger)
	default:
		return nil, fmt.Errorf("fabricbench: unknown transport %q; known: %v", name, PeerNames)
	}
}

func (o Options) tcp(logger *slog.Logger) (*tcp.Transport, error) {
	cfg := tcp.DefaultConfig()
	cfg.Logger = logger
	if o.TCPLanes >= 0 {
		cfg.Lanes = o.TCPLanes
	}
	if o.TCPBulkSockets >= 0 {
		cfg.BulkSockets = o.TCPBulkSockets
	}
	return tcp.New(cfg)
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o Options) rdmaConfig() rdma.Config {
	if o.RDMA == (rdma.Config{}) {
		return rdma.DefaultConfig()
	}
	return o.RDMA
}

func (o Options) adaptive(ctx context.Context, logger *slog.Logger) (Peer, error) {
	tr, closers, err := o.adaptiveTransport(logger, o.AdaptivePaths)
	if err != nil {
		return nil, err
	}
	p, err := NewTransportPeer(ctx, tr, o.AdaptivePaths)
	if err != nil {
		return nil, errors.Join(append([]error{err}, runAll(closers)...)...)
	}
	p.closers = closers
	p.pathsTo = o.PathsTo
	return p, nil
}

// adaptiveTransport builds an adaptive transport over one transport per
// kind named in the path list paths. The closers release those transports;
// the caller runs them when done.
func (o Options) adaptiveTransport(logger *slog.Logger, paths string) (*adaptive.Transport, []func() error, error) {
	ps, err := adaptive.ParseAddr(paths)
	if err != nil {
		return nil, nil, err
	}
	var trs []fabric.Transport
	var closers []func() error
	seen := make(map[string]bool)
	for _, p := range ps {
		if seen[p.Transport] {
			continue
		}
		seen[p.Transport] = true
		switch p.Transport {
		case "tcp":
			tr, err := o.tcp(logger)
			if err != nil {
				return nil, nil, errors.Join(append([]error{err}, runAll(closers)...)...)
			}
			trs = append(trs, tr)
		case "rdma":
			tr, err := rdma.New(o.rdmaConfig(), logger)
			if err != nil {
				return nil, nil, errors.Join(append([]error{err}, runAll(closers)...)...)
			}
			trs = append(trs, tr)
			closers = append(closers, tr.Close)
		default:
			return nil, nil, errors.Join(append([]error{fmt.Errorf("fabricbench: adaptive path transport %q: want tcp or rdma (%s)", p.Transport, strings.TrimSpace(paths))}, runAll(closers)...)...)
		}
	}
	cfg := o.Adaptive
	cfg.Logger = logger
	tr, err := adaptive.New(cfg, trs...)
	if err != nil {
		return nil, nil, errors.Join(append([]error{err}, runAll(closers)...)...)
	}
	return tr, closers, nil
}

func runAll(fs []func() error) []error {
	var errs []error
	for _, f := range fs {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
