package shard

import (
	"context"
	"errors"

	"github.com/weftsearch/weft/fabric"
)

// callRead is peers.Call for a request that only reads (see
// Remote.callRead): one that failed with fabric.ErrClosed is sent once
// more, on the connection the pool dials in place of the broken one.
func callRead(ctx context.Context, peers fabric.Caller, nodeID string, method fabric.Method, payload []byte) ([]byte, error) {
	reply, err := peers.Call(ctx, nodeID, method, payload)
	if errors.Is(err, fabric.ErrClosed) && ctx.Err() == nil {
		reply, err = peers.Call(ctx, nodeID, method, payload)
	}
	return reply, err
}
