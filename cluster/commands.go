package cluster

import (
	"encoding/json"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// CommandVersion is the version of the command encoding this build writes.
// The FSM applies commands of versions it knows and refuses others with
// ErrUnknownCommand (the same answer on every node, so state never
// diverges); a newer version is introduced only once every node can read it.
const CommandVersion = 1

// Command is one change of the cluster state: an entry of the Raft log and
// what Cluster.Propose takes. It is encoded as JSON:
// {"v":1,"type":"create_index","create_index":{...}}; exactly the field
// named by Type is set. Every command that touches an index names it by
// UUID as well as name, so a command meant for a deleted index never
// applies to a new one of the same name.
//
// Some commands are completed by the leader before they are logged
// (Cluster.Propose forwards them there): CreateIndex gets its UUID and the
// initial copies of its shards, MoveCopy its target allocation ID. Apply
// itself is a pure function of the state and the command: it reads no
// clock, no randomness and no disk; times come in the command.
type Command struct {
	V    int         `json:"v"`
	Type CommandType `json:"type"`

	SetClusterUUID      *SetClusterUUID      `json:"set_cluster_uuid,omitempty"`
	UpsertNode          *UpsertNode          `json:"upsert_node,omitempty"`
	NodeLeft            *NodeLeft            `json:"node_left,omitempty"`
	CreateIndex         *CreateIndex         `json:"create_index,omitempty"`
	DeleteIndex         *DeleteIndex         `json:"delete_index,omitempty"`
	PutMapping          *PutMapping          `json:"put_mapping,omitempty"`
	UpdateIndexSettings *UpdateIndexSettings `json:"update_index_settings,omitempty"`
	AllocateCopy        *AllocateCopy        `json:"allocate_copy,omitempty"`
	StartCopy           *StartCopy           `json:"start_copy,omitempty"`
	FailCopy            *FailCopy            `json:"fail_copy,omitempty"`
	MoveCopy            *MoveCopy            `json:"move_copy,omitempty"`
	CancelMove          *CancelMove          `json:"cancel_move,omitempty"`
	SetSettings         *SetSettings         `json:"set_settings,omitempty"`
	UpdateAliases       *UpdateAliases       `json:"update_aliases,omitempty"`
	SetIndexClosed      *SetIndexClosed      `json:"set_index_closed,omitempty"`

	PutUser             *PutUser             `json:"put_user,omitempty"`
	DeleteUser          *DeleteUser          `json:"delete_user,omitempty"`
	ChangePassword      *ChangePassword      `json:"change_password,omitempty"`
	SetUserEnabled      *SetUserEnabled      `json:"set_user_enabled,omitempty"`
	PutRole             *PutRole             `json:"put_role,omitempty"`
	DeleteRole          *DeleteRole          `json:"delete_role,omitempty"`
	CreateAPIKey        *CreateAPIKey        `json:"create_api_key,omitempty"`
	InvalidateAPIKeys   *InvalidateAPIKeys   `json:"invalidate_api_keys,omitempty"`
	SetReservedPassword *SetReservedPassword `json:"set_reserved_password,omitempty"`
}

// CommandType names a command.
type CommandType string

// Command types.
const (
	CmdSetClusterUUID      CommandType = "set_cluster_uuid"
	CmdUpsertNode          CommandType = "upsert_node"
	CmdNodeLeft            CommandType = "node_left"
	CmdCreateIndex         CommandType = "create_index"
	CmdDeleteIndex         CommandType = "delete_index"
	CmdPutMapping          CommandType = "put_mapping"
	CmdUpdateIndexSettings CommandType = "update_index_settings"
	CmdAllocateCopy        CommandType = "allocate_copy"
	CmdStartCopy           CommandType = "start_copy"
	CmdFailCopy            CommandType = "fail_copy"
	CmdMoveCopy            CommandType = "move_copy"
	CmdCancelMove          CommandType = "cancel_move"
	CmdSetSettings         CommandType = "set_settings"
	CmdUpdateAliases       CommandType = "update_aliases"
	CmdSetIndexClosed      CommandType = "set_index_closed"

	CmdPutUser             CommandType = "put_user"
	CmdDeleteUser          CommandType = "delete_user"
	CmdChangePassword      CommandType = "change_password"
	CmdSetUserEnabled      CommandType = "set_user_enabled"
	CmdPutRole             CommandType = "put_role"
	CmdDeleteRole          CommandType = "delete_role"
	CmdCreateAPIKey        CommandType = "create_api_key"
	CmdInvalidateAPIKeys   CommandType = "invalidate_api_keys"
	CmdSetReservedPassword CommandType = "set_reserved_password"
)

// SetClusterUUID sets State.ClusterUUID if it is empty; once set it never
// changes (a second SetClusterUUID with another value fails).
type SetClusterUUID struct {
	UUID string `json:"uuid"`
}

// UpsertNode records a node joining (or rejoining, or changing addresses):
// the record is replaced and marked live. A node that comes back (it was
// not live) gets its started copies back initializing: its node reports
// each started again once it has reopened it, or recovered it from the
// primary.
type UpsertNode struct {
	Node state.Node `json:"node"`
}

// NodeLeft marks a node not live from AtMS on. Its copies stay assigned
// (a returning node reuses them); the allocator decides what happens next.
type NodeLeft struct {
	NodeID string `json:"node_id"`
	AtMS   int64  `json:"at_ms"`
}

// CreateIndex adds an index. A proposer fills the definition (name,
// shard and replica counts, mapping, settings, aliases; UUID and CreationDateMS may
// be left empty for the leader to fill); the leader assigns the primaries
// (Index.Shards with one initializing primary copy each, PrimaryTerm 1)
// before logging it. Replica copies are added later by the allocator.
type CreateIndex struct {
	Index state.Index `json:"index"`
}

// DeleteIndex removes an index and its shard table; nodes delete its copies.
type DeleteIndex struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
}

// PutMapping replaces the index's mapping with Mapping if the committed
// MappingVersion still equals BaseVersion (else state.ErrMappingVersion: the
// proposer merges again from the newer mapping and retries). The new
// version is BaseVersion+1.
type PutMapping struct {
	Index       string          `json:"index"`
	UUID        string          `json:"uuid"`
	Mapping     json.RawMessage `json:"mapping"`
	BaseVersion uint64          `json:"base_version"`
}

// UpdateIndexSettings changes the dynamic index settings that are set
// (nil fields are left alone); Settings entries replace stored ones, and a
// JSON null value removes one.
type UpdateIndexSettings struct {
	Index            string                     `json:"index"`
	UUID             string                     `json:"uuid"`
	NumberOfReplicas *int                       `json:"number_of_replicas,omitempty"`
	DelayedTimeoutMS *int64                     `json:"delayed_timeout_ms,omitempty"`
	Settings         map[string]json.RawMessage `json:"settings,omitempty"`
}

// AllocateCopy assigns a new copy (initializing, not in sync) of a shard to
// a node: a replica, or a primary for a shard that has none.
type AllocateCopy struct {
	IndexUUID string     `json:"index_uuid"`
	Shard     int        `json:"shard"`
	Copy      state.Copy `json:"copy"`
}

// StartCopy marks an initializing copy started and in sync: its node has
// created it (a new primary) or it has recovered from the primary. For the
// target of a move it also completes the move in the same entry: the
// source copy goes, and the target takes its place — and its primary role,
// with the next primary term, so that writes the old primary still sends
// are refused as stale rather than mixed into the new primary's sequence.
type StartCopy struct {
	IndexUUID    string `json:"index_uuid"`
	Shard        int    `json:"shard"`
	AllocationID string `json:"allocation_id"`
}

// FailCopy takes a copy out of the in-sync set, because it failed or
// missed writes. With Remove it is also unassigned; without, it stays
// assigned but initializing (it must recover before it is in sync again).
// A failed primary is replaced in the same entry by an in-sync started
// replica on a live node, if there is one, with PrimaryTerm+1; if there is
// none the shard has no primary until one is allocated.
//
// A primary failing one of its replicas (it missed writes) names its own
// PrimaryTerm; the command is refused (ErrStale) when the shard has moved
// to a newer term, so a deposed primary cannot fail the copies that
// replaced it. 0 (the leader, or a copy reporting its own failure) skips
// the check.
type FailCopy struct {
	IndexUUID    string `json:"index_uuid"`
	Shard        int    `json:"shard"`
	AllocationID string `json:"allocation_id"`
	PrimaryTerm  uint64 `json:"primary_term,omitempty"`
	Remove       bool   `json:"remove"`
	Reason       string `json:"reason"`
}

// MoveCopy starts moving a started copy to another node: the target
// (initializing, RelocatingFrom the source) recovers from the primary and
// replaces the source when it starts. The proposer names the source by
// allocation ID and the target node; the leader fills TargetAllocationID.
type MoveCopy struct {
	IndexUUID          string `json:"index_uuid"`
	Shard              int    `json:"shard"`
	AllocationID       string `json:"allocation_id"`
	ToNode             string `json:"to_node"`
	TargetAllocationID string `json:"target_allocation_id"`
}

// CancelMove abandons a move: the target copy goes, the source stays.
type CancelMove struct {
	IndexUUID          string `json:"index_uuid"`
	Shard              int    `json:"shard"`
	TargetAllocationID string `json:"target_allocation_id"`
	Reason             string `json:"reason"`
}

// SetSettings replaces the cluster settings.
type SetSettings struct {
	Settings state.Settings `json:"settings"`
}

// UpdateAliases applies alias actions in order, atomically: if any action
// is refused none applies. Each action names its index by name and UUID.
type UpdateAliases struct {
	Actions []state.AliasAction `json:"actions"`
}

// SetIndexClosed closes an index (it refuses reads and writes) or opens
// it again.
type SetIndexClosed struct {
	Index  string `json:"index"`
	UUID   string `json:"uuid"`
	Closed bool   `json:"closed"`
}

// The security commands change State.Security. Secrets travel only as
// hashes, made on the proposing node: the FSM refuses a password hash that
// is not bcrypt and an API key hash that is not a hex SHA-256, so a clear
// secret cannot reach the log by mistake. The rules the FSM checks (names
// as auth.ValidateUsername and auth.ValidateRoleName say, hash forms) are
// part of the command version: every node must check the same ones.

// PutUser creates a native user or replaces one (Result.Created says
// which). An empty User.PasswordHash keeps an existing user's hash; a new
// user needs one. Reserved users are refused (only their password and
// enabled flag change, through ChangePassword and SetUserEnabled).
type PutUser struct {
	User auth.User `json:"user"`
}

// DeleteUser removes a native user (Result.Found says whether it
// existed). Reserved users cannot be deleted. The user's API keys stay
// (they stop authenticating without their owner).
type DeleteUser struct {
	Username string `json:"username"`
}

// ChangePassword replaces the password hash of a native user
// (ErrUserNotFound when there is none) or of a reserved user.
type ChangePassword struct {
	Username     string `json:"username"`
	PasswordHash string `json:"password_hash"`
}

// SetUserEnabled enables or disables a native user (ErrUserNotFound when
// there is none) or a reserved user.
type SetUserEnabled struct {
	Username string `json:"username"`
	Enabled  bool   `json:"enabled"`
}

// PutRole creates a role or replaces one (Result.Created says which).
// Built-in role names are refused. The role's privileges are checked by
// the proposer (auth.Role.Validate), not here: which privilege names exist
// may change between builds, and the FSM must answer alike on every node.
type PutRole struct {
	Name string    `json:"name"`
	Role auth.Role `json:"role"`
}

// DeleteRole removes a stored role (Result.Found says whether it existed).
// Built-in roles cannot be deleted.
type DeleteRole struct {
	Name string `json:"name"`
}

// CreateAPIKey stores a new API key (auth.NewAPIKey made it on the
// proposing node, with the SHA-256 of its secret). A key of that ID with
// the same hash is the same command retried and is accepted again.
type CreateAPIKey struct {
	Key auth.APIKey `json:"key"`
}

// InvalidateAPIKeys marks every key Filter matches invalidated;
// Result.Invalidated and Result.PreviouslyInvalidated list their IDs. An
// empty filter is refused: invalidating every key takes Name "*".
type InvalidateAPIKeys struct {
	Filter state.APIKeyFilter `json:"filter"`
}

// SetReservedPassword sets a reserved user's password hash. With IfUnset
// it is the bootstrap of the first start: refused with ErrAlreadySet when
// the user has a password already, so two leaders racing at the first
// start cannot replace the password one of them has shown the operator.
type SetReservedPassword struct {
	Username     string `json:"username"`
	PasswordHash string `json:"password_hash"`
	IfUnset      bool   `json:"if_unset,omitempty"`
}
