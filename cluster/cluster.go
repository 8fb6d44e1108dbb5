package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/internal/logadapt"
	"github.com/weftsearch/weft/internal/vfs"
)

// Cluster is one node's part of the cluster: its gossip membership, its
// Raft and the metadata state machine, the leader's duties when it leads,
// and the forwarding of proposals to the leader. Its methods are safe for
// concurrent use.
type Cluster struct {
	cfg Config
	log *slog.Logger
	fsm *fsm

	// Set by Start; read-only after.
	rn *raftNode
	ms *membership // nil without gossip

	// disk is this node's last disk reading published (never nil);
	// diskChanged signals a new one.
	disk        atomic.Pointer[state.DiskUsage]
	diskChanged broadcast
	diskMu      sync.Mutex
	diskErr     string // the last disk reading error logged

	mu    sync.Mutex   // serialises Start and Shutdown
	phase atomic.Int32 // phaseNew, phaseStarted, phaseClosed
	stop  context.CancelFunc
	wg    sync.WaitGroup
	done  chan struct{} // closed by Shutdown
}

const (
	phaseNew int32 = iota
	phaseStarted
	phaseClosed
)

// Result is what a committed proposal reports.
type Result struct {
	// Version is the Raft log index of the command: State().Version >= it
	// once this node has applied it.
	Version uint64 `json:"version"`
	// IndexUUID is the created index's UUID (CreateIndex).
	IndexUUID string `json:"index_uuid,omitempty"`
	// AllocationID is the new copy's (AllocateCopy) or the move target's
	// (MoveCopy).
	AllocationID string `json:"allocation_id,omitempty"`
	// Created: PutUser or PutRole made a new record (false: it replaced
	// one).
	Created bool `json:"created,omitempty"`
	// Found: DeleteUser or DeleteRole found the record it deleted.
	Found bool `json:"found,omitempty"`
	// Invalidated and PreviouslyInvalidated are the IDs of the API keys
	// InvalidateAPIKeys invalidated and found invalidated already, sorted.
	Invalidated           []string `json:"invalidated,omitempty"`
	PreviouslyInvalidated []string `json:"previously_invalidated,omitempty"`
}

// withApplied adds what the FSM reported applying the command.
func (r Result) withApplied(a Result) Result {
	r.Created, r.Found = a.Created, a.Found
	r.Invalidated, r.PreviouslyInvalidated = a.Invalidated, a.PreviouslyInvalidated
	return r
}

// New validates cfg and returns a Cluster; it opens nothing yet.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Timing = cfg.timing()
	cfg.Seeds = slices.Clone(cfg.Seeds)
	cfg.InitialNodes = slices.Clone(cfg.InitialNodes)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{cfg: cfg, log: log.With("node", cfg.NodeName), fsm: newFSM(), done: make(chan struct{})}
	c.disk.Store(&state.DiskUsage{})
	return c, nil
}

// Register registers the handler of proposals forwarded from other nodes
// on mux; call it before the fabric listens.
func (c *Cluster) Register(mux *fabric.Mux) {
	mux.Handle(methodPropose, fabric.HandlerFunc(c.serveProposal))
}

// Start opens Raft's stores and transport in DataDir/raft, joins gossip,
// bootstraps when it should, and starts the background work (the leader's
// duties while this node leads). It returns without waiting for a leader;
// Ready says when there is one. A node bootstraps only without Raft
// state: alone at once when GossipAddr is "", else — if its name is in
// InitialNodes — once gossip shows a live member for every initial name,
// none of them part of a cluster yet (every initial node then writes the
// same configuration). Any other node waits for the leader to add it.
func (c *Cluster) Start(ctx context.Context) (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.phase.Load() {
	case phaseClosed:
		return ErrClosed
	case phaseStarted:
		return errors.New("cluster: Start called twice")
	}
	uuid, err := readClusterUUID(vfs.OS, c.cfg.DataDir)
	if err != nil {
		return err
	}
	rn, err := openRaft(c.cfg, c.fsm, logadapt.Hclog(c.log, "raft"))
	if err != nil {
		return err
	}
	if s := c.fsm.State().ClusterUUID; s != "" {
		uuid = s // restored from a snapshot
	}
	c.rn = rn
	disk := c.readDisk()
	c.disk.Store(&disk)
	if c.cfg.GossipAddr != "" {
		local := c.cfg.localMeta(uuid)
		local.RaftAddr = rn.addr
		local.Disk = disk
		if c.ms, err = startMembership(c.cfg, local, c.log); err != nil {
			return errors.Join(err, rn.shutdown())
		}
	}
	if err := ctx.Err(); err != nil {
		c.shutdownLocked(false)
		return err
	}
	bg, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.phase.Store(phaseStarted)
	c.goWork(func() { c.watchLeadership(bg) })
	c.goWork(func() { c.followState(bg, uuid) })
	c.goWork(func() { c.diskLoop(bg) })
	if c.ms != nil {
		c.goWork(func() { c.rejoinLoop(bg) })
	}
	switch {
	case rn.hasState:
		c.log.Info("cluster: Raft state found; not bootstrapping", "raft_addr", rn.addr)
	case c.cfg.GossipAddr == "":
		if err := c.bootstrap([]raft.Server{c.self()}); err != nil {
			c.shutdownLocked(false)
			return err
		}
	case slices.Contains(c.cfg.InitialNodes, c.cfg.NodeName):
		c.goWork(func() { c.bootstrapWhenSeen(bg) })
	default:
		c.log.Info("cluster: waiting to be added by the leader", "seeds", c.cfg.Seeds)
	}
	return nil
}

func (c *Cluster) goWork(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

func (c *Cluster) self() raft.Server {
	return raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(c.cfg.NodeID), Address: raft.ServerAddress(c.rn.addr)}
}

// followState keeps what follows from the applied state outside the FSM:
// the cluster UUID file and the UUID in this node's gossip metadata.
func (c *Cluster) followState(ctx context.Context, known string) {
	ch, unwatch := c.fsm.Watch()
	defer unwatch()
	for {
		if uuid := c.State().ClusterUUID; uuid != "" && uuid != known {
			if err := writeClusterUUID(vfs.OS, c.cfg.DataDir, uuid); err != nil {
				c.log.Error(err.Error())
			} else {
				known = uuid
				c.log.Info("cluster: part of cluster", "cluster_uuid", uuid)
			}
			if c.ms != nil {
				c.ms.setClusterUUID(uuid)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

func (c *Cluster) rejoinLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.Timing.RejoinInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.ms.rejoin()
		}
	}
}

// State returns the latest applied state: immutable, never nil (an empty
// State before the first command).
func (c *Cluster) State() *state.State { return c.fsm.State() }

// Watch returns a channel that receives a signal after every applied
// command (coalesced: a slow reader gets one signal for many; it never
// blocks the FSM), and a function that unsubscribes.
func (c *Cluster) Watch() (<-chan struct{}, func()) { return c.fsm.Watch() }

// Await waits until ok(State()) holds and returns that state; or returns
// ctx's error when ctx ends, ErrClosed when the Cluster shuts down.
func (c *Cluster) Await(ctx context.Context, ok func(*state.State) bool) (*state.State, error) {
	ch, unwatch := c.fsm.Watch()
	defer unwatch()
	for {
		s := c.State()
		if ok(s) {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s, ctx.Err()
		case <-c.done:
			return s, ErrClosed
		}
	}
}

// Ready reports whether a leader is known and the cluster UUID is set.
func (c *Cluster) Ready() bool {
	if !c.isStarted() {
		return false
	}
	addr, _ := c.rn.r.LeaderWithID()
	return addr != "" && c.State().ClusterUUID != ""
}

func (c *Cluster) isStarted() bool { return c.phase.Load() == phaseStarted }

// maxCommandScan bounds how far CaughtUp looks back through the log for
// the last command (past Raft's own entries: no-ops, configurations).
const maxCommandScan = 4096

// CaughtUp reports whether State reflects every command this node knows
// committed: its FSM has applied the last command at or below Raft's
// commit index. (Raft's applied index counts entries handed to the FSM,
// not applied by it, so it cannot tell; after a restart the FSM replays
// the log, and a State from the middle of that replay is not one to act
// on.)
func (c *Cluster) CaughtUp() bool {
	if !c.isStarted() {
		return false
	}
	commit, _ := strconv.ParseUint(c.rn.r.Stats()["commit_index"], 10, 64)
	if commit == 0 {
		return false
	}
	var l raft.Log
	for i := commit; i > 0 && commit-i < maxCommandScan; i-- {
		if err := c.rn.store.GetLog(i, &l); err != nil {
			break // compacted: what is below is in the restored snapshot
		}
		if l.Type == raft.LogCommand {
			return c.State().Version >= i
		}
	}
	return c.rn.r.AppliedIndex() >= commit
}

// LocalNodeID returns this node's ID.
func (c *Cluster) LocalNodeID() string { return c.cfg.NodeID }

// Raft describes this node's Raft; the zero state.RaftInfo (state "Shutdown")
// before Start and after Shutdown.
func (c *Cluster) Raft() state.RaftInfo {
	if !c.isStarted() {
		return state.RaftInfo{State: raft.Shutdown.String()}
	}
	r := c.rn.r
	info := state.RaftInfo{NodeID: c.LocalNodeID(), State: r.State().String(), AppliedIndex: r.AppliedIndex(), LastIndex: r.LastIndex()}
	stats := r.Stats()
	info.Term, _ = strconv.ParseUint(stats["term"], 10, 64)
	info.CommitIndex, _ = strconv.ParseUint(stats["commit_index"], 10, 64)
	addr, id := r.LeaderWithID()
	info.LeaderID, info.LeaderAddr = string(id), string(addr)
	if n, ok := c.State().Nodes[info.LeaderID]; ok {
		info.LeaderName = n.Name
	}
	if f := r.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				info.Voters = append(info.Voters, string(s.ID))
			} else {
				info.Nonvoters = append(info.Nonvoters, string(s.ID))
			}
		}
	}
	return info
}

// Unreachable returns the node IDs that this node's gossip currently sees
// dead or leaving, whatever the committed state says yet, each with the
// time (this node's clock) gossip has seen it so (nil without gossip). The
// map must not be modified.
func (c *Cluster) Unreachable() map[string]time.Time {
	if c.isStarted() && c.ms != nil {
		return c.ms.Down()
	}
	return nil
}

// Members returns gossip's view of the nodes, by node ID; without gossip,
// this node alone.
func (c *Cluster) Members() []Member {
	if c.isStarted() && c.ms != nil { // phase first: it orders the read of ms after Start
		return c.ms.Members()
	}
	m := c.cfg.localMeta(c.State().ClusterUUID)
	status := "alive"
	if !c.isStarted() {
		status = "left"
	}
	return []Member{{ID: m.ID, Name: m.Name, HTTPAddr: m.HTTPAddr, FabricAddr: m.FabricAddr, RaftAddr: c.raftAddr(),
		RDMA: m.RDMA, ClusterUUID: m.ClusterUUID, Status: status}}
}

func (c *Cluster) raftAddr() string {
	if c.rn == nil {
		return ""
	}
	return c.rn.addr
}

// Shutdown leaves gossip (telling the others), stops the background work
// and shuts Raft down. It is idempotent; ctx bounds the goodbye.
func (c *Cluster) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase.Load() == phaseClosed {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c.rn != nil && c.rn.r.State() == raft.Leader {
		// Hand leadership over rather than leave the others to notice.
		if err := waitFuture(ctx, c.rn.r.LeadershipTransfer()); err != nil {
			c.log.Debug("cluster: leadership transfer at shutdown", "err", err)
		}
	}
	if c.ms != nil {
		c.ms.leave(time.Until(deadline(ctx)))
	}
	return c.shutdownLocked(true)
}

// crash stops the node as a crash would look to the others: no goodbye
// on gossip. For tests.
func (c *Cluster) crash() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase.Load() == phaseClosed {
		return nil
	}
	return c.shutdownLocked(false)
}

func (c *Cluster) shutdownLocked(left bool) error {
	c.phase.Store(phaseClosed)
	close(c.done)
	if c.stop != nil {
		c.stop()
	}
	if c.ms != nil && !left {
		c.ms.shutdown()
	}
	var err error
	if c.rn != nil {
		err = c.rn.shutdown()
	}
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("cluster: shutting down: %w", err)
	}
	return nil
}

// waitFuture waits for a Raft future until ctx ends (Raft's futures take
// no context). The goroutine that waits on a future given up on ends when
// Raft resolves it — except that Raft (v1.7) never resolves an entry its
// FSM loop had not applied when Raft shut down: that goroutine then waits
// until the process exits. Tests' leak checks ignore it
// (IgnoreAnyFunction of waitFuture.func1).
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
