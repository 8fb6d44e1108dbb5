package state

import (
	"encoding/json"
	"fmt"
	"slices"
)

// State is the cluster's committed metadata: what the Raft log has applied
// up to Version. A *State handed out by package cluster (Cluster.State, Watch) is an
// immutable snapshot: the FSM builds a new State for every command it
// applies (copying only what the command changes), so readers never lock
// and never see a half-applied command. Callers must not modify it.
type State struct {
	// Version is the Raft log index of the last command applied; it grows
	// with every applied command, so a node can wait until its view is at
	// least as new as another's.
	Version uint64 `json:"version"`
	// ClusterUUID is set once, by the first leader, and never changes. Nodes
	// of different clusters never merge (membership refuses them).
	ClusterUUID string `json:"cluster_uuid"`
	// Nodes are every node that ever joined, by node ID, live or not.
	Nodes map[string]*Node `json:"nodes"`
	// Indices are the index definitions and their shard tables, by name.
	Indices map[string]*Index `json:"indices"`
	// Settings are the cluster-wide settings (_cluster/settings).
	Settings Settings `json:"settings"`
	// Security is the security metadata (users, roles, API keys, the
	// reserved users' password hashes); nil before the first security
	// command. It is never part of State's JSON, which is what clients may
	// be shown: the Raft snapshot persists it beside (package cluster's snapshotDoc).
	Security *Security `json:"-"`
}

// Node is one node's record. Addresses come from its gossip metadata.
type Node struct {
	ID         string `json:"id"`   // a UUID kept in the node's data directory
	Name       string `json:"name"` // --node-name; unique among live nodes
	HTTPAddr   string `json:"http_addr"`
	FabricAddr string `json:"fabric_addr"` // the adaptive path list, "" when the fabric is off
	RaftAddr   string `json:"raft_addr"`
	GossipAddr string `json:"gossip_addr"`
	// RDMA describes the node's RDMA path ("" without one), e.g.
	// "rxe0/1 gid fe80::…", for diagnostics.
	RDMA string `json:"rdma,omitempty"`
	// Live is the leader's last word on the node: false once membership
	// declared it failed or it left, until it joins again.
	Live bool `json:"live"`
	// LeftAtMS is when (unix ms, as the proposing leader's clock read it)
	// the node stopped being live; 0 while live. Delayed reallocation
	// counts from it.
	LeftAtMS int64 `json:"left_at_ms,omitempty"`
}

// Settings are the persistent cluster settings.
type Settings struct {
	// ExcludeNames is cluster.routing.allocation.exclude._name: nodes (by
	// name) that copies are moved off and never allocated to (drain).
	ExcludeNames []string `json:"exclude_names,omitempty"`
	// Values are the other cluster settings the API stores, by flat key
	// ("search.default_allow_partial_results"), as strings; their meaning
	// is the API's.
	Values map[string]string `json:"values,omitempty"`
	// RecoveryMaxBytesPerSec is indices.recovery.max_bytes_per_sec: the
	// throttle of recovery file streams on every node (0: none); nil
	// leaves each node's own --recovery-max-bytes-per-sec.
	RecoveryMaxBytesPerSec *int64 `json:"recovery_max_bytes_per_sec,omitempty"`
}

// Excluded reports whether copies may not live on the node called name.
func (s Settings) Excluded(name string) bool { return slices.Contains(s.ExcludeNames, name) }

// Index is one index's definition and shard table. Mappings and the
// settings Weft does not interpret are opaque JSON here: the shard layer
// owns their meaning (package cluster never imports index or shard).
type Index struct {
	Name             string `json:"name"`
	UUID             string `json:"uuid"`
	NumberOfShards   int    `json:"number_of_shards"` // fixed at creation
	NumberOfReplicas int    `json:"number_of_replicas"`
	// DelayedTimeoutMS is index.unassigned.node_left.delayed_timeout: how
	// long a copy whose node left stays assigned to it (so a returning node
	// reuses it) before it is reallocated elsewhere.
	DelayedTimeoutMS int64 `json:"delayed_timeout_ms"`
	// Settings holds every other index setting as given (flat dotted keys,
	// e.g. "index.refresh_interval"), stored and returned, not interpreted.
	Settings map[string]json.RawMessage `json:"settings,omitempty"`
	// Mapping is the committed mapping (the "mappings" object) and
	// MappingVersion counts its changes; a change is accepted only against
	// the version it was computed from (compare-and-set).
	Mapping        json.RawMessage `json:"mapping"`
	MappingVersion uint64          `json:"mapping_version"`
	// SettingsVersion counts changes of the settings above.
	SettingsVersion uint64 `json:"settings_version"`
	CreationDateMS  int64  `json:"creation_date_ms"`
	// Aliases are the index's aliases by alias name. An alias name is
	// never also an index name, and at most one index is an alias's write
	// index (IsWriteIndex true).
	Aliases map[string]Alias `json:"aliases,omitempty"`
	// Closed: the index refuses reads and writes until it is opened again;
	// its shard table stays as it is (copies are kept and replicated).
	Closed bool `json:"closed,omitempty"`
	// Shards is the shard table, one entry per shard number.
	Shards []Shard `json:"shards"`
}

// Alias is one alias of an index: another name under which it is searched
// (and, if it is the alias's only index or its write index, written), as
// Elasticsearch's alias metadata. Filter is a query object, opaque here.
type Alias struct {
	Filter        json.RawMessage `json:"filter,omitempty"`
	IndexRouting  string          `json:"index_routing,omitempty"`
	SearchRouting string          `json:"search_routing,omitempty"`
	// IsWriteIndex: nil when not given; true on at most one index of the
	// alias.
	IsWriteIndex *bool `json:"is_write_index,omitempty"`
	IsHidden     bool  `json:"is_hidden,omitempty"`
}

// AliasIndices returns the names of the indices that carry the alias,
// sorted.
func (s *State) AliasIndices(alias string) []string {
	var out []string
	for name, ix := range s.Indices {
		if _, ok := ix.Aliases[alias]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Shard is one shard's entry in the shard table.
type Shard struct {
	// PrimaryTerm starts at 1 and grows by one with every promotion of a
	// new primary; it is never lowered.
	PrimaryTerm uint64 `json:"primary_term"`
	// Copies are the assigned copies: at most one primary, never two on one
	// node.
	Copies []Copy `json:"copies"`
	// InSync are the allocation IDs of the copies that hold every
	// acknowledged write; always a subset of Copies' allocation IDs. Only
	// an in-sync copy may be promoted.
	InSync []string `json:"in_sync"`
	// Started is set when a primary of this shard first starts: from then
	// on the shard holds acknowledged writes, so a shard that has lost
	// every in-sync copy stays without a primary (red) rather than getting
	// a new, empty one. Before that, a primary whose node died is simply
	// allocated again.
	Started bool `json:"started,omitempty"`
}

// CopyState is the lifecycle state of an assigned copy.
type CopyState string

// Copy states.
const (
	// CopyInitializing: assigned, not serving yet — a new primary being
	// created, or a replica or move target recovering from the primary.
	CopyInitializing CopyState = "INITIALIZING"
	// CopyStarted: open and serving on its node.
	CopyStarted CopyState = "STARTED"
)

// Copy is one assigned copy of a shard.
type Copy struct {
	// AllocationID is a fresh UUID for every copy ever created: a wiped
	// node that comes back is never mistaken for the copy it held.
	AllocationID string    `json:"allocation_id"`
	NodeID       string    `json:"node_id"`
	Primary      bool      `json:"primary"`
	State        CopyState `json:"state"`
	// RelocatingFrom is set on the target of a move: the allocation ID of
	// the copy it replaces once it has started.
	RelocatingFrom string `json:"relocating_from,omitempty"`
	// RelocatingTo is set on the source of a move: the target's allocation ID.
	RelocatingTo string `json:"relocating_to,omitempty"`
}

// Primary returns the shard's primary copy, or false when it has none.
func (s *Shard) Primary() (Copy, bool) {
	for _, c := range s.Copies {
		if c.Primary {
			return c, true
		}
	}
	return Copy{}, false
}

// Copy returns the copy with the given allocation ID.
func (s *Shard) Copy(allocationID string) (Copy, bool) {
	for _, c := range s.Copies {
		if c.AllocationID == allocationID {
			return c, true
		}
	}
	return Copy{}, false
}

// IsInSync reports whether the allocation ID is in the in-sync set.
func (s *Shard) IsInSync(allocationID string) bool { return slices.Contains(s.InSync, allocationID) }

// IndexByUUID returns the index with the given UUID.
func (s *State) IndexByUUID(uuid string) (*Index, bool) {
	for _, ix := range s.Indices {
		if ix.UUID == uuid {
			return ix, true
		}
	}
	return nil, false
}

// NodeByName returns the live node with the given name, else any node
// record with it.
func (s *State) NodeByName(name string) (*Node, bool) {
	var found *Node
	for _, n := range s.Nodes {
		if n.Name != name {
			continue
		}
		if n.Live {
			return n, true
		}
		found = n
	}
	return found, found != nil
}

// Active reports whether a copy serves: started and on a live node.
func (s *State) Active(c Copy) bool {
	n, ok := s.Nodes[c.NodeID]
	return ok && n.Live && c.State == CopyStarted
}

// NodeLive reports whether the node is known and live.
func (s *State) NodeLive(nodeID string) bool {
	n, ok := s.Nodes[nodeID]
	return ok && n.Live
}

// Promotable reports whether the shard has an in-sync copy other than
// except that is active (Active), so that it can be made primary.
func (s *State) Promotable(sh *Shard, except string) bool {
	return slices.ContainsFunc(sh.Copies, func(c Copy) bool {
		return c.AllocationID != except && sh.IsInSync(c.AllocationID) && s.Active(c)
	})
}

// Index returns the index called name, or an error wrapping
// ErrIndexNotFound.
func (s *State) Index(name string) (*Index, error) {
	if ix, ok := s.Indices[name]; ok {
		return ix, nil
	}
	return nil, fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, name)
}

// NodeName is the name of the node with the given ID, "" when the state
// has no such node.
func (s *State) NodeName(id string) string {
	if n, ok := s.Nodes[id]; ok {
		return n.Name
	}
	return ""
}
