// Package node is Weft's composition root: it builds the engine
// (shard.Manager), the REST API (httpapi) and the HTTP server from a Config,
// and, when configured, the node-to-node fabric endpoint, and owns their
// start and orderly shutdown.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/shard"
)

// The engine is what the API serves.
var _ httpapi.Engine = (*shard.Manager)(nil)

// Node is one running Weft node. New opens its data; Start serves; Shutdown
// stops. Its methods are safe for concurrent use.
type Node struct {
	cfg    Config
	log    *slog.Logger
	meta   nodeMeta
	lock   *os.File
	engine *shard.Manager
	srv    *http.Server

	mu       sync.Mutex
	ln       net.Listener
	fab      *fabricService // nil while the fabric is off
	served   chan struct{}  // closed when the serve goroutine has returned
	serveErr error
	started  bool
	closed   bool
	closeErr error
}

// nodeMeta is the node's identity, kept in DataDir/node.json so that it
// survives restarts.
type nodeMeta struct {
	ClusterUUID string `json:"cluster_uuid"`
	NodeID      string `json:"node_id"`
}

// New validates cfg, takes the data directory (an exclusive lock, so two
// nodes never share one), opens every index in it (replaying shard logs) and
// builds the API. The node serves nothing until Start; call Shutdown to
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
	n := &Node{cfg: cfg, log: logger, lock: lock}
	ok := false
	defer func() {
		if !ok {
			_ = lock.Close()
		}
	}()
	if n.meta, err = loadMeta(cfg.DataDir); err != nil {
		return nil, err
	}
	scfg := shard.DefaultConfig()
	if n.engine, err = shard.Open(filepath.Join(cfg.DataDir, "indices"), scfg, logger.With("component", "shard")); err != nil {
		return nil, fmt.Errorf("node: opening the indexes in %s: %w", cfg.DataDir, err)
	}
	defer func() {
		if !ok {
			_ = n.engine.Close()
		}
	}()
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("node: registering Go metrics: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("node: registering process metrics: %w", err)
	}
	api, err := httpapi.New(httpapi.Config{
		ClusterName:  cfg.ClusterName,
		ClusterUUID:  n.meta.ClusterUUID,
		NodeName:     cfg.NodeName,
		NodeID:       n.meta.NodeID,
		MaxBodyBytes: cfg.MaxBodyBytes,
		EnablePprof:  cfg.EnablePprof,
		Fabric:       fabricDiag{n},
	}, n.engine, logger.With("component", "httpapi"), reg)
	if err != nil {
		return nil, err
	}
	n.srv = &http.Server{
		Handler:           api,
		ConnContext:       httpapi.ConnContext, // with CoalescingListener in Start: one write per reply
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ok = true
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

// loadMeta reads dir/node.json, creating it with fresh identifiers on first start.
func loadMeta(dir string) (nodeMeta, error) {
	path := filepath.Join(dir, "node.json")
	var m nodeMeta
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &m); err != nil || m.ClusterUUID == "" || m.NodeID == "" {
			return m, fmt.Errorf("node: %s is damaged (%v); restore it or remove it to give the node a new identity", path, err)
		}
		return m, nil
	case !errors.Is(err, os.ErrNotExist):
		return m, fmt.Errorf("node: reading %s: %w", path, err)
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return m, fmt.Errorf("node: generating a node id: %w", err)
	}
	m = nodeMeta{ClusterUUID: uuid.NewString(), NodeID: hex.EncodeToString(id)}
	b, _ = json.Marshal(m)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return m, fmt.Errorf("node: writing %s: %w", tmp, err)
	}
	if err := syncFile(tmp); err != nil {
		return m, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return m, fmt.Errorf("node: renaming %s: %w", tmp, err)
	}
	return m, syncFile(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("node: opening %s to sync: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("node: syncing %s: %w", path, err)
	}
	return nil
}

// Start serves the fabric on Config.FabricAddr (when set), then listens on
// Config.HTTPAddr and serves the API in a goroutine that Shutdown waits for.
// It returns once the listeners are open, so HTTPAddr, URL and FabricAddr
// are valid when it returns without error.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("node: Start after Shutdown")
	}
	if n.started {
		return errors.New("node: Start called twice")
	}
	var fab *fabricService
	if n.cfg.FabricAddr != "" {
		var err error
		if fab, err = startFabric(ctx, n.cfg.FabricAddr, n.cfg.FabricRDMA, n.log.With("component", "fabric")); err != nil {
			return err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", n.cfg.HTTPAddr)
	if err != nil {
		if fab != nil {
			_ = fab.Close()
		}
		return fmt.Errorf("node: listening on %s: %w; pick another --http-addr or stop what uses it", n.cfg.HTTPAddr, err)
	}
	ln = httpapi.CoalescingListener(ln)
	n.ln, n.fab, n.started, n.served = ln, fab, true, make(chan struct{})
	go func() {
		defer close(n.served)
		if err := n.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.mu.Lock()
			n.serveErr = err
			n.mu.Unlock()
			n.log.Error("node: HTTP server stopped", "err", err)
		}
	}()
	return nil
}

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

// URL is the API's base URL, e.g. http://127.0.0.1:9200, or "" before Start.
func (n *Node) URL() string {
	if a := n.HTTPAddr(); a != "" {
		return "http://" + a
	}
	return ""
}

// Shutdown stops the node: it stops accepting connections, lets in-flight
// requests finish until ctx ends (then closes their connections), closes
// the fabric (the connections it dialled, then its listener, which waits
// for its handlers) and closes the engine, which flushes every shard. It is idempotent; later
// calls return the first call's result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return n.closeErr
	}
	n.closed = true
	started, served, fab := n.started, n.served, n.fab
	n.mu.Unlock()

	var errs []error
	if started {
		if err := n.srv.Shutdown(ctx); err != nil {
			n.log.Warn("node: in-flight requests did not finish in time; closing their connections", "err", err)
			_ = n.srv.Close()
			errs = append(errs, fmt.Errorf("node: HTTP shutdown: %w", err))
		}
		<-served
	}
	if fab != nil {
		if err := fab.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := n.engine.Close(); err != nil {
		errs = append(errs, fmt.Errorf("node: closing indexes: %w", err))
	}
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
func Run(ctx context.Context, cfg Config, logger *slog.Logger, ready func(url string)) error {
	n, err := New(cfg, logger)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		_ = n.Shutdown(context.Background())
		return err
	}
	logger.Info("node ready", "url", n.URL(), "fabric", n.FabricAddr(), "data_dir", cfg.DataDir, "node_name", cfg.NodeName, "cluster_name", cfg.ClusterName)
	if ready != nil {
		ready(n.URL())
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
