// Package raftstream is a raft.StreamLayer over mutual TLS: Raft's network
// transport (raft.NewNetworkTransport) runs on it unchanged, and only peers
// that complete a TLS handshake with the configured server configuration (a
// certificate of the cluster CA naming a node, see security/certs) reach it.
package raftstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Config is what a Layer needs. Server and Client are required.
type Config struct {
	// Server verifies accepted connections: certs.ServerConfig, whose
	// admit hook may limit peers to the Raft configuration's servers.
	Server *tls.Config
	// Client is used to dial: certs.ClientConfig(b, "").
	Client *tls.Config
	// ServerName, when set, names the node a dial of addr must reach (the
	// Raft server id whose address addr is); the server's certificate
	// must name it. Empty, or nil, expects only some node of the cluster
	// at addr's host.
	ServerName func(addr raft.ServerAddress) string
	// Identify, when set, is called with each accepted connection's TLS
	// state after its handshake: an error drops the connection before
	// Raft reads from it (certs.PeerNode does). The name is then kept with
	// the connection (PeerName).
	Identify func(tls.ConnectionState) (string, error)
	// SpeaksFor, when set, is asked about every RPC an accepted
	// connection sends, with the connection's peer name (Identify's) and
	// the Raft server id the RPC's header speaks for (the leader of an
	// AppendEntries, the candidate of a vote): an error closes the
	// connection before Raft reads any byte of that RPC. It requires
	// Identify.
	SpeaksFor func(peer string, id raft.ServerID) error
	// HandshakeTimeout bounds each accepted connection's handshake.
	// Default 10s.
	HandshakeTimeout time.Duration
	// Logger gets refused connections at Info; nil discards.
	Logger *slog.Logger
}

// maxHandshakes bounds the handshakes run at once, so a flood of idle
// sockets costs goroutines only up to it (each waits HandshakeTimeout).
const maxHandshakes = 64

// Layer is a raft.StreamLayer. Accept returns only connections whose TLS
// handshake (and Identify) succeeded; handshakes run concurrently, so a
// slow or silent peer does not hold up others.
type Layer struct {
	cfg Config
	ln  net.Listener
	log *slog.Logger
	out chan *Conn
	sem chan struct{}
	// ctx ends at Close; every handshake's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	wg     sync.WaitGroup
}

var _ raft.StreamLayer = (*Layer)(nil)

// Conn is an accepted or dialled connection: TLS, handshake complete.
type Conn struct {
	*tls.Conn
	peer string
	gate *gate // accepted connections under Config.SpeaksFor
}

// Read reads the connection; under Config.SpeaksFor, only RPCs whose
// server id the peer may speak for.
func (c *Conn) Read(p []byte) (int, error) {
	if c.gate == nil {
		return c.Conn.Read(p)
	}
	return c.gate.Read(p)
}

// PeerName is the name Identify gave an accepted connection; for a
// dialled one, the node its server's certificate was checked against
// ("" when none was named).
func (c *Conn) PeerName() string { return c.peer }

// New serves Raft on ln, which the Layer owns from now on (Close closes
// it). It starts one goroutine accepting, which Close stops and waits for.
func New(ln net.Listener, cfg Config) (*Layer, error) {
	if cfg.Server == nil || cfg.Client == nil {
		return nil, errors.New("raftstream: Config.Server and Config.Client are required; build them with security/certs")
	}
	if cfg.SpeaksFor != nil && cfg.Identify == nil {
		return nil, errors.New("raftstream: Config.SpeaksFor needs Config.Identify to name the peer")
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l := &Layer{cfg: cfg, ln: ln, log: log, out: make(chan *Conn), sem: make(chan struct{}, maxHandshakes)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// acceptLoop accepts sockets and hands each to a handshake goroutine.
func (l *Layer) acceptLoop() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.ctx.Done():
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("raft stream: accept failed; retrying", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case l.sem <- struct{}{}:
		case <-l.ctx.Done():
			_ = nc.Close()
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() { <-l.sem }()
			l.handshake(nc)
		}()
	}
}

// handshake runs the server side of nc's TLS handshake and delivers it to
// Accept, or closes it.
func (l *Layer) handshake(nc net.Conn) {
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.HandshakeTimeout)
	defer cancel()
	tc := tls.Server(nc, l.cfg.Server)
	if err := tc.HandshakeContext(ctx); err != nil {
		l.log.Info("raft stream: TLS handshake refused", "remote", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	c := &Conn{Conn: tc}
	if l.cfg.Identify != nil {
		name, err := l.cfg.Identify(tc.ConnectionState())
		if err != nil {
			l.log.Info("raft stream: peer identity refused", "remote", nc.RemoteAddr().String(), "err", err)
			_ = nc.Close()
			return
		}
		c.peer = name
	}
	if l.cfg.SpeaksFor != nil {
		remote := nc.RemoteAddr().String()
		c.gate = newGate(bufio.NewReaderSize(tc, 64<<10), func(id raft.ServerID) error {
			if err := l.cfg.SpeaksFor(c.peer, id); err != nil {
				l.log.Warn("raft stream: an RPC for another server dropped with its connection", "remote", remote, "peer", c.peer, "server_id", string(id), "err", err)
				return err
			}
			return nil
		})
	}
	select {
	case l.out <- c:
	case <-l.ctx.Done():
		_ = nc.Close()
	}
}

// Accept returns the next connection whose handshake succeeded, as a *Conn.
// After Close it fails with net.ErrClosed.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case c := <-l.out:
		return c, nil
	case <-l.ctx.Done():
		return nil, fmt.Errorf("raftstream: %w", net.ErrClosed)
	}
}

// Close stops accepting, drops connections still in their handshake and
// waits for its goroutines. Connections already accepted belong to Raft.
// It is idempotent.
func (l *Layer) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		err = l.ln.Close()
	})
	l.wg.Wait()
	return err
}

// Addr is the listener's address.
func (l *Layer) Addr() net.Addr { return l.ln.Addr() }

// Dial connects to addr and completes the TLS handshake within timeout;
// the server's certificate must name the node Config.ServerName gives for
// addr, or be a node of the cluster reachable as addr's host.
func (l *Layer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	cfg := l.cfg.Client
	name := ""
	if l.cfg.ServerName != nil {
		name = l.cfg.ServerName(addr)
	}
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName = name
		if name == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(string(addr))
		}
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", string(addr))
	if err != nil {
		return nil, fmt.Errorf("raftstream: dial %s: %w", addr, err)
	}
	return &Conn{Conn: nc.(*tls.Conn), peer: name}, nil
}
