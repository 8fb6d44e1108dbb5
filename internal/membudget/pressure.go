package membudget

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrRejected: a part of the node refused work because its share of the
// memory limit would be exceeded; nothing of the work was done. Retry
// later, or send less at once (429 es_rejected_execution_exception).
var ErrRejected = errors.New("rejected execution")

// Stage is a stage of a write, as Elasticsearch counts indexing pressure.
type Stage int

// The stages of a write: the node that received it from the client
// (coordinating), the node of the shard's primary, and the nodes of its
// replicas.
const (
	Coordinating Stage = iota
	Primary
	Replica
	numStages
)

func (s Stage) String() string {
	switch s {
	case Coordinating:
		return "coordinating"
	case Primary:
		return "primary"
	case Replica:
		return "replica"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// IndexingPressure bounds the bytes of write requests in flight on one
// node, as Elasticsearch's indexing pressure does. Each stage reserves a
// request's bytes when it starts and releases them when it ends, so an
// upstream stage holds its bytes until the stages it waits for are done
// (a coordinating request until its primaries answered, a primary until
// its replicas did).
//
//   - Coordinating and primary work is refused when the bytes of the
//     coordinating, primary and replica stages together would exceed the
//     limit.
//   - Replica work is refused only when the replica stage's own bytes
//     would exceed 1.5 times the limit: as the pressure builds, a node
//     stops taking new writes before it stops taking the replication of
//     writes it (or another node) already took.
//   - Work that must not fail for pressure (ReserveForced) is counted but
//     never refused.
//   - A primary on the coordinating node itself (PrimaryLocal) is counted
//     in the primary stage's figures but never refused and never counted
//     twice against the limit: its bytes are the coordinating stage's.
//
// All methods are safe for concurrent use and never block.
type IndexingPressure struct {
	limit int64

	// combined is coordinating + primary bytes, without the local
	// primaries' (counted in coordinating already).
	combined atomic.Int64
	current  [numStages]atomic.Int64
	total    [numStages]atomic.Int64
	// totalCombined is what combined ever took.
	totalCombined atomic.Int64
	rejections    [numStages]atomic.Int64
}

// NewIndexingPressure returns the accounting of a node whose coordinating
// and primary stages may hold limit bytes (limit > 0).
func NewIndexingPressure(limit int64) *IndexingPressure {
	if limit <= 0 {
		panic(fmt.Sprintf("membudget: indexing pressure limit %d must be positive", limit))
	}
	return &IndexingPressure{limit: limit}
}

// Limit is the coordinating and primary stages' limit in bytes.
func (p *IndexingPressure) Limit() int64 { return p.limit }

// ReplicaLimit is the replica stage's limit: 1.5 times Limit.
func (p *IndexingPressure) ReplicaLimit() int64 { return p.limit + p.limit/2 }

// Reservation is the bytes one request holds at one stage. Release gives
// them back; a nil Reservation's methods do nothing, so a caller may defer
// Release before it knows whether it reserved.
type Reservation struct {
	p      *IndexingPressure
	stage  Stage
	local  bool // a primary on the coordinating node: not in combined
	forced bool // counted, never refused (ReserveForced)

	mu       sync.Mutex
	n        int64
	released bool
}

// Reserve starts stage's accounting of a request of n bytes (n >= 0). It
// fails with ErrRejected, reserving nothing, when the stage's rule (see
// IndexingPressure) would be broken; the rejection is counted.
func (p *IndexingPressure) Reserve(stage Stage, n int64) (*Reservation, error) {
	r := &Reservation{p: p, stage: stage}
	if err := r.Grow(n); err != nil {
		return nil, err
	}
	return r, nil
}

// ReserveForced starts stage's accounting of work that must not be
// refused (a recovery's replay, a new primary's resync, as Elasticsearch
// forces them): counted like Reserve's, so that other work is refused
// while it holds its bytes, but never refused itself.
func (p *IndexingPressure) ReserveForced(stage Stage, n int64) *Reservation {
	r := &Reservation{p: p, stage: stage, forced: true}
	_ = r.Grow(n) // never refused
	return r
}

// PrimaryLocal starts the primary stage of a request whose coordinating
// stage runs on this node and holds its bytes: counted, never refused.
func (p *IndexingPressure) PrimaryLocal(n int64) *Reservation {
	r := &Reservation{p: p, stage: Primary, local: true}
	_ = r.Grow(n) // a local primary is never refused
	return r
}

// Grow adds n bytes (n >= 0) to the reservation: a request that learns its
// size as it is read (a bulk body parsed item by item) grows its
// reservation before it holds more. It fails with ErrRejected, leaving the
// reservation as it was, as Reserve does; the caller then releases it.
func (r *Reservation) Grow(n int64) error {
	if r == nil || n <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return fmt.Errorf("membudget: Grow after Release")
	}
	p := r.p
	switch {
	case r.local:
		p.current[Primary].Add(n)
	case r.stage == Replica:
		if cur := p.current[Replica].Add(n); !r.forced && cur > p.ReplicaLimit() {
			p.current[Replica].Add(-n)
			p.rejections[Replica].Add(1)
			return fmt.Errorf("%w: rejected execution of replica operation [replica_bytes=%d, replica_operation_bytes=%d, max_replica_bytes=%d]",
				ErrRejected, cur-n, r.n+n, p.ReplicaLimit())
		}
	default:
		combined := p.combined.Add(n)
		replica := p.current[Replica].Load()
		if !r.forced && combined+replica > p.limit {
			p.combined.Add(-n)
			p.rejections[r.stage].Add(1)
			return fmt.Errorf("%w: rejected execution of %s operation [coordinating_and_primary_bytes=%d, replica_bytes=%d, all_bytes=%d, %s_operation_bytes=%d, max_coordinating_and_primary_bytes=%d]",
				ErrRejected, r.stage, combined-n, replica, combined-n+replica, r.stage, r.n+n, p.limit)
		}
		p.totalCombined.Add(n)
		p.current[r.stage].Add(n)
	}
	p.total[r.stage].Add(n)
	r.n += n
	return nil
}

// Bytes is what the reservation holds.
func (r *Reservation) Bytes() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Release gives the reservation's bytes back. It may be called more than
// once; only the first call counts.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	p := r.p
	p.current[r.stage].Add(-r.n)
	if r.stage != Replica && !r.local {
		p.combined.Add(-r.n)
	}
}

// Stats are the figures Elasticsearch reports as a node's
// indexing_pressure.memory: the bytes each stage holds now (Current), what
// each ever took and the requests each refused (Total), and the limit.
type Stats struct {
	Current StageBytes
	Total   StageBytes
	// Rejections per stage: CoordinatingRejections, PrimaryRejections,
	// ReplicaRejections.
	CoordinatingRejections, PrimaryRejections, ReplicaRejections int64
	Limit                                                        int64
}

// StageBytes are bytes by stage: Combined is coordinating and primary
// without counting a local primary's bytes twice, All is Combined and
// Replica.
type StageBytes struct {
	Combined, Coordinating, Primary, Replica, All int64
}

// Stats returns the figures now (each read on its own: they may be a
// moment apart).
func (p *IndexingPressure) Stats() Stats {
	cur := StageBytes{Combined: p.combined.Load(), Coordinating: p.current[Coordinating].Load(), Primary: p.current[Primary].Load(), Replica: p.current[Replica].Load()}
	cur.All = cur.Combined + cur.Replica
	tot := StageBytes{Combined: p.totalCombined.Load(), Coordinating: p.total[Coordinating].Load(), Primary: p.total[Primary].Load(), Replica: p.total[Replica].Load()}
	tot.All = tot.Combined + tot.Replica
	return Stats{Current: cur, Total: tot, Limit: p.limit,
		CoordinatingRejections: p.rejections[Coordinating].Load(), PrimaryRejections: p.rejections[Primary].Load(), ReplicaRejections: p.rejections[Replica].Load()}
}
