package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
)

// Realtime gets go to the shard's primary, which holds every acknowledged
// write (applied before the write was acknowledged).

// Get returns a document from its shard's primary (realtime).
func (c *Coordinator) Get(ctx context.Context, indexName, id, routing string) (index.Doc, error) {
	if err := ctx.Err(); err != nil {
		return index.Doc{}, err
	}
	v, err := c.readView()
	if err != nil {
		return index.Doc{}, err
	}
	ix, err := v.Index(indexName)
	if err != nil {
		return index.Doc{}, err
	}
	num := ShardFor(id, routing, ix.NumberOfShards)
	var d index.Doc
	var found bool
	err = c.onPrimary(ctx, ix.UUID, num, func(v *View, p CopyView) error {
		var err error
		if p.NodeID == v.LocalNode {
			d, found, err = c.getLocal(p.AllocationID, id)
			return err
		}
		d, found, err = c.getRemote(ctx, v, ix.UUID, num, p, id)
		return err
	})
	if err != nil {
		return index.Doc{}, err
	}
	if !found {
		return index.Doc{}, fmt.Errorf("%w: [%s][%s]", ErrDocumentNotFound, indexName, id)
	}
	return d, nil
}

// onPrimary runs fn against the shard's active primary, waiting (up to
// primaryWait) for one and retrying while routing changes under it.
func (c *Coordinator) onPrimary(ctx context.Context, uuid string, num int, fn func(*View, CopyView) error) error {
	ctx, cancel := context.WithTimeout(ctx, primaryWait)
	defer cancel()
	for {
		v := c.meta.View()
		ix, ok := v.IndexByUUID(uuid)
		if !ok {
			return fmt.Errorf("%w: the index was deleted", ErrIndexNotFound)
		}
		p, ok := ix.Shards[num].Primary()
		var err error
		if !ok || !v.Active(p) {
			err = fmt.Errorf("%w: [%s][%d] primary shard is not active", ErrUnavailable, ix.Name, num)
		} else if p.NodeID != v.LocalNode && c.peers == nil {
			return fmt.Errorf("%w: [%s][%d] primary is on node %s, and this node has no fabric", ErrUnavailable, ix.Name, num, p.NodeID)
		} else {
			err = fn(v, p)
		}
		if err == nil || !(errors.Is(err, ErrStaleRouting) || errors.Is(err, ErrUnavailable)) {
			return err
		}
		if werr := c.awaitNewer(ctx, v); werr != nil {
			return err
		}
	}
}

// getLocal reads a document from the local primary copy. It reads between
// write groups (under the copy's write lock), so it never sees a write that
// is not acknowledged yet (one a new primary might not have); then it
// confirms with the replication group that no other copy has been
// promoted since (one that may have acknowledged newer writes).
func (c *Coordinator) getLocal(allocationID, id string) (index.Doc, bool, error) {
	docs, found, err := c.getLocalMany(allocationID, []string{id})
	if err != nil {
		return index.Doc{}, false, err
	}
	return docs[0], found[0], nil
}

func (c *Coordinator) getRemote(ctx context.Context, v *View, uuid string, num int, p CopyView, id string) (index.Doc, bool, error) {
	e := enc{}
	e.u8(wireVersion)
	e.str(v.ClusterUUID)
	e.str(uuid)
	e.uvarint(uint64(num))
	e.str(p.AllocationID)
	e.str(id)
	reply, err := c.callRead(ctx, p.NodeID, methodGet, e.b)
	if err != nil {
		return index.Doc{}, false, fromRemote(err)
	}
	d := dec{b: reply}
	d.version()
	found := d.u8() == 1
	doc := index.Doc{ID: id}
	if found {
		doc.Source = d.bytes()
		doc.SeqNo, doc.Version, doc.PrimaryTerm = d.u64(), d.varint(), d.u64()
	}
	return doc, found, d.end()
}

func (c *Coordinator) serveGet(ctx context.Context, req *fabric.Request) ([]byte, error) {
	d := dec{b: req.Payload}
	d.version()
	cluster, uuid := d.str(), d.str()
	num := int(d.uvarint() & 0x7fffffff)
	alloc, id := d.str(), d.str()
	if err := d.end(); err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "%v", err)
	}
	if err := c.checkRouting(ctx, cluster, uuid, num, alloc, true); err != nil {
		return nil, remoteErr(err)
	}
	doc, found, err := c.getLocal(alloc, id)
	if err != nil {
		return nil, remoteErr(err)
	}
	e := enc{b: make([]byte, 0, 32+len(doc.Source))}
	e.u8(wireVersion)
	if !found {
		e.u8(0)
		return e.b, nil
	}
	e.u8(1)
	e.bytes(doc.Source)
	e.u64(doc.SeqNo)
	e.varint(doc.Version)
	e.u64(doc.PrimaryTerm)
	return e.b, nil
}

// Refresh returns once the writes to the named indexes that were in flight
// on their primaries when it was called are searchable, and every active
// copy has indexed what it acknowledged (a replica indexes behind its
// acknowledgement, behind.go). Copies are refreshed concurrently; one
// that does not answer within Config.ReplicationTimeout (its node cut off
// or stalled) fails the refresh rather than holding it.
func (c *Coordinator) Refresh(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReplicationTimeout)
	defer cancel()
	v, err := c.readView()
	if err != nil {
		return err
	}
	type target struct {
		index string
		num   int
		cp    CopyView
	}
	var targets []target
	for _, n := range names {
		ix, err := v.Index(n)
		if err != nil {
			return err
		}
		for num := range ix.Shards {
			for _, cp := range ix.Shards[num].Copies {
				if v.Active(cp) && (cp.NodeID == v.LocalNode || c.peers != nil) {
					targets = append(targets, target{n, num, cp})
				}
			}
		}
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		wg.Go(func() {
			if t.cp.NodeID == v.LocalNode {
				errs[k] = c.refreshLocal(t.cp.AllocationID)
				return
			}
			e := enc{}
			e.u8(wireVersion)
			e.str(t.cp.AllocationID)
			if _, err := c.peers.Call(ctx, t.cp.NodeID, methodRefresh, e.b); err != nil {
				errs[k] = fmt.Errorf("shard: refresh [%s][%d] copy %s on node %s: %w", t.index, t.num, t.cp.AllocationID, t.cp.NodeID, fromRemote(err))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// refreshLocal waits for the group a local copy is committing, if any,
// and indexes what it has behind. A copy not open here has nothing to do.
func (c *Coordinator) refreshLocal(alloc string) error {
	sc, ok := c.store.copy(alloc)
	if !ok {
		return nil
	}
	sc.waitForWrites()
	return sc.catchUp()
}

func (c *Coordinator) serveRefresh(_ context.Context, req *fabric.Request) ([]byte, error) {
	d := dec{b: req.Payload}
	d.version()
	alloc := d.str()
	if err := d.end(); err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "%v", err)
	}
	if err := c.refreshLocal(alloc); err != nil {
		return nil, remoteErr(err)
	}
	return []byte{wireVersion}, nil
}
