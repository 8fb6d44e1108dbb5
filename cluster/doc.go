// Package cluster holds a Weft cluster together: membership and failure
// detection over hashicorp/memberlist (each node gossips its ID, name and
// addresses), and the cluster's metadata — nodes, index definitions with
// versioned mappings, the shard table with primary terms and in-sync sets —
// in a replicated state machine on hashicorp/raft with durable stores. The
// Raft leader allocates and moves shard copies; every node reads the
// committed State and reconciles its own copies with it.
//
// The Raft state also holds the security metadata (State.Security: users,
// roles, API keys and the reserved elastic user's password, only as
// hashes), which SecurityStore serves to security/auth. State's JSON
// leaves it out, so a State rendered for a client never shows it; only
// the Raft snapshots persist it. The elastic password is set by the first
// leader at the cluster's first start (Config.ElasticPassword, or a
// generated one handed to Config.ElasticPasswordGenerated) and reset with
// ResetElasticPassword.
//
// On disk, a node keeps DataDir/raft: raft.db (Raft's log and stable
// store, bolt), snapshots/ (the two latest state snapshots, JSON) and
// cluster_uuid (the cluster this state belongs to, gossiped from start-up
// so that another cluster refuses the node at once).
//
// It never imports the shard or index packages: mappings and uninterpreted
// settings are opaque JSON here, and what a shard copy holds is the shard
// layer's business.
package cluster
