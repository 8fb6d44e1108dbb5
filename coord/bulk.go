package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// Bulk applies ops and returns one result per op, in op order. A bad item
// fails only itself (its OpResult.Err); the error is for whole-request
// failures (cancelled ctx, the node not in a cluster). Each touched shard
// logs its ops with one fsync (shared with concurrent Bulks) and indexes
// them as one batch before Bulk returns.
func (c *Coordinator) Bulk(ctx context.Context, ops []vocab.Op, opts WriteOptions) ([]vocab.OpResult, error) {
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
	results := make([]vocab.OpResult, len(ops))
	type key struct {
		uuid string
		num  int
	}
	type group struct {
		name  string
		items []shard.Item
	}
	groups := map[key]*group{}
	var order []key
	for k := range ops {
		op := &ops[k]
		res := &results[k]
		res.Index, res.ID = op.Index, op.ID
		if err := checkID(op.ID); err != nil {
			res.Fail(err) // before indexForWrite: a refused item creates no index
			continue
		}
		ix, err := c.indexForWrite(ctx, op)
		res.Index = op.Index
		if err != nil {
			if errors.Is(err, vocab.ErrClusterBlocked) || ctx.Err() != nil {
				return nil, err
			}
			res.Fail(resolveFailure(err))
			continue
		}
		if err := ix.WriteBlock(); err != nil {
			res.Fail(err) // the flood stage's block: deletes of documents too, as Elasticsearch
			continue
		}
		autoID := false
		if op.ID == "" {
			if op.Type != vocab.OpIndex && op.Type != vocab.OpCreate {
				res.Fail(fmt.Errorf("%w: an id is required for update and delete", vocab.ErrInvalidRequest))
				continue
			}
			op.ID, autoID = NewID(), true
			res.ID = op.ID
		}
		kk := key{ix.UUID, ShardFor(op.ID, op.Routing, ix.NumberOfShards)}
		g := groups[kk]
		if g == nil {
			g = &group{name: ix.Name}
			groups[kk] = g
			order = append(order, kk)
		}
		g.items = append(g.items, shard.Item{Op: op, Result: res, AutoID: autoID})
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

// checkID applies the id rules of a write: ValidateID's, and
// Elasticsearch's limit of 512 bytes. An empty id (one to generate) passes.
func checkID(id string) error {
	if len(id) > 512 {
		return fmt.Errorf("%w: id [%.40s...] is too long, must be no longer than 512 bytes but was: %d", vocab.ErrInvalidRequest, Printable(id), len(id))
	}
	return ValidateID(id)
}

// resolveFailure is the failure of an item whose index could not be
// resolved or created: an error of a known kind (a bad name or request, a
// closed or missing index) as it is; any other means the metadata could
// not be reached or changed now (ErrUnavailable).
func resolveFailure(err error) error {
	for _, kind := range []error{vocab.ErrInvalidIndexName, vocab.ErrInvalidRequest, vocab.ErrIndexClosed, state.ErrIndexNotFound} {
		if errors.Is(err, kind) {
			return err
		}
	}
	return fmt.Errorf("%w: %v", vocab.ErrUnavailable, err)
}

// indexForWrite returns the op's index, creating it (one shard, one
// replica, dynamic mapping) if it is missing and writes may create it. An
// op naming an alias is pointed at the alias's write index (op.Index and
// op.Routing are rewritten); a closed index is ErrIndexClosed.
func (c *Coordinator) indexForWrite(ctx context.Context, op *vocab.Op) (*state.Index, error) {
	v := c.meta.State()
	if op.RequireAlias && !IsAlias(v, op.Index) {
		return nil, fmt.Errorf("%w: no such index [%s] and [require_alias] request flag is [true] and [%s] is not an alias", state.ErrIndexNotFound, op.Index, op.Index)
	}
	if _, ok := v.Indices[op.Index]; ok || IsAlias(v, op.Index) {
		ix, routing, err := SingleIndex(v, op.Index, op.Routing, true)
		if err != nil {
			return nil, err
		}
		op.Index, op.Routing = ix.Name, routing
		return ix, nil
	}
	if err := ValidateIndexName(op.Index); err != nil {
		return nil, err
	}
	missing := fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, op.Index)
	if !c.cfg.AutoCreateIndex || op.Type == vocab.OpDelete || (op.Type == vocab.OpUpdate && (op.Update == nil || (!op.Update.DocAsUpsert && len(op.Update.Upsert) == 0))) {
		return nil, missing
	}
	err := c.CreateIndex(ctx, op.Index, IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}, nil)
	if err != nil && !errors.Is(err, state.ErrIndexExists) {
		return nil, err
	}
	v, err = c.meta.AwaitState(ctx, func(v *state.State) bool { _, ok := v.Indices[op.Index]; return ok })
	if err != nil {
		return nil, err
	}
	return v.Indices[op.Index], nil
}

// writeGroup sends one shard's items to its primary and fills their
// results, waiting (up to primaryWait) for an active primary — and for
// activeShards active copies — and retrying when the primary refused the
// group unapplied because routing changed.
func (c *Coordinator) writeGroup(ctx context.Context, uuid string, num, activeShards int, items []shard.Item) {
	ctx, cancel := context.WithTimeout(ctx, primaryWait)
	defer cancel()
	for {
		v := c.meta.State()
		err := c.enoughActive(v, uuid, num, activeShards)
		if err == nil {
			err = c.tryWriteGroup(ctx, v, uuid, num, items)
		}
		if err == nil {
			return
		}
		if errors.Is(err, vocab.ErrStaleRouting) || errors.Is(err, vocab.ErrUnavailable) {
			if werr := c.awaitNewer(ctx, v); werr == nil {
				continue
			}
		}
		if ctx.Err() != nil && !errors.Is(err, vocab.ErrStaleRouting) && !errors.Is(err, vocab.ErrUnavailable) {
			err = ctx.Err()
		}
		for _, it := range items {
			if it.Result.Err == nil && it.Result.Result == "" {
				it.Result.Fail(groupFailure(err))
			}
		}
		return
	}
}

// groupFailure is the failure of the items of a write group that never
// reached a primary that could take it: giving up waiting (ctx), a broken
// connection or routing that stayed stale mean the shard is unavailable
// (ErrUnavailable); any other error stays what it is.
func groupFailure(err error) error {
	switch {
	case errors.Is(err, vocab.ErrUnavailable), errors.Is(err, state.ErrIndexNotFound):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, vocab.ErrStaleRouting), errors.Is(err, fabric.ErrClosed):
		return fmt.Errorf("%w: %w", vocab.ErrUnavailable, err)
	}
	return err
}

// enoughActive checks wait_for_active_shards against v.
func (c *Coordinator) enoughActive(v *state.State, uuid string, num, want int) error {
	ix, ok := v.IndexByUUID(uuid)
	if !ok {
		return fmt.Errorf("%w: the index was deleted", state.ErrIndexNotFound)
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
		return fmt.Errorf("%w: [%s][%d] Not enough active copies to meet shard count of [%d] (have %d, needed %d)", vocab.ErrUnavailable, ix.Name, num, want, active, want)
	}
	return nil
}

// awaitNewer waits for a view newer than v, or for a short while when none
// comes (a retry may succeed against the same view once a local copy has
// opened).
func (c *Coordinator) awaitNewer(ctx context.Context, v *state.State) error {
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := c.meta.AwaitState(wctx, func(cur *state.State) bool { return cur.Version > v.Version })
	if err != nil && ctx.Err() == nil {
		return nil
	}
	return ctx.Err()
}

// tryWriteGroup routes the group once by v.
func (c *Coordinator) tryWriteGroup(ctx context.Context, v *state.State, uuid string, num int, items []shard.Item) error {
	ix, ok := v.IndexByUUID(uuid)
	if !ok {
		return fmt.Errorf("%w: the index was deleted", state.ErrIndexNotFound)
	}
	sh := &ix.Shards[num]
	p, ok := sh.Primary()
	if !ok || !v.Active(p) {
		return fmt.Errorf("%w: [%s][%d] primary shard is not active", vocab.ErrUnavailable, ix.Name, num)
	}
	node, err := c.copiesOn(v, p.NodeID)
	if err != nil {
		return fmt.Errorf("[%s][%d] primary: %w", ix.Name, num, err)
	}
	return node.Write(ctx, shard.Header{Cluster: v.ClusterUUID, Index: uuid, Shard: num, Alloc: p.AllocationID, Term: sh.PrimaryTerm}, items)
}
