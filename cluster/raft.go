package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/weftsearch/weft/internal/vfs"
)

// raftNode is this node's Raft: durable log and stable store (one bolt
// file), file snapshots, and the transport.
type raftNode struct {
	r        *raft.Raft
	store    *raftboltdb.BoltStore
	trans    raft.Transport
	addr     string // the address peers reach this node's Raft at
	hasState bool   // Raft state existed when it opened: never bootstrap
	notify   chan bool
}

const (
	raftDirName      = "raft"
	raftDirMode      = 0o700
	snapshotsRetain  = 2
	raftMaxPool      = 3
	raftTransportIO  = 10 * time.Second
	clusterUUIDFile  = "cluster_uuid"
	raftNotifyBuffer = 16
)

// openRaft opens (or creates) the Raft state in DataDir/raft and starts
// Raft with the FSM. It does not bootstrap.
func openRaft(cfg Config, f raft.FSM, logger hclog.Logger) (_ *raftNode, err error) {
	dir := filepath.Join(cfg.DataDir, raftDirName)
	if err := os.MkdirAll(dir, raftDirMode); err != nil {
		return nil, fmt.Errorf("cluster: creating %s: %w", dir, err)
	}
	// The log and the snapshots hold the security metadata's hashes:
	// only the node's user may read them, also in a directory an older
	// version created open to all.
	if err := os.Chmod(dir, raftDirMode); err != nil {
		return nil, fmt.Errorf("cluster: restricting %s to its owner: %w", dir, err)
	}
	n := &raftNode{notify: make(chan bool, raftNotifyBuffer)}
	var closers []io.Closer
	defer func() {
		if err != nil {
			for _, c := range closers {
				_ = c.Close()
			}
		}
	}()
	n.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("cluster: opening the Raft log in %s: %w", dir, err)
	}
	closers = append(closers, n.store)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetain, logger.Named("snapshots"))
	if err != nil {
		return nil, fmt.Errorf("cluster: opening Raft snapshots in %s: %w", dir, err)
	}
	n.hasState, err = raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the Raft state in %s: %w", dir, err)
	}
	if cfg.RaftAddr == "" {
		addr, trans := raft.NewInmemTransport("")
		n.addr, n.trans = string(addr), trans
	} else {
		layer, err := listenTCP(cfg.RaftAddr)
		if err != nil {
			return nil, err
		}
		n.addr = layer.Addr().String()
		var stream raft.StreamLayer = layer
		if cfg.RaftLayer != nil {
			stream = cfg.RaftLayer(layer)
		}
		n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: stream, MaxPool: raftMaxPool, Timeout: raftTransportIO, Logger: logger.Named("transport"),
		})
	}
	if c, ok := n.trans.(io.Closer); ok {
		closers = append(closers, c)
	}
	t := cfg.timing()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout, rc.ElectionTimeout = t.RaftHeartbeat, t.RaftElection
	rc.LeaderLeaseTimeout, rc.CommitTimeout = t.RaftLeaderLease, t.RaftCommit
	rc.NotifyCh = n.notify
	rc.Logger = logger
	rc.ShutdownOnRemove = false // a removed node that comes back is added again
	logs, err := raft.NewLogCache(512, n.store)
	if err != nil {
		return nil, fmt.Errorf("cluster: Raft log cache: %w", err)
	}
	n.r, err = raft.NewRaft(rc, f, logs, n.store, snaps, n.trans)
	if err != nil {
		return nil, fmt.Errorf("cluster: starting Raft: %w", err)
	}
	return n, nil
}

// shutdown stops Raft and closes its transport and store.
func (n *raftNode) shutdown() error {
	err := n.r.Shutdown().Error()
	if c, ok := n.trans.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return errors.Join(err, n.store.Close())
}

// tcpLayer is Raft's stream layer over plain TCP. It keeps every
// connection it made or accepted and closes them all on Close: Raft's
// transport closes only the listener, leaving its pooled connections and
// the goroutines serving peers' connections behind.
type tcpLayer struct {
	net.Listener

	mu     sync.Mutex
	closed bool
	conns  map[*layerConn]struct{}
}

func listenTCP(addr string) (*tcpLayer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: Raft cannot listen on %s: %w", addr, err)
	}
	return &tcpLayer{Listener: ln, conns: make(map[*layerConn]struct{})}, nil
}

// Accept waits for a peer's connection.
func (l *tcpLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.track(c)
}

// Dial connects to another node's Raft.
func (l *tcpLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	return l.track(c)
}

func (l *tcpLayer) track(c net.Conn) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	lc := &layerConn{Conn: c, l: l}
	l.conns[lc] = struct{}{}
	return lc, nil
}

// Close closes the listener and every connection.
func (l *tcpLayer) Close() error {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[*layerConn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	return l.Listener.Close()
}

type layerConn struct {
	net.Conn
	l *tcpLayer
}

func (c *layerConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

var _ raft.StreamLayer = (*tcpLayer)(nil)

// readClusterUUID returns the cluster UUID this node's Raft state belongs
// to, "" when it has not learnt one.
func readClusterUUID(fs vfs.FS, dataDir string) (string, error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dataDir, raftDirName, clusterUUIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cluster: reading the cluster UUID: %w", err)
	}
	return string(b), nil
}

// writeClusterUUID keeps the cluster UUID beside the Raft state, durably
// (vfs.WriteFileAtomic), so that a restarted node gossips it before its log
// is replayed (and is refused by another cluster at once).
func writeClusterUUID(fs vfs.FS, dataDir, uuid string) error {
	if err := vfs.WriteFileAtomic(fs, filepath.Join(dataDir, raftDirName, clusterUUIDFile), []byte(uuid)); err != nil {
		return fmt.Errorf("cluster: writing the cluster UUID: %w", err)
	}
	return nil
}
