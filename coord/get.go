package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// Get returns a document from its shard's primary (realtime).
func (c *Coordinator) Get(ctx context.Context, indexName, id, routing string) (index.Doc, error) {
	if err := ctx.Err(); err != nil {
		return index.Doc{}, err
	}
	v, err := c.readView()
	if err != nil {
		return index.Doc{}, err
	}
	if err := ValidateID(id); err != nil {
		return index.Doc{}, err
	}
	ix, err := v.Index(indexName)
	if err != nil {
		return index.Doc{}, err
	}
	num := ShardFor(id, routing, ix.NumberOfShards)
	var docs []index.Doc
	var found []bool
	err = c.onPrimary(ctx, ix.UUID, num, func(v *state.State, p state.Copy) error {
		var err error
		docs, found, err = c.getFromPrimary(ctx, v, ix.UUID, num, p, []string{id})
		return err
	})
	if err != nil {
		return index.Doc{}, err
	}
	if !found[0] {
		return index.Doc{}, fmt.Errorf("%w: [%s][%s]", vocab.ErrDocumentNotFound, indexName, id)
	}
	return docs[0], nil
}

// getFromPrimary reads documents (realtime) from the primary p of shard num
// of index uuid, wherever it is.
func (c *Coordinator) getFromPrimary(ctx context.Context, v *state.State, uuid string, num int, p state.Copy, ids []string) ([]index.Doc, []bool, error) {
	node, err := c.copiesOn(v, p.NodeID)
	if err != nil {
		return nil, nil, err
	}
	return node.Get(ctx, shard.Header{Cluster: v.ClusterUUID, Index: uuid, Shard: num, Alloc: p.AllocationID}, ids)
}

// onPrimary runs fn against the shard's active primary, waiting (up to
// primaryWait) for one and retrying while routing changes under it.
func (c *Coordinator) onPrimary(ctx context.Context, uuid string, num int, fn func(*state.State, state.Copy) error) error {
	ctx, cancel := context.WithTimeout(ctx, primaryWait)
	defer cancel()
	for {
		v := c.meta.State()
		ix, ok := v.IndexByUUID(uuid)
		if !ok {
			return fmt.Errorf("%w: the index was deleted", state.ErrIndexNotFound)
		}
		p, ok := ix.Shards[num].Primary()
		var err error
		if !ok || !v.Active(p) {
			err = fmt.Errorf("%w: [%s][%d] primary shard is not active", vocab.ErrUnavailable, ix.Name, num)
		} else if p.NodeID != c.meta.LocalNode() && c.peers == nil {
			return fmt.Errorf("%w: [%s][%d] primary is on node %s, and this node has no fabric", vocab.ErrUnavailable, ix.Name, num, p.NodeID)
		} else {
			err = fn(v, p)
		}
		if err == nil || !(errors.Is(err, vocab.ErrStaleRouting) || errors.Is(err, vocab.ErrUnavailable)) {
			return err
		}
		if werr := c.awaitNewer(ctx, v); werr != nil {
			return err
		}
	}
}

// Refresh returns once the writes to the named indexes that were in flight
// on their primaries when it was called are searchable, and every active
// copy has indexed what it acknowledged (a replica indexes behind its
// acknowledgement, behind.go). Copies are refreshed concurrently; one
// that does not answer within Config.RefreshTimeout (its node cut off
// or stalled) fails the refresh rather than holding it.
func (c *Coordinator) Refresh(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RefreshTimeout)
	defer cancel()
	v, err := c.readView()
	if err != nil {
		return err
	}
	type target struct {
		index string
		uuid  string
		num   int
		cp    state.Copy
	}
	var targets []target
	for _, n := range names {
		ix, err := v.Index(n)
		if err != nil {
			return err
		}
		for num := range ix.Shards {
			for _, cp := range ix.Shards[num].Copies {
				if v.Active(cp) && (cp.NodeID == c.meta.LocalNode() || c.peers != nil) {
					targets = append(targets, target{n, ix.UUID, num, cp})
				}
			}
		}
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		wg.Go(func() {
			node, err := c.copiesOn(v, t.cp.NodeID)
			if err == nil {
				err = node.Refresh(ctx, shard.Header{Cluster: v.ClusterUUID, Index: t.uuid, Shard: t.num, Alloc: t.cp.AllocationID})
			}
			if err != nil && t.cp.NodeID != c.meta.LocalNode() {
				err = fmt.Errorf("shard: refresh [%s][%d] copy %s on node %s: %w", t.index, t.num, t.cp.AllocationID, t.cp.NodeID, err)
			}
			errs[k] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}
