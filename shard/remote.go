package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// The search phases of a shard copy on another node: the coordinator sends
// the search request itself (esdsl.Wire), the indices it was translated
// against and their mapping version; the data node translates it again
// with the same mappings and runs the phase on its copy.

// searchTarget addresses one copy in a search phase request.
type searchTarget struct {
	Cluster string `json:"cluster"`
	Index   string `json:"index_uuid"`
	Shard   int    `json:"shard"`
	Alloc   string `json:"allocation_id"`
	// Indices are the names the coordinator translated the request
	// against, in its order; MappingVersion is this shard's index's
	// mapping version it used (the data node waits until it has it).
	Indices        []string   `json:"indices"`
	MappingVersion uint64     `json:"mapping_version"`
	Wire           esdsl.Wire `json:"wire"`
	// Ctx is the reader context of a point-in-time search (the copy's
	// pinned view is searched, its keep-alive extended to KeepAlive).
	Ctx       string        `json:"ctx,omitempty"`
	KeepAlive time.Duration `json:"keep_alive,omitempty"`
}

type statsRequest struct {
	searchTarget
}

type queryRequest struct {
	searchTarget
	Stats *index.TermStats `json:"stats,omitempty"`
	From  int              `json:"from"`
	Size  int              `json:"size"`
}

type queryReply struct {
	Total    uint64            `json:"total"`
	Gte      bool              `json:"gte,omitempty"`
	MaxScore float64           `json:"max_score"`
	Hits     []wireHit         `json:"hits"`
	Aggs     esdsl.AggPartials `json:"aggs,omitempty"`
}

// wireHit is a hit of the query phase: what merging and paging need.
type wireHit struct {
	ID    string              `json:"id"`
	Score float64             `json:"score"`
	Sort  []string            `json:"sort,omitempty"`
	Num   uint64              `json:"n"` // bleve's HitNumber, its tiebreak
	Expl  *search.Explanation `json:"expl,omitempty"`
}

// fetchRequest asks for the sources (and term locations) of hits. It runs
// the query again restricted to their ids, unscored: no statistics needed.
type fetchRequest struct {
	searchTarget
	IDs []string `json:"ids"`
}

type fetchReply struct {
	Hits map[string]fetchedHit `json:"hits"`
}

type fetchedHit struct {
	Fields    map[string]any              `json:"fields,omitempty"`
	Locations search.FieldTermLocationMap `json:"locations,omitempty"`
	Matched   []string                    `json:"matched,omitempty"` // named queries
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
// (not of the request) moves on to the next copy.
type remoteSearcher struct {
	c              *Coordinator
	name, index    string
	num            int
	uuid, cluster  string
	mappingVersion uint64
	wire           esdsl.Wire
	indices        []string
	pitCtx         string        // a point-in-time search: the copy's reader context
	pitKeep        time.Duration // and the keep-alive it is extended to

	mu     sync.Mutex
	copies []CopyView // untried or working, best first
	aggs   esdsl.AggPartials
}

var (
	_ ShardSearcher = (*remoteSearcher)(nil)
	_ fetcher       = (*remoteSearcher)(nil)
	_ aggSearcher   = (*remoteSearcher)(nil)
)

func (r *remoteSearcher) aggPartials() esdsl.AggPartials {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aggs
}

func (r *remoteSearcher) Name() string { return r.name }

func (r *remoteSearcher) target(alloc string) searchTarget {
	return searchTarget{Cluster: r.cluster, Index: r.uuid, Shard: r.num, Alloc: alloc, Indices: r.indices,
		MappingVersion: r.mappingVersion, Wire: r.wire, Ctx: r.pitCtx, KeepAlive: r.pitKeep}
}

// call sends one phase to the best copy, moving to the next copy when a
// node fails. build makes the request for a copy.
func (r *remoteSearcher) call(ctx context.Context, method fabric.Method, build func(alloc string) any, reply any) error {
	var last error
	for {
		r.mu.Lock()
		if len(r.copies) == 0 {
			r.mu.Unlock()
			if last != nil {
				return last
			}
			return fmt.Errorf("%w: no copy of [%s][%d] answered", ErrUnavailable, r.index, r.num)
		}
		cp := r.copies[0]
		r.mu.Unlock()
		err := r.callCopy(ctx, cp, method, build(cp.AllocationID), reply)
		if err != nil {
			err = &remoteFailure{node: cp.NodeID, err: err}
		}
		if err == nil || ctx.Err() != nil || !copyFault(err) {
			return err
		}
		last = err
		r.mu.Lock()
		if len(r.copies) > 0 && r.copies[0].AllocationID == cp.AllocationID {
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
		return errors.Is(err, ErrStaleRouting) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed) ||
			re.Code == fabric.CodeUnavailable || re.Code == fabric.CodeInternal
	}
	return true // transport errors: the node or the path to it failed
}

func (r *remoteSearcher) callCopy(ctx context.Context, cp CopyView, method fabric.Method, req, reply any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	done := r.c.ars.begin(cp.NodeID)
	start := time.Now()
	raw, err := r.c.peers.Call(ctx, cp.NodeID, method, append([]byte{wireVersion}, body...))
	done(time.Since(start), err != nil)
	if err != nil {
		return fromRemote(err)
	}
	if len(raw) < 1 || raw[0] != wireVersion {
		return fmt.Errorf("%w: reply version", errBadMessage)
	}
	return json.Unmarshal(raw[1:], reply)
}

func (r *remoteSearcher) TermStats(ctx context.Context, _ query.Query) (*index.TermStats, error) {
	var st index.TermStats
	err := r.call(ctx, methodSearchStats, func(alloc string) any { return statsRequest{r.target(alloc)} }, &st)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Search runs the query phase: hits carry ids, scores and sort keys only.
func (r *remoteSearcher) Search(ctx context.Context, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	stats := index.GlobalStatsFrom(ctx)
	var rep queryReply
	err := r.call(ctx, methodSearchQuery, func(alloc string) any {
		return queryRequest{searchTarget: r.target(alloc), Stats: stats, From: req.From, Size: req.Size}
	}, &rep)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.aggs = rep.Aggs
	r.mu.Unlock()
	res := &bleve.SearchResult{Request: req, Total: rep.Total, MaxScore: rep.MaxScore,
		Status: &bleve.SearchStatus{Total: 1, Successful: 1}, Hits: make(search.DocumentMatchCollection, len(rep.Hits))}
	if rep.Gte {
		res.TotalRelation = bleve.TotalRelationGte
	}
	for k, h := range rep.Hits {
		res.Hits[k] = &search.DocumentMatch{Index: r.index, ID: h.ID, Score: h.Score, Sort: h.Sort, HitNumber: h.Num, Expl: h.Expl}
	}
	return res, nil
}

// fetch runs the fetch phase for hits this shard returned.
func (r *remoteSearcher) fetch(ctx context.Context, hits []*search.DocumentMatch) error {
	ids := make([]string, len(hits))
	for k, h := range hits {
		ids[k] = h.ID
	}
	var rep fetchReply
	if err := r.call(ctx, methodSearchFetch, func(alloc string) any {
		return fetchRequest{searchTarget: r.target(alloc), IDs: ids}
	}, &rep); err != nil {
		return err
	}
	for _, h := range hits {
		f, ok := rep.Hits[h.ID]
		if !ok {
			return fmt.Errorf("fetch of [%s][%d]: document [%s] is gone", r.index, r.num, h.ID)
		}
		h.Fields, h.Locations = f.Fields, f.Locations
		setMatched(h, f.Matched)
	}
	return nil
}

// readPhase decodes a phase request and rebuilds the search on this
// node's copy: it checks the copy is here, waits for the mapping version
// the coordinator used, and translates the request again. It returns the
// index to search: the copy's, or its pinned view for a point in time.
func (c *Coordinator) readPhase(ctx context.Context, req *fabric.Request, into any, t func() *searchTarget) (*index.Index, *esdsl.Search, error) {
	if len(req.Payload) < 1 || req.Payload[0] != wireVersion {
		return nil, nil, fabric.Errorf(fabric.CodeBadRequest, "search phase: unknown request version")
	}
	if err := json.Unmarshal(req.Payload[1:], into); err != nil {
		return nil, nil, fabric.Errorf(fabric.CodeBadRequest, "search phase: %v", err)
	}
	tg := t()
	if err := c.checkRouting(ctx, tg.Cluster, tg.Index, tg.Shard, tg.Alloc, false); err != nil {
		return nil, nil, remoteErr(err)
	}
	sc, ok := c.store.copy(tg.Alloc)
	if !ok {
		return nil, nil, remoteErr(fmt.Errorf("%w: copy %s is not open on this node", ErrUnavailable, tg.Alloc))
	}
	fields, err := c.fieldsAt(ctx, tg.Index, tg.MappingVersion, tg.Indices)
	if err != nil {
		return nil, nil, remoteErr(err)
	}
	srch, err := esdsl.FromWire(tg.Wire, fields)
	if err != nil {
		return nil, nil, remoteErr(fmt.Errorf("%w: %v", ErrInvalidRequest, err))
	}
	if tg.Ctx != "" {
		view, err := c.pits.use(tg.Ctx, tg.KeepAlive)
		if err != nil {
			return nil, nil, remoteErr(err)
		}
		return view, srch, nil
	}
	return sc.idx, srch, nil
}

// fieldsAt returns the mappings of names, once this node's mapping of the
// index uuid is at least at version mv.
func (c *Coordinator) fieldsAt(ctx context.Context, uuid string, mv uint64, names []string) (FieldTypes, error) {
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	v, err := c.meta.AwaitView(wctx, func(v *View) bool {
		ix, ok := v.IndexByUUID(uuid)
		return ok && ix.MappingVersion >= mv
	})
	if err != nil {
		return nil, fmt.Errorf("%w: mapping version %d of index %s has not reached this node", ErrUnavailable, mv, uuid)
	}
	ix, _ := v.IndexByUUID(uuid)
	nm, ok := c.store.mapping(uuid)
	if !ok {
		return nil, fmt.Errorf("%w: index %s has no mapping on this node yet", ErrUnavailable, uuid)
	}
	if err := nm.merge(ix); err != nil {
		return nil, err
	}
	return c.Fields(names), nil
}

func (c *Coordinator) serveSearchStats(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m statsRequest
	idx, srch, err := c.readPhase(ctx, req, &m, func() *searchTarget { return &m.searchTarget })
	if err != nil {
		return nil, err
	}
	st, err := idx.TermStats(ctx, srch.Request.Query)
	if err != nil {
		return nil, remoteErr(err)
	}
	return jsonReply(st)
}

func (c *Coordinator) serveSearchQuery(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m queryRequest
	idx, srch, err := c.readPhase(ctx, req, &m, func() *searchTarget { return &m.searchTarget })
	if err != nil {
		return nil, err
	}
	r := *srch.Request
	r.From, r.Size = m.From, m.Size
	r.Fields, r.IncludeLocations, r.Highlight = nil, false, nil
	if m.Stats != nil {
		ctx = index.WithGlobalStats(ctx, m.Stats)
	}
	name := ""
	if ix, ok := c.meta.View().IndexByUUID(m.Index); ok {
		name = ix.Name
	}
	ac := srch.AggCollector(name, m.Shard)
	var col index.Collector
	if ac != nil {
		col = ac
	}
	res, err := idx.SearchCollect(ctx, &r, col)
	if err != nil {
		return nil, remoteErr(err)
	}
	rep := queryReply{Total: res.Total, Gte: res.TotalRelation == bleve.TotalRelationGte, MaxScore: res.MaxScore,
		Hits: make([]wireHit, len(res.Hits))}
	if ac != nil {
		rep.Aggs = ac.Partials()
	}
	for k, h := range res.Hits {
		rep.Hits[k] = wireHit{ID: h.ID, Score: h.Score, Sort: h.Sort, Num: h.HitNumber, Expl: h.Expl}
	}
	return jsonReply(rep)
}

func (c *Coordinator) serveSearchFetch(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m fetchRequest
	idx, srch, err := c.readPhase(ctx, req, &m, func() *searchTarget { return &m.searchTarget })
	if err != nil {
		return nil, err
	}
	base := srch.Request
	r := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(base.Query, bleve.NewDocIDQuery(m.IDs)), len(m.IDs), 0, false)
	r.Fields, r.IncludeLocations, r.Score = base.Fields, base.IncludeLocations, "none"
	res, err := idx.Search(ctx, r)
	if err != nil {
		return nil, remoteErr(err)
	}
	matched, err := matchedQueries(ctx, idx, srch.NamedQueries(), m.IDs)
	if err != nil {
		return nil, remoteErr(err)
	}
	rep := fetchReply{Hits: make(map[string]fetchedHit, len(res.Hits))}
	for _, h := range res.Hits {
		rep.Hits[h.ID] = fetchedHit{Fields: h.Fields, Locations: h.Locations, Matched: matched[h.ID]}
	}
	return jsonReply(rep)
}

func jsonReply(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte{wireVersion}, raw...), nil
}

// Register serves this node's side of the shard layer's methods on mux —
// writes and gets on its primaries, search phases on its copies,
// replication and recovery — and the recovery file streams on streams (a
// receiver the node registered on mux for fabric.MethodStream). Call it
// before the fabric listens.
func (c *Coordinator) Register(mux *fabric.Mux, streams *fabric.StreamReceiver) {
	mux.HandleFunc(methodBulk, c.serveBulk)
	mux.HandleFunc(methodGet, c.serveGet)
	mux.HandleFunc(methodMget, c.serveMget)
	mux.HandleFunc(methodContextOpen, c.serveContextOpen)
	for _, m := range []fabric.Method{methodContextClose, methodScrollClaim, methodScrollCommit} {
		mux.HandleFunc(m, c.serveContextOp(m))
	}
	mux.HandleFunc(methodRefresh, c.serveRefresh)
	mux.HandleFunc(methodCopyStats, c.serveCopyStats)
	mux.HandleFunc(methodSearchStats, c.serveSearchStats)
	mux.HandleFunc(methodSearchQuery, c.serveSearchQuery)
	mux.HandleFunc(methodSearchFetch, c.serveSearchFetch)
	mux.HandleFunc(methodReplicate, c.serveReplicate)
	mux.HandleFunc(methodRecoveryStart, c.serveRecoveryStart)
	mux.HandleFunc(methodRecoveryFiles, c.serveRecoveryFiles)
	mux.HandleFunc(methodRecoveryOps, c.serveRecoveryOps)
	streams.Handle(methodRecoveryFiles, c.store.receiveFiles)
}
