// Package node is Weft's composition root: it builds the cluster
// membership and metadata (package cluster), the shard layer (store and
// coordinator), the node-to-node fabric, the REST API (httpapi) and the
// HTTP server from a Config, and owns their start and orderly shutdown.
package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/node/placement"
	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/shard"
)

// The engine is what the API serves.
var _ httpapi.Engine = (*coord.Coordinator)(nil)

// Node is one running Weft node. New takes its data directory; Start joins
// or forms the cluster and serves; Shutdown stops. Its methods are safe for
// concurrent use.
type Node struct {
	cfg  Config
	log  *slog.Logger
	meta nodeMeta
	lock *os.File
	mux  fabric.Mux // the fabric's handlers: the cluster's and the shard layer's
	// streams receives the fabric streams (shard recovery's file copies);
	// registered on mux for fabric.MethodStream.
	streams *fabric.StreamReceiver
	sec     *security     // nil with security off
	audit   *audit.Logger // the audit log (--audit-log), nil without
	// budget is the node's memory split, read at Start.
	budget membudget.Split
	// cluRef is clu for the TLS layers' name look-ups, which run on the
	// transports' goroutines without mu.
	cluRef atomic.Pointer[cluster.Cluster]

	mu     sync.Mutex
	clu    *cluster.Cluster
	engine *coord.Coordinator
	peers  *peers
	srv    *http.Server
	ln     net.Listener
	// httpConns is the connection limit under ln (and its TLS).
	httpConns *httpapi.LimitedListener
	fab       *fabricService // nil while the fabric is off
	served    chan struct{}  // closed when the serve goroutine has returned
	serveErr  error
	started   bool
	closed    bool
	closeErr  error
}

// nodeMeta is the node's identity, kept in DataDir/node.json so that it
// survives restarts. (Wave 1 nodes kept a cluster UUID there too; the
// cluster's UUID now lives in its Raft state.)
type nodeMeta struct {
	NodeID string `json:"node_id"`
}

// New validates cfg, takes the data directory (an exclusive lock, so two
// nodes never share one) and reads or creates the node's identity. The
// node opens its indexes and serves nothing until Start; call Shutdown to
// release it either way.
func New(cfg Config, logger *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		return nil, errors.New("node: New needs a logger")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: creating data directory %s: %w", cfg.DataDir, err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: logger, lock: lock, streams: fabric.NewStreamReceiver(streamIdle)}
	n.mux.Handle(fabric.MethodStream, n.streams)
	if n.meta, err = loadMeta(vfs.OS, cfg.DataDir); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := checkLegacy(cfg); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if cfg.Security.Enabled {
		if n.sec, err = loadSecurity(cfg); err != nil {
			_ = lock.Close()
			return nil, err
		}
	}
	return n, nil
}

// lockDir takes an exclusive, non-blocking lock on dir/node.lock. The kernel
// drops it when the process dies, so a killed node restarts cleanly.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "node.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: opening lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("node: data directory %s is in use by another node (lock %s: %v); stop that node or choose another --data-dir", dir, path, err)
	}
	return f, nil
}

// loadMeta reads dir/node.json from fs, creating it (durably: see
// vfs.WriteFileAtomic) with a fresh node ID (a UUID) on first start.
func loadMeta(fs vfs.FS, dir string) (nodeMeta, error) {
	path := filepath.Join(dir, "node.json")
	var m nodeMeta
	b, err := vfs.ReadFile(fs, path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &m); err != nil || m.NodeID == "" {
			return m, fmt.Errorf("node: %s is damaged (%v); restore it or remove it to give the node a new identity", path, err)
		}
		return m, nil
	case !errors.Is(err, os.ErrNotExist):
		return m, fmt.Errorf("node: reading %s: %w", path, err)
	}
	m = nodeMeta{NodeID: uuid.NewString()}
	b, _ = json.Marshal(m)
	if err := vfs.WriteFileAtomic(fs, path, b); err != nil {
		return m, fmt.Errorf("node: %w", err)
	}
	return m, nil
}

// streamIdle aborts an incoming stream whose sender went silent this long.
const streamIdle = time.Minute

// readyWait bounds how long Start waits for a single-node cluster's Raft
// to elect itself.
const readyWait = 30 * time.Second

// Start serves the fabric (when configured), listens on Config.HTTPAddr,
// starts the cluster (forming or joining it in the background) and the
// shard layer, and serves the API in a goroutine that Shutdown waits for.
// It returns once the listeners are open, so HTTPAddr, URL and FabricAddr
// are valid when it returns without error; until the node has joined a
// cluster with a leader, the API answers 503 cluster_block_exception.
func (n *Node) Start(ctx context.Context) (err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("node: Start after Shutdown")
	}
	if n.started {
		return errors.New("node: Start called twice")
	}
	n.started = true
	n.logSecurity()
	var undo []func()
	defer func() {
		if err != nil {
			for k := len(undo) - 1; k >= 0; k-- {
				undo[k]()
			}
			n.ln, n.fab, n.clu, n.engine, n.peers = nil, nil, nil, nil, nil
		}
	}()
	if n.cfg.FabricAddr != "" || n.cfg.Hooks.Fabric != nil {
		if n.fab, err = startFabric(ctx, n.cfg, n.fabricTLS(), &n.mux, n.log.With("component", "fabric")); err != nil {
			return err
		}
		undo = append(undo, func() { _ = n.fab.Close() })
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("node: listening on %s: %w; pick another --http-addr or stop what uses it", n.cfg.HTTPAddr, err)
	}
	n.httpConns = httpapi.LimitListener(ln, n.cfg.HTTPMaxConnections, n.log.With("component", "httpapi"))
	n.ln = httpapi.CoalescingListener(n.httpConns)
	if n.sec != nil {
		// TLS above the coalescing layer: a reply's records leave in one
		// write, and the server sees a *tls.Conn (Request.TLS is set).
		n.ln = tls.NewListener(n.ln, n.sec.http)
	}
	undo = append(undo, func() { _ = n.ln.Close() })

	if n.clu, err = n.newCluster(); err != nil {
		return err
	}
	n.cluRef.Store(n.clu)
	n.clu.Register(&n.mux)
	meta := placement.New(n.clu)
	var sp fabric.Caller
	if n.peers != nil {
		sp = n.peers
	}
	budget, budgetFrom, err := n.cfg.MemoryBudget()
	if err != nil {
		return err
	}
	n.log.Info("memory budget", "limit_bytes", budget.Total, "from", budgetFrom, "indexing_pressure_bytes", budget.IndexingPressure,
		"in_flight_requests_bytes", budget.InFlightRequests)
	n.budget = budget
	scfg := shard.DefaultConfig()
	scfg.RecoveryMaxBytesPerSec = n.cfg.RecoveryMaxBytesPerSec
	scfg.IndexingPressureBytes = budget.IndexingPressure
	if n.cfg.Hooks.Shard != nil {
		n.cfg.Hooks.Shard(&scfg)
	}
	ccfg := coord.DefaultConfig()
	ccfg.RefreshTimeout = scfg.ReplicationTimeout // a refresh waits for the copies as a write does
	if err := ccfg.Validate(); err != nil {
		return err
	}
	st, err := shard.OpenStore(filepath.Join(n.cfg.DataDir, "shards"), scfg, meta, sp, n.log.With("component", "shard"))
	if err != nil {
		return fmt.Errorf("node: opening the shard store in %s: %w", n.cfg.DataDir, err)
	}
	n.engine = coord.NewCoordinator(st, ccfg, n.log.With("component", "coord"))
	undo = append(undo, func() { _ = n.engine.Close() })
	st.Register(&n.mux, n.streams)
	if n.srv, err = n.newHTTPServer(); err != nil {
		return err
	}
	if err := n.clu.Start(ctx); err != nil {
		return fmt.Errorf("node: starting the cluster: %w", err)
	}
	undo = append(undo, func() { _ = n.clu.Shutdown(context.Background()) })
	if n.peers != nil {
		n.peers.forgetDeparted(n.clu)
		undo = append(undo, n.peers.Close)
	}
	if !n.cfg.Clustered() {
		// A single node is its own cluster: it serves once it has elected
		// itself (a moment), and migrates a wave 1 data directory first.
		wctx, cancel := context.WithTimeout(ctx, readyWait)
		_, err := meta.AwaitState(wctx, func(*state.State) bool { return meta.Ready() == nil })
		cancel()
		if err != nil {
			return fmt.Errorf("node: the single-node cluster did not elect itself within %v: %w", readyWait, err)
		}
		if err := n.migrateLegacy(ctx, meta); err != nil {
			return err
		}
		if n.sec != nil {
			// Ready means a user can log in: the elastic user's password
			// is set (the leader does it once, at the first start).
			wctx, cancel := context.WithTimeout(ctx, readyWait)
			_, err := n.clu.Await(wctx, func(st *state.State) bool { return st.Security.ElasticPasswordSet() })
			cancel()
			if err != nil {
				return fmt.Errorf("node: the elastic user's password was not set within %v: %w", readyWait, err)
			}
		}
	}
	n.engine.Start()
	n.served = make(chan struct{})
	go func() {
		defer close(n.served)
		if err := n.srv.Serve(n.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.mu.Lock()
			n.serveErr = err
			n.mu.Unlock()
			n.log.Error("node: HTTP server stopped", "err", err)
		}
	}()
	return nil
}

// newCluster configures the node's membership and metadata: alone (no
// gossip, Raft in memory) or with the cluster flags.
func (n *Node) newCluster() (*cluster.Cluster, error) {
	ccfg := cluster.Config{
		NodeID: n.meta.NodeID, NodeName: n.cfg.NodeName, DataDir: n.cfg.DataDir,
		HTTPAddr: n.ln.Addr().String(), GossipAddr: n.cfg.GossipAddr, RaftAddr: n.cfg.RaftAddr,
		Seeds: n.cfg.Seeds, InitialNodes: n.cfg.InitialNodes, GossipKey: n.cfg.GossipKey,
		Timing: cluster.DefaultTiming(), Logger: n.log.With("component", "cluster"),
		RaftLayer: n.cfg.Hooks.RaftLayer, GossipWrap: n.cfg.Hooks.GossipWrap,
	}
	if n.sec != nil {
		ccfg.ElasticPassword = n.cfg.Security.ElasticPassword
		ccfg.ElasticPasswordGenerated = n.announceElasticPassword
		ccfg.GossipKey = n.sec.bundle.GossipKey
		secure, hook := n.sec.raftLayer(n.raftNameOf, n.raftSpeaksFor, n.log.With("component", "raft-tls")), n.cfg.Hooks.RaftLayer
		ccfg.RaftLayer = secure
		if hook != nil { // a test's partitions wrap the TLS layer
			ccfg.RaftLayer = func(l raft.StreamLayer) raft.StreamLayer { return hook(secure(l)) }
		}
	}
	if n.cfg.Hooks.ClusterTiming.Gossip != "" {
		ccfg.Timing = n.cfg.Hooks.ClusterTiming
	}
	if n.fab != nil {
		ccfg.FabricAddr = n.fab.Addr()
		ccfg.RDMA = n.fab.rdmaOn
		n.peers = newPeers(n.fab.dial, func(id string) (string, bool) {
			nd, ok := n.clu.State().Nodes[id]
			if ok && nd.FabricAddr != "" {
				return nd.FabricAddr, true
			}
			for _, m := range n.clu.Members() {
				if m.ID == id {
					return m.FabricAddr, m.FabricAddr != ""
				}
			}
			return "", false
		})
		ccfg.Peers = n.peers
		if n.sec != nil {
			// A member with the gossip key but without a certificate of
			// this cluster naming it fails the fabric's mutual TLS here,
			// and is kept out of Raft and of shard allocation.
			ccfg.Admit = func(ctx context.Context, m cluster.Member) error {
				_, err := n.peers.Call(ctx, m.ID, fabric.MethodPing, nil)
				if errors.Is(err, fabric.ErrClosed) && ctx.Err() == nil {
					// The pool's connection to a restarted node's old
					// process; the pool dials afresh for this one.
					_, err = n.peers.Call(ctx, m.ID, fabric.MethodPing, nil)
				}
				return err
			}
		}
	}
	c, err := cluster.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	return c, nil
}

// newHTTPServer builds the REST API over the engine.
func (n *Node) newHTTPServer() (*http.Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("node: registering Go metrics: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("node: registering process metrics: %w", err)
	}
	if err := n.registerConnMetrics(reg); err != nil {
		return nil, err
	}
	hcfg := httpapi.Config{
		ClusterName:  n.cfg.ClusterName,
		NodeName:     n.cfg.NodeName,
		NodeID:       n.meta.NodeID,
		MaxBodyBytes: n.cfg.MaxBodyBytes,
		BodyTimeout:  n.cfg.HTTPBodyTimeout,
		BodyMinRate:  n.cfg.HTTPBodyMinRate,
		EnablePprof:  n.cfg.EnablePprof,
		CORS:         n.cfg.CORS,
		InFlight:     membudget.NewBreaker("in_flight_requests", n.budget.InFlightRequests),
		Fabric:       fabricDiag{n},
		Cluster:      clusterAdmin{n.clu},
		SecurityInfo: n.Security(),
	}
	if n.sec != nil {
		var err error
		if hcfg.Security, err = n.httpSecurity(); err != nil {
			return nil, err
		}
	}
	api, err := httpapi.New(hcfg, n.engine, n.log.With("component", "httpapi"), reg)
	if err != nil {
		return nil, err
	}
	return &http.Server{
		Handler:           api,
		ConnContext:       connContext,             // with CoalescingListener in Start: one write per reply
		ReadHeaderTimeout: n.cfg.HTTPHeaderTimeout, // the TLS handshake's bound too
		IdleTimeout:       n.cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}, nil
}

// registerConnMetrics exports the HTTP connection limit's counts.
func (n *Node) registerConnMetrics(reg prometheus.Registerer) error {
	lim := n.httpConns
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "weft", Subsystem: "http", Name: "open_connections",
			Help: "HTTP connections open now (at most --http-max-connections)."},
			func() float64 { return float64(lim.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "weft", Subsystem: "http", Name: "refused_connections_total",
			Help: "HTTP connections refused because --http-max-connections were open."},
			func() float64 { return float64(lim.Refused()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("node: registering HTTP connection metrics: %w", err)
		}
	}
	return nil
}

// connContext is httpapi.ConnContext, also for the TLS connections whose
// inner connection is the coalescing one.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	return httpapi.ConnContext(ctx, c)
}

// Cluster returns the node's cluster (nil before Start), for tests and
// diagnostics.
func (n *Node) Cluster() *cluster.Cluster {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clu
}

// ID is the node's ID (a UUID kept in its data directory).
func (n *Node) ID() string { return n.meta.NodeID }

// HTTPAddr is the address the API listens on (with the real port when
// Config.HTTPAddr asked for port 0), or "" before Start.
func (n *Node) HTTPAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ln == nil {
		return ""
	}
	return n.ln.Addr().String()
}

// FabricAddr is the adaptive path list peers dial to reach this node's
// fabric (e.g. "tcp:127.0.0.1:9300"), or "" when the fabric is off or
// before Start.
func (n *Node) FabricAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fab == nil {
		return ""
	}
	return n.fab.Addr()
}

// DialFabric connects to a peer's fabric path list with the node's adaptive
// transport. The connection shows in GET /_weft/fabric/conns (with its
// decision table) until it is closed; Shutdown closes it if the caller has
// not. It fails with fabric.ErrNotSupported when the fabric is off.
func (n *Node) DialFabric(ctx context.Context, addr string) (fabric.Conn, error) {
	n.mu.Lock()
	f := n.fab
	n.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("node: DialFabric %s: the fabric is off; set --fabric-addr (WEFT_FABRIC_ADDR): %w", addr, fabric.ErrNotSupported)
	}
	return f.dial(ctx, addr)
}

// URL is the API's base URL, e.g. https://127.0.0.1:9200 (http:// with
// security off), or "" before Start.
func (n *Node) URL() string {
	a := n.HTTPAddr()
	switch {
	case a == "":
		return ""
	case n.sec != nil:
		return "https://" + a
	}
	return "http://" + a
}

// Shutdown stops the node: it stops accepting connections, lets in-flight
// requests finish until ctx ends (then closes their connections), closes
// the shard layer (which flushes every copy), leaves the cluster, and
// closes the fabric (the connections it dialled, then its listener, which
// waits for its handlers). It is idempotent; later calls return the first
// call's result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return n.closeErr
	}
	n.closed = true
	srv, served, fab, engine, clu, prs := n.srv, n.served, n.fab, n.engine, n.clu, n.peers
	n.mu.Unlock()

	var errs []error
	if served != nil {
		if err := srv.Shutdown(ctx); err != nil {
			n.log.Warn("node: in-flight requests did not finish in time; closing their connections", "err", err)
			_ = srv.Close()
			errs = append(errs, fmt.Errorf("node: HTTP shutdown: %w", err))
		}
		<-served
	}
	if engine != nil {
		if err := engine.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: closing indexes: %w", err))
		}
	}
	if clu != nil {
		if err := clu.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node: leaving the cluster: %w", err))
		}
	}
	if prs != nil {
		prs.Close()
	}
	if n.audit != nil {
		if err := n.audit.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: closing the audit log: %w", err))
		}
	}
	if fab != nil {
		if err := fab.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	_ = n.streams.Close()
	if err := n.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("node: releasing the data directory lock: %w", err))
	}
	n.mu.Lock()
	if n.serveErr != nil {
		errs = append(errs, n.serveErr)
	}
	n.closeErr = errors.Join(errs...)
	n.mu.Unlock()
	return n.closeErr
}

// Run starts a node, calls ready (if not nil) with its URL once it serves,
// and shuts it down when ctx ends, allowing Config.ShutdownTimeout for
// in-flight requests and the flush. It returns the node's failure, if any.
// Run is the process's entry: it applies Config.Processors (GOMAXPROCS)
// before building the node, so call it once per process.
func Run(ctx context.Context, cfg Config, logger *slog.Logger, ready func(url string)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Processors > 0 {
		runtime.GOMAXPROCS(cfg.Processors)
	}
	budget, _, err := cfg.MemoryBudget()
	if err != nil {
		return err
	}
	debug.SetMemoryLimit(budget.Total)
	n, err := New(cfg, logger)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		_ = n.Shutdown(context.Background())
		return err
	}
	logger.Info("node ready", "url", n.URL(), "fabric", n.FabricAddr(), "data_dir", cfg.DataDir, "node_name", cfg.NodeName,
		"node_id", n.ID(), "cluster_name", cfg.ClusterName, "gossip", cfg.GossipAddr, "raft", cfg.RaftAddr,
		"processors", runtime.GOMAXPROCS(0), "memory_limit_bytes", budget.Total)
	if ready != nil {
		ready(n.URL())
	}
	if cfg.Security.Enabled && cfg.Security.ResetElasticPassword {
		if err := n.ResetElasticPassword(ctx); err != nil {
			_ = n.Shutdown(context.Background())
			return err
		}
	}
	select {
	case <-ctx.Done():
	case <-n.served:
	}
	logger.Info("node shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return err
	}
	logger.Info("node stopped")
	return nil
}
