package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weftsearch/weft/vocab"
)

// _delete_by_query, _update_by_query and _reindex (local) all run ByQuery:
// a search over the source indices — one index at a time, in _id order,
// batch by batch with search_after — whose every batch the request turns
// into writes sent through Bulk, as Elasticsearch's run a scroll and bulk
// requests. Deletes and in-place updates carry the seq no and primary term
// the search saw, so a document changed since is a version conflict
// (Proceed false stops there, true counts it and goes on).

// ByQuery is one by-query request.
type ByQuery struct {
	// Source is what the request's index expression resolved to, and
	// Query the query object of the search over it (nil: all documents).
	Source Resolved
	Query  json.RawMessage
	// Params are the URL parameters that shape the search (q, routing,
	// timeout, …).
	Params map[string][]string
	// Proceed: a version conflict is counted and the request goes on
	// (conflicts=proceed); else it stops the request.
	Proceed bool
	// MaxDocs bounds the documents handled (-1: all); Batch is the size of
	// one search batch (scroll_size).
	MaxDocs int64
	Batch   int
	Write   WriteOptions
	// Ops turns a batch of the documents found into the writes to send.
	Ops func([]ScanHit) ([]vocab.Op, error)
}

// ScanHit is one document a batch found.
type ScanHit struct {
	Index, ID   string
	SeqNo, Term uint64
	Version     int64
	Source      json.RawMessage
}

// ByQueryResult counts what a by-query request did.
type ByQueryResult struct {
	// Total is how many documents matched (up to MaxDocs).
	Total                                                       int64
	Updated, Created, Deleted, Batches, VersionConflicts, Noops int64
	// Failures are the writes that failed and stopped the request (or, for
	// a version conflict, were counted under Proceed false).
	Failures []ByQueryFailure
}

// ByQueryFailure is one write that failed.
type ByQueryFailure struct {
	Op     vocab.Op
	Result vocab.OpResult
}

// ByQuery scans and writes. An error is returned only when the request
// could not go on (a search or a bulk request failed as a whole); items
// that failed are in the result's Failures.
func (c *Coordinator) ByQuery(ctx context.Context, req ByQuery) (ByQueryResult, error) {
	var out ByQueryResult
	total, err := c.scan(ctx, req, func(batch []ScanHit) (bool, error) {
		writes, err := req.Ops(batch)
		if err != nil {
			return false, err
		}
		out.Batches++
		if len(writes) == 0 {
			return true, nil
		}
		results, err := c.Bulk(ctx, writes, req.Write)
		if err != nil {
			return false, err
		}
		return out.tally(writes, results, req.Proceed), nil
	})
	if err != nil {
		return out, err
	}
	out.Total = total
	if req.MaxDocs >= 0 {
		out.Total = min(total, req.MaxDocs)
	}
	return out, nil
}

// scan runs the request's search over its indices, in _id order, and
// hands each batch to fn until fn stops it (false) or MaxDocs documents
// were handed. It returns the total of matching documents.
func (c *Coordinator) scan(ctx context.Context, req ByQuery, fn func([]ScanHit) (bool, error)) (int64, error) {
	var total, handed int64
	for _, name := range req.Source.Indices {
		sc, err := c.Scope(Resolved{Indices: []string{name}, Filters: req.Source.Filters, Routing: req.Source.Routing}, req.Params)
		if err != nil {
			return total, err
		}
		var after string
		first := true
		for {
			size := req.Batch
			if req.MaxDocs >= 0 {
				size = int(min(int64(size), req.MaxDocs-handed))
			}
			if size <= 0 {
				return total, nil
			}
			body := map[string]any{"size": size, "sort": []any{map[string]any{"_id": "asc"}}, "seq_no_primary_term": true, "version": true}
			if req.Query != nil {
				body["query"] = req.Query
			}
			if first {
				body["track_total_hits"] = true
			}
			if after != "" {
				body["search_after"] = []any{after}
			}
			raw, err := json.Marshal(body)
			if err != nil {
				return total, err
			}
			srch, err := sc.ParseSearch(raw, req.Params, c.SearchFields([]string{name}))
			if err != nil {
				return total, err
			}
			reply, err := c.RunSearch(ctx, SearchRequest{Indices: []string{name}, Search: srch})
			if err != nil {
				return total, err
			}
			resp := srch.Response(reply.SearchResult.SearchResult, 0)
			if first && resp.Hits.Total != nil {
				total += resp.Hits.Total.Value
			}
			first = false
			hits := resp.Hits.Hits
			if len(hits) == 0 {
				break
			}
			batch := make([]ScanHit, len(hits))
			for k, h := range hits {
				b := ScanHit{Index: h.Index, ID: h.ID, Source: h.Source}
				if h.SeqNo != nil && h.PrimaryTerm != nil && h.Version != nil {
					b.SeqNo, b.Term, b.Version = *h.SeqNo, *h.PrimaryTerm, *h.Version
				}
				batch[k] = b
			}
			handed += int64(len(batch))
			more, err := fn(batch)
			if err != nil || !more {
				return total, err
			}
			after = hits[len(hits)-1].ID
		}
	}
	return total, nil
}

// tally counts a batch's results; it reports false when a failure must
// stop the request (a conflict without proceed, or any other failure).
func (out *ByQueryResult) tally(ops []vocab.Op, results []vocab.OpResult, proceed bool) bool {
	ok := true
	for k, res := range results {
		switch {
		case res.Err == nil && res.Result == "deleted":
			out.Deleted++
		case res.Err == nil && res.Result == "created":
			out.Created++
		case res.Err == nil && res.Result == "updated":
			out.Updated++
		case res.Err == nil && res.Result == "noop":
			out.Noops++
		case errors.Is(res.Err, vocab.ErrVersionConflict):
			out.VersionConflicts++
			if !proceed {
				out.Failures = append(out.Failures, ByQueryFailure{Op: ops[k], Result: res})
				ok = false
			}
		case res.Result == "not_found":
			// Deleted since the search saw it: a conflict, as in Elasticsearch.
			out.VersionConflicts++
			if !proceed {
				res.Fail(fmt.Errorf("%w: [%s]: version conflict, document already deleted", vocab.ErrVersionConflict, ops[k].ID))
				out.Failures = append(out.Failures, ByQueryFailure{Op: ops[k], Result: res})
				ok = false
			}
		default:
			out.Failures = append(out.Failures, ByQueryFailure{Op: ops[k], Result: res})
			ok = false
		}
	}
	return ok
}
