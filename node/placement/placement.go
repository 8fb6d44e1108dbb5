// Package placement is the one adapter between the cluster's committed
// metadata (package cluster's Raft state and proposals) and what the shard
// layer owns and needs of it (shard.Metadata): it converts each committed
// State into a shard.View once, and turns the shard layer's changes into
// cluster commands and the cluster's errors into the shard layer's.
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
	"github.com/weftsearch/weft/shard"
)

// Adapter implements shard.Metadata over a *cluster.Cluster. Safe for
// concurrent use.
type Adapter struct {
	c *cluster.Cluster
	// caughtUp: this node has once applied everything it knew committed;
	// from then on its view only lags by the moment an apply takes.
	caughtUp atomic.Bool

	mu       sync.Mutex
	last     *cluster.State  // the state view was built from
	lastDown map[string]bool // and the unreachable nodes
	view     *shard.View
}

var (
	_ shard.Metadata   = (*Adapter)(nil)
	_ shard.IndexAdmin = (*Adapter)(nil)
)

// New adapts c.
func New(c *cluster.Cluster) *Adapter { return &Adapter{c: c} }

// View returns the view of the latest applied state, in which a node that
// this node's gossip sees dead or leaving is not live even before the
// leader has committed it (so that a search or write through a node cut
// off from others does not wait on them). It is built once per state and
// set of unreachable nodes.
func (a *Adapter) View() *shard.View {
	st, down := a.c.State(), a.c.Unreachable()
	a.mu.Lock()
	defer a.mu.Unlock()
	if st != a.last || !maps.Equal(down, a.lastDown) || a.view == nil {
		v := ViewOf(st, a.c.LocalNodeID())
		for id := range down {
			if n, ok := v.Nodes[id]; ok && id != v.LocalNode {
				n.Live = false
				v.Nodes[id] = n
			}
		}
		a.view, a.last, a.lastDown = v, st, down
	}
	return a.view
}

// AwaitView waits until ok holds on the view of a newly applied state.
func (a *Adapter) AwaitView(ctx context.Context, ok func(*shard.View) bool) (*shard.View, error) {
	ch, stop := a.c.Watch()
	defer stop()
	for {
		if v := a.View(); ok(v) {
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
			return fmt.Errorf("%w: this node knows no cluster leader at the moment (it is cut off from most of the voters, or an election is under way); writes and metadata changes wait for one", shard.ErrClusterBlocked)
		}
		return fmt.Errorf("%w: this node has not joined a cluster with a leader yet (see --seeds and --initial-nodes)", shard.ErrClusterBlocked)
	}
	if a.caughtUp.Load() {
		return nil
	}
	if !a.c.CaughtUp() {
		r := a.c.Raft()
		return fmt.Errorf("%w: this node is catching up with the cluster's metadata (at version %d, %d committed)", shard.ErrClusterBlocked, a.c.State().Version, r.CommitIndex)
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

// ViewOf converts a committed cluster state into the shard layer's view.
func ViewOf(st *cluster.State, local string) *shard.View {
	v := &shard.View{Version: st.Version, ClusterUUID: st.ClusterUUID, LocalNode: local, RecoveryMaxBytesPerSec: st.Settings.RecoveryMaxBytesPerSec,
		Nodes: make(map[string]shard.NodeView, len(st.Nodes)), Indices: make(map[string]*shard.IndexView, len(st.Indices))}
	for id, n := range st.Nodes {
		v.Nodes[id] = shard.NodeView{ID: n.ID, Name: n.Name, Live: n.Live, HTTPAddr: n.HTTPAddr, FabricAddr: n.FabricAddr}
	}
	for name, ix := range st.Indices {
		iv := &shard.IndexView{Name: name, UUID: ix.UUID, NumberOfShards: ix.NumberOfShards, NumberOfReplicas: ix.NumberOfReplicas,
			Mapping: ix.Mapping, MappingVersion: ix.MappingVersion, CreationDate: time.UnixMilli(ix.CreationDateMS).UTC(),
			Settings: ix.Settings, Closed: ix.Closed, Aliases: aliasViews(ix.Aliases), Shards: make([]shard.ShardView, len(ix.Shards))}
		for k, sh := range ix.Shards {
			sv := shard.ShardView{PrimaryTerm: sh.PrimaryTerm, InSync: sh.InSync, Started: sh.Started, Copies: make([]shard.CopyView, len(sh.Copies))}
			for j, c := range sh.Copies {
				sv.Copies[j] = shard.CopyView{AllocationID: c.AllocationID, NodeID: c.NodeID, Primary: c.Primary,
					Started: c.State == cluster.CopyStarted, RelocatingFrom: c.RelocatingFrom, RelocatingTo: c.RelocatingTo}
			}
			iv.Shards[k] = sv
		}
		v.Indices[name] = iv
	}
	return v
}

func aliasViews(in map[string]cluster.Alias) map[string]shard.AliasSpec {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]shard.AliasSpec, len(in))
	for name, a := range in {
		out[name] = shard.AliasSpec(a)
	}
	return out
}

func clusterAliases(in map[string]shard.AliasSpec) map[string]cluster.Alias {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]cluster.Alias, len(in))
	for name, a := range in {
		out[name] = cluster.Alias(a)
	}
	return out
}

// propose commits cmd and translates the cluster's errors into the shard
// layer's sentinels.
func (a *Adapter) propose(ctx context.Context, cmd cluster.Command) (cluster.Result, error) {
	cmd.V = cluster.CommandVersion
	res, err := a.c.Propose(ctx, cmd)
	return res, shardErr(err)
}

// shardErr maps package cluster's errors onto package shard's.
func shardErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range []struct{ from, to error }{
		{cluster.ErrIndexExists, shard.ErrIndexExists},
		{cluster.ErrIndexNotFound, shard.ErrIndexNotFound},
		{cluster.ErrMappingVersion, shard.ErrMappingVersion},
		{cluster.ErrStale, shard.ErrStaleRouting},
		{cluster.ErrInvalidCommand, shard.ErrInvalidRequest},
		{cluster.ErrNoLeader, shard.ErrClusterBlocked},
		{cluster.ErrNotReady, shard.ErrClusterBlocked},
		{cluster.ErrClosed, shard.ErrClosed},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %v", m.to, err)
		}
	}
	return err
}

// CreateIndex proposes a new index; the leader places its primaries.
func (a *Adapter) CreateIndex(ctx context.Context, spec shard.IndexSpec) error {
	_, err := a.propose(ctx, cluster.Command{Type: cluster.CmdCreateIndex, CreateIndex: &cluster.CreateIndex{Index: cluster.Index{
		Name: spec.Name, NumberOfShards: spec.NumberOfShards, NumberOfReplicas: spec.NumberOfReplicas, Mapping: spec.Mapping,
		Settings: spec.Settings, Aliases: clusterAliases(spec.Aliases)}}})
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

// UpdateAliases proposes alias actions, naming each index by the UUID it
// has in view.
func (a *Adapter) UpdateAliases(ctx context.Context, view *shard.View, actions []shard.AliasAction) error {
	ops := map[shard.AliasOp]cluster.AliasActionType{shard.AliasAdd: cluster.AliasAdd, shard.AliasRemove: cluster.AliasRemove, shard.AliasRemoveIndex: cluster.AliasRemoveIndex}
	cmd := &cluster.UpdateAliases{}
	for _, act := range actions {
		ix, err := view.Index(act.Index)
		if err != nil {
			return err
		}
		cmd.Actions = append(cmd.Actions, cluster.AliasAction{Type: ops[act.Op], Index: ix.Name, UUID: ix.UUID, Alias: act.Alias,
			Spec: cluster.Alias(act.Spec), MustExist: act.MustExist})
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
