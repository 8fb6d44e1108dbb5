package coord

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// The search phases of shard copies on other nodes, coordinator side: the
// coordinator sends the search request itself (esdsl.Wire), the indices it
// was translated against and their mapping versions; the data node
// translates it again with the same mappings and runs the phase on its
// copies. The shards whose chosen copies share a node share each phase's
// message (nodeBatch); a shard whose node fails moves on to its next copy
// alone.

// remoteSearch is what the remote searchers of one search share.
type remoteSearch struct {
	header shard.SearchHeader
	// The fetch phase's needs: the stored fields to load, and whether the
	// data node must run the query (term locations, named queries).
	fields    []string
	locations bool
	named     bool
	// The page asked for, and how many shards the search has.
	from, size, shards int
}

// prefetchMargin is how many times its expected share of the final page
// a node's query phase loads the stored fields of (see prefetchHits).
const prefetchMargin = 1.5

// prefetchHits is how many of their best hits the shards of one query
// message (n of them) load the stored fields of in the query phase, so
// that the search needs no fetch phase there when the final page takes no
// more than those from them: the node's share of the first page with a
// margin, which keeps the sources that cross the fabric for nothing to a
// fraction of the page's. 0 (no prefetch) when the page is not the first
// or needs the query again (term locations, named queries).
func (rs *remoteSearch) prefetchHits(n int) int {
	if len(rs.fields) == 0 || rs.locations || rs.named || rs.from > 0 || rs.shards == 0 {
		return 0
	}
	return min(rs.size, int(math.Ceil(prefetchMargin*float64(rs.size*n)/float64(rs.shards))))
}

// remoteFailure is a phase that failed on a node.
type remoteFailure struct {
	node string
	err  error
}

func (e *remoteFailure) Error() string { return fmt.Sprintf("node %s: %v", e.node, e.err) }
func (e *remoteFailure) Unwrap() error { return e.err }

// remoteSearcher is one shard searched on other nodes: its copies in
// order of preference; a phase that fails for a reason of the copy's node
// (not of the request) moves on to the next copy. It serves one search.
type remoteSearcher struct {
	c              *Coordinator
	rs             *remoteSearch
	name, index    string
	num            int
	uuid           string
	mappingVersion uint64
	pitCtx         string // a point-in-time search: the copy's reader context

	mu      sync.Mutex
	copies  []state.Copy // untried or working, best first
	aggs    esdsl.AggPartials
	batches [numPhases]*nodeBatch // the next call of each phase goes with these
	sent    *dispatch             // told when the query phase's message leaves
	told    atomic.Bool           // sent was told
	// prefetched are the hits whose stored fields came with the query
	// phase, by id.
	prefetched map[string]*shard.FetchedHit
}

// dispatch counts the remote searchers of a query phase whose messages have
// not left yet. The copies on this node wait for it before searching, so
// that the other nodes start as early as possible instead of after a
// local search took the processors.
type dispatch struct {
	left atomic.Int32
	done chan struct{}
}

// newDispatch returns the dispatch of the remote searchers among ss (nil:
// none) and gives it to them.
func newDispatch(ss []ShardSearcher) *dispatch {
	d := &dispatch{done: make(chan struct{})}
	for _, s := range ss {
		if r, ok := s.(*remoteSearcher); ok {
			d.left.Add(1)
			r.sent = d
			r.told.Store(false)
		}
	}
	if d.left.Load() == 0 {
		return nil
	}
	return d
}

// wait returns once every message has left, or ctx ends.
func (d *dispatch) wait(ctx context.Context) {
	if d == nil {
		return
	}
	select {
	case <-d.done:
	case <-ctx.Done():
	}
}

// dispatched tells r's dispatch that its message left (or never will);
// only the first call counts.
func (r *remoteSearcher) dispatched() {
	if d := r.sent; d != nil && r.told.CompareAndSwap(false, true) && d.left.Add(-1) == 0 {
		close(d.done)
	}
}

var (
	_ ShardSearcher = (*remoteSearcher)(nil)
	_ fetcher       = (*remoteSearcher)(nil)
	_ aggSearcher   = (*remoteSearcher)(nil)
	_ cachedCopy    = (*remoteSearcher)(nil)
)

func (r *remoteSearcher) aggPartials() esdsl.AggPartials {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aggs
}

func (r *remoteSearcher) Name() string { return r.name }

// copyID is the copy the next phase goes to first.
func (r *remoteSearcher) copyID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.copies) == 0 {
		return ""
	}
	return r.copies[0].AllocationID
}

type phase int

const (
	phaseStats phase = iota
	phaseQuery
	phaseFetch
	numPhases
)

// partArgs is one shard's part of a phase request.
type partArgs struct {
	cp state.Copy
	// Query phase: the global statistics (the same for every shard),
	// the page, and the generation they assume of this copy.
	stats      *index.TermStats
	from, size int
	expect     uint64
	// Fetch phase: the hits' ids.
	ids []string
}

// A part is one shard's answer in a phase reply: a StatsPart, QueryPart or
// FetchPart.
type part interface{ Failure() error }

// call runs one phase for this shard on its best copy, moving to the next
// copy when a node fails.
func (r *remoteSearcher) call(ctx context.Context, ph phase, a partArgs) (part, error) {
	var last error
	for {
		r.mu.Lock()
		b := r.batches[ph]
		r.batches[ph] = nil
		if len(r.copies) == 0 {
			r.mu.Unlock()
			if b != nil {
				b.leave(ctx)
			}
			if last != nil {
				return nil, last
			}
			return nil, fmt.Errorf("%w: no copy of [%s][%d] answered", vocab.ErrUnavailable, r.index, r.num)
		}
		a.cp = r.copies[0]
		r.mu.Unlock()
		var p part
		var err error
		if b != nil && b.node == a.cp.NodeID {
			p, err = b.join(ctx, r, a)
		} else {
			if b != nil {
				b.leave(ctx)
			}
			var parts []part
			if parts, err = r.c.sendPhase(ctx, a.cp.NodeID, ph, []*remoteSearcher{r}, []partArgs{a}); err == nil {
				p = parts[0]
			}
		}
		if err == nil {
			err = p.Failure()
		}
		if err != nil {
			err = &remoteFailure{node: a.cp.NodeID, err: err}
		}
		if err == nil || ctx.Err() != nil || !copyFault(err) {
			return p, err
		}
		last = err
		r.mu.Lock()
		if len(r.copies) > 0 && r.copies[0].AllocationID == a.cp.AllocationID {
			r.copies = r.copies[1:]
		}
		r.mu.Unlock()
	}
}

// copyFault reports whether err says the copy or its node failed (worth
// trying another copy), not that the request is bad.
func copyFault(err error) bool {
	var re *fabric.RemoteError
	if errors.As(err, &re) {
		return re.Code == fabric.CodeUnavailable || re.Code == fabric.CodeInternal
	}
	return !errors.Is(err, vocab.ErrInvalidRequest) // sentinels of the copy's state, transport errors
}

func (r *remoteSearcher) TermStats(ctx context.Context, _ query.Query) (ShardStats, error) {
	p, err := r.call(ctx, phaseStats, partArgs{})
	if err != nil {
		return ShardStats{}, err
	}
	sp := p.(shard.StatsPart)
	if sp.Stats == nil {
		return ShardStats{}, fmt.Errorf("%w: statistics of [%s][%d] missing from the reply", shard.ErrBadMessage, r.index, r.num)
	}
	return ShardStats{Stats: sp.Stats, Generation: sp.Gen}, nil
}

// Search runs the query phase: hits carry ids, scores and sort keys only.
func (r *remoteSearcher) Search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	defer r.dispatched()
	stats := index.GlobalStatsFrom(ctx)
	a := partArgs{stats: stats, from: req.From, size: req.Size}
	if stats != nil {
		a.expect = index.ExpectedGeneration(ctx)
	}
	p, err := r.call(ctx, phaseQuery, a)
	if err != nil {
		return nil, err
	}
	qp := p.(shard.QueryPart)
	if qp.Stale != nil {
		if qp.Stale.Stats == nil {
			return nil, fmt.Errorf("%w: statistics of [%s][%d] missing from a stale reply", shard.ErrBadMessage, r.index, r.num)
		}
		return nil, &staleStats{ShardStats{Stats: qp.Stale.Stats, Generation: qp.Stale.Gen}}
	}
	rep := &qp.Res
	r.mu.Lock()
	r.aggs = rep.Aggs
	r.prefetched = make(map[string]*shard.FetchedHit, len(rep.Fetched))
	for k := range rep.Fetched {
		r.prefetched[rep.Fetched[k].ID] = &rep.Fetched[k]
	}
	r.mu.Unlock()
	res := &bleve.SearchResult{Request: req, Total: rep.Total, MaxScore: rep.MaxScore,
		Status: &bleve.SearchStatus{Total: 1, Successful: 1}, Hits: make(search.DocumentMatchCollection, len(rep.Hits))}
	if rep.GTE {
		res.TotalRelation = bleve.TotalRelationGte
	}
	for k, h := range rep.Hits {
		res.Hits[k] = &search.DocumentMatch{Index: r.index, ID: h.ID, Score: h.Score, Sort: h.Sort, HitNumber: h.Num, Expl: h.Expl}
	}
	return res, nil
}

func (r *remoteSearcher) fetches() bool { return true }

// fetch runs the fetch phase for hits this shard returned, asking for
// those whose stored fields did not come with the query phase.
func (r *remoteSearcher) fetch(ctx context.Context, hits []*search.DocumentMatch) error {
	r.mu.Lock()
	byID := r.prefetched
	r.mu.Unlock()
	var ids []string
	for _, h := range hits {
		if _, ok := byID[h.ID]; !ok {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		r.skip(ctx, phaseFetch)
	} else {
		p, err := r.call(ctx, phaseFetch, partArgs{ids: ids})
		if err != nil {
			return err
		}
		got := p.(shard.FetchPart).Hits
		all := make(map[string]*shard.FetchedHit, len(byID)+len(got))
		for id, f := range byID {
			all[id] = f
		}
		for k := range got {
			all[got[k].ID] = &got[k]
		}
		byID = all
	}
	for _, h := range hits {
		f, ok := byID[h.ID]
		if !ok {
			return fmt.Errorf("fetch of [%s][%d]: document [%s] is gone", r.index, r.num, h.ID)
		}
		h.Fields, h.Locations = f.Fields, f.Locations
		setMatched(h, f.Matched)
	}
	return nil
}

// skip takes r out of the batch it was given for phase ph: it has nothing
// to send.
func (r *remoteSearcher) skip(ctx context.Context, ph phase) {
	r.mu.Lock()
	b := r.batches[ph]
	r.batches[ph] = nil
	r.mu.Unlock()
	if b != nil {
		b.leave(ctx)
	}
}

// nodeBatch gathers one phase's parts of the shards whose chosen copies
// are on one node, and sends them as one message once every one of them
// has joined (or left: a shard whose copy changed). Each of the batch's
// searchers calls join or leave exactly once.
type nodeBatch struct {
	node string
	ph   phase

	mu      sync.Mutex
	left    int // members still to join or leave
	members []*remoteSearcher
	args    []partArgs
	done    chan struct{}
	parts   []part // after done: one per member
	err     error  // after done: the whole call's
}

// coalesce gives the remote searchers among ss whose best copies share a
// node one nodeBatch for phase ph. Call it before the phase runs on
// exactly the searchers ss.
func coalesce(ph phase, ss []ShardSearcher) {
	byNode := map[string][]*remoteSearcher{}
	for _, s := range ss {
		r, ok := s.(*remoteSearcher)
		if !ok {
			continue
		}
		r.mu.Lock()
		if len(r.copies) > 0 {
			n := r.copies[0].NodeID
			byNode[n] = append(byNode[n], r)
		}
		r.mu.Unlock()
	}
	for node, rs := range byNode {
		if len(rs) < 2 {
			continue
		}
		b := &nodeBatch{node: node, ph: ph, left: len(rs), done: make(chan struct{})}
		for _, r := range rs {
			r.mu.Lock()
			r.batches[ph] = b
			r.mu.Unlock()
		}
	}
}

// join adds r's part and waits for the batch's reply; the last member to
// arrive sends the message.
func (b *nodeBatch) join(ctx context.Context, r *remoteSearcher, a partArgs) (part, error) {
	b.mu.Lock()
	k := len(b.members)
	b.members = append(b.members, r)
	b.args = append(b.args, a)
	b.left--
	last := b.left == 0
	b.mu.Unlock()
	if last {
		b.send(ctx)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, b.err
	}
	return b.parts[k], nil
}

// leave takes a member out that will not join.
func (b *nodeBatch) leave(ctx context.Context) {
	b.mu.Lock()
	b.left--
	last := b.left == 0
	b.mu.Unlock()
	if last {
		b.send(ctx)
	}
}

func (b *nodeBatch) send(ctx context.Context) {
	if len(b.members) > 0 {
		b.parts, b.err = b.members[0].c.sendPhase(ctx, b.node, b.ph, b.members, b.args)
	}
	close(b.done)
}

// sendPhase sends phase ph of the given searchers' shards (args[k] is
// rs[k]'s part, every args[k].cp on node) in one message and returns one
// part per shard. An error is the whole call's.
func (c *Coordinator) sendPhase(ctx context.Context, nodeID string, ph phase, rs []*remoteSearcher, args []partArgs) ([]part, error) {
	share := rs[0].rs
	refs := make([]shard.ShardRef, len(rs))
	for k, r := range rs {
		refs[k] = shard.ShardRef{Index: r.uuid, Shard: r.num, Alloc: args[k].cp.AllocationID, MappingVersion: r.mappingVersion, Ctx: r.pitCtx}
	}
	var call func(context.Context) ([]part, error)
	node := shard.NewRemote(c.peers, nodeID)
	switch ph {
	case phaseStats:
		m := &shard.StatsRequest{SearchHeader: share.header, Shards: refs}
		call = func(ctx context.Context) ([]part, error) { return asParts(node.SearchStats(ctx, m)) }
	case phaseQuery:
		m := &shard.QueryRequest{SearchHeader: share.header, Stats: args[0].stats, From: args[0].from, Size: args[0].size,
			Prefetch: share.prefetchHits(len(rs)), Shards: make([]shard.QueryShard, len(rs))}
		if m.Prefetch > 0 {
			m.Fields = share.fields
		}
		for k := range rs {
			m.Shards[k] = shard.QueryShard{ShardRef: refs[k], Expect: args[k].expect}
		}
		call = func(ctx context.Context) ([]part, error) { return asParts(node.SearchQuery(ctx, m)) }
	default:
		m := &shard.FetchRequest{SearchHeader: share.header, Fields: share.fields, Locations: share.locations, Named: share.named,
			Shards: make([]shard.FetchShard, len(rs))}
		for k := range rs {
			m.Shards[k] = shard.FetchShard{ShardRef: refs[k], IDs: args[k].ids}
		}
		call = func(ctx context.Context) ([]part, error) { return asParts(node.SearchFetch(ctx, m)) }
	}
	if ph == phaseQuery {
		for _, r := range rs {
			r.dispatched()
		}
	}
	done := c.ars.begin(nodeID)
	start := time.Now()
	parts, err := call(ctx)
	done(time.Since(start), err != nil && !errors.Is(err, shard.ErrBadMessage))
	return parts, err
}

// asParts is a decoder's parts (or its error) as parts.
func asParts[P part](parts []P, err error) ([]part, error) {
	if err != nil {
		return nil, err
	}
	out := make([]part, len(parts))
	for k := range parts {
		out[k] = parts[k]
	}
	return out, nil
}
