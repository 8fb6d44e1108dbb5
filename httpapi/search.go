package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/vocab"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index/esdsl"
)

// handleSearch serves GET|POST /_search and /{index}/_search (bodies on GET
// too). With ?scroll= the reply carries a _scroll_id to continue with.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	resp, err := s.search(r, r.PathValue("index"), body, r.URL.Query())
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, resp)
	return nil
}

// search runs one search request over the index expression expr, or over
// the point in time its body names.
func (s *Server) search(r *http.Request, expr string, body []byte, params url.Values) (*esdsl.SearchResponse, error) {
	start := time.Now()
	if pit, ok := pitOf(body); ok {
		if expr != "" {
			return nil, validationErr("[indices] cannot be used with point in time; the point in time names them")
		}
		p, err := coord.DecodePIT(pit)
		if err != nil {
			return nil, err
		}
		if err := s.authorizePIT(r.Context(), p, auth.ActionSearch); err != nil {
			return nil, err
		}
		names := p.Indices()
		srch, err := esdsl.ParseSearch(body, params, s.eng.SearchFields(names))
		if err != nil {
			return nil, err
		}
		resp, err := s.runSearch(r, names, srch, start, nil)
		if err == nil {
			resp.PitID = pit
		}
		return resp, err
	}
	names, sc, err := s.scoped(r.Context(), expr, params)
	if err != nil {
		return nil, err
	}
	srch, names, unfit, err := s.parseOverIndices(sc, body, params, names)
	if err != nil {
		return nil, err
	}
	return s.runSearch(r, names, srch, start, unfit)
}

// scoped resolves the index expression of a read (search, count,
// validate) under the request's indices options, and returns the indices
// with what their aliases and settings add to the request (an alias
// filter, search routing set in params, limits).
func (s *Server) scoped(ctx context.Context, expr string, params url.Values) ([]string, esdsl.Scope, error) {
	res, err := s.resolveReq(ctx, expr, params, coord.DefaultResolve)
	if err != nil {
		return nil, esdsl.Scope{}, err
	}
	sc, err := s.eng.Scope(res, params)
	return res.Indices, sc, err
}

// runSearch runs a translated search (coord.Coordinator.RunSearch: the
// scroll's bookkeeping too) and shapes its reply. The shards of unfit's
// indices count as failed (see parseOverIndices).
func (s *Server) runSearch(r *http.Request, names []string, srch *esdsl.Search, start time.Time, unfit map[string]error) (*esdsl.SearchResponse, error) {
	reply, err := s.eng.RunSearch(r.Context(), coord.SearchRequest{Indices: names, Search: srch, Unfit: unfit})
	if err != nil {
		return nil, err
	}
	return s.searchResponse(r, srch, reply, start), nil
}

// searchResponse renders a search's reply, and records the owner of the
// point in time a scroll opened.
func (s *Server) searchResponse(r *http.Request, srch *esdsl.Search, reply *coord.SearchReply, start time.Time) *esdsl.SearchResponse {
	if reply.OpenedPIT != nil {
		s.recordOwner(r.Context(), *reply.OpenedPIT)
	}
	resp := srch.Response(reply.SearchResult.SearchResult, time.Since(start))
	resp.Aggregations = reply.Aggregations
	resp.TimedOut = reply.TimedOut
	resp.Shards.Failures = shardFailures(reply.Failures)
	resp.ScrollID = reply.ScrollID
	return resp
}

// pitOf reads the point in time id of a search body ("pit": {"id": ...}).
func pitOf(body []byte) (string, bool) {
	var b struct {
		PIT *struct {
			ID string `json:"id"`
		} `json:"pit"`
	}
	if len(bytes.TrimSpace(body)) == 0 || json.Unmarshal(body, &b) != nil || b.PIT == nil || b.PIT.ID == "" {
		return "", false
	}
	return b.PIT.ID, true
}

func (s *Server) handleCount(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	params := r.URL.Query()
	if v := params.Get("terminate_after"); v != "" {
		// Checked before the indices are, as Elasticsearch does.
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 0:
			return illegalArgument("terminateAfter must be > 0")
		case n > 0:
			return illegalArgument("[terminate_after] is not supported: a count always counts every match; drop it")
		}
		params.Del("terminate_after")
	}
	names, sc, err := s.scoped(r.Context(), r.PathValue("index"), params)
	if err != nil {
		return err
	}
	srch, err := sc.ParseCount(body, params, s.eng.SearchFields(names))
	if err != nil {
		return err
	}
	res, err := s.eng.Search(r.Context(), names, srch)
	if err != nil {
		return err
	}
	h := shardsHeader{Total: res.Status.Total, Successful: res.Status.Successful, Failed: res.Status.Failed}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"count": res.Total, "_shards": h})
	return nil
}

// msearchItemReply is one element of _msearch's "responses": a search reply
// with its status, or an error.
type msearchItemReply struct {
	*esdsl.SearchResponse
	Error  *esErrorBody `json:"error,omitempty"`
	Status int          `json:"status"`
}

// handleMsearch runs each header/body pair of an _msearch body in turn; a
// failing search fails only its own entry of "responses".
func (s *Server) handleMsearch(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	items, err := esdsl.ParseMsearch(body)
	if err != nil {
		return err
	}
	if err := esdsl.ApplyMsearchDefaults(items, r.URL.Query()); err != nil {
		return err
	}
	replies := make([]msearchItemReply, len(items))
	for i, it := range items {
		expr := it.Index
		if expr == "" {
			expr = r.PathValue("index")
		}
		resp, err := s.search(r, expr, it.Body, it.Params)
		if err != nil {
			if r.Context().Err() != nil {
				return r.Context().Err()
			}
			ae := translate(err)
			if ae.Status >= 500 {
				s.log.Error("httpapi: msearch item failed", "item", i, "err", err)
			}
			eb := ae.response().Error
			replies[i] = msearchItemReply{Error: &eb, Status: ae.Status}
			continue
		}
		replies[i] = msearchItemReply{SearchResponse: resp, Status: http.StatusOK}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"took": time.Since(start).Milliseconds(), "responses": replies})
	return nil
}

// scrollBody is the body of the scroll endpoints.
type scrollBody struct {
	Scroll   string          `json:"scroll"`
	ScrollID json.RawMessage `json:"scroll_id"`
}

// scrollIDs reads scroll ids from the path, ?scroll_id= or the body (which
// wins, and may hold one id or, for clearing, a list).
func scrollIDs(r *http.Request, body []byte) (ids []string, keepAlive string, err error) {
	keepAlive = r.URL.Query().Get("scroll")
	if id := r.PathValue("scroll_id"); id != "" {
		ids = append(ids, id)
	}
	if id := r.URL.Query().Get("scroll_id"); id != "" {
		ids = append(ids, id)
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var b scrollBody
		if err := decodeStrict(body, &b); err != nil {
			return nil, "", badRequest("x_content_parse_exception", "failed to parse the scroll body: %v", err)
		}
		if b.Scroll != "" {
			keepAlive = b.Scroll
		}
		if len(b.ScrollID) > 0 {
			// The body's ids override the path's and the query's, as in
			// Elasticsearch.
			var one string
			var many []string
			switch {
			case json.Unmarshal(b.ScrollID, &one) == nil:
				ids = []string{one}
			case json.Unmarshal(b.ScrollID, &many) == nil:
				ids = many
			default:
				return nil, "", badRequest("x_content_parse_exception", "scroll_id must be a string or a list of strings")
			}
		}
	}
	return ids, keepAlive, nil
}

// handleScroll continues a scroll: the page after the one its cursor
// (kept with its point in time) ended at, whichever node sent the last
// page; the same id never serves a page twice.
func (s *Server) handleScroll(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	ids, keepAlive, err := scrollIDs(r, body)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: scrollId is missing; send exactly one scroll_id;"}
	}
	sc, err := esdsl.ParseScroll(ids[0], keepAlive)
	if err != nil {
		return err
	}
	pit, err := coord.DecodePIT(sc.PIT)
	if err != nil {
		return err
	}
	if err := s.authorizePIT(r.Context(), pit, auth.ActionScroll); err != nil {
		return err
	}
	var srch *esdsl.Search
	reply, err := s.eng.ScrollPage(r.Context(), pit, sc.Indices, func(cur vocab.ScrollCursor) (*esdsl.Search, error) {
		var err error
		if srch, err = sc.Page(s.eng.SearchFields(sc.Indices), cur.Page, cur.After); err != nil {
			return nil, err
		}
		asInt, err := boolParam(r, "rest_total_hits_as_int", false)
		srch.SetTotalAsInt(asInt)
		return srch, err
	})
	if err != nil {
		return err
	}
	resp := s.searchResponse(r, srch, reply, start)
	resp.ScrollID = ids[0]
	s.writeJSON(w, r, http.StatusOK, resp)
	return nil
}

// handleClearScroll releases scrolls' points in time (every scroll of this
// API has one; _all is refused: scrolls are not listed anywhere). Ids that
// do not parse, or whose contexts are gone, free nothing; a request that
// frees nothing is a 404, as in Elasticsearch.
func (s *Server) handleClearScroll(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	ids, _, err := scrollIDs(r, body)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		// Nothing to clear: the action, on no index, still needs read
		// somewhere.
		if err := s.authorizeAction(r.Context(), auth.ActionClearScroll, nil); err != nil {
			return err
		}
	}
	freed := 0
	for _, id := range ids {
		if id == "_all" {
			return illegalArgument("clearing [_all] scrolls is not supported: Weft keeps no list of them; send the scroll ids")
		}
		sc, err := esdsl.ParseScroll(id, "")
		if err != nil {
			var de *esdsl.Error
			if errors.As(err, &de) {
				continue
			}
			return err
		}
		pit, err := coord.DecodePIT(sc.PIT)
		if err != nil {
			continue
		}
		if err := s.authorizePIT(r.Context(), pit, auth.ActionClearScroll); err != nil {
			if errors.Is(err, errForeignContext) {
				continue // another user's: as if missing
			}
			return err
		}
		s.forgetOwner(pit)
		n, err := s.eng.ClosePIT(r.Context(), pit)
		if err != nil {
			return err
		}
		if n > 0 {
			freed++
		}
	}
	status := http.StatusOK
	if freed == 0 && len(ids) > 0 {
		status = http.StatusNotFound
	}
	s.writeJSON(w, r, status, map[string]any{"succeeded": true, "num_freed": freed})
	return nil
}

// shardFailures renders the shards a search lost as _shards.failures.
func shardFailures(fs []coord.ShardFailure) []esdsl.ShardFailure {
	var out []esdsl.ShardFailure
	for _, f := range fs {
		ae := translate(f.Err)
		reason := map[string]any{"type": ae.Type, "reason": ae.Reason}
		out = append(out, esdsl.ShardFailure{Index: f.Index, Shard: f.Shard, Node: f.Node, Reason: reason})
	}
	return out
}
