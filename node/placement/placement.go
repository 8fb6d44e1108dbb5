// Package placement is the one adapter between the cluster's committed
// metadata (package cluster's Raft state and proposals) and what the shard
// layer owns and needs of it (shard.Metadata): it hands out the committed
// state (with what this node's gossip already knows of dead nodes), turns
// the shard layer's changes into cluster commands and the cluster's
// errors into the shard layer's.
package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// Adapter implements shard.Metadata over a *cluster.Cluster. Safe for
// concurrent use.
type Adapter struct {
	c *cluster.Cluster
	// caughtUp: this node has once applied everything it knew committed;
	// from then on its state only lags by the moment an apply takes.
	caughtUp atomic.Bool
	now      func() time.Time

	mu       sync.Mutex
	last     *state.State         // the committed state seen was derived from
	lastDown map[string]time.Time // and the unreachable nodes
	seen     *state.State
	// admitted holds, by node ID, when (this node's clock) this adapter
	// last saw the committed state take a node in as live: a new record of
	// it, live, between two states it handed out.
	admitted map[string]time.Time
}

var (
	_ shard.Metadata   = (*Adapter)(nil)
	_ shard.IndexAdmin = (*Adapter)(nil)
)

// New adapts c.
func New(c *cluster.Cluster) *Adapter {
	return &Adapter{c: c, now: time.Now, admitted: map[string]time.Time{}}
}

// State returns the latest applied state, in which a node that this
// node's gossip sees dead or leaving is not live even before the leader
// has committed it (so that a search or write through a node cut off from
// others does not wait on them), unless the committed state has taken the
// node in again since gossip saw it go: the leader's gossip saw it come
// back before this node's did (a killed node restarted, which gossip
// learns from a refutation that reaches the nodes one by one), and
// routing to it must not wait for this node's gossip to catch up. When
// gossip and the state agree it is the committed state itself; else a
// shallow copy with those nodes' records replaced, made once per state
// and set of unreachable nodes.
func (a *Adapter) State() *state.State {
	st, down := a.c.State(), a.c.Unreachable()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last != nil && st != a.last {
		noteAdmitted(a.admitted, a.last, st, a.now())
	}
	if st != a.last || !maps.Equal(down, a.lastDown) || a.seen == nil {
		a.seen, a.last, a.lastDown = withUnreachable(st, stillDown(down, a.admitted), a.c.LocalNodeID()), st, down
	}
	return a.seen
}

// noteAdmitted records in admitted, at now, every node that cur holds a
// new live record of, compared with prev (the state handed out before).
func noteAdmitted(admitted map[string]time.Time, prev, cur *state.State, now time.Time) {
	for id, n := range cur.Nodes {
		if n.Live && prev.Nodes[id] != n {
			admitted[id] = now
		}
	}
}

// stillDown is the nodes of down that the committed state has not taken
// in again since gossip saw them go.
func stillDown(down, admitted map[string]time.Time) map[string]bool {
	out := make(map[string]bool, len(down))
	for id, since := range down {
		if at, ok := admitted[id]; !ok || !at.After(since) {
			out[id] = true
		}
	}
	return out
}

// withUnreachable is st with the nodes in down (but local) not live.
func withUnreachable(st *state.State, down map[string]bool, local string) *state.State {
	var nodes map[string]*state.Node
	for id := range down {
		n, ok := st.Nodes[id]
		if !ok || id == local || !n.Live {
			continue
		}
		if nodes == nil {
			nodes = maps.Clone(st.Nodes)
		}
		dead := *n
		dead.Live = false
		nodes[id] = &dead
	}
	if nodes == nil {
		return st
	}
	seen := *st
	seen.Nodes = nodes
	return &seen
}

// LocalNode is this node's ID.
func (a *Adapter) LocalNode() string { return a.c.LocalNodeID() }

// AwaitState waits until ok holds on a newly applied state.
func (a *Adapter) AwaitState(ctx context.Context, ok func(*state.State) bool) (*state.State, error) {
	ch, stop := a.c.Watch()
	defer stop()
	for {
		if v := a.State(); ok(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Watch signals after every applied command.
func (a *Adapter) Watch() (<-chan struct{}, func()) { return a.c.Watch() }

// Ready is nil while this node knows a leader, once it has caught up with
// the committed log after it started (applied everything it then knew
// committed).
func (a *Adapter) Ready() error {
	if !a.c.Ready() {
		if a.caughtUp.Load() {
			return fmt.Errorf("%w: this node knows no cluster leader at the moment (it is cut off from most of the voters, or an election is under way); writes and metadata changes wait for one", vocab.ErrClusterBlocked)
		}
		return fmt.Errorf("%w: this node has not joined a cluster with a leader yet (see --seeds and --initial-nodes)", vocab.ErrClusterBlocked)
	}
	if a.caughtUp.Load() {
		return nil
	}
	if !a.c.CaughtUp() {
		r := a.c.Raft()
		return fmt.Errorf("%w: this node is catching up with the cluster's metadata (at version %d, %d committed)", vocab.ErrClusterBlocked, a.c.State().Version, r.CommitIndex)
	}
	a.caughtUp.Store(true)
	return nil
}

// Serving is nil once Ready has been nil (see shard.Metadata).
func (a *Adapter) Serving() error {
	if a.caughtUp.Load() {
		return nil
	}
	return a.Ready()
}

// propose commits cmd and translates the cluster's errors into the shard
// layer's sentinels.
func (a *Adapter) propose(ctx context.Context, cmd cluster.Command) (cluster.Result, error) {
	cmd.V = cluster.CommandVersion
	res, err := a.c.Propose(ctx, cmd)
	return res, shardErr(err)
}

// shardErr gives package cluster's Raft-level errors the shard layer's
// meaning (a proposal without a leader is a cluster block to a client),
// keeping their message; only the shard layer's sentinel stays for
// errors.Is (a second wrapped error would be rendered as a cause). The
// state's own errors (state.ErrIndexNotFound, …) are shared by both
// layers and pass as they are.
func shardErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range []struct{ from, to error }{
		{cluster.ErrStale, vocab.ErrStaleRouting},
		{cluster.ErrInvalidCommand, vocab.ErrInvalidRequest},
		{cluster.ErrNoLeader, vocab.ErrClusterBlocked},
		{cluster.ErrNotReady, vocab.ErrClusterBlocked},
		{cluster.ErrClosed, vocab.ErrClosed},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %v", m.to, err)
		}
	}
	return err
}

// CreateIndex proposes a new index; the leader places its primaries.
func (a *Adapter) CreateIndex(ctx context.Context, spec shard.IndexSpec) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdCreateIndex, CreateIndex: &cluster.CreateIndex{Index: state.Index{
		Name: spec.Name, NumberOfShards: spec.NumberOfShards, NumberOfReplicas: spec.NumberOfReplicas, Mapping: spec.Mapping,
		Settings: spec.Settings, Aliases: spec.Aliases}}})
	return err
}

// DeleteIndex proposes the index's removal.
func (a *Adapter) DeleteIndex(ctx context.Context, name, uuid string) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdDeleteIndex, DeleteIndex: &cluster.DeleteIndex{Name: name, UUID: uuid}})
	return err
}

// PutMapping proposes a mapping computed from baseVersion.
func (a *Adapter) PutMapping(ctx context.Context, name, uuid string, mapping json.RawMessage, baseVersion uint64) (uint64, error) {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdPutMapping, PutMapping: &cluster.PutMapping{
		Index: name, UUID: uuid, Mapping: mapping, BaseVersion: baseVersion}})
	if err != nil {
		return 0, err
	}
	return baseVersion + 1, nil
}

// UpdateReplicas proposes a new number_of_replicas.
func (a *Adapter) UpdateReplicas(ctx context.Context, name, uuid string, replicas int) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdUpdateIndexSettings, UpdateIndexSettings: &cluster.UpdateIndexSettings{
		Index: name, UUID: uuid, NumberOfReplicas: &replicas}})
	return err
}

// CopyStarted reports a copy open and serving.
func (a *Adapter) CopyStarted(ctx context.Context, indexUUID string, num int, allocationID string) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdStartCopy, StartCopy: &cluster.StartCopy{
		IndexUUID: indexUUID, Shard: num, AllocationID: allocationID}})
	return err
}

// CopyFailed reports a copy failed.
func (a *Adapter) CopyFailed(ctx context.Context, indexUUID string, num int, allocationID string, byTerm uint64, remove bool, reason string) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdFailCopy, FailCopy: &cluster.FailCopy{
		IndexUUID: indexUUID, Shard: num, AllocationID: allocationID, PrimaryTerm: byTerm, Remove: remove, Reason: reason}})
	return err
}

// UpdateAliases proposes alias actions, adding to each the UUID its index
// has in st.
func (a *Adapter) UpdateAliases(ctx context.Context, st *state.State, actions []state.AliasAction) error {
	cmd := &cluster.UpdateAliases{Actions: make([]state.AliasAction, 0, len(actions))}
	for _, act := range actions {
		ix, err := st.Index(act.Index)
		if err != nil {
			return err
		}
		act.Index, act.UUID = ix.Name, ix.UUID
		cmd.Actions = append(cmd.Actions, act)
	}
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdUpdateAliases, UpdateAliases: cmd})
	return err
}

// SetIndexClosed proposes closing or opening an index.
func (a *Adapter) SetIndexClosed(ctx context.Context, name, uuid string, closed bool) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdSetIndexClosed, SetIndexClosed: &cluster.SetIndexClosed{Index: name, UUID: uuid, Closed: closed}})
	return err
}

// UpdateIndexSettings proposes new values of stored index settings.
func (a *Adapter) UpdateIndexSettings(ctx context.Context, name, uuid string, settings map[string]json.RawMessage) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdUpdateIndexSettings, UpdateIndexSettings: &cluster.UpdateIndexSettings{
		Index: name, UUID: uuid, Settings: settings}})
	return err
}
