package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// Search, as Elasticsearch runs it, in phases over one copy of every
// shard, coordinated by whichever node got the request:
//
//  1. statistics: every shard's term statistics for the query, summed, so
//     that BM25 scores like one index holding every document (kept between
//     searches, statsCache: a repeated search skips this phase unless a
//     shard changed);
//  2. query: every shard returns only ids, scores and sort keys of its
//     top from+size hits (and its facet counts) under the global
//     statistics; bleve's IndexAlias merges them, sorts and cuts the page;
//  3. fetch: the shards that hold the final page's hits return their
//     sources and term locations (for highlighting).
//
// A copy on this node is searched in place: nothing crosses a network, and
// its fetch phase reads the final page's stored fields straight from the
// copy (with term locations for highlighting, phases 2 and 3 run in one
// pass instead, every hit loading them). A copy on another node gets the search
// request itself (esdsl.Wire) and translates it with its own copy of the
// mapping, never bleve objects; each phase sends one message per node for
// all the shards it serves. A shard that fails or does not answer
// within the request's timeout is left out (partial results, counted in
// _shards.failed), never waited for without end.

// SearchResult is a search's merged result with what the response needs
// beyond bleve's: the merged aggregations, which shards failed, and whether
// the timeout cut it.
type SearchResult struct {
	*bleve.SearchResult
	// Aggs are the request's aggregations merged over the shards that
	// answered (nil when it has none); esdsl.Search.RenderAggs shapes them.
	Aggs esdsl.AggPartials
	// Failures are the shards that gave no result.
	Failures []ShardFailure
	// TimedOut is true when the request's timeout passed before every
	// shard answered.
	TimedOut bool
}

// ShardFailure is one shard that failed a search.
type ShardFailure struct {
	Index string
	Shard int
	Node  string
	Err   error
}

// searchCeiling bounds a search without a timeout of its own, so that a
// node that stops answering without closing its connections never holds a
// request forever.
const searchCeiling = time.Minute

// Search runs srch over every shard of the named indexes with global BM25
// statistics, so N shards rank exactly like one index. Each hit's Index is
// its ES index name; when srch asks for _source or highlights the final
// page's hits carry index.SourceField in Fields (and their term
// locations). Shards that fail give partial results; if none answers, the
// error wraps ErrAllShardsFailed.
func (c *Coordinator) Search(ctx context.Context, names []string, srch *esdsl.Search) (*SearchResult, error) {
	start := time.Now()
	v, err := c.readView()
	if err != nil {
		return nil, err
	}
	limit := searchCeiling
	if srch.Timeout > 0 {
		limit = srch.Timeout
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	searchers, failures := c.searchers(v, names, srch)
	res, err := searchShards(sctx, searchers, srch.Request, srch, c.stats.scope(v, names, srch))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if len(failures) > 0 && len(searchers) == 0 {
			return nil, fmt.Errorf("%w: %w", ErrAllShardsFailed, failures[0].Err)
		}
		return nil, err
	}
	out := &SearchResult{SearchResult: res.SearchResult, Aggs: res.aggs, Failures: append(failures, res.failures...)}
	out.TimedOut = res.timedOut || (srch.Timeout > 0 && sctx.Err() != nil && ctx.Err() == nil)
	st := out.Status
	st.Total += len(failures)
	st.Failed += len(failures)
	if st.Errors == nil {
		st.Errors = map[string]error{}
	}
	for _, f := range failures {
		st.Errors[fmt.Sprintf("%s/%d", f.Index, f.Shard)] = f.Err
	}
	el := uint64(time.Since(start))
	for _, n := range names {
		ic := c.countersFor(n)
		ic.srchTotal.Add(1)
		ic.srchNanos.Add(el)
	}
	return out, nil
}

// searchers picks one active copy of every shard of the named indexes: the
// local one when there is one, else by adaptive replica selection. Shards
// with no active copy are failures from the start.
func (c *Coordinator) searchers(v *state.State, names []string, srch *esdsl.Search) ([]ShardSearcher, []ShardFailure) {
	if pit, keep := srch.PointInTime(); pit != "" {
		p, err := DecodePIT(pit)
		if err != nil {
			return nil, []ShardFailure{{Err: err}}
		}
		return c.pitSearchers(v, p, keep, srch) // pit.go
	}
	var out []ShardSearcher
	var failures []ShardFailure
	rs := newRemoteSearch(v, names, srch)
	routing := srch.Routing()
	for _, n := range names {
		ix, ok := v.Indices[n]
		if !ok {
			continue
		}
		for num := range ix.Shards {
			if !routedTo(routing, num, ix.NumberOfShards) {
				continue
			}
			var active []state.Copy
			for _, cp := range ix.Shards[num].Copies {
				if v.Active(cp) && cp.RelocatingFrom == "" {
					active = append(active, cp)
				}
			}
			if len(active) == 0 {
				failures = append(failures, ShardFailure{Index: n, Shard: num,
					Err: fmt.Errorf("%w: [%s][%d] has no active copy", vocab.ErrUnavailable, n, num)})
				continue
			}
			name := fmt.Sprintf("%s/%d", n, num)
			var remote []state.Copy
			var local *localSearcher
			for _, cp := range active {
				if cp.NodeID != c.meta.LocalNode() {
					remote = append(remote, cp)
				} else if idx, err := c.store.Readable(cp.AllocationID); err == nil {
					// A local copy that is not open, or cannot index what
					// it acknowledged (it is being failed), leaves the
					// shard to the others.
					local = newLocalSearcher(name, cp.AllocationID, idx, srch, n, num)
				}
			}
			switch {
			case local != nil:
				out = append(out, local)
			case len(remote) > 0 && c.peers != nil:
				out = append(out, &remoteSearcher{c: c, rs: rs, name: name, index: n, num: num, uuid: ix.UUID,
					mappingVersion: ix.MappingVersion, copies: c.ars.order(remote)})
			default:
				failures = append(failures, ShardFailure{Index: n, Shard: num,
					Err: fmt.Errorf("%w: no copy of [%s][%d] can be searched from this node now", vocab.ErrUnavailable, n, num)})
			}
		}
	}
	rs.shards = len(out)
	return out, failures
}

// routedTo reports whether a search with these routing values (none: every
// shard) reaches shard num of an index of n shards.
func routedTo(routing []string, num, n int) bool {
	if len(routing) == 0 {
		return true
	}
	for _, r := range routing {
		if ShardFor("", r, n) == num {
			return true
		}
	}
	return false
}

// ShardSearcher is how a search reaches one shard copy: phase 1 collects
// its term statistics for a query, phase 2 searches it under global
// statistics (index.WithGlobalStats in ctx). A copy on another node also
// implements fetcher, for phase 3.
type ShardSearcher interface {
	// Name identifies the shard, unique within one search ("logs/3").
	Name() string
	// TermStats returns the copy's statistics for q and the generation
	// of its contents they were read from.
	TermStats(ctx context.Context, q query.Query) (ShardStats, error)
	// Search runs phase 2. Under index.ExpectGeneration in ctx, a copy
	// whose contents are no longer of that generation searches nothing
	// and fails with a *staleStats holding its fresh statistics.
	Search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error)
}

// fetcher is a searcher whose query phase may return hits without their
// sources and locations; fetch gets them for the hits of the final page.
type fetcher interface {
	// fetches reports whether this search's hits need fetch.
	fetches() bool
	fetch(ctx context.Context, hits []*search.DocumentMatch) error
}

var _ ShardSearcher = (*localSearcher)(nil)

// aggSearcher is a searcher whose query phase also computed the request's
// aggregations over its shard.
type aggSearcher interface {
	// aggPartials are the shard's partial aggregations, once Search
	// succeeded (nil when the request has none).
	aggPartials() esdsl.AggPartials
}

// newRemoteSearch is what the remote searchers of srch over the indices
// names share; its caller sets shards once it knows them.
func newRemoteSearch(v *state.State, names []string, srch *esdsl.Search) *remoteSearch {
	return &remoteSearch{header: shard.SearchHeader{Cluster: v.ClusterUUID, Indices: names, Wire: srch.Wire()},
		fields: srch.Request.Fields, locations: srch.Request.IncludeLocations, named: len(srch.NamedQueries()) > 0,
		from: srch.Request.From, size: srch.Request.Size}
}

// newLocalSearcher searches idx, shard num of the index name, for srch;
// alloc names the copy whose statistics may be kept ("": none).
func newLocalSearcher(name, alloc string, idx *index.Index, srch *esdsl.Search, indexName string, num int) *localSearcher {
	l := &localSearcher{name: name, alloc: alloc, idx: idx, aggs: srch.AggCollector(indexName, num), post: srch.PostFilter()}
	if len(srch.Request.Fields) > 0 && !srch.Request.IncludeLocations {
		l.fields = srch.Request.Fields
	}
	return l
}

// localSearcher is a copy on this node. When fields is set its query
// phase loads no stored fields and fetch loads them for the final page's
// hits only; else the query phase loads them for every hit it returns.
type localSearcher struct {
	name   string
	alloc  string // "": its statistics are not kept
	idx    *index.Index
	aggs   esdsl.AggCollector // nil: no aggregations
	post   query.Query        // the post_filter; nil: none
	fields []string
}

var (
	_ aggSearcher = (*localSearcher)(nil)
	_ cachedCopy  = (*localSearcher)(nil)
	_ fetcher     = (*localSearcher)(nil)
)

func (l *localSearcher) Name() string   { return l.name }
func (l *localSearcher) copyID() string { return l.alloc }
func (l *localSearcher) TermStats(ctx context.Context, q query.Query) (ShardStats, error) {
	st, gen, err := l.idx.TermStats(ctx, q)
	return ShardStats{Stats: st, Generation: gen}, err
}
func (l *localSearcher) Search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	if l.fields != nil {
		r := *req
		r.Fields = nil
		req = &r
	}
	res, err := l.idx.SearchCollect(ctx, req, l.collector(), l.post)
	if errors.Is(err, index.ErrStaleStats) {
		st, serr := l.TermStats(ctx, req.Query)
		if serr != nil {
			return nil, serr
		}
		return nil, &staleStats{st}
	}
	return res, err
}

func (l *localSearcher) fetches() bool { return l.fields != nil }

func (l *localSearcher) fetch(_ context.Context, hits []*search.DocumentMatch) error {
	ids := make([]string, len(hits))
	for k, h := range hits {
		ids[k] = h.ID
	}
	docs, err := l.idx.Documents(ids, l.fields)
	if err != nil {
		return err
	}
	byID := make(map[string]*search.DocumentMatch, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	for _, h := range hits {
		d, ok := byID[h.ID]
		if !ok {
			return fmt.Errorf("fetch of %s: document [%s] is gone", l.name, h.ID)
		}
		h.Fields = d.Fields
	}
	return nil
}

// collector is the aggregations' collector, nil when there are none.
func (l *localSearcher) collector() index.Collector {
	if l.aggs == nil {
		return nil
	}
	return l.aggs
}
func (l *localSearcher) aggPartials() esdsl.AggPartials {
	if l.aggs == nil {
		return nil
	}
	return l.aggs.Partials()
}

// shardsResult is searchShards' merged result, the merged aggregations and
// the shards that failed.
type shardsResult struct {
	*bleve.SearchResult
	aggs     esdsl.AggPartials
	failures []ShardFailure
	// timedOut: the statistics phase's share of the timeout passed
	// before every shard answered it.
	timedOut bool
}

// SearchShards searches the given shards with global statistics (see
// Search) and returns bleve's merged result; failing shards are left out
// and reported in Status. A single shard is searched directly (its
// statistics are the global ones). If no shard answers, the error wraps
// ErrAllShardsFailed and the first shard's error (a malformed query fails
// this way).
func SearchShards(ctx context.Context, searchers []ShardSearcher, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	res, err := searchShards(ctx, searchers, req, nil, nil)
	if err != nil {
		return nil, err
	}
	return res.SearchResult, nil
}

// searchShards runs the phases over searchers; srch (nil for a bare bleve
// request) reduces the shards' aggregations, and scope (nil: none) keeps
// statistics between searches.
//
// A search whose response does not depend on scores (esdsl's ScoresUsed:
// sorted by fields, aggregations only, counts) has no statistics phase:
// each shard's own statistics select the same hits.
//
// Statistics kept from an earlier search are used only as far as their
// copies confirm, in the query phase, that their contents are still of
// the generation they were read from. A copy that answers stale sends its
// fresh statistics instead of hits; the query phase then runs once more on
// every shard with the corrected sums, checking nothing, as after a
// statistics phase of the search's own (the copies may change between the
// phases: exact ranking holds for shards that do not change meanwhile).
// Under steady writes to some shards a search whose statistics were kept
// thus runs the query phase twice where it would have run the statistics
// phase and the query phase.
func searchShards(ctx context.Context, searchers []ShardSearcher, req *bleve.SearchRequest, srch *esdsl.Search, scope *statsScope) (*shardsResult, error) {
	if req == nil || req.Query == nil {
		return nil, fmt.Errorf("%w: search request has no query", vocab.ErrInvalidRequest)
	}
	if len(searchers) == 0 {
		out := &shardsResult{SearchResult: &bleve.SearchResult{Status: &bleve.SearchStatus{Errors: map[string]error{}}, Request: req, Hits: search.DocumentMatchCollection{}}}
		if srch != nil {
			out.aggs = srch.ReduceAggs(nil)
		}
		return out, nil
	}
	var gs *globalStats
	live := searchers
	failed := map[string]error{}
	statsTimedOut := false
	if len(searchers) > 1 && (srch == nil || srch.ScoresUsed()) {
		sctx, cancel := statsContext(ctx, srch)
		gs, failed = gatherStats(sctx, searchers, req.Query, scope)
		statsTimedOut = len(failed) > 0 && sctx.Err() != nil && ctx.Err() == nil
		cancel()
		live = gs.live
		if len(live) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: shard %s: %w", ErrAllShardsFailed, searchers[0].Name(), failed[searchers[0].Name()])
		}
	}
	named := srch != nil && len(srch.NamedQueries()) > 0
	res, pending, err := queryPhase(ctx, live, req, gs, true, named)
	if err == nil && len(pending.stale) > 0 {
		gs.refresh(pending.stale, scope)
		res, pending, err = queryPhase(ctx, live, req, gs, false, named)
	}
	if err != nil {
		return nil, err
	}
	fctx, cancel := fetchContext(ctx, srch)
	defer cancel()
	pending.fetch(fctx, req, res)
	if srch != nil {
		pending.matchNamed(ctx, srch, res)
	}
	for n, e := range failed {
		if res.Status.Errors == nil {
			res.Status.Errors = map[string]error{}
		}
		if _, seen := res.Status.Errors[n]; !seen {
			res.Status.Errors[n] = e
			res.Status.Failed++
			res.Status.Total++
		}
	}
	out := &shardsResult{SearchResult: res, timedOut: statsTimedOut}
	if srch != nil {
		out.aggs = srch.ReduceAggs(pending.aggPartials())
	}
	for n, e := range res.Status.Errors {
		out.failures = append(out.failures, failureOf(n, e))
	}
	sort.Slice(out.failures, func(a, b int) bool {
		fa, fb := out.failures[a], out.failures[b]
		return fa.Index < fb.Index || (fa.Index == fb.Index && fa.Shard < fb.Shard)
	})
	return out, nil
}

// statsContext bounds the statistics phase of a search with a timeout to
// half of it, so that a node that does not answer leaves the query phase
// of the others time to run.
func statsContext(ctx context.Context, srch *esdsl.Search) (context.Context, context.CancelFunc) {
	if srch == nil || srch.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, srch.Timeout/2)
}

// fetchContext is the fetch phase's context: a search with a timeout
// fetches the final page's hits within a timeout of their own, even when
// the query phase took all of the search's (Elasticsearch's timeout bounds
// the query phase); others fetch under ctx.
func fetchContext(ctx context.Context, srch *esdsl.Search) (context.Context, context.CancelFunc) {
	if srch == nil || srch.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), srch.Timeout)
}

// queryPhase runs phase 2 over live, under gs's statistics (nil: each
// shard its own) and, if strict, checking the generations the kept ones
// were read from;
// bleve's IndexAlias merges, sorts and pages. The fetchSet returned knows
// each hit's searcher and which searchers answered stale.
func queryPhase(ctx context.Context, live []ShardSearcher, req *bleve.SearchRequest, gs *globalStats, strict, named bool) (*bleve.SearchResult, *fetchSet, error) {
	pending := &fetchSet{byHit: map[*search.DocumentMatch]ShardSearcher{}, named: named}
	sent := newDispatch(live)
	children := make([]bleve.Index, len(live))
	ranks := ranksByName(live)
	for k, s := range live {
		ch := aliasChild{s: s, pending: pending, rank: ranks[k], of: len(live)}
		if gs != nil && strict && gs.kept[k] {
			ch.expect = gs.per[k].Generation
		}
		if _, remote := s.(*remoteSearcher); !remote {
			ch.after = sent
		}
		children[k] = ch
	}
	qctx := ctx
	if gs != nil {
		qctx = index.WithGlobalStats(ctx, gs.total)
	}
	coalesce(phaseQuery, live)
	res, err := bleve.NewIndexAlias(children...).SearchInContext(qctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("%w: shard %s: %w", ErrAllShardsFailed, live[0].Name(), err)
	}
	if res == nil {
		res = &bleve.SearchResult{Request: req, Hits: search.DocumentMatchCollection{}}
	}
	if res.Status == nil {
		res.Status = &bleve.SearchStatus{}
	}
	if res.Status.Total == 0 && res.Status.Failed == 0 {
		// A lone child's result comes back as it is, without a status.
		res.Status.Total, res.Status.Successful = len(live), len(live)
	}
	return res, pending, nil
}

// ranksByName is each searcher's place in ss sorted by name: the same on
// every node for the same shards (aliasChild.rank).
func ranksByName(ss []ShardSearcher) []int {
	order := make([]int, len(ss))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ss[a].Name(), ss[b].Name()) })
	ranks := make([]int, len(ss))
	for r, k := range order {
		ranks[k] = r
	}
	return ranks
}

// matchNamed sets the named queries that each hit of a local copy matches
// (a remote copy's come with its fetch phase).
func (f *fetchSet) matchNamed(ctx context.Context, srch *esdsl.Search, res *bleve.SearchResult) {
	named := srch.NamedQueries()
	if len(named) == 0 {
		return
	}
	groups := map[*localSearcher][]*search.DocumentMatch{}
	for _, h := range res.Hits {
		if l, ok := f.byHit[h].(*localSearcher); ok {
			groups[l] = append(groups[l], h)
		}
	}
	for l, hits := range groups {
		ids := make([]string, len(hits))
		for k, h := range hits {
			ids[k] = h.ID
		}
		matched, err := shard.MatchedQueries(ctx, l.idx, named, ids)
		if err != nil {
			continue // the hits are still right; they lack matched_queries
		}
		for _, h := range hits {
			setMatched(h, matched[h.ID])
		}
	}
}

func setMatched(h *search.DocumentMatch, names []string) {
	if len(names) == 0 {
		return
	}
	if h.Fields == nil {
		h.Fields = map[string]any{}
	}
	h.Fields[index.MatchedQueriesField] = names
}

// failureOf names the shard of a failure from its searcher name "index/n".
func failureOf(name string, err error) ShardFailure {
	f := ShardFailure{Index: name, Err: err}
	if i := strings.LastIndexByte(name, '/'); i > 0 {
		f.Index = name[:i]
		_, _ = fmt.Sscanf(name[i+1:], "%d", &f.Shard)
	}
	var rf *remoteFailure
	if errors.As(err, &rf) {
		f.Node = rf.node
	}
	return f
}

// globalStats are a search's statistics: each live searcher's (per[k] is
// live[k]'s) and their sum.
type globalStats struct {
	live  []ShardSearcher
	ids   []string // the copies of live (see copyIDs)
	per   []ShardStats
	total *index.TermStats
	// kept[k]: per[k] was kept from an earlier search, and the query
	// phase checks that live[k]'s copy is still of its generation.
	kept []bool
}

// gatherStats takes each searcher's statistics from scope or else runs
// phase 1 on it, and sums what answered; failed are the searchers that did
// not.
func gatherStats(ctx context.Context, searchers []ShardSearcher, q query.Query, scope *statsScope) (*globalStats, map[string]error) {
	ids := copyIDs(searchers)
	per := scope.get(ids)
	kept := make([]bool, len(searchers))
	var missing []ShardSearcher
	for k, s := range searchers {
		kept[k] = per[k].Stats != nil
		if !kept[k] {
			missing = append(missing, s)
		}
	}
	errs := make(map[ShardSearcher]error, len(missing))
	if len(missing) > 0 {
		fresh := make([]ShardStats, len(missing))
		ferrs := make([]error, len(missing))
		coalesce(phaseStats, missing)
		var wg sync.WaitGroup
		for k, s := range missing {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fresh[k], ferrs[k] = s.TermStats(ctx, q)
			}()
		}
		wg.Wait()
		ids = copyIDs(searchers) // a shard that failed over answered from another copy
		j := 0
		for k, s := range searchers {
			if per[k].Stats != nil {
				continue
			}
			per[k] = fresh[j]
			if ferrs[j] != nil {
				errs[s] = ferrs[j]
			}
			j++
		}
		scope.put(ids, per)
	}
	gs := &globalStats{}
	failed := map[string]error{}
	for k, s := range searchers {
		if err := errs[s]; err != nil {
			failed[s.Name()] = err
			continue
		}
		gs.live, gs.ids, gs.per = append(gs.live, s), append(gs.ids, ids[k]), append(gs.per, per[k])
		gs.kept = append(gs.kept, kept[k])
	}
	gs.total = scope.sum(gs.ids, gs.per)
	return gs, failed
}

// refresh replaces the statistics of the searchers that answered stale
// with the fresh ones they sent, keeps those, and sums again.
func (gs *globalStats) refresh(stale map[ShardSearcher]ShardStats, scope *statsScope) {
	gs.ids = copyIDs(gs.live)
	for k, s := range gs.live {
		if st, ok := stale[s]; ok {
			gs.per[k] = st
		}
	}
	scope.put(gs.ids, gs.per)
	gs.total = scope.sum(gs.ids, gs.per)
}

// fetchSet remembers which searcher returned each hit (for the fetch phase
// of remote copies and the named queries of local ones), which searchers
// answered the query phase, and which answered that their statistics were
// stale.
type fetchSet struct {
	mu       sync.Mutex
	byHit    map[*search.DocumentMatch]ShardSearcher
	answered []ShardSearcher
	stale    map[ShardSearcher]ShardStats
	named    bool // the request has named queries: every page needs fetching
}

// markStale records that s's contents changed since the statistics its
// query phase assumed, and its fresh ones.
func (f *fetchSet) markStale(s ShardSearcher, st ShardStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stale == nil {
		f.stale = map[ShardSearcher]ShardStats{}
	}
	f.stale[s] = st
}

func (f *fetchSet) add(s ShardSearcher, hits search.DocumentMatchCollection) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hits {
		f.byHit[h] = s
	}
}

// searched records that s answered the query phase.
func (f *fetchSet) searched(s ShardSearcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = append(f.answered, s)
}

// aggPartials are the partial aggregations of the searchers that answered.
func (f *fetchSet) aggPartials() []esdsl.AggPartials {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []esdsl.AggPartials
	for _, s := range f.answered {
		if a, ok := s.(aggSearcher); ok {
			out = append(out, a.aggPartials())
		}
	}
	return out
}

// fetch runs phase 3 for the hits of res that need it, grouped by shard.
// A shard whose fetch fails loses its hits from the page and counts as
// failed.
func (f *fetchSet) fetch(ctx context.Context, req *bleve.SearchRequest, res *bleve.SearchResult) {
	if len(f.byHit) == 0 || (len(req.Fields) == 0 && !req.IncludeLocations && !f.named) {
		return
	}
	groups := map[fetcher][]*search.DocumentMatch{}
	var fetchers []ShardSearcher
	for _, h := range res.Hits {
		if s, ok := f.byHit[h].(fetcher); ok && s.fetches() {
			if _, seen := groups[s]; !seen {
				fetchers = append(fetchers, f.byHit[h])
			}
			groups[s] = append(groups[s], h)
		}
	}
	coalesce(phaseFetch, fetchers)
	type outcome struct {
		s   fetcher
		err error
	}
	done := make(chan outcome, len(groups))
	for s, hits := range groups {
		go func() { done <- outcome{s, s.fetch(ctx, hits)} }()
	}
	lost := map[*search.DocumentMatch]bool{}
	for range groups {
		o := <-done
		if o.err == nil {
			continue
		}
		name := o.s.(ShardSearcher).Name()
		for _, h := range groups[o.s] {
			lost[h] = true
		}
		if res.Status.Errors == nil {
			res.Status.Errors = map[string]error{}
		}
		res.Status.Errors[name] = fmt.Errorf("fetch phase: %w", o.err)
		res.Status.Failed++
		res.Status.Successful--
	}
	if len(lost) > 0 {
		kept := res.Hits[:0]
		for _, h := range res.Hits {
			if !lost[h] {
				kept = append(kept, h)
			}
		}
		res.Hits = kept
	}
}

// IndexSearcher returns a ShardSearcher over idx alone, named name: a
// local shard as a search reads it, for tools and tests that run bleve
// requests through the phases and the reduce (SearchShards).
func IndexSearcher(name string, idx *index.Index) ShardSearcher {
	return &localSearcher{name: name, idx: idx}
}
