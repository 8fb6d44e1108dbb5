package state

// RaftInfo describes one node's Raft as package cluster reports it (a
// report of the node, not part of the committed state; it lives here so
// that the HTTP layer reads it without importing Raft).
type RaftInfo struct {
	NodeID       string   `json:"node_id"`
	State        string   `json:"state"` // Leader, Follower, Candidate, Shutdown
	Term         uint64   `json:"term"`
	LeaderID     string   `json:"leader_id"`
	LeaderName   string   `json:"leader_name"`
	LeaderAddr   string   `json:"leader_addr"`
	Voters       []string `json:"voters"`    // node IDs
	Nonvoters    []string `json:"nonvoters"` // node IDs
	AppliedIndex uint64   `json:"applied_index"`
	CommitIndex  uint64   `json:"commit_index"`
	LastIndex    uint64   `json:"last_index"`
}
