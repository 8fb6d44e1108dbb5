package shard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// Writes: any node coordinates a Bulk. It resolves each op's index
// (creating it when allowed), groups the ops by shard, and sends each
// group to the shard's primary — through the local copy's write path, or
// over the fabric to the primary's node, which runs that same path and
// answers per item. A group is retried only when the receiving node
// refused it before doing anything (stale routing, primary not yet open);
// after a transport failure its outcome is unknown and its items fail
// with 503, as Elasticsearch's do.

// Bulk applies ops and returns one result per op, in op order. A bad item
// fails only itself (see OpResult.Status); the error is for whole-request
// failures (cancelled ctx, the node not in a cluster). Each touched shard
// logs its ops with one fsync (shared with concurrent Bulks) and indexes
// them as one batch before Bulk returns.
func (c *Coordinator) Bulk(ctx context.Context, ops []Op, opts WriteOptions) ([]OpResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := c.view(); err != nil {
		return nil, err
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	start := time.Now()
	results := make([]OpResult, len(ops))
	type key struct {
		uuid string
		num  int
	}
	type group struct {
		name  string
		items []Item
	}
	groups := map[key]*group{}
	var order []key
	for k := range ops {
		op := &ops[k]
		res := &results[k]
		res.Index, res.ID = op.Index, op.ID
		ix, err := c.indexForWrite(ctx, op)
		res.Index = op.Index
		if err != nil {
			if errors.Is(err, ErrClusterBlocked) || ctx.Err() != nil {
				return nil, err
			}
			res.Fail(statusOf(err), err)
			continue
		}
		autoID := false
		if op.ID == "" {
			if op.Type != OpIndex && op.Type != OpCreate {
				res.Fail(http.StatusBadRequest, fmt.Errorf("%w: an id is required for update and delete", ErrInvalidRequest))
				continue
			}
			op.ID, autoID = NewID(), true
			res.ID = op.ID
		}
		if len(op.ID) > 512 {
			res.Fail(http.StatusBadRequest, fmt.Errorf("%w: id [%.40s...] is too long, must be no longer than 512 bytes but was: %d", ErrInvalidRequest, op.ID, len(op.ID)))
			continue
		}
		kk := key{ix.UUID, ShardFor(op.ID, op.Routing, ix.NumberOfShards)}
		g := groups[kk]
		if g == nil {
			g = &group{name: ix.Name}
			groups[kk] = g
			order = append(order, kk)
		}
		g.items = append(g.items, Item{Op: op, Result: res, AutoID: autoID})
	}
	var wg sync.WaitGroup
	for _, kk := range order {
		g := groups[kk]
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.writeGroup(ctx, kk.uuid, kk.num, opts.WaitForActiveShards, g.items)
			ic := c.countersFor(g.name)
			for _, it := range g.items {
				switch {
				case it.Result.Err != nil:
				case it.Result.Result == "deleted":
					ic.delTotal.Add(1)
				case it.Result.Result != "noop":
					ic.indexTotal.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if len(order) > 0 {
		el := uint64(time.Since(start)) / uint64(len(order))
		for _, kk := range order {
			c.countersFor(groups[kk].name).indexNanos.Add(el)
		}
	}
	return results, nil // documents are searchable on return, whatever opts.Refresh (package doc)
}

// statusOf is the HTTP status of an item that failed before reaching its
// shard.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalidIndexName), errors.Is(err, ErrInvalidRequest), errors.Is(err, ErrIndexClosed):
		return http.StatusBadRequest
	case errors.Is(err, ErrIndexNotFound):
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// indexForWrite returns the op's index, creating it (one shard, one
// replica, dynamic mapping) if it is missing and writes may create it. An
// op naming an alias is pointed at the alias's write index (op.Index and
// op.Routing are rewritten); a closed index is ErrIndexClosed.
func (c *Coordinator) indexForWrite(ctx context.Context, op *Op) (*IndexView, error) {
	v := c.meta.View()
	if op.RequireAlias && !v.IsAlias(op.Index) {
		return nil, fmt.Errorf("%w: no such index [%s] and [require_alias] request flag is [true] and [%s] is not an alias", ErrIndexNotFound, op.Index, op.Index)
	}
	if _, ok := v.Indices[op.Index]; ok || v.IsAlias(op.Index) {
		ix, routing, err := v.SingleIndex(op.Index, op.Routing, true)
		if err != nil {
			return nil, err
		}
		op.Index, op.Routing = ix.Name, routing
		return ix, nil
	}
	if err := ValidateIndexName(op.Index); err != nil {
		return nil, err
	}
	missing := fmt.Errorf("%w: no such index [%s]", ErrIndexNotFound, op.Index)
	if !c.cfg.AutoCreateIndex || op.Type == OpDelete || (op.Type == OpUpdate && (op.Update == nil || (!op.Update.DocAsUpsert && len(op.Update.Upsert) == 0))) {
		return nil, missing
	}
	err := c.CreateIndex(ctx, op.Index, IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, nil)
	if err != nil && !errors.Is(err, ErrIndexExists) {
		return nil, err
	}
	v, err = c.meta.AwaitView(ctx, func(v *View) bool { _, ok := v.Indices[op.Index]; return ok })
	if err != nil {
		return nil, err
	}
	return v.Indices[op.Index], nil
}

// writeGroup sends one shard's items to its primary and fills their
// results, waiting (up to primaryWait) for an active primary — and for
// activeShards active copies — and retrying when the primary refused the
// group unapplied because routing changed.
func (c *Coordinator) writeGroup(ctx context.Context, uuid string, num, activeShards int, items []Item) {
	ctx, cancel := context.WithTimeout(ctx, primaryWait)
	defer cancel()
	for {
		v := c.meta.View()
		err := c.enoughActive(v, uuid, num, activeShards)
		if err == nil {
			err = c.tryWriteGroup(ctx, v, uuid, num, items)
		}
		if err == nil {
			return
		}
		if errors.Is(err, ErrStaleRouting) || errors.Is(err, ErrUnavailable) {
			if werr := c.awaitNewer(ctx, v); werr == nil {
				continue
			}
		}
		if ctx.Err() != nil && !errors.Is(err, ErrStaleRouting) && !errors.Is(err, ErrUnavailable) {
			err = ctx.Err()
		}
		for _, it := range items {
			if it.Result.Err == nil && it.Result.Result == "" {
				it.Result.Fail(statusForGroupErr(err), err)
			}
		}
		return
	}
}

func statusForGroupErr(err error) int {
	switch {
	case errors.Is(err, ErrIndexNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrUnavailable), errors.Is(err, ErrStaleRouting), errors.Is(err, fabric.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// enoughActive checks wait_for_active_shards against v.
func (c *Coordinator) enoughActive(v *View, uuid string, num, want int) error {
	ix, ok := v.IndexByUUID(uuid)
	if !ok {
		return fmt.Errorf("%w: the index was deleted", ErrIndexNotFound)
	}
	if want == AllShards {
		want = 1 + ix.NumberOfReplicas
	}
	if want <= 1 {
		return nil
	}
	active := 0
	for _, cp := range ix.Shards[num].Copies {
		if v.Active(cp) && cp.RelocatingFrom == "" {
			active++
		}
	}
	if active < want {
		return fmt.Errorf("%w: [%s][%d] Not enough active copies to meet shard count of [%d] (have %d, needed %d)", ErrUnavailable, ix.Name, num, want, active, want)
	}
	return nil
}

// awaitNewer waits for a view newer than v, or for a short while when none
// comes (a retry may succeed against the same view once a local copy has
// opened).
func (c *Coordinator) awaitNewer(ctx context.Context, v *View) error {
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := c.meta.AwaitView(wctx, func(cur *View) bool { return cur.Version > v.Version })
	if err != nil && ctx.Err() == nil {
		return nil
	}
	return ctx.Err()
}

// tryWriteGroup routes the group once by v.
func (c *Coordinator) tryWriteGroup(ctx context.Context, v *View, uuid string, num int, items []Item) error {
	ix, ok := v.IndexByUUID(uuid)
	if !ok {
		return fmt.Errorf("%w: the index was deleted", ErrIndexNotFound)
	}
	sh := &ix.Shards[num]
	p, ok := sh.Primary()
	if !ok || !v.Active(p) {
		return fmt.Errorf("%w: [%s][%d] primary shard is not active", ErrUnavailable, ix.Name, num)
	}
	node, err := c.copiesOn(v, p.NodeID)
	if err != nil {
		return fmt.Errorf("[%s][%d] primary: %w", ix.Name, num, err)
	}
	return node.Write(ctx, Header{Cluster: v.ClusterUUID, Index: uuid, Shard: num, Alloc: p.AllocationID, Term: sh.PrimaryTerm}, items)
}

// Write implements Copies: the group runs through the local primary copy
// h.Alloc, if its primary term is h.Term.
func (s *Store) Write(_ context.Context, h Header, items []Item) error {
	allocationID, term := h.Alloc, h.Term
	if !s.beginWrite() {
		return ErrClosed
	}
	defer s.writes.Done()
	sc, ok := s.copy(allocationID)
	if !ok {
		return fmt.Errorf("%w: primary copy %s is not open on this node yet", ErrUnavailable, allocationID)
	}
	if t := sc.term.Load(); t != term {
		return fmt.Errorf("%w: copy %s has primary term %d, the request %d", ErrStaleRouting, allocationID, t, term)
	}
	if !sc.primary.Load() {
		return fmt.Errorf("%w: copy %s is not serving as primary (yet, or any more)", ErrUnavailable, allocationID)
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
	ok := func(v *View) bool {
		ix, found := v.IndexByUUID(uuid)
		if !found || num < 0 || num >= len(ix.Shards) {
			return false
		}
		cp, found := ix.Shards[num].Copy(alloc)
		return found && cp.NodeID == v.LocalNode && (!primary || cp.Primary)
	}
	v := s.meta.View()
	if v.ClusterUUID != cluster {
		return fmt.Errorf("%w: request for cluster %s reached a node of cluster %s", ErrStaleRouting, cluster, v.ClusterUUID)
	}
	if ok(v) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	if _, err := s.meta.AwaitView(wctx, ok); err != nil {
		return fmt.Errorf("%w: copy %s of shard %d of index %s is not %s on this node", ErrStaleRouting, alloc, num, uuid, map[bool]string{true: "the primary", false: "held"}[primary])
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
		case VersionExternal:
			flags |= opfExternal
		case VersionExternalGTE:
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
		if op.VersionType != VersionInternal {
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
	ops := make([]Op, n)
	results := make([]OpResult, n)
	items := make([]Item, n)
	for k := 0; k < n && d.err == nil; k++ {
		op := &ops[k]
		t := d.u8()
		if t > byte(OpDelete) {
			d.fail("unknown op type")
		}
		op.Type = OpType(t)
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
			op.VersionType, op.Version = VersionExternal, d.varint()
		case flags&opfExternalGTE != 0:
			op.VersionType, op.Version = VersionExternalGTE, d.varint()
		}
		op.Source = d.bytes()
		if flags&opfUpdate != 0 {
			op.Update = &UpdateSpec{Doc: d.bytes(), Upsert: d.bytes(), DocAsUpsert: flags&opfDocAsUpsert != 0, NoDetectNoop: flags&opfNoDetectNoop != 0}
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
		e.u16(uint16(r.Status))
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
		r.Status = int(d.u16())
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
