package coord

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// SearchRequest is one search as a client sent it, translated: what
// RunSearch runs.
type SearchRequest struct {
	Indices []string
	Search  *esdsl.Search
	// Unfit are indices of the request the search could not be translated
	// for, with why; their shards count as failed shards of the search.
	Unfit map[string]error
}

// SearchReply is a search request's outcome.
type SearchReply struct {
	*SearchResult
	// Aggregations are the final aggregations (esdsl.Search.RenderAggs),
	// nil without any.
	Aggregations map[string]any
	// ScrollID is set on the first page of a scroll, and OpenedPIT to the
	// point in time it opened for the scroll.
	ScrollID  string
	OpenedPIT *PIT
}

// PartialFailureError: some shards of a search failed and the request does
// not allow partial results (allow_partial_search_results, or the cluster's
// search.default_allow_partial_results). It is ErrPartialResults and the
// first failed shard's error (errors.Is finds both).
type PartialFailureError struct {
	Failed, Total int
	First         ShardFailure
}

func (e *PartialFailureError) Error() string {
	return fmt.Sprintf("Partial shards failure: %d of %d shards failed (first: [%s][%d]) and allow_partial_search_results is false",
		e.Failed, e.Total, e.First.Index, e.First.Shard)
}

func (e *PartialFailureError) Unwrap() []error { return []error{ErrPartialResults, e.First.Err} }

// defaultAllowPartialSetting is the cluster setting that decides whether a
// search that does not say may return partial results (default true).
const defaultAllowPartialSetting = "search.default_allow_partial_results"

// RunSearch runs a search request: the search phases and the final reduce
// of its aggregations, the partial-results rule, and a scroll's bookkeeping
// (the first page of a scroll opens the scroll's point in time; every page
// stores where it ended with it). A search whose point in time is gone
// fails with ErrContextMissing. An opened point in time is closed again
// when the request fails.
func (c *Coordinator) RunSearch(ctx context.Context, req SearchRequest) (*SearchReply, error) {
	srch := req.Search
	var pit *PIT // a scroll's
	opened := false
	if srch.Scroll > 0 {
		id, _ := srch.PointInTime()
		p, err := DecodePIT(id)
		if id == "" {
			p, err = c.openPIT(ctx, req.Indices, srch.Scroll, vocab.ContextScroll)
			opened = true
		}
		if err != nil {
			return nil, err
		}
		pit = &p
		srch.SetPointInTime(p.Encode(), srch.Scroll)
	}
	reply, err := c.runSearch(ctx, req, pit)
	if err != nil && opened {
		c.releasePIT(ctx, *pit)
	}
	if err == nil && opened {
		reply.OpenedPIT = pit
		if reply.ScrollID, err = srch.ScrollID(pit.Encode(), req.Indices); err != nil {
			c.releasePIT(ctx, *pit)
			return nil, err
		}
	}
	return reply, err
}

func (c *Coordinator) runSearch(ctx context.Context, req SearchRequest, pit *PIT) (*SearchReply, error) {
	srch := req.Search
	res, err := c.Search(ctx, req.Indices, srch)
	if err != nil {
		return nil, err
	}
	c.addUnfit(res, req.Unfit)
	if len(res.Failures) > 0 && res.Status != nil && res.Status.Successful == 0 && errors.Is(res.Failures[0].Err, vocab.ErrContextMissing) {
		return nil, res.Failures[0].Err // the point in time is gone
	}
	if len(res.Failures) > 0 && !srch.AllowPartial(c.clusterSetting(defaultAllowPartialSetting) != "false") {
		return nil, &PartialFailureError{Failed: len(res.Failures), Total: res.Status.Total, First: res.Failures[0]}
	}
	reply := &SearchReply{SearchResult: res}
	if reply.Aggregations, err = srch.RenderAggs(res.Aggs); err != nil {
		return nil, err
	}
	if pit != nil {
		page, after := srch.ScrollCursor(res.SearchResult)
		if err := c.CommitScroll(ctx, *pit, vocab.ScrollCursor{Page: page, After: after}); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// ScrollPage serves the next page of the scroll over pit: it claims the
// scroll's cursor (so that no other request serves the same page), has
// page translate the search of the page after it, and runs it (RunSearch).
// When anything fails the page is given up, so that the next request
// serves it again.
func (c *Coordinator) ScrollPage(ctx context.Context, pit PIT, indices []string, page func(vocab.ScrollCursor) (*esdsl.Search, error)) (*SearchReply, error) {
	cur, err := c.ClaimScroll(ctx, pit)
	if err != nil {
		return nil, err
	}
	srch, err := page(cur)
	var reply *SearchReply
	if err == nil {
		reply, err = c.RunSearch(ctx, SearchRequest{Indices: indices, Search: srch})
	}
	if err != nil {
		_ = c.CommitScroll(ctx, pit, cur) // give the page up
		return nil, err
	}
	return reply, nil
}

// addUnfit counts the shards of the indices the request did not fit as
// failed shards of the search.
func (c *Coordinator) addUnfit(res *SearchResult, unfit map[string]error) {
	if len(unfit) == 0 || res.Status == nil {
		return
	}
	v, err := c.readView()
	if err != nil {
		return
	}
	names := make([]string, 0, len(unfit))
	for n := range unfit {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ix, ok := v.Indices[n]
		if !ok {
			continue
		}
		for k := 0; k < ix.NumberOfShards; k++ {
			res.Failures = append(res.Failures, ShardFailure{Index: n, Shard: k, Err: unfit[n]})
			res.Status.Total++
			res.Status.Failed++
		}
	}
}

// clusterSetting is a cluster setting's value as stored ("" when unset).
func (c *Coordinator) clusterSetting(key string) string {
	v, err := c.readView()
	if err != nil {
		return ""
	}
	return v.Settings.Values[key]
}
