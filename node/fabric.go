package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/discovery"
	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/fabric/rdma"
	"github.com/weftsearch/weft/fabric/tcp"
)

// Values of Config.FabricRDMA.
const (
	// FabricRDMAAuto adds an RDMA path when this build has RDMA support
	// (rdma.Available) and the host has a device with an ACTIVE port, and
	// serves TCP alone otherwise.
	FabricRDMAAuto = "auto"
	// FabricRDMAOn requires the RDMA path: start-up fails with the RDMA
	// transport's message when it cannot open one.
	FabricRDMAOn = "on"
	// FabricRDMAOff serves the fabric over TCP only.
	FabricRDMAOff = "off"
)

// fabricService is the node's fabric endpoint: an adaptive listener over a
// TCP path (and an RDMA path when enabled) serving the node's fabric.Mux —
// the cluster's and the shard layer's handlers — plus the connections the
// node dialled. Its goroutines belong to the transports, which Close waits
// for.
type fabricService struct {
	log    *slog.Logger
	counts *fabricdiag.Counting
	tr     fabric.Transport // adaptive, plain tcp, or a test transport
	rdma   *rdma.Transport  // nil without an RDMA path
	rdmaOn string           // "on" or "off: reason"
	ln     fabric.Listener
	mux    *fabric.Mux // the node's handlers

	mu     sync.Mutex
	dialed map[*dialedConn]struct{}
	closed bool

	once     sync.Once
	closeErr error
}

// startFabric serves mux on cfg.FabricAddr (host:port) with the adaptive
// transport over a TCP path and, as cfg.FabricRDMA says, an RDMA path on
// the same host (port chosen by the kernel) — or plain TCP with
// cfg.FabricTransport "tcp", or the test transport in cfg.Hooks.Fabric. It
// returns once every path accepts. secure, when not nil (security on),
// puts the TCP path on mutual TLS; the RDMA path is then off (see
// openRDMA).
func startFabric(ctx context.Context, cfg Config, secure func(*tcp.Config), mux *fabric.Mux, log *slog.Logger) (*fabricService, error) {
	f := &fabricService{log: log, counts: fabricdiag.NewCounting(), dialed: make(map[*dialedConn]struct{}), mux: mux}
	addr := cfg.FabricAddr
	if cfg.Hooks.Fabric != nil {
		f.tr, f.rdmaOn = f.counts.Wrap(cfg.Hooks.Fabric), "off: a test transport ("+cfg.Hooks.Fabric.Name()+")"
		var err error
		if f.ln, err = f.tr.Listen(ctx, addr, mux); err != nil {
			return nil, fmt.Errorf("node: fabric listening on %s: %w", addr, err)
		}
		return f, nil
	}
	tcfg := tcp.DefaultConfig()
	tcfg.Logger = log
	if secure != nil {
		secure(&tcfg)
	}
	ttr, err := tcp.New(tcfg)
	if err != nil {
		return nil, fmt.Errorf("node: fabric TCP transport: %w", err)
	}
	if cfg.FabricTransport == FabricTCP {
		f.tr, f.rdmaOn = f.counts.Wrap(ttr), "off: --fabric-transport=tcp"
		if f.ln, err = f.tr.Listen(ctx, addr, mux); err != nil {
			return nil, fmt.Errorf("node: fabric listening on %s: %w; pick another --fabric-addr or stop what uses it", addr, err)
		}
		return f, nil
	}
	host, _, _ := net.SplitHostPort(addr) // Validate checked the form
	trs := []fabric.Transport{f.counts.Wrap(ttr)}
	paths := []adaptive.PathAddr{{Transport: "tcp", Addr: addr}}
	f.rdma, f.rdmaOn, err = openRDMA(cfg.FabricRDMA, secure != nil, log)
	if err != nil {
		return nil, err
	}
	if f.rdma != nil {
		trs = append(trs, f.counts.Wrap(f.rdma))
		paths = append(paths, adaptive.PathAddr{Transport: "rdma", Addr: net.JoinHostPort(host, "0")})
	}
	var atr *adaptive.Transport
	atr, err = adaptive.New(adaptive.Config{Logger: log, Pin: cfg.Hooks.FabricPin}, trs...)
	if err == nil {
		f.tr = atr
		f.ln, err = atr.Listen(ctx, adaptive.FormatAddr(paths), mux)
	}
	if err != nil && f.rdma != nil && cfg.FabricRDMA == FabricRDMAAuto {
		log.Warn("node: fabric RDMA path could not listen; serving the fabric over TCP only", "err", err)
		_ = f.rdma.Close()
		f.rdma, f.rdmaOn = nil, "off: listening failed: "+err.Error()
		if atr, err = adaptive.New(adaptive.Config{Logger: log, Pin: cfg.Hooks.FabricPin}, trs[0]); err == nil {
			f.tr = atr
			f.ln, err = atr.Listen(ctx, adaptive.FormatAddr(paths[:1]), mux)
		}
	}
	if err != nil {
		if f.rdma != nil {
			_ = f.rdma.Close()
		}
		return nil, fmt.Errorf("node: fabric listening on %s: %w; pick another --fabric-addr or stop what uses it", addr, err)
	}
	return f, nil
}

// openRDMA opens the RDMA transport as mode asks. It returns nil and the
// reason when there is no RDMA path, and an error only for mode "on".
//
// With security on there is no RDMA path: its control connection (QP
// numbers, GIDs, rkeys) is a TCP connection of its own, which rdma.Config.TLS
// could authenticate, but the RDMA payloads themselves travel in clear and
// unauthenticated until they are sealed (issue 17). Mode "on" then fails.
func openRDMA(mode string, secure bool, log *slog.Logger) (*rdma.Transport, string, error) {
	if mode == FabricRDMAOff {
		return nil, "off: --fabric-rdma=off", nil
	}
	if secure {
		if mode == FabricRDMAOn {
			return nil, "", fmt.Errorf("node: %w", errRDMAUnsealed)
		}
		return nil, "off: " + errRDMAUnsealed.Error(), nil
	}
	if mode == FabricRDMAAuto {
		if !rdma.Available {
			return nil, "off: this binary was built without RDMA support (rebuild with CGO_ENABLED=1 -tags rdma)", nil
		}
		rep, err := discovery.List(discovery.Options{})
		if err != nil {
			return nil, "off: " + err.Error(), nil
		}
		if !hasActivePort(rep.RDMA) {
			return nil, "off: no RDMA device with an ACTIVE port", nil
		}
	}
	tr, err := rdma.New(rdma.DefaultConfig(), log)
	if err != nil {
		if mode == FabricRDMAOn {
			return nil, "", fmt.Errorf("node: --fabric-rdma=on but the RDMA transport cannot start: %w", err)
		}
		log.Warn("node: no RDMA fabric path; serving the fabric over TCP only", "err", err)
		return nil, "off: " + err.Error(), nil
	}
	return tr, "on", nil
}

// errRDMAUnsealed is why a node with security on has no RDMA path.
var errRDMAUnsealed = errors.New("security is on and RDMA payloads are not yet sealed, so the fabric runs over TLS on TCP only; for RDMA on a trusted fabric use --security=false (with --allow-insecure-network off loopback), or --fabric-rdma=auto/off to keep security")

func hasActivePort(devs []discovery.RDMADevice) bool {
	for _, d := range devs {
		for _, p := range d.Ports {
			if p.State == "ACTIVE" {
				return true
			}
		}
	}
	return false
}

// Addr is the path list peers dial.
func (f *fabricService) Addr() string { return f.ln.Addr() }

// dial connects to a peer's path list and keeps the connection for the
// diagnostics until it is closed; Close closes what is still open.
func (f *fabricService) dial(ctx context.Context, addr string) (fabric.Conn, error) {
	c, err := f.tr.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	dc := &dialedConn{Conn: c, f: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return nil, fmt.Errorf("node: fabric is shut down: %w", fabric.ErrClosed)
	}
	f.dialed[dc] = struct{}{}
	return dc, nil
}

// dialedConn is a connection the node dialled; Close forgets it.
type dialedConn struct {
	fabric.Conn
	f *fabricService
}

var _ adaptive.PathReporter = (*dialedConn)(nil)

// Close closes the connection and drops it from the diagnostics.
func (c *dialedConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.dialed, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

// Paths is the adaptive decision table of the connection.
func (c *dialedConn) Paths() []adaptive.PathStats {
	if r, ok := c.Conn.(adaptive.PathReporter); ok {
		return r.Paths()
	}
	return nil
}

// report describes the fabric's peers and RDMA queue pairs.
func (f *fabricService) report() fabricdiag.ConnsReport {
	rep := fabricdiag.ConnsReport{Fabric: "on", ListenAddr: f.Addr(), RDMA: f.rdmaOn, RDMATransport: f.rdmaInfo(),
		Conns: f.counts.Peers(), RDMAQPs: []rdma.ConnInfo{}}
	if f.rdma != nil {
		rep.RDMAQPs = append(rep.RDMAQPs, f.rdma.Conns()...)
	}
	f.mu.Lock()
	dialed := make([]*dialedConn, 0, len(f.dialed))
	for c := range f.dialed {
		dialed = append(dialed, c)
	}
	f.mu.Unlock()
	for _, c := range dialed {
		st := c.Stats()
		pc := fabricdiag.PeerConn{Peer: c.RemoteAddr(), Direction: "outbound", Totals: &st, DecisionTable: c.Paths()}
		for _, p := range pc.DecisionTable {
			if p.Transport == "stripe" {
				continue
			}
			pc.Paths = append(pc.Paths, fabricdiag.PathCounters{Transport: p.Transport, Remote: p.Addr, Messages: p.Calls,
				BytesSent: p.BytesSent, BytesReceived: p.BytesReceived, Errors: p.Failures})
		}
		rep.Conns = append(rep.Conns, pc)
	}
	for i := range rep.Conns {
		for j := range rep.Conns[i].Paths {
			p := &rep.Conns[i].Paths[j]
			if p.Transport != "rdma" {
				continue
			}
			for k := range rep.RDMAQPs {
				if rep.RDMAQPs[k].Peer == p.Remote {
					qp := rep.RDMAQPs[k]
					p.QP = &qp
				}
			}
		}
	}
	return rep
}

// rdmaInfo describes the RDMA transport, or is nil without an RDMA path.
func (f *fabricService) rdmaInfo() *rdma.TransportInfo {
	if f.rdma == nil {
		return nil
	}
	ti := f.rdma.Info()
	return &ti
}

// rdmaPath is the fabric's RDMA path in words ("on" or "off: reason") and
// the RDMA transport's description (nil without one), for the diagnostics.
func (n *Node) rdmaPath() (string, *rdma.TransportInfo) {
	n.mu.Lock()
	f := n.fab
	n.mu.Unlock()
	if f == nil {
		return fabricOffRDMA, nil
	}
	return f.rdmaOn, f.rdmaInfo()
}

// fabricOffRDMA is the RDMA path's state while the node serves no fabric.
const fabricOffRDMA = "off: the fabric is off (no --fabric-addr)"

// Close closes the connections the node dialled, then the listener (which
// waits for its handlers), then the RDMA transport. It is idempotent.
func (f *fabricService) Close() error {
	f.once.Do(func() {
		f.mu.Lock()
		f.closed = true
		dialed := make([]*dialedConn, 0, len(f.dialed))
		for c := range f.dialed {
			dialed = append(dialed, c)
		}
		f.mu.Unlock()
		var errs []error
		for _, c := range dialed {
			_ = c.Close() // in-flight callers get ErrClosed; nothing to report
		}
		if err := f.ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: closing the fabric listener: %w", err))
		}
		if f.rdma != nil {
			if err := f.rdma.Close(); err != nil {
				errs = append(errs, fmt.Errorf("node: closing the RDMA transport: %w", err))
			}
		}
		f.closeErr = errors.Join(errs...)
	})
	return f.closeErr
}

// fabricDiag serves the /_weft/fabric/ endpoints for the node.
type fabricDiag struct{ n *Node }

// FabricDevices lists the host's interfaces and RDMA devices.
func (d fabricDiag) FabricDevices(ctx context.Context) (any, error) {
	rep, err := discovery.List(discovery.Options{})
	if err != nil {
		return nil, fmt.Errorf("node: listing fabric devices: %w", err)
	}
	out := fabricdiag.DevicesReport{Interfaces: rep.Interfaces, RDMADevices: rep.RDMA, VerbsDevices: []rdma.DeviceInfo{}}
	out.RDMAPath, out.RDMATransport = d.n.rdmaPath()
	active := 0
	for _, dev := range rep.RDMA {
		if hasActivePort([]discovery.RDMADevice{dev}) {
			active++
		}
	}
	if len(rep.RDMA) == 0 {
		out.RDMA = "none: no RDMA devices on this host (no entries under /sys/class/infiniband)"
	} else {
		out.RDMA = fmt.Sprintf("%d device(s), %d with an ACTIVE port", len(rep.RDMA), active)
	}
	if devs, err := rdma.Devices(); err != nil {
		out.VerbsError = err.Error()
	} else if len(devs) > 0 {
		out.VerbsDevices = devs
	} else {
		out.VerbsError = "none: libibverbs lists no devices"
	}
	return out, nil
}

// FabricConns describes the fabric's peers; with the fabric off it says so
// and lists none.
func (d fabricDiag) FabricConns(ctx context.Context) (any, error) {
	d.n.mu.Lock()
	f := d.n.fab
	d.n.mu.Unlock()
	if f == nil {
		return fabricdiag.ConnsReport{Fabric: "off", RDMA: fabricOffRDMA, Conns: []fabricdiag.PeerConn{}, RDMAQPs: []rdma.ConnInfo{}}, nil
	}
	return f.report(), nil
}
