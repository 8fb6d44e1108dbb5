package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
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
func (s *Store) openPhase(ctx context.Context, h *SearchHeader, refs []ShardRef, translate bool) *phaseRun {
	p := &phaseRun{idxs: make([]*index.Index, len(refs)), errs: make([]error, len(refs))}
	for k, ref := range refs {
		if err := s.checkRouting(ctx, Header{Cluster: h.Cluster, Index: ref.Index, Shard: ref.Shard, Alloc: ref.Alloc}, false); err != nil {
			p.errs[k] = err
			continue
		}
		sc, ok := s.copy(ref.Alloc)
		if !ok {
			p.errs[k] = fmt.Errorf("%w: copy %s is not open on this node", vocab.ErrUnavailable, ref.Alloc)
			continue
		}
		p.idxs[k], p.errs[k] = sc.readable()
		if ref.Ctx != "" {
			p.idxs[k], p.errs[k] = s.pits.use(ref.Ctx, h.KeepAlive)
		}
	}
	if !translate {
		return p
	}
	for k, ref := range refs {
		if p.idxs[k] == nil {
			continue
		}
		if err := s.awaitIndexMapping(ctx, ref.Index, ref.MappingVersion); err != nil {
			p.idxs[k], p.errs[k] = nil, err
		}
	}
	srch, err := esdsl.FromWire(h.Wire, s.Fields(h.Indices))
	if err != nil {
		p.fail(fmt.Errorf("%w: %v", vocab.ErrInvalidRequest, err))
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
	v, err := s.meta.AwaitState(wctx, func(v *state.State) bool {
		ix, ok := v.IndexByUUID(uuid)
		return ok && ix.MappingVersion >= mv
	})
	if err != nil {
		return fmt.Errorf("%w: mapping version %d of index %s has not reached this node", vocab.ErrUnavailable, mv, uuid)
	}
	ix, _ := v.IndexByUUID(uuid)
	nm, ok := s.mapping(uuid)
	if !ok {
		return fmt.Errorf("%w: index %s has no mapping on this node yet", vocab.ErrUnavailable, uuid)
	}
	return nm.merge(ix)
}

func (s *Store) serveSearchStats(ctx context.Context, req *fabric.Request) ([]byte, error) {
	m, err := decodeStatsRequest(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "search statistics: %v", err)
	}
	run := s.openPhase(ctx, &m.SearchHeader, m.Shards, true)
	parts := make([]StatsPart, len(m.Shards))
	run.each(func(k int, idx *index.Index) {
		st, gen, err := idx.TermStats(ctx, run.srch.Request.Query)
		parts[k] = StatsPart{Err: err, Stats: st, Gen: gen}
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].Err = err
		}
	}
	return encodeStatsReply(parts), nil
}

func (s *Store) serveSearchQuery(ctx context.Context, req *fabric.Request) ([]byte, error) {
	m, err := decodeQueryRequest(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "search query phase: %v", err)
	}
	refs := make([]ShardRef, len(m.Shards))
	for k := range m.Shards {
		refs[k] = m.Shards[k].ShardRef
	}
	run := s.openPhase(ctx, &m.SearchHeader, refs, true)
	parts := make([]QueryPart, len(m.Shards))
	sctx := ctx
	if m.Stats != nil {
		sctx = index.WithGlobalStats(ctx, m.Stats)
	}
	v := s.meta.State()
	results := make([]*bleve.SearchResult, len(m.Shards))
	run.each(func(k int, idx *index.Index) {
		sh := &m.Shards[k]
		r := *run.srch.Request
		r.Sort = r.Sort.Copy() // sort fields keep per-search state
		r.From, r.Size = m.From, m.Size
		r.Fields, r.IncludeLocations, r.Highlight = nil, false, nil
		qctx := sctx
		if m.Stats != nil && sh.Expect != 0 {
			qctx = index.ExpectGeneration(sctx, sh.Expect)
		}
		name := ""
		if ix, ok := v.IndexByUUID(sh.Index); ok {
			name = ix.Name
		}
		var col index.Collector
		ac := run.srch.AggCollector(name, sh.Shard)
		if ac != nil {
			col = ac
		}
		res, err := idx.SearchCollect(qctx, &r, col, run.srch.PostFilter())
		if errors.Is(err, index.ErrStaleStats) {
			st, gen, err := idx.TermStats(ctx, run.srch.Request.Query)
			parts[k] = QueryPart{Err: err, Stale: &StatsPart{Stats: st, Gen: gen}}
			return
		}
		if err != nil {
			parts[k].Err = err
			return
		}
		out := QueryResult{Total: res.Total, GTE: res.TotalRelation == bleve.TotalRelationGte, MaxScore: res.MaxScore,
			Hits: make([]WireHit, len(res.Hits))}
		if ac != nil {
			out.Aggs = ac.Partials()
		}
		for j, h := range res.Hits {
			out.Hits[j] = WireHit{ID: h.ID, Score: h.Score, Sort: h.Sort, Num: h.HitNumber, Expl: h.Expl}
		}
		parts[k].Res = out
		results[k] = res
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].Err = err
		}
	}
	if m.Prefetch > 0 {
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
	refs := make([]ShardRef, len(m.Shards))
	for k := range m.Shards {
		refs[k] = m.Shards[k].ShardRef
	}
	run := s.openPhase(ctx, &m.SearchHeader, refs, m.Locations || m.Named)
	parts := make([]FetchPart, len(m.Shards))
	run.each(func(k int, idx *index.Index) {
		parts[k].Hits, parts[k].Err = fetchHits(ctx, idx, m, m.Shards[k].IDs, run.srch)
	})
	for k, err := range run.errs {
		if err != nil {
			parts[k].Err = err
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
func prefetch(run *phaseRun, m *QueryRequest, results []*bleve.SearchResult, parts []QueryPart) {
	type ranked struct {
		part int
		hit  *search.DocumentMatch
	}
	var all []ranked
	for k, res := range results {
		if res != nil && parts[k].Err == nil {
			for _, h := range res.Hits {
				all = append(all, ranked{k, h})
			}
		}
	}
	order := run.srch.Request.Sort
	byScore, desc := order.CacheIsScore(), order.CacheDescending()
	sort.SliceStable(all, func(a, b int) bool { return order.Compare(byScore, desc, all[a].hit, all[b].hit) < 0 })
	ids := make([][]string, len(parts))
	for _, r := range all[:min(m.Prefetch, len(all))] {
		ids[r.part] = append(ids[r.part], r.hit.ID)
	}
	run.each(func(k int, idx *index.Index) {
		if len(ids[k]) == 0 {
			return
		}
		docs, err := idx.Documents(ids[k], m.Fields)
		if err != nil {
			return
		}
		fetched := make([]FetchedHit, len(docs))
		for j, d := range docs {
			fetched[j] = FetchedHit{ID: d.ID, Fields: d.Fields}
		}
		parts[k].Res.Fetched = fetched
	})
}

// fetchHits loads the stored fields of the documents ids: by id, or, for
// term locations, by the query restricted to them (unscored). srch is nil
// unless m asks for locations or named queries.
func fetchHits(ctx context.Context, idx *index.Index, m *FetchRequest, ids []string, srch *esdsl.Search) ([]FetchedHit, error) {
	var hits []*search.DocumentMatch
	var err error
	if m.Locations {
		r := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(srch.Request.Query, bleve.NewDocIDQuery(ids)), len(ids), 0, false)
		r.Fields, r.IncludeLocations, r.Score = m.Fields, true, "none"
		var res *bleve.SearchResult
		if res, err = idx.Search(ctx, r); err == nil {
			hits = res.Hits
		}
	} else {
		hits, err = idx.Documents(ids, m.Fields)
	}
	if err != nil {
		return nil, err
	}
	var matched map[string][]string
	if m.Named {
		if matched, err = MatchedQueries(ctx, idx, srch.NamedQueries(), ids); err != nil {
			return nil, err
		}
	}
	out := make([]FetchedHit, len(hits))
	for k, h := range hits {
		out[k] = FetchedHit{ID: h.ID, Fields: h.Fields, Locations: h.Locations, Matched: matched[h.ID]}
	}
	return out, nil
}

// MatchedQueries returns, per id, the names of the named queries it
// matches, in the request's order.
func MatchedQueries(ctx context.Context, idx *index.Index, named []esdsl.NamedQuery, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range named {
		m, err := idx.Matching(ctx, n.Query, ids)
		if err != nil {
			return nil, err
		}
		for id := range m {
			out[id] = append(out[id], n.Name)
		}
	}
	return out, nil
}
