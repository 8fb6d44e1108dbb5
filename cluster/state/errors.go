package state

import "errors"

// Errors about what the state holds, shared by every layer that reads or
// changes it: the FSM refuses a command with them, the coordinator and
// the data node answer requests with them, and the HTTP layer maps them to
// statuses. Compare with errors.Is; they are wrapped with detail.
var (
	// ErrIndexNotFound: no index (or alias) of that name exists.
	ErrIndexNotFound = errors.New("index not found")
	// ErrIndexExists: the name of an index to create is taken.
	ErrIndexExists = errors.New("index already exists")
	// ErrMappingVersion: a mapping change was computed from a mapping
	// version that is no longer the committed one; merge again from the
	// newer mapping and retry.
	ErrMappingVersion = errors.New("mapping version changed")
	// ErrIndexBlocked: the index carries a block that refuses the request
	// (Index.WriteBlock); nothing was done (429 cluster_block_exception
	// for the flood stage's read_only_allow_delete block).
	ErrIndexBlocked = errors.New("index blocked")
)
