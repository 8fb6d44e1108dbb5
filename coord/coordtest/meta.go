package coordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// MemCluster is the shard layer's own test double of the cluster's
// metadata: one in-memory shard table shared by the test's nodes (each
// reads it through memMeta, which names it the local node), with
// primaries placed on the node holding the fewest. It can persist to a
// file, for tests that restart a node in another process. The real thing
// (Raft, memberlist) is package cluster, exercised with this layer in
// package node's tests.
type MemCluster struct {
	mu       sync.Mutex
	v        *state.State
	watchers map[chan struct{}]struct{}
	path     string                  // "" : not persisted
	frozen   map[string]*state.State // by node: the view it is stuck with (it hears of no change)
}

func NewMemCluster(t testing.TB, path string, nodes ...string) *MemCluster {
	mc := &MemCluster{watchers: map[chan struct{}]struct{}{}, path: path}
	if path != "" {
		if raw, err := os.ReadFile(path); err == nil {
			var v state.State
			require.NoError(t, json.Unmarshal(raw, &v))
			mc.v = &v
			return mc
		}
	}
	mc.v = &state.State{Version: 1, ClusterUUID: "test-cluster", Nodes: map[string]*state.Node{}, Indices: map[string]*state.Index{}}
	for _, n := range nodes {
		mc.v.Nodes[n] = &state.Node{ID: n, Name: n, Live: true}
	}
	return mc
}

// Freeze makes node id keep seeing the current view from now on, as a node
// cut off from the leader would.
func (mc *MemCluster) Freeze(id string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.frozen == nil {
		mc.frozen = map[string]*state.State{}
	}
	mc.frozen[id] = mc.v
}

// Node is the metadata as Node id sees it.
func (mc *MemCluster) Node(id string) *MemMeta { return &MemMeta{mc: mc, id: id} }

// Update applies fn to a copy of the view and publishes it.
func (mc *MemCluster) Update(fn func(v *state.State) error) error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	nv := *mc.v
	nv.Nodes = maps.Clone(mc.v.Nodes)
	nv.Indices = maps.Clone(mc.v.Indices)
	if err := fn(&nv); err != nil {
		return err
	}
	nv.Version++
	mc.v = &nv
	if mc.path != "" {
		raw, err := json.Marshal(mc.v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(mc.path, raw, 0o644); err != nil {
			return err
		}
	}
	for ch := range mc.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// SetLive marks a node up or down, as the cluster's failure detection would.
func (mc *MemCluster) SetLive(id string, live bool) {
	_ = mc.Update(func(v *state.State) error {
		n := *v.Nodes[id]
		n.Live = live
		v.Nodes[id] = &n
		return nil
	})
}

// CloneIndex returns a copy of the named index that can be changed.
func CloneIndex(v *state.State, name string) *state.Index {
	ix := *v.Indices[name]
	ix.Shards = make([]state.Shard, len(v.Indices[name].Shards))
	for k, sh := range v.Indices[name].Shards {
		sh.Copies = append([]state.Copy(nil), sh.Copies...)
		sh.InSync = append([]string(nil), sh.InSync...)
		ix.Shards[k] = sh
	}
	v.Indices[name] = &ix
	return &ix
}

type MemMeta struct {
	mc *MemCluster
	id string
}

var _ shard.Metadata = (*MemMeta)(nil)

func (m *MemMeta) State() *state.State {
	m.mc.mu.Lock()
	defer m.mc.mu.Unlock()
	if f, ok := m.mc.frozen[m.id]; ok {
		return f
	}
	return m.mc.v
}

func (m *MemMeta) LocalNode() string { return m.id }

func (m *MemMeta) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mc.mu.Lock()
	m.mc.watchers[ch] = struct{}{}
	m.mc.mu.Unlock()
	return ch, func() {
		m.mc.mu.Lock()
		delete(m.mc.watchers, ch)
		m.mc.mu.Unlock()
	}
}

func (m *MemMeta) AwaitState(ctx context.Context, ok func(*state.State) bool) (*state.State, error) {
	ch, stop := m.Watch()
	defer stop()
	for {
		if v := m.State(); ok(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (m *MemMeta) Ready() error { return nil }

func (m *MemMeta) Serving() error { return nil }

func (m *MemMeta) CreateIndex(_ context.Context, spec shard.IndexSpec) error {
	return m.mc.Update(func(v *state.State) error {
		if _, ok := v.Indices[spec.Name]; ok {
			return fmt.Errorf("%w: index [%s] already exists", state.ErrIndexExists, spec.Name)
		}
		load := map[string]int{}
		for _, ix := range v.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					load[c.NodeID]++
				}
			}
		}
		ix := &state.Index{Name: spec.Name, UUID: uuid.NewString(), NumberOfShards: spec.NumberOfShards,
			NumberOfReplicas: spec.NumberOfReplicas, Mapping: spec.Mapping, MappingVersion: 1, CreationDateMS: time.Now().UnixMilli()}
		for k := 0; k < spec.NumberOfShards; k++ {
			best := ""
			for id, n := range v.Nodes {
				if n.Live && (best == "" || load[id] < load[best] || (load[id] == load[best] && id < best)) {
					best = id
				}
			}
			load[best]++
			ix.Shards = append(ix.Shards, state.Shard{PrimaryTerm: 1, Copies: []state.Copy{{AllocationID: uuid.NewString(), NodeID: best, Primary: true}}})
		}
		v.Indices[spec.Name] = ix
		return nil
	})
}

func (m *MemMeta) DeleteIndex(_ context.Context, name, id string) error {
	return m.mc.Update(func(v *state.State) error {
		if ix, ok := v.Indices[name]; !ok || ix.UUID != id {
			return fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, name)
		}
		delete(v.Indices, name)
		return nil
	})
}

func (m *MemMeta) PutMapping(_ context.Context, name, id string, mapping json.RawMessage, base uint64) (uint64, error) {
	var ver uint64
	err := m.mc.Update(func(v *state.State) error {
		ix, ok := v.Indices[name]
		if !ok || ix.UUID != id {
			return fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, name)
		}
		if ix.MappingVersion != base {
			return fmt.Errorf("%w: at %d, not %d", state.ErrMappingVersion, ix.MappingVersion, base)
		}
		ix = CloneIndex(v, name)
		ix.Mapping, ix.MappingVersion = mapping, base+1
		ver = ix.MappingVersion
		return nil
	})
	return ver, err
}

func (m *MemMeta) UpdateReplicas(_ context.Context, name, id string, replicas int) error {
	return m.mc.Update(func(v *state.State) error {
		if ix, ok := v.Indices[name]; !ok || ix.UUID != id {
			return fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, name)
		}
		CloneIndex(v, name).NumberOfReplicas = replicas
		return nil
	})
}

// copyOp changes one copy; it is refused from a node that is not live
// (a dead or partitioned node reaches no leader).
func (m *MemMeta) copyOp(id string, num int, alloc string, fn func(sh *state.Shard, k int) error) error {
	return m.mc.Update(func(v *state.State) error {
		if n, ok := v.Nodes[m.id]; ok && !n.Live {
			return fmt.Errorf("%w: node %s is cut off from the cluster", vocab.ErrClusterBlocked, m.id)
		}
		ix, ok := v.IndexByUUID(id)
		if !ok {
			return fmt.Errorf("%w: index %s", state.ErrIndexNotFound, id)
		}
		ix = CloneIndex(v, ix.Name)
		sh := &ix.Shards[num]
		for k := range sh.Copies {
			if sh.Copies[k].AllocationID == alloc {
				return fn(sh, k)
			}
		}
		return fmt.Errorf("%w: no copy %s", vocab.ErrStaleRouting, alloc)
	})
}

func (m *MemMeta) CopyStarted(_ context.Context, id string, num int, alloc string) error {
	return m.copyOp(id, num, alloc, func(sh *state.Shard, k int) error {
		sh.Copies[k].State = state.CopyStarted
		sh.Started = sh.Started || sh.Copies[k].Primary
		if !slices.Contains(sh.InSync, alloc) {
			sh.InSync = append(sh.InSync, alloc)
		}
		return nil
	})
}

// CopyFailed follows package cluster's FailCopy: the copy leaves the
// in-sync set (and, with remove, the shard); a failed primary is replaced
// by an in-sync started replica on a live node with the next primary term,
// or, without one, stays the primary to be reopened.
func (m *MemMeta) CopyFailed(_ context.Context, id string, num int, alloc string, byTerm uint64, remove bool, _ string) error {
	var nodes map[string]*state.Node
	m.mc.mu.Lock()
	nodes = m.mc.v.Nodes
	m.mc.mu.Unlock()
	return m.copyOp(id, num, alloc, func(sh *state.Shard, k int) error {
		if byTerm != 0 && byTerm < sh.PrimaryTerm {
			return fmt.Errorf("%w: a primary of term %d cannot fail copies of term %d", vocab.ErrStaleRouting, byTerm, sh.PrimaryTerm)
		}
		wasPrimary := sh.Copies[k].Primary
		promotable := slices.ContainsFunc(sh.Copies, func(c state.Copy) bool {
			return c.AllocationID != alloc && (c.State == state.CopyStarted) && nodes[c.NodeID] != nil && nodes[c.NodeID].Live && slices.Contains(sh.InSync, c.AllocationID)
		})
		if wasPrimary && !remove && !promotable {
			// The only copy with every acknowledged write stays the
			// primary, in sync, to be reopened.
			sh.Copies[k].State = state.CopyInitializing
			sh.PrimaryTerm++
			return nil
		}
		sh.InSync = slices.DeleteFunc(sh.InSync, func(a string) bool { return a == alloc })
		sh.Copies[k].State, sh.Copies[k].Primary = state.CopyInitializing, false
		if remove {
			sh.Copies = append(sh.Copies[:k], sh.Copies[k+1:]...)
		}
		if !wasPrimary {
			return nil
		}
		for j := range sh.Copies {
			c := &sh.Copies[j]
			if (c.State == state.CopyStarted) && nodes[c.NodeID] != nil && nodes[c.NodeID].Live && slices.Contains(sh.InSync, c.AllocationID) {
				c.Primary = true
				sh.PrimaryTerm++
				return nil
			}
		}
		return nil
	})
}

// AddReplica assigns a new replica (initializing) of a shard to a node, as
// the allocator would.
func (mc *MemCluster) AddReplica(t testing.TB, name string, num int, node string) string {
	alloc := uuid.NewString()
	require.NoError(t, mc.Update(func(v *state.State) error {
		ix := CloneIndex(v, name)
		ix.Shards[num].Copies = append(ix.Shards[num].Copies, state.Copy{AllocationID: alloc, NodeID: node})
		return nil
	}))
	return alloc
}

// FailNode fails a node's copies as the leader would once the node is
// down: primaries are replaced by in-sync replicas, replicas leave the
// in-sync set.
func (mc *MemCluster) FailNode(t testing.TB, node string) {
	v := mc.Node(node).State()
	for _, ix := range v.Indices {
		for num, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.NodeID == node {
					require.NoError(t, mc.Node("leader").CopyFailed(context.Background(), ix.UUID, num, c.AllocationID, 0, false, "node left"))
				}
			}
		}
	}
}
