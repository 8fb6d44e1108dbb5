package coord

import "errors"

var (
	// ErrAllShardsFailed: no shard of a search answered; it wraps the first
	// shard's error too (a malformed query fails this way on every shard).
	ErrAllShardsFailed = errors.New("all shards failed")
	// ErrPartialResults: some shards of a search failed and the request
	// does not allow partial results (see PartialFailureError).
	ErrPartialResults = errors.New("partial results not allowed")
)

var (
	// ErrNotSupported: the node's metadata cannot do what was asked (a
	// test double without IndexAdmin).
	ErrNotSupported = errors.New("not supported")
)
