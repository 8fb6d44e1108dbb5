package coord

import "errors"

var (
	// ErrAllShardsFailed: no shard of a search answered; it wraps the first
	// shard's error too (a malformed query fails this way on every shard).
	ErrAllShardsFailed = errors.New("all shards failed")
)

var (
	// ErrNotSupported: the node's metadata cannot do what was asked (a
	// test double without IndexAdmin).
	ErrNotSupported = errors.New("not supported")
)
