package vocab

import "errors"

// The errors a request to the data node can end with, wrapped with
// detail; test with errors.Is. They cross the fabric as codes (package
// shard's wire errors) and come back as the same sentinels, so that a
// coordinator and the HTTP layer see the same error for a local and a
// remote copy.
var (
	ErrInvalidIndexName = errors.New("invalid index name")
	ErrDocumentNotFound = errors.New("document not found")
	ErrVersionConflict  = errors.New("version conflict")
	ErrClosed           = errors.New("shard manager closed")
	ErrInvalidRequest   = errors.New("invalid request")

	// ErrClusterBlocked: this node cannot serve yet — it has not joined a
	// cluster, or no leader is known (503 cluster_block_exception).
	ErrClusterBlocked = errors.New("cluster block")
	// ErrUnavailable: a shard's copy cannot be reached now (no active
	// primary, its node is down); retryable (503 unavailable_shards_exception).
	ErrUnavailable = errors.New("shard unavailable")
	// ErrIndexClosed: the index is closed; open it to read or write it
	// (400 index_closed_exception).
	ErrIndexClosed = errors.New("index closed")
	// ErrContextMissing: a point in time's (or scroll's) reader context is
	// gone — expired, closed, or its node restarted (404
	// search_context_missing_exception).
	ErrContextMissing = errors.New("search context missing")
)

// ErrStaleRouting: the request was routed with an older (or newer) view of
// the shard table than the receiving copy's — the copy is no longer the
// primary, or the primary term differs. Nothing was done; the sender
// refreshes its view and retries.
var ErrStaleRouting = errors.New("stale routing")

// ErrTooManyScrollContexts and ErrTooManyPITContexts: the node already
// holds as many reader contexts of the kind as its limit allows
// (search.max_open_scroll_context, search.max_open_pit_context); nothing
// was opened. Retry once contexts are closed or expire (429, as
// Elasticsearch's too_many_scroll_contexts_exception).
var (
	ErrTooManyScrollContexts = errors.New("too many scroll contexts")
	ErrTooManyPITContexts    = errors.New("too many point in time contexts")
)
