package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/vocab"
)

// Writes: any node coordinates a Bulk. It resolves each op's index
// (creating it when allowed), groups the ops by shard, and sends each
// group to the shard's primary — through the local copy's write path, or
// over the fabric to the primary's node, which runs that same path and
// answers per item. A group is retried only when the receiving node
// refused it before doing anything (stale routing, primary not yet open);
// after a transport failure its outcome is unknown and its items fail
// with 503, as Elasticsearch's do.

// Write implements Copies for this node's own coordinator: the group runs
// through the local primary copy h.Alloc, if its primary term is h.Term.
// Its bytes are held by this node's coordinating stage already, so the
// primary stage counts them without refusing them (pressure.go).
func (s *Store) Write(_ context.Context, h Header, items []Item) error {
	r := s.pressure.PrimaryLocal(itemsBytes(items))
	defer r.Release()
	return s.write(h, items)
}

// write runs a group through the local primary copy h.Alloc; a group from
// another node's coordinator comes here from MethodBulk's handler, which
// holds its bytes at the primary stage.
func (s *Store) write(h Header, items []Item) error {
	allocationID, term := h.Alloc, h.Term
	if !s.beginWrite() {
		return vocab.ErrClosed
	}
	defer s.writes.Done()
	sc, ok := s.copy(allocationID)
	if !ok {
		return fmt.Errorf("%w: primary copy %s is not open on this node yet", vocab.ErrUnavailable, allocationID)
	}
	if t := sc.term.Load(); t != term {
		return fmt.Errorf("%w: copy %s has primary term %d, the request %d", vocab.ErrStaleRouting, allocationID, t, term)
	}
	if !sc.primary.Load() {
		return fmt.Errorf("%w: copy %s is not serving as primary (yet, or any more)", vocab.ErrUnavailable, allocationID)
	}
	sc.prepare(items)
	return sc.write(items)
}

// routingWait bounds how long a node waits for its own view to learn what a
// request routed by a newer view expects.
const routingWait = 2 * time.Second

// checkRouting verifies a request routed to copy alloc of a shard: same
// cluster, and the copy is this node's (and, if primary, its primary). When
// this node's view does not know the copy yet it waits briefly for it.
func (s *Store) checkRouting(ctx context.Context, h Header, primary bool) error {
	cluster, uuid, num, alloc := h.Cluster, h.Index, h.Shard, h.Alloc
	ok := func(v *state.State) bool {
		ix, found := v.IndexByUUID(uuid)
		if !found || num < 0 || num >= len(ix.Shards) {
			return false
		}
		cp, found := ix.Shards[num].Copy(alloc)
		return found && cp.NodeID == s.meta.LocalNode() && (!primary || cp.Primary)
	}
	v := s.meta.State()
	if v.ClusterUUID != cluster {
		return fmt.Errorf("%w: request for cluster %s reached a node of cluster %s", vocab.ErrStaleRouting, cluster, v.ClusterUUID)
	}
	if ok(v) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	if _, err := s.meta.AwaitState(wctx, ok); err != nil {
		return fmt.Errorf("%w: copy %s of shard %d of index %s is not %s on this node", vocab.ErrStaleRouting, alloc, num, uuid, map[bool]string{true: "the primary", false: "held"}[primary])
	}
	return nil
}

// Flags of an op on the wire.
const (
	opfAutoID = 1 << iota
	opfIfSeqNo
	opfIfTerm
	opfUpdate
	opfDocAsUpsert
	opfExternal    // a version follows; VersionExternal
	opfExternalGTE // a version follows; VersionExternalGTE
	opfNoDetectNoop
)

const opfKnown = opfAutoID | opfIfSeqNo | opfIfTerm | opfUpdate | opfDocAsUpsert | opfExternal | opfExternalGTE | opfNoDetectNoop

func encodeBulk(h Header, items []Item) []byte {
	size := 0
	for _, it := range items {
		size += 32 + len(it.Op.ID) + len(it.Op.Source)
		if u := it.Op.Update; u != nil {
			size += len(u.Doc) + len(u.Upsert)
		}
	}
	return request(h, size, func(e *enc) { encodeBulkItems(e, items) })
}

func encodeBulkItems(e *enc, items []Item) {
	e.uvarint(uint64(len(items)))
	for _, it := range items {
		op := it.Op
		var flags byte
		if it.AutoID {
			flags |= opfAutoID
		}
		if op.IfSeqNo != nil {
			flags |= opfIfSeqNo
		}
		if op.IfPrimaryTerm != nil {
			flags |= opfIfTerm
		}
		if op.Update != nil {
			flags |= opfUpdate
			if op.Update.DocAsUpsert {
				flags |= opfDocAsUpsert
			}
			if op.Update.NoDetectNoop {
				flags |= opfNoDetectNoop
			}
		}
		switch op.VersionType {
		case vocab.VersionExternal:
			flags |= opfExternal
		case vocab.VersionExternalGTE:
			flags |= opfExternalGTE
		}
		e.u8(byte(op.Type))
		e.u8(flags)
		e.str(op.ID)
		if op.IfSeqNo != nil {
			e.u64(*op.IfSeqNo)
		}
		if op.IfPrimaryTerm != nil {
			e.u64(*op.IfPrimaryTerm)
		}
		if op.VersionType != vocab.VersionInternal {
			e.varint(op.Version)
		}
		e.bytes(op.Source)
		if op.Update != nil {
			e.bytes(op.Update.Doc)
			e.bytes(op.Update.Upsert)
		}
	}
}

// decodeBulk decodes a bulk request into ops and result slots. The ops'
// byte slices alias p (valid while the handler runs).
// decodeBulk decodes a whole bulk request (the fuzz tests' entry).
func decodeBulk(p []byte) (Header, []Item, error) {
	d := dec{b: p}
	d.version()
	h := d.copyHeader()
	items := decodeBulkItems(&d)
	return h, items, d.end()
}

// decodeBulkItems decodes the items of a bulk request after its header.
func decodeBulkItems(d *dec) []Item {
	n := d.count(4)
	ops := make([]vocab.Op, n)
	results := make([]vocab.OpResult, n)
	items := make([]Item, n)
	for k := 0; k < n && d.err == nil; k++ {
		op := &ops[k]
		t := d.u8()
		if t > byte(vocab.OpDelete) {
			d.fail("unknown op type")
		}
		op.Type = vocab.OpType(t)
		flags := d.u8()
		if flags&^opfKnown != 0 || flags&(opfExternal|opfExternalGTE) == opfExternal|opfExternalGTE {
			d.fail("unknown op flags")
		}
		op.ID = d.str()
		if flags&opfIfSeqNo != 0 {
			v := d.u64()
			op.IfSeqNo = &v
		}
		if flags&opfIfTerm != 0 {
			v := d.u64()
			op.IfPrimaryTerm = &v
		}
		switch {
		case flags&opfExternal != 0:
			op.VersionType, op.Version = vocab.VersionExternal, d.varint()
		case flags&opfExternalGTE != 0:
			op.VersionType, op.Version = vocab.VersionExternalGTE, d.varint()
		}
		op.Source = d.bytes()
		if flags&opfUpdate != 0 {
			op.Update = &vocab.UpdateSpec{Doc: d.bytes(), Upsert: d.bytes(), DocAsUpsert: flags&opfDocAsUpsert != 0, NoDetectNoop: flags&opfNoDetectNoop != 0}
		}
		results[k].ID = op.ID
		items[k] = Item{Op: op, Result: &results[k], AutoID: flags&opfAutoID != 0}
	}
	return items
}

func encodeBulkReply(items []Item) []byte {
	e := enc{b: make([]byte, 0, 32*len(items)+8)}
	e.u8(wireVersion)
	e.uvarint(uint64(len(items)))
	for _, it := range items {
		r := it.Result
		e.str(r.Result)
		e.varint(r.Version)
		e.u64(r.SeqNo)
		e.u64(r.PrimaryTerm)
		e.uvarint(uint64(r.Copies))
		if r.Err != nil {
			code, msg := errCode(r.Err)
			e.u16(code + 1)
			e.str(msg)
		} else {
			e.u16(0)
		}
	}
	return e.b
}

// decodeBulkReply fills the items' results from a bulk reply.
func decodeBulkReply(p []byte, items []Item) error {
	d := dec{b: p}
	d.version()
	if n := d.count(1); d.err == nil && n != len(items) {
		return fmt.Errorf("%w: %d results for %d items", ErrBadMessage, n, len(items))
	}
	for _, it := range items {
		r := it.Result
		r.Result = d.str()
		r.Version = d.varint()
		r.SeqNo = d.u64()
		r.PrimaryTerm = d.u64()
		r.Copies = int(d.uvarint() & 0xffff)
		if code := d.u16(); code > 0 {
			r.Err = codeErr(code-1, d.str())
		}
	}
	return d.end()
}
