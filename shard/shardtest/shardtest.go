// Package shardtest runs the shard layer as a one-node cluster without
// Raft, for the tests of the layers above it (the HTTP API, Elasticsearch's
// YAML tests): an in-memory shard table that places every copy on the node,
// and a started Coordinator over a store in a directory. The real metadata
// is package cluster's, composed by package node.
package shardtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/weftsearch/weft/shard"
)

// NodeID is the one node's ID, and ClusterUUID the cluster's.
const (
	NodeID      = "n1"
	ClusterUUID = "shardtest-cluster"
)

// Node is a started one-node engine. Close stops it.
type Node struct {
	*shard.Coordinator
	store *shard.Store
}

// Start opens a store in dir and starts a coordinator over an in-memory
// shard table. The table is lost on Close; the data in dir is not reused.
func Start(dir string, cfg shard.Config, logger *slog.Logger) (*Node, error) {
	meta := NewMeta()
	st, err := shard.OpenStore(filepath.Join(dir, "shards"), cfg, meta, logger)
	if err != nil {
		return nil, err
	}
	n := &Node{Coordinator: shard.NewCoordinator(st, meta, nil, cfg, logger), store: st}
	n.Start()
	return n, nil
}

// Close stops the coordinator and closes the store.
func (n *Node) Close() error {
	return errors.Join(n.Coordinator.Close(), n.store.Close())
}

// Meta is shard.Metadata for one node, in memory: every copy is a primary
// on NodeID, and replicas are recorded but never placed (as on a lone
// Elasticsearch node, whose indices with replicas are yellow).
type Meta struct {
	mu       sync.Mutex
	v        *shard.View
	watchers map[chan struct{}]struct{}
}

var _ shard.Metadata = (*Meta)(nil)

// NewMeta returns an empty shard table with one live node.
func NewMeta() *Meta {
	return &Meta{watchers: map[chan struct{}]struct{}{}, v: &shard.View{Version: 1, ClusterUUID: ClusterUUID, LocalNode: NodeID,
		Nodes:   map[string]shard.NodeView{NodeID: {ID: NodeID, Name: NodeID, Live: true}},
		Indices: map[string]*shard.IndexView{}}}
}

// update applies fn to a copy of the view and publishes it.
func (m *Meta) update(fn func(v *shard.View) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	nv := *m.v
	nv.Indices = maps.Clone(m.v.Indices)
	if err := fn(&nv); err != nil {
		return err
	}
	nv.Version++
	m.v = &nv
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// View implements shard.Metadata.
func (m *Meta) View() *shard.View {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

// Watch implements shard.Metadata.
func (m *Meta) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	}
}

// AwaitView implements shard.Metadata.
func (m *Meta) AwaitView(ctx context.Context, ok func(*shard.View) bool) (*shard.View, error) {
	ch, stop := m.Watch()
	defer stop()
	for {
		if v := m.View(); ok(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ready implements shard.Metadata.
func (m *Meta) Ready() error { return nil }

// CreateIndex implements shard.Metadata.
func (m *Meta) CreateIndex(_ context.Context, spec shard.IndexSpec) error {
	return m.update(func(v *shard.View) error {
		if _, ok := v.Indices[spec.Name]; ok {
			return fmt.Errorf("%w: index [%s] already exists", shard.ErrIndexExists, spec.Name)
		}
		ix := &shard.IndexView{Name: spec.Name, UUID: uuid.NewString(), NumberOfShards: spec.NumberOfShards,
			NumberOfReplicas: spec.NumberOfReplicas, Mapping: spec.Mapping, MappingVersion: 1,
			CreationDate: time.Now().UTC().Truncate(time.Millisecond)}
		for range spec.NumberOfShards {
			ix.Shards = append(ix.Shards, shard.ShardView{PrimaryTerm: 1,
				Copies: []shard.CopyView{{AllocationID: uuid.NewString(), NodeID: NodeID, Primary: true}}})
		}
		v.Indices[spec.Name] = ix
		return nil
	})
}

// index returns a copy of the index that can be changed, by name and UUID.
func index(v *shard.View, name, id string) (*shard.IndexView, error) {
	cur, ok := v.Indices[name]
	if !ok || (id != "" && cur.UUID != id) {
		return nil, fmt.Errorf("%w: no such index [%s]", shard.ErrIndexNotFound, name)
	}
	ix := *cur
	ix.Shards = make([]shard.ShardView, len(cur.Shards))
	for k, sh := range cur.Shards {
		sh.Copies = append([]shard.CopyView(nil), sh.Copies...)
		sh.InSync = append([]string(nil), sh.InSync...)
		ix.Shards[k] = sh
	}
	v.Indices[name] = &ix
	return &ix, nil
}

// DeleteIndex implements shard.Metadata.
func (m *Meta) DeleteIndex(_ context.Context, name, id string) error {
	return m.update(func(v *shard.View) error {
		if _, err := index(v, name, id); err != nil {
			return err
		}
		delete(v.Indices, name)
		return nil
	})
}

// PutMapping implements shard.Metadata.
func (m *Meta) PutMapping(_ context.Context, name, id string, mapping json.RawMessage, base uint64) (uint64, error) {
	var ver uint64
	err := m.update(func(v *shard.View) error {
		ix, err := index(v, name, id)
		if err != nil {
			return err
		}
		if ix.MappingVersion != base {
			return fmt.Errorf("%w: at %d, not %d", shard.ErrMappingVersion, ix.MappingVersion, base)
		}
		ix.Mapping, ix.MappingVersion = mapping, base+1
		ver = ix.MappingVersion
		return nil
	})
	return ver, err
}

// UpdateReplicas implements shard.Metadata.
func (m *Meta) UpdateReplicas(_ context.Context, name, id string, replicas int) error {
	return m.update(func(v *shard.View) error {
		ix, err := index(v, name, id)
		if err != nil {
			return err
		}
		ix.NumberOfReplicas = replicas
		return nil
	})
}

// copyOp changes the copy alloc of shard num of the index with UUID id.
func (m *Meta) copyOp(id string, num int, alloc string, fn func(sh *shard.ShardView, k int)) error {
	return m.update(func(v *shard.View) error {
		cur, ok := v.IndexByUUID(id)
		if !ok {
			return fmt.Errorf("%w: index %s", shard.ErrIndexNotFound, id)
		}
		ix, _ := index(v, cur.Name, id)
		sh := &ix.Shards[num]
		for k := range sh.Copies {
			if sh.Copies[k].AllocationID == alloc {
				fn(sh, k)
				return nil
			}
		}
		return fmt.Errorf("%w: no copy %s", shard.ErrStaleRouting, alloc)
	})
}

// CopyStarted implements shard.Metadata.
func (m *Meta) CopyStarted(_ context.Context, id string, num int, alloc string) error {
	return m.copyOp(id, num, alloc, func(sh *shard.ShardView, k int) {
		sh.Copies[k].Started = true
		sh.InSync = append(sh.InSync, alloc)
	})
}

// CopyFailed implements shard.Metadata.
func (m *Meta) CopyFailed(_ context.Context, id string, num int, alloc string, remove bool, _ string) error {
	return m.copyOp(id, num, alloc, func(sh *shard.ShardView, k int) {
		sh.Copies[k].Started = false
		if remove {
			sh.Copies = append(sh.Copies[:k], sh.Copies[k+1:]...)
		}
	})
}
