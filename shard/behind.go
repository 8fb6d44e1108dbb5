package shard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// A replica acknowledges replicated operations once they are in its log on
// disk, which is what makes them durable, and indexes them behind that
// acknowledgement, several replication messages to one bleve batch. bleve
// builds a segment per batch and merges segments in the background, so a
// replica that indexed every message alone (one primary group commit: tens
// of documents during a bulk load) spent about as much CPU as its primary,
// most of it on building and merging small segments. Whatever reads a
// replica's index first indexes what is behind (readable), and a refresh
// does too, so reads still see every acknowledged write. Unread, what is
// behind waits at most Config.ReplicaIndexDelay, and at most
// applyBehindOps operations or applyBehindBytes of source on a copy, and
// applyBehindNodeBytes on the node.
//
// A primary never has operations behind: it indexes each group before
// acknowledging it, and a replica indexes what is behind before it is
// promoted.

// With this many operations or source bytes waiting on a replica, or this
// many source bytes on all the node's replicas together, a replica indexes
// what it has waiting at once.
const (
	applyBehindOps       = 4096
	applyBehindBytes     = 8 << 20
	applyBehindNodeBytes = 64 << 20
)

// behind is a replica's queue of operations that are logged (in sequence
// order, contiguous) but not yet indexed.
type behind struct {
	// apply is held while operations taken from the queue are indexed, so
	// batches reach the index in sequence order. Lock order: the copy's
	// leader lock, then apply, then mu.
	apply sync.Mutex

	mu     sync.Mutex // guards the fields below
	ops    []index.Op
	bytes  int
	timer  *time.Timer // armed while ops is not empty and no apply is due
	kicked bool        // an apply was started for a full queue
	err    error       // an apply failed: the copy is failed and takes no more
	closed bool
}

// deferApply queues ops, which the copy has just logged, to be indexed
// behind their acknowledgement. It runs under the copy's leader lock; an
// error means an earlier batch could not be indexed (the copy is failed).
func (sc *shardCopy) deferApply(ops []index.Op) error {
	b := &sc.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	if b.closed {
		return vocab.ErrClosed
	}
	b.ops = append(b.ops, ops...)
	added := 0
	for k := range ops {
		added += len(ops[k].Source)
	}
	b.bytes += added
	node := sc.store.behindBytes.Add(int64(added))
	switch {
	case len(b.ops) >= applyBehindOps || b.bytes >= applyBehindBytes || node >= applyBehindNodeBytes:
		if !b.kicked {
			b.kicked = true
			go func() { _ = sc.catchUp() }()
		}
	case b.timer == nil:
		b.timer = time.AfterFunc(sc.store.cfg.ReplicaIndexDelay, func() { _ = sc.catchUp() })
	}
	return nil
}

// catchUp indexes every operation queued before it was called. It returns
// the error of a failed apply (then and ever after: the copy has been
// reported failed, and recovers). After close it does nothing: the log
// still holds what was queued, and replays it when the copy is opened.
func (sc *shardCopy) catchUp() error {
	b := &sc.behind
	b.apply.Lock()
	defer b.apply.Unlock()
	b.mu.Lock()
	ops, err, closed := b.ops, b.err, b.closed
	sc.store.behindBytes.Add(-int64(b.bytes))
	b.ops, b.bytes, b.kicked = nil, 0, false
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.mu.Unlock()
	if err != nil || closed || len(ops) == 0 {
		return err
	}
	if err := sc.idx.Apply(context.Background(), ops); err != nil {
		err = fmt.Errorf("shard %s: logged but not indexed (replayed on restart): %w", sc.name, err)
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		sc.logger.Error("shard copy failed: replicated operations could not be indexed", "shard", sc.name, "allocation_id", sc.meta.AllocationID, "err", err)
		sc.store.failCopy(sc, err.Error())
		return err
	}
	return nil
}

// readable returns the copy's index once every operation it has
// acknowledged is indexed.
func (sc *shardCopy) readable() (*index.Index, error) {
	if err := sc.catchUp(); err != nil {
		return nil, err
	}
	return sc.idx, nil
}

// closeBehind drops what is queued (the log replays it when the copy is
// opened again) and stops the timer; an apply in progress finishes first.
func (sc *shardCopy) closeBehind() {
	b := &sc.behind
	b.apply.Lock()
	defer b.apply.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	sc.store.behindBytes.Add(-int64(b.bytes))
	b.ops, b.bytes = nil, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
