package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// The search phases of this node's copies, data node side: each handler
// serves one message holding the parts of several shards, translates the
// request once and runs the shards' parts concurrently.

// phaseRun is one phase message's shards on this node: the indexes to
// search (a copy's, or its pinned view for a point in time; nil where the
// part failed already), the parts' errors, and the request as translated
// here.
type phaseRun struct {
	idxs []*index.Index
	errs []error
	srch *esdsl.Search // nil when the phase needs no query
}

// openPhase checks each shard's routing and finds its copy (and the
// copy's reader context, for a point in time, extending its keep-alive);
// when translate is set it waits for the mapping versions the coordinator
// used and translates the request.
func (s *Store) openPhase(ctx context.Context, h *searchHeader, refs []shardRef, translate bool) *phaseRun {
	p := &phaseRun{idxs: make([]*index.Index, len(refs)), errs: make([]error, len(refs))}
	for k, ref := range refs {
		if err := s.checkRouting(ctx, Header{Cluster: h.cluster, Index: ref.index, Shard: ref.shard, Alloc: ref.alloc}, false); err != nil {
			p.errs[k] = err
			continue
		}
		sc, ok := s.copy(ref.alloc)
		if !ok {
			p.errs[k] = fmt.Errorf("%w: copy %s is not open on this node", ErrUnavailable, ref.alloc)
			continue
		}
		p.idxs[k], p.errs[k] = sc.readable()
		if ref.ctx != "" {
			p.idxs[k], p.errs[k] = s.pits.use(ref.ctx, h.keepAlive)
		}
	}
	if !translate {
		return p
	}
	for k, ref := range refs {
		if p.idxs[k] == nil {
			continue
		}
		if err := s.awaitIndexMapping(ctx, ref.index, ref.mappingVersion); err != nil {
			p.idxs[k], p.errs[k] = nil, err
		}
	}
	srch, err := esdsl.FromWire(h.wire, s.Fields(h.indices))
	if err != nil {
		p.fail(fmt.Errorf("%w: %v", ErrInvalidRequest, err))
		return p
	}
	p.srch = srch
	return p
}

// fail fails every part still open.
func (p *phaseRun) fail(err error) {
	for k, idx := range p.idxs {
		if idx != nil {
			p.idxs[k], p.errs[k] = nil, err
		}
	}
}

// each runs fn for every open part, concurrently (the first on the
// caller's goroutine, whose stack the fabric has grown), and returns when
// all have.
func (p *phaseRun) each(fn func(k int, idx *index.Index)) {
	var wg sync.WaitGroup
	first := -1
	for k, idx := range p.idxs {
		switch {
		case idx == nil:
		case first < 0:
			first = k
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(k, idx)
			}()
		}
	}
	if first >= 0 {
		fn(first, p.idxs[first])
	}
	wg.Wait()
}

// awaitIndexMapping waits until this node's mapping of the index uuid is at
// least at version mv.
func (s *Store) awaitIndexMapping(ctx context.Context, uuid string, mv uint64) error {
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	v, err := s.meta.AwaitView(wctx, func(v *View) bool {
		ix, ok := v.IndexByUUID(uuid)
		return ok && ix.MappingVersion >= mv
	})
	if err != nil {
		return fmt.Errorf("%w: mapping version %d of index %s has not reached this node", ErrUnavailable, mv, uuid)
	}
	ix, _ := v.IndexByUUID(uuid)
	nm, ok := s.mapping(uuid)
	if !ok {
		return fmt.Errorf("%w: index %s has no mapping on this node yet", ErrUnavailable, uuid)
	}
	return nm.merge(ix)
}

func (s *Store) serveSearchStats(ctx context.Context, req *fabric.Request) ([]byte, error) {
	m, err := decodeStatsRequest(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "search statistics: %v", err)
	}
	run := s.openPhase(ctx, &m.searchHeader, m.shards, true)
	parts := make([]statsPart, len(m.shards))
	run.each(func(k int, idx *index.Index) {
		st, gen, err := idx.TermStats(ctx, run.srch.Request.Query)
		parts[k] = statsPart{err: err, stats: st, gen: gen}
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].err = err
		}
	}
	return encodeStatsReply(parts), nil
}

func (s *Store) serveSearchQuery(ctx context.Context, req *fabric.Request) ([]byte, error) {
	m, err := decodeQueryRequest(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "search query phase: %v", err)
	}
	refs := make([]shardRef, len(m.shards))
	for k := range m.shards {
		refs[k] = m.shards[k].shardRef
	}
	run := s.openPhase(ctx, &m.searchHeader, refs, true)
	parts := make([]queryPart, len(m.shards))
	sctx := ctx
	if m.stats != nil {
		sctx = index.WithGlobalStats(ctx, m.stats)
	}
	v := s.meta.View()
	results := make([]*bleve.SearchResult, len(m.shards))
	run.each(func(k int, idx *index.Index) {
		sh := &m.shards[k]
		r := *run.srch.Request
		r.Sort = r.Sort.Copy() // sort fields keep per-search state
		r.From, r.Size = m.from, m.size
		r.Fields, r.IncludeLocations, r.Highlight = nil, false, nil
		qctx := sctx
		if m.stats != nil && sh.expect != 0 {
			qctx = index.ExpectGeneration(sctx, sh.expect)
		}
		name := ""
		if ix, ok := v.IndexByUUID(sh.index); ok {
			name = ix.Name
		}
		var col index.Collector
		ac := run.srch.AggCollector(name, sh.shard)
		if ac != nil {
			col = ac
		}
		res, err := idx.SearchCollect(qctx, &r, col)
		if errors.Is(err, index.ErrStaleStats) {
			st, gen, err := idx.TermStats(ctx, run.srch.Request.Query)
			parts[k] = queryPart{err: err, stale: &statsPart{stats: st, gen: gen}}
			return
		}
		if err != nil {
			parts[k].err = err
			return
		}
		out := queryResult{total: res.Total, gte: res.TotalRelation == bleve.TotalRelationGte, maxScore: res.MaxScore,
			hits: make([]wireHit, len(res.Hits))}
		if ac != nil {
			out.aggs = ac.Partials()
		}
		for j, h := range res.Hits {
			out.hits[j] = wireHit{id: h.ID, score: h.Score, sort: h.Sort, num: h.HitNumber, expl: h.Expl}
		}
		parts[k].res = out
		results[k] = res
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].err = err
		}
	}
	if m.prefetch > 0 {
		prefetch(run, m, results, parts)
	}
	out, err := encodeQueryReply(parts)
	if err != nil {
		return nil, remoteErr(err)
	}
	return out, nil
}

func (s *Store) serveSearchFetch(ctx context.Context, req *fabric.Request) ([]byte, error) {
	m, err := decodeFetchRequest(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "search fetch phase: %v", err)
	}
	refs := make([]shardRef, len(m.shards))
	for k := range m.shards {
		refs[k] = m.shards[k].shardRef
	}
	run := s.openPhase(ctx, &m.searchHeader, refs, m.locations || m.named)
	parts := make([]fetchPart, len(m.shards))
	run.each(func(k int, idx *index.Index) {
		parts[k].hits, parts[k].err = fetchHits(ctx, idx, m, m.shards[k].ids, run.srch)
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].err = err
		}
	}
	out, err := encodeFetchReply(parts)
	if err != nil {
		return nil, remoteErr(err)
	}
	return out, nil
}

// prefetch loads the stored fields of the m.prefetch best hits of all the
// shards' results (in the request's sort order) into their parts. A shard
// whose documents cannot be loaded prefetches nothing: its fetch phase
// asks again.
func prefetch(run *phaseRun, m *queryRequest, results []*bleve.SearchResult, parts []queryPart) {
	type ranked struct {
		part int
		hit  *search.DocumentMatch
	}
	var all []ranked
	for k, res := range results {
		if res != nil && parts[k].err == nil {
			for _, h := range res.Hits {
				all = append(all, ranked{k, h})
			}
		}
	}
	order := run.srch.Request.Sort
	byScore, desc := order.CacheIsScore(), order.CacheDescending()
	sort.SliceStable(all, func(a, b int) bool { return order.Compare(byScore, desc, all[a].hit, all[b].hit) < 0 })
	ids := make([][]string, len(parts))
	for _, r := range all[:min(m.prefetch, len(all))] {
		ids[r.part] = append(ids[r.part], r.hit.ID)
	}
	run.each(func(k int, idx *index.Index) {
		if len(ids[k]) == 0 {
			return
		}
		docs, err := idx.Documents(ids[k], m.fields)
		if err != nil {
			return
		}
		fetched := make([]fetchedHit, len(docs))
		for j, d := range docs {
			fetched[j] = fetchedHit{id: d.ID, fields: d.Fields}
		}
		parts[k].res.fetched = fetched
	})
}

// fetchHits loads the stored fields of the documents ids: by id, or, for
// term locations, by the query restricted to them (unscored). srch is nil
// unless m asks for locations or named queries.
func fetchHits(ctx context.Context, idx *index.Index, m *fetchRequest, ids []string, srch *esdsl.Search) ([]fetchedHit, error) {
	var hits []*search.DocumentMatch
	var err error
	if m.locations {
		r := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(srch.Request.Query, bleve.NewDocIDQuery(ids)), len(ids), 0, false)
		r.Fields, r.IncludeLocations, r.Score = m.fields, true, "none"
		var res *bleve.SearchResult
		if res, err = idx.Search(ctx, r); err == nil {
			hits = res.Hits
		}
	} else {
		hits, err = idx.Documents(ids, m.fields)
	}
	if err != nil {
		return nil, err
	}
	var matched map[string][]string
	if m.named {
		if matched, err = matchedQueries(ctx, idx, srch.NamedQueries(), ids); err != nil {
			return nil, err
		}
	}
	out := make([]fetchedHit, len(hits))
	for k, h := range hits {
		out[k] = fetchedHit{id: h.ID, fields: h.Fields, locations: h.Locations, matched: matched[h.ID]}
	}
	return out, nil
}
