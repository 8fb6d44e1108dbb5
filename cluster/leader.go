package cluster

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/weftsearch/weft/cluster/state"
)

// watchLeadership runs the leader's duties while this node leads: it
// starts them when Raft says this node became leader and stops them (and
// waits for them) when it says it no longer is, or when ctx ends.
func (c *Cluster) watchLeadership(ctx context.Context) {
	type term struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	var cur *term
	halt := func() {
		if cur != nil {
			cur.cancel()
			<-cur.done
			cur = nil
		}
	}
	defer halt()
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-c.rn.notify:
			if !leader {
				halt()
				continue
			}
			if cur == nil {
				lctx, cancel := context.WithCancel(ctx)
				cur = &term{cancel: cancel, done: make(chan struct{})}
				go func(done chan struct{}) {
					defer close(done)
					(&leaderLoop{c: c, since: time.Now()}).run(lctx)
				}(cur.done)
			}
		}
	}
}

// leaderLoop is one term of leadership: after a Raft barrier (so the state
// holds everything earlier leaders committed) it sets the cluster UUID if
// there is none, then sets the elastic user's password while it was never
// set, keeps the Raft configuration and the node records in line with
// gossip, proposes what Plan says and the flood stage blocks
// (FloodStageBlocks), on every state change, membership change, change of
// this node's disk usage and AllocationInterval tick, until ctx ends.
type leaderLoop struct {
	c     *Cluster
	since time.Time // when this node became leader

	mu      sync.Mutex
	refusal string // the last refusal logged, so a stuck one is logged once

	// admitted holds, by node ID, the fabric address a member proved its
	// identity at (Config.Admit); refusedAt when its last proof failed.
	// Only the leader loop's goroutine uses them.
	admitted  map[string]string
	refusedAt map[string]time.Time
}

// admitRetry is how long after a failed proof of identity a member is
// asked again.
const admitRetry = 5 * time.Second

// admits reports whether member m may join the Raft configuration and the
// node records: without Config.Admit, always; with it, once m has proved
// its identity at its current fabric address (a failure is logged, and
// asked again after admitRetry).
func (l *leaderLoop) admits(ctx context.Context, m Member) bool {
	admit := l.c.cfg.Admit
	if admit == nil || m.ID == l.c.LocalNodeID() {
		return true
	}
	if l.admitted == nil {
		l.admitted, l.refusedAt = map[string]string{}, map[string]time.Time{}
	}
	if addr, ok := l.admitted[m.ID]; ok && addr == m.FabricAddr {
		return true
	}
	if at, ok := l.refusedAt[m.ID]; ok && time.Since(at) < admitRetry {
		return false
	}
	actx, cancel := context.WithTimeout(ctx, l.c.cfg.Timing.ProposeTimeout)
	defer cancel()
	if err := admit(actx, m); err != nil {
		l.refusedAt[m.ID] = time.Now()
		l.refuse("cluster: a gossip member that did not prove its identity over the fabric is not admitted (it needs a certificate of this cluster's CA naming it)",
			"name", m.Name, "member", m.ID, "fabric_addr", m.FabricAddr, "err", err)
		return false
	}
	delete(l.refusedAt, m.ID)
	l.admitted[m.ID] = m.FabricAddr
	return true
}

func (l *leaderLoop) run(ctx context.Context) {
	c := l.c
	c.log.Info("cluster: this node leads", "raft_addr", c.rn.addr)
	if err := l.barrier(ctx); err != nil {
		c.log.Debug("cluster: no barrier; leadership lost", "err", err)
		return
	}
	if c.State().ClusterUUID == "" {
		if err := l.propose(ctx, Command{SetClusterUUID: &SetClusterUUID{UUID: uuid.NewString()}}); err != nil {
			return
		}
	}
	applied, unwatch := c.fsm.Watch()
	defer unwatch()
	var members <-chan struct{}
	if c.ms != nil {
		var unwatchMembers func()
		members, unwatchMembers = c.ms.changed.Watch()
		defer unwatchMembers()
	}
	disk, unwatchDisk := c.diskChanged.Watch()
	defer unwatchDisk()
	tick := time.NewTicker(c.cfg.Timing.AllocationInterval)
	defer tick.Stop()
	for {
		l.bootstrapElasticPassword(ctx)
		l.reconcileMembers(ctx)
		usage := c.DiskUsage()
		l.allocate(ctx, usage)
		l.floodStage(ctx, usage)
		select {
		case <-ctx.Done():
			return
		case <-applied:
		case <-members:
		case <-disk:
		case <-tick.C:
		}
	}
}

// barrier waits until every entry of earlier terms is applied here.
func (l *leaderLoop) barrier(ctx context.Context) error {
	for {
		bctx, cancel := context.WithTimeout(ctx, l.c.cfg.Timing.ProposeTimeout)
		err := waitFuture(bctx, l.c.rn.r.Barrier(l.c.cfg.Timing.ProposeTimeout))
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
			return err
		}
		l.c.log.Warn("cluster: Raft barrier failed; trying again", "err", err)
	}
}

// propose commits one of the leader's own commands. It first applies the
// command to the current state (pure, cheap): one the state would refuse
// is not logged, so a refusal cannot wake the loop into proposing it
// again and again.
func (l *leaderLoop) propose(ctx context.Context, cmd Command) error {
	c := l.c
	cmd, err := cmd.normalized()
	if err == nil {
		st := c.State()
		cmd, _ = complete(cmd, st, time.Now())
		_, err = apply(st, st.Version+1, cmd)
	}
	if err == nil {
		_, err = c.proposeLocal(ctx, cmd)
	}
	if err != nil && ctx.Err() == nil {
		l.mu.Lock()
		if msg := err.Error(); msg != l.refusal {
			l.refusal = msg
			c.log.Warn("cluster: the leader's command was not committed", "command", cmd.Type, "err", err)
		}
		l.mu.Unlock()
	}
	return err
}

// memberTable is gossip's view of the nodes, with this node alive in it
// (alone without gossip).
func (l *leaderLoop) memberTable() map[string]Member {
	c := l.c
	out := map[string]Member{}
	if c.ms != nil {
		for _, m := range c.ms.Members() {
			out[m.ID] = m
		}
	}
	self := c.cfg.localMeta(c.State().ClusterUUID)
	gossip := ""
	if c.ms != nil {
		gossip = c.ms.Addr()
	}
	out[self.ID] = Member{ID: self.ID, Name: self.Name, HTTPAddr: self.HTTPAddr, FabricAddr: self.FabricAddr,
		RaftAddr: c.rn.addr, GossipAddr: gossip, RDMA: self.RDMA, ClusterUUID: self.ClusterUUID, Status: "alive"}
	return out
}

func isAlive(m Member) bool { return m.Status == "alive" }

// reconcileMembers brings the Raft configuration and the node records in
// line with gossip: live members of this cluster (or of none yet) are
// added to Raft (voters up to MaxVoters, then non-voters) and recorded;
// members gone are marked left, and removed from Raft after
// DeadNodeRemoval, a non-voter taking a voter's place.
func (l *leaderLoop) reconcileMembers(ctx context.Context) {
	c := l.c
	st := c.State()
	f := c.rn.r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := map[string]raft.Server{}
	voters := 0
	for _, s := range f.Configuration().Servers {
		servers[string(s.ID)] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	members := l.memberTable()
	now := time.Now()
	for _, id := range slices.Sorted(maps.Keys(members)) {
		m := members[id]
		if !isAlive(m) || (m.ClusterUUID != "" && m.ClusterUUID != st.ClusterUUID) || m.RaftAddr == "" {
			continue
		}
		if o, ok := st.NodeByName(m.Name); ok && o.ID != m.ID && o.Live && isAlive(members[o.ID]) {
			l.refuse("cluster: a node with a taken name is not admitted: stop it and give it another --node-name",
				"name", m.Name, "member", m.ID, "holder", o.ID)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		srv, in := servers[id]
		if rec, recorded := st.Nodes[id]; (!in || !recorded || !rec.Live) && !l.admits(ctx, m) {
			continue
		}
		switch {
		case !in && voters < c.cfg.maxVoters():
			if l.configure(ctx, c.rn.r.AddVoter(raft.ServerID(id), raft.ServerAddress(m.RaftAddr), 0, c.cfg.Timing.ProposeTimeout), "add voter", m) == nil {
				voters++
			}
		case !in:
			_ = l.configure(ctx, c.rn.r.AddNonvoter(raft.ServerID(id), raft.ServerAddress(m.RaftAddr), 0, c.cfg.Timing.ProposeTimeout), "add non-voter", m)
		case string(srv.Address) != m.RaftAddr && srv.Suffrage == raft.Voter:
			_ = l.configure(ctx, c.rn.r.AddVoter(raft.ServerID(id), raft.ServerAddress(m.RaftAddr), 0, c.cfg.Timing.ProposeTimeout), "update address", m)
		case string(srv.Address) != m.RaftAddr:
			_ = l.configure(ctx, c.rn.r.AddNonvoter(raft.ServerID(id), raft.ServerAddress(m.RaftAddr), 0, c.cfg.Timing.ProposeTimeout), "update address", m)
		}
		want := state.Node{ID: m.ID, Name: m.Name, HTTPAddr: m.HTTPAddr, FabricAddr: m.FabricAddr, RaftAddr: m.RaftAddr,
			GossipAddr: m.GossipAddr, RDMA: m.RDMA, Live: true}
		if rec, ok := st.Nodes[id]; !ok || *rec != want {
			_ = l.propose(ctx, Command{UpsertNode: &UpsertNode{Node: want}})
		}
	}
	gone := func(id string) (bool, time.Duration) {
		m, ok := members[id]
		switch {
		case !ok:
			return now.Sub(l.since) > c.cfg.Timing.GossipSettle, now.Sub(l.since)
		case !isAlive(m):
			return true, now.Sub(m.Since)
		}
		return false, 0
	}
	for _, id := range slices.Sorted(maps.Keys(st.Nodes)) {
		if left, _ := gone(id); left && st.Nodes[id].Live && ctx.Err() == nil {
			_ = l.propose(ctx, Command{NodeLeft: &NodeLeft{NodeID: id, AtMS: now.UnixMilli()}})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		left, since := gone(id)
		if id == c.cfg.NodeID || !left || since < c.cfg.Timing.DeadNodeRemoval || ctx.Err() != nil {
			continue
		}
		if l.configure(ctx, c.rn.r.RemoveServer(raft.ServerID(id), 0, c.cfg.Timing.ProposeTimeout), "remove", members[id]) == nil {
			if servers[id].Suffrage == raft.Voter {
				voters--
			}
			delete(servers, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		s := servers[id]
		if voters >= c.cfg.maxVoters() || ctx.Err() != nil {
			break
		}
		if m, ok := members[id]; ok && isAlive(m) && s.Suffrage != raft.Voter {
			if l.configure(ctx, c.rn.r.AddVoter(s.ID, s.Address, 0, c.cfg.Timing.ProposeTimeout), "promote to voter", m) == nil {
				voters++
			}
		}
	}
}

// configure waits for a change of the Raft configuration and logs it.
func (l *leaderLoop) configure(ctx context.Context, f raft.IndexFuture, what string, m Member) error {
	err := waitFuture(ctx, f)
	if err != nil {
		if ctx.Err() == nil {
			l.refuse("cluster: Raft configuration change failed", "change", what, "member", m.ID, "name", m.Name, "err", err)
		}
		return err
	}
	l.c.log.Info("cluster: Raft configuration changed", "change", what, "member", m.ID, "name", m.Name, "raft_addr", m.RaftAddr)
	return nil
}

// refuse logs a problem the loop will meet again, once until another one.
func (l *leaderLoop) refuse(msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg == l.refusal {
		return
	}
	l.refusal = msg
	l.c.log.Warn(msg, args...)
}

// allocate proposes what Plan says should happen next.
func (l *leaderLoop) allocate(ctx context.Context, disk map[string]state.DiskUsage) {
	for _, cmd := range Plan(l.c.State(), disk, time.Now().UnixMilli(), uuid.NewString) {
		if ctx.Err() != nil || l.propose(ctx, cmd) != nil {
			return
		}
	}
}
