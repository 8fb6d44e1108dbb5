package shard

import (
	"context"
	"encoding/json"

	"github.com/weftsearch/weft/cluster/state"
)

// Metadata is what the shard layer needs from the cluster's metadata: the
// committed state of indices and shard copies, and the changes it proposes.
// It is owned here and implemented by the node (over package cluster's
// Raft state); every method is safe for concurrent use. Proposals return
// once the change is committed and applied on the leader; the local State
// may lag behind it (AwaitState waits).
type Metadata interface {
	// State returns the latest committed state, as this node sees it: a
	// node that this node's membership already sees dead or leaving is not
	// live in it even before the leader has committed that. It is
	// immutable.
	State() *state.State
	// AwaitState waits until ok(State()) holds or ctx ends.
	AwaitState(ctx context.Context, ok func(*state.State) bool) (*state.State, error)
	// LocalNode is this node's ID in the state.
	LocalNode() string
	// Watch signals (coalesced) after every change of State; stop ends it.
	Watch() (changed <-chan struct{}, stop func())
	// Serving is nil once Ready has been nil, even while this node knows no
	// leader any more: reads (searches, gets, index descriptions) go on with
	// the last State, as Elasticsearch's no_master_block: write allows, while
	// writes and metadata changes wait for Ready. Before that, it is Ready's
	// error.
	Serving() error
	// Ready is nil when this node belongs to a cluster with a known leader
	// and its State has caught up with the committed log (so that what the
	// State lacks is really gone), else an error wrapping ErrClusterBlocked
	// that says why not.
	Ready() error

	// CreateIndex defines an index; the leader places its primaries. It
	// fails with state.ErrIndexExists when the name is taken.
	CreateIndex(ctx context.Context, spec IndexSpec) error
	// DeleteIndex removes an index (by name and UUID) and all its copies.
	DeleteIndex(ctx context.Context, name, uuid string) error
	// PutMapping replaces the index's committed mapping if it is still at
	// baseVersion, returning the new version; state.ErrMappingVersion if not.
	PutMapping(ctx context.Context, name, uuid string, mapping json.RawMessage, baseVersion uint64) (uint64, error)
	// UpdateReplicas changes number_of_replicas.
	UpdateReplicas(ctx context.Context, name, uuid string, replicas int) error
	// CopyStarted reports that a copy on this node is open and serving
	// (created, reopened or recovered).
	CopyStarted(ctx context.Context, indexUUID string, shard int, allocationID string) error
	// CopyFailed reports that a copy failed; with remove it is unassigned.
	// A primary failing one of its replicas names its own primary term
	// (byTerm); the cluster refuses it when the shard has moved to a newer
	// term (a deposed primary cannot fail the copies that replaced it). A
	// copy reporting its own failure passes 0.
	CopyFailed(ctx context.Context, indexUUID string, shard int, allocationID string, byTerm uint64, remove bool, reason string) error
}

// IndexSpec is what CreateIndex defines.
type IndexSpec struct {
	Name             string
	NumberOfShards   int
	NumberOfReplicas int
	Mapping          json.RawMessage
	// Settings are the other index settings (see IndexSettings.Other).
	Settings map[string]json.RawMessage
	// Aliases are the aliases the index is created with.
	Aliases map[string]state.Alias
}

// IndexAdmin is what index administration beyond Metadata needs from the
// cluster's metadata: aliases, opening and closing, and the index settings
// Weft stores. It is checked at run time (the node's placement adapter
// implements it); every method returns once the change is committed.
type IndexAdmin interface {
	// UpdateAliases applies the actions atomically (all or none); each
	// names an index by name, the adapter adds its UUID from st.
	UpdateAliases(ctx context.Context, st *state.State, actions []state.AliasAction) error
	// SetIndexClosed closes the index (it refuses reads and writes) or
	// opens it again.
	SetIndexClosed(ctx context.Context, name, uuid string, closed bool) error
	// UpdateIndexSettings replaces the given settings (a JSON null removes
	// one).
	UpdateIndexSettings(ctx context.Context, name, uuid string, settings map[string]json.RawMessage) error
}
