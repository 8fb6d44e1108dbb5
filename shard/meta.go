package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Metadata is what the shard layer needs from the cluster's metadata: the
// committed view of indices and shard copies, and the changes it proposes.
// It is owned here and implemented by the node (over package cluster's
// Raft state); every method is safe for concurrent use. Proposals return
// once the change is committed and applied on the leader; the local View
// may lag behind it (AwaitView waits).
type Metadata interface {
	// View returns the latest committed view; it is immutable.
	View() *View
	// AwaitView waits until ok(View()) holds or ctx ends.
	AwaitView(ctx context.Context, ok func(*View) bool) (*View, error)
	// Watch signals (coalesced) after every change of View; stop ends it.
	Watch() (changed <-chan struct{}, stop func())
	// Serving is nil once Ready has been nil, even while this node knows no
	// leader any more: reads (searches, gets, index descriptions) go on with
	// the last View, as Elasticsearch's no_master_block: write allows, while
	// writes and metadata changes wait for Ready. Before that, it is Ready's
	// error.
	Serving() error
	// Ready is nil when this node belongs to a cluster with a known leader
	// and its View has caught up with the committed log (so that what the
	// View lacks is really gone), else an error wrapping ErrClusterBlocked
	// that says why not.
	Ready() error

	// CreateIndex defines an index; the leader places its primaries. It
	// fails with ErrIndexExists when the name is taken.
	CreateIndex(ctx context.Context, spec IndexSpec) error
	// DeleteIndex removes an index (by name and UUID) and all its copies.
	DeleteIndex(ctx context.Context, name, uuid string) error
	// PutMapping replaces the index's committed mapping if it is still at
	// baseVersion, returning the new version; ErrMappingVersion if not.
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
	Aliases map[string]AliasSpec
}

// AliasSpec is one alias of an index, as Elasticsearch defines it: another
// name the index is searched (and written) under, with an optional filter
// (a query object every search through the alias is restricted by) and
// routing values for searches and writes through it.
type AliasSpec struct {
	Filter        json.RawMessage `json:"filter,omitempty"`
	IndexRouting  string          `json:"index_routing,omitempty"`
	SearchRouting string          `json:"search_routing,omitempty"`
	// IsWriteIndex: nil when not set; true on at most one index of an
	// alias (the one writes through the alias go to).
	IsWriteIndex *bool `json:"is_write_index,omitempty"`
	IsHidden     bool  `json:"is_hidden,omitempty"`
}

// AliasAction is one step of an atomic alias update (Elasticsearch's
// _aliases actions): add or remove an alias of an index, or delete the
// index.
type AliasAction struct {
	Op    AliasOp
	Index string // a concrete index name
	Alias string
	Spec  AliasSpec // for AliasAdd
	// MustExist: a removal of an alias the index does not have fails.
	MustExist bool
}

// AliasOp is what an AliasAction does.
type AliasOp int

// Alias operations.
const (
	AliasAdd AliasOp = iota
	AliasRemove
	AliasRemoveIndex
)

// IndexAdmin is what index administration beyond Metadata needs from the
// cluster's metadata: aliases, opening and closing, and the index settings
// Weft stores. It is checked at run time (the node's placement adapter
// implements it); every method returns once the change is committed.
type IndexAdmin interface {
	// UpdateAliases applies the actions atomically (all or none); each
	// names an index by name, the adapter adds its UUID from view.
	UpdateAliases(ctx context.Context, view *View, actions []AliasAction) error
	// SetIndexClosed closes the index (it refuses reads and writes) or
	// opens it again.
	SetIndexClosed(ctx context.Context, name, uuid string, closed bool) error
	// UpdateIndexSettings replaces the given settings (a JSON null removes
	// one).
	UpdateIndexSettings(ctx context.Context, name, uuid string, settings map[string]json.RawMessage) error
}

// View is the shard layer's reading of the committed cluster metadata.
// Node builds one per committed state; it is immutable.
type View struct {
	// Version grows with every committed change.
	Version     uint64
	ClusterUUID string
	// LocalNode is this node's ID.
	LocalNode string
	Nodes     map[string]NodeView
	Indices   map[string]*IndexView // by name
	// RecoveryMaxBytesPerSec is the cluster's recovery throttle
	// (indices.recovery.max_bytes_per_sec; 0: none), nil when the cluster
	// leaves it to each node's Config.
	RecoveryMaxBytesPerSec *int64
}

// NodeView is one node as routing needs it.
type NodeView struct {
	ID, Name   string
	Live       bool
	HTTPAddr   string
	FabricAddr string
}

// IndexView is one index's definition and shard table.
type IndexView struct {
	Name             string
	UUID             string
	NumberOfShards   int
	NumberOfReplicas int
	Mapping          json.RawMessage
	MappingVersion   uint64
	CreationDate     time.Time
	// Settings are the index settings besides the shard and replica
	// counts, by flat key ("index.refresh_interval"), as given.
	Settings map[string]json.RawMessage
	// Aliases are the index's aliases, by alias name.
	Aliases map[string]AliasSpec
	// Closed: the index refuses reads and writes (ErrIndexClosed).
	Closed bool
	Shards []ShardView
}

// ShardView is one shard's copies.
type ShardView struct {
	PrimaryTerm uint64
	Copies      []CopyView
	InSync      []string
	// Started: a primary of the shard has started at some time, so the
	// shard holds data; a primary is never created empty again.
	Started bool
}

// CopyView is one assigned copy of a shard.
type CopyView struct {
	AllocationID   string
	NodeID         string
	Primary        bool
	Started        bool
	RelocatingFrom string
	RelocatingTo   string
}

// Index returns the named index.
func (v *View) Index(name string) (*IndexView, error) {
	if ix, ok := v.Indices[name]; ok {
		return ix, nil
	}
	return nil, fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, name)
}

// IndexByUUID returns the index with the given UUID.
func (v *View) IndexByUUID(uuid string) (*IndexView, bool) {
	for _, ix := range v.Indices {
		if ix.UUID == uuid {
			return ix, true
		}
	}
	return nil, false
}

// Active reports whether c serves requests: started, on a live node.
func (v *View) Active(c CopyView) bool {
	n, ok := v.Nodes[c.NodeID]
	return ok && n.Live && c.Started
}

// Primary returns the shard's primary copy.
func (s *ShardView) Primary() (CopyView, bool) {
	for _, c := range s.Copies {
		if c.Primary {
			return c, true
		}
	}
	return CopyView{}, false
}

// Copy returns the copy with the given allocation ID.
func (s *ShardView) Copy(allocationID string) (CopyView, bool) {
	for _, c := range s.Copies {
		if c.AllocationID == allocationID {
			return c, true
		}
	}
	return CopyView{}, false
}

// Health colours, worst first.
const (
	HealthRed    = "red"
	HealthYellow = "yellow"
	HealthGreen  = "green"
)

// ShardHealth is the health of shard num of ix, by the one rule every
// health report uses (Elasticsearch's): red without an active primary,
// yellow with fewer active replicas than ix.NumberOfReplicas, else green.
// A copy recovering into a move (RelocatingFrom set) counts for neither.
func (v *View) ShardHealth(ix *IndexView, num int) string {
	primary, replicas := false, 0
	for _, cp := range ix.Shards[num].Copies {
		if cp.RelocatingFrom != "" || !v.Active(cp) {
			continue
		}
		if cp.Primary {
			primary = true
		} else {
			replicas++
		}
	}
	switch {
	case !primary:
		return HealthRed
	case replicas < ix.NumberOfReplicas:
		return HealthYellow
	}
	return HealthGreen
}

// IndexHealth is the worst health of ix's shards (ShardHealth).
func (v *View) IndexHealth(ix *IndexView) string {
	status := HealthGreen
	for num := range ix.Shards {
		switch v.ShardHealth(ix, num) {
		case HealthRed:
			return HealthRed
		case HealthYellow:
			status = HealthYellow
		}
	}
	return status
}
