package fabricbench

import (
	"context"
	"errors"
	"fmt"
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

// Options says where the fabric peers listen.
type Options struct {
	// TCPAddr is where the tcp peer listens ("127.0.0.1:0").
	TCPAddr string
	// RDMAAddr is the rdma peer's control address: an address of the
	// netdev bound to the RDMA device (e.g. the rxe0 netdev's IP, port 0).
	RDMAAddr string
	// AdaptivePaths is the adaptive peer's path list
	// ("tcp:127.0.0.1:0,tcp:127.0.0.2:0", or with an "rdma:" path).
	AdaptivePaths string
	// Adaptive tunes the adaptive peer; zero fields take its defaults.
	Adaptive adaptive.Config
	// Logger gets the transports' logs; nil discards.
	Logger *slog.Logger
}

// DefaultOptions: everything on loopback, adaptive over two TCP paths.
func DefaultOptions() Options {
	return Options{TCPAddr: "127.0.0.1:0", RDMAAddr: "127.0.0.1:0", AdaptivePaths: "tcp:127.0.0.1:0,tcp:127.0.0.2:0"}
}

// NewPeer builds a peer with DefaultOptions.
func NewPeer(ctx context.Context, name string) (Peer, error) {
	return DefaultOptions().NewPeer(ctx, name)
}

// NewPeer builds the named peer: "raw", "grpc", "tcp", "adaptive" or
// "rdma" (which fails with fabric.ErrNotSupported where this build or
// machine has no RDMA).
func (o Options) NewPeer(ctx context.Context, name string) (Peer, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch name {
	case "raw":
		return NewRawPeer("127.0.0.1:0")
	case "grpc":
		return NewGRPCPeer("127.0.0.1:0")
	case "tcp":
		tr, err := o.tcp(logger)
		if err != nil {
			return nil, err
		}
		return NewTransportPeer(ctx, tr, o.TCPAddr)
	case "rdma":
		tr, err := rdma.New(rdma.DefaultConfig(), logger)
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
	return tcp.New(cfg)
}

func (o Options) adaptive(ctx context.Context, logger *slog.Logger) (Peer, error) {
	paths, err := adaptive.ParseAddr(o.AdaptivePaths)
	if err != nil {
		return nil, err
	}
	var trs []fabric.Transport
	var closers []func() error
	seen := make(map[string]bool)
	for _, p := range paths {
		if seen[p.Transport] {
			continue
		}
		seen[p.Transport] = true
		switch p.Transport {
		case "tcp":
			tr, err := o.tcp(logger)
			if err != nil {
				return nil, err
			}
			trs = append(trs, tr)
		case "rdma":
			tr, err := rdma.New(rdma.DefaultConfig(), logger)
			if err != nil {
				return nil, errors.Join(append([]error{err}, runAll(closers)...)...)
			}
			trs = append(trs, tr)
			closers = append(closers, tr.Close)
		default:
			return nil, fmt.Errorf("fabricbench: adaptive path transport %q: want tcp or rdma (%s)", p.Transport, strings.TrimSpace(o.AdaptivePaths))
		}
	}
	cfg := o.Adaptive
	cfg.Logger = logger
	tr, err := adaptive.New(cfg, trs...)
	if err != nil {
		return nil, errors.Join(append([]error{err}, runAll(closers)...)...)
	}
	p, err := NewTransportPeer(ctx, tr, o.AdaptivePaths)
	if err != nil {
		return nil, errors.Join(append([]error{err}, runAll(closers)...)...)
	}
	p.closers = closers
	return p, nil
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
