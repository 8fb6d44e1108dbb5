package shard

import (
	"context"
	"errors"

	"github.com/weftsearch/weft/fabric"
)

// Peers reaches the fabric of other nodes by node ID. It is owned here and
// implemented by the node (a pool of adaptive connections addressed from
// the cluster's node records). A call that fails with fabric.ErrClosed
// (its connection was closed or broke) must leave the pool to dial the node
// afresh for the next call.
type Peers interface {
	Call(ctx context.Context, nodeID string, method fabric.Method, payload []byte) ([]byte, error)
}

// callRead is peers.Call for a request that only reads (see
// Remote.callRead): one that failed with fabric.ErrClosed is sent once
// more, on the connection the pool dials in place of the broken one.
func callRead(ctx context.Context, peers Peers, nodeID string, method fabric.Method, payload []byte) ([]byte, error) {
	reply, err := peers.Call(ctx, nodeID, method, payload)
	if errors.Is(err, fabric.ErrClosed) && ctx.Err() == nil {
		reply, err = peers.Call(ctx, nodeID, method, payload)
	}
	return reply, err
}
