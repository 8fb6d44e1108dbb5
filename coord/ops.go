package coord

import "time"

// RefreshPolicy is the refresh parameter of a write. Writes are searchable
// when Bulk returns whatever the policy (see the package doc).
type RefreshPolicy int

// Refresh policies.
const (
	RefreshFalse RefreshPolicy = iota
	RefreshTrue
	RefreshWaitFor
)

// WriteOptions are a write request's options.
type WriteOptions struct {
	// Refresh is the request's refresh policy.
	Refresh RefreshPolicy
	// WaitForActiveShards is how many copies of a shard (its primary
	// included) must be active before a write to it proceeds, as
	// Elasticsearch's wait_for_active_shards: 0 means 1, AllShards every
	// copy the index should have. A write waits for them (up to a minute,
	// or its context) and fails with ErrUnavailable otherwise.
	WaitForActiveShards int
	// Timeout, when positive, bounds how long a write waits for an active
	// primary and for WaitForActiveShards (Elasticsearch's timeout on
	// writes; the default wait is a minute). A write already on its
	// primary is not cut short: it is acknowledged or not as usual.
	Timeout time.Duration
}

// AllShards is WaitForActiveShards for every copy: 1 + number_of_replicas.
const AllShards = -1
