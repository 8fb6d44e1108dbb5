package fabric

import "context"

// Caller reaches other nodes' fabric by node ID: the one interface through
// which the cluster's metadata (Raft forwarding) and the data node
// (replication, recovery, the coordinator's calls to remote copies) call
// another node. The node implements it (a pool of adaptive connections
// addressed from the cluster's node records). It must be safe for
// concurrent use and return promptly when ctx ends; a call that fails with
// ErrClosed (its connection was closed or broke) must leave the pool to
// dial the node afresh for the next call.
type Caller interface {
	Call(ctx context.Context, nodeID string, method Method, payload []byte) ([]byte, error)
}
