package shard

import (
	"context"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/vocab"
)

// Indexing pressure on the data node (membudget.IndexingPressure): a
// group of writes holds its bytes at the primary stage until its replicas
// answered, and a replication message holds its bytes at the replica stage
// until it is logged. A group from another node's coordinator, or a
// replication message of new writes, is charged before it is decoded — its payload and
// OpOverhead for each operation it carries — and refused unread over the
// limit (membudget.ErrRejected, which crosses the fabric as its code). A
// group this node coordinated is already held by its coordinating stage:
// it is counted at the primary stage but never refused (Store.Write). A
// recovery's replay of the primary's log and a new primary's resync are
// counted at the replica stage but never refused, as Elasticsearch forces
// them: refusing them would keep a copy from ever recovering.
//
// A refused replication message fails the replica through the cluster as
// any other replication failure does (Store.replicate): the primary
// acknowledges the group only once the replica is out of the in-sync set,
// or not at all, so a refusal never loses an acknowledged write.

// itemsBytes is what a group of items is charged.
func itemsBytes(items []Item) int64 {
	var n int64
	for _, it := range items {
		n += it.Op.Bytes()
	}
	return n
}

// underPressure serves a request at stage: it reserves the request's
// payload and OpOverhead for each of the operations count finds in it
// (read from the payload without decoding them) before next decodes and
// handles it, and releases them once next has answered. A request count
// says may not be refused (a recovery's replay, a resync) is counted all
// the same.
func (s *Store) underPressure(stage membudget.Stage, count func(*dec) (n int, refusable bool), next fabric.HandlerFunc) fabric.HandlerFunc {
	return func(ctx context.Context, req *fabric.Request) ([]byte, error) {
		d := dec{b: req.Payload}
		d.version()
		d.copyHeader()
		n, refusable := count(&d) // 0 for a malformed message, which next refuses
		bytes := int64(len(req.Payload)) + int64(n)*vocab.OpOverhead
		var r *membudget.Reservation
		if refusable {
			var err error
			if r, err = s.pressure.Reserve(stage, bytes); err != nil {
				return nil, remoteErr(err)
			}
		} else {
			r = s.pressure.ReserveForced(stage, bytes)
		}
		defer r.Release()
		return next(ctx, req)
	}
}

// bulkCount reads the number of items of a bulk request after its header.
func bulkCount(d *dec) (int, bool) { return d.count(4), true }

// replicateCount reads the number of records of a replication message
// after its header, and whether they are a primary's new writes (which
// the replica may refuse).
func replicateCount(d *dec) (int, bool) {
	d.u64() // global checkpoint
	d.u64() // mapping version
	flags := d.u8()
	return d.count(1), flags&replWrite != 0
}
