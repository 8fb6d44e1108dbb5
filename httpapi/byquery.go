package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/vocab"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index/esdsl"
)

// _delete_by_query, _update_by_query and _reindex (local): httpapi reads
// the request and renders the reply; coord.Coordinator.ByQuery scans the
// source and writes, batch by batch.
//
// Documents are written with the request's routing parameter: Weft does not
// store a document's routing, so documents indexed with a custom routing
// are reached only when the same routing is given (as a GET needs it).
// Tasks (wait_for_completion=false), slices above one, throttling and
// scripts are refused.

// byQueryParams are the parameters _delete_by_query and _update_by_query
// take.
var byQueryParams = []string{"q", "df", "analyzer", "analyze_wildcard", "default_operator", "lenient", "conflicts", "max_docs",
	"refresh", "routing", "scroll_size", "scroll", "slices", "wait_for_completion", "wait_for_active_shards", "timeout",
	"requests_per_second", "ignore_unavailable", "allow_no_indices", "expand_wildcards", "search_timeout", "preference",
	"search_type", "pipeline", "version", "stats"}

// byQueryOptions are a by-query request's options.
type byQueryOptions struct {
	proceed bool  // conflicts=proceed
	maxDocs int64 // -1: all
	batch   int   // scroll_size
	refresh coord.WriteOptions
}

// byQueryReply is the reply of the three APIs.
type byQueryReply struct {
	Took             int64            `json:"took"`
	TimedOut         bool             `json:"timed_out"`
	Total            int64            `json:"total"`
	Updated          int64            `json:"updated"`
	Created          int64            `json:"created"`
	Deleted          int64            `json:"deleted"`
	Batches          int64            `json:"batches"`
	VersionConflicts int64            `json:"version_conflicts"`
	Noops            int64            `json:"noops"`
	Retries          map[string]int64 `json:"retries"`
	ThrottledMillis  int64            `json:"throttled_millis"`
	RequestsPerSec   float64          `json:"requests_per_second"`
	ThrottledUntil   int64            `json:"throttled_until_millis"`
	Failures         []byQueryFailure `json:"failures"`
}

// byQueryFailure is one document that failed.
type byQueryFailure struct {
	Index  string       `json:"index"`
	ID     string       `json:"id"`
	Cause  esErrorCause `json:"cause"`
	Status int          `json:"status"`
}

func newByQueryReply() *byQueryReply {
	return &byQueryReply{Retries: map[string]int64{"bulk": 0, "search": 0}, RequestsPerSec: -1, Failures: []byQueryFailure{}}
}

// parseByQueryOptions reads the options every by-query request has; body
// is its JSON (max_docs and conflicts may be given there too).
func parseByQueryOptions(r *http.Request, body map[string]json.RawMessage) (byQueryOptions, error) {
	q := r.URL.Query()
	o := byQueryOptions{maxDocs: -1, batch: 1000}
	var err error
	if o.refresh, err = writeOptions(r); err != nil {
		return o, err
	}
	conflicts := q.Get("conflicts")
	if raw, ok := body["conflicts"]; ok {
		if err := json.Unmarshal(raw, &conflicts); err != nil {
			return o, illegalArgument("[conflicts] must be abort or proceed")
		}
	}
	switch conflicts {
	case "", "abort":
	case "proceed":
		o.proceed = true
	default:
		return o, illegalArgument("conflicts may only be \"proceed\" or \"abort\" but was [%s]", conflicts)
	}
	maxDocs := q.Get("max_docs")
	if raw, ok := body["max_docs"]; ok {
		maxDocs = string(raw)
	}
	if maxDocs != "" {
		n, err := strconv.ParseInt(maxDocs, 10, 64)
		if err != nil || n <= 0 {
			return o, validationErr("maxDocs should be greater than 0 if the request is limited to some number of documents or -1 if it isn't but it was [" + maxDocs + "]")
		}
		o.maxDocs = n
	}
	if v := q.Get("scroll_size"); v != "" {
		if o.batch, err = strconv.Atoi(v); err != nil || o.batch <= 0 {
			return o, illegalArgument("[scroll_size] must be a positive number, got [%s]", v)
		}
	}
	if v, err := queryBool(q, "wait_for_completion", true); err != nil {
		return o, err
	} else if !v {
		return o, illegalArgument("[wait_for_completion] false (a background task) is not supported; the request runs to completion")
	}
	switch v := q.Get("slices"); v {
	case "", "1", "auto":
	default:
		return o, illegalArgument("[slices] %s is not supported; use 1 or auto (one slice)", v)
	}
	if v := q.Get("requests_per_second"); v != "" && v != "-1" {
		return o, illegalArgument("[requests_per_second] %s is not supported: Weft does not throttle; use -1", v)
	}
	if q.Has("pipeline") {
		return o, illegalArgument("[pipeline] is not supported: ingest pipelines are not")
	}
	return o, nil
}

func failureOf(f coord.ByQueryFailure) byQueryFailure {
	return byQueryFailure{Index: f.Result.Index, ID: f.Op.ID, Cause: translate(f.Result.Err).cause(), Status: itemStatus(f.Result)}
}

// runByQuery scans and writes (coord.Coordinator.ByQuery): ops builds a
// batch's writes.
func (s *Server) runByQuery(w http.ResponseWriter, r *http.Request, res coord.Resolved, query json.RawMessage, params url.Values,
	o byQueryOptions, ops func([]coord.ScanHit) ([]vocab.Op, error)) error {
	start := time.Now()
	done, err := s.eng.ByQuery(r.Context(), coord.ByQuery{Source: res, Query: query, Params: params, Proceed: o.proceed,
		MaxDocs: o.maxDocs, Batch: o.batch, Write: o.refresh, Ops: ops})
	if err != nil {
		return err
	}
	rep := newByQueryReply()
	rep.Total, rep.Updated, rep.Created, rep.Deleted = done.Total, done.Updated, done.Created, done.Deleted
	rep.Batches, rep.VersionConflicts, rep.Noops = done.Batches, done.VersionConflicts, done.Noops
	for _, f := range done.Failures {
		rep.Failures = append(rep.Failures, failureOf(f))
	}
	rep.Took = time.Since(start).Milliseconds()
	status := http.StatusOK
	for _, f := range rep.Failures {
		status = max(status, f.Status) // a conflict that aborted: 409, as Elasticsearch answers
	}
	s.writeJSON(w, r, status, rep)
	return nil
}

// readByQueryBody reads the body's keys: query (and max_docs, conflicts),
// refusing script, slice and anything unknown.
func readByQueryBody(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, badRequest("x_content_parse_exception", "failed to parse the request body: %v", err)
	}
	for k := range out {
		switch {
		case k == "script":
			return nil, illegalArgument("scripts are not supported by Weft; send a query, and use _update with a partial document for changes")
		case k == "slice":
			return nil, illegalArgument("[slice] is not supported; Weft runs one slice")
		case k == "query" || k == "max_docs" || k == "conflicts" || slices.Contains(allowed, k):
		default:
			return nil, parsingErr("unknown key [%s] in the request body", k)
		}
	}
	return out, nil
}

func parsingErr(format string, args ...any) *apiError {
	return badRequest("parsing_exception", format, args...)
}

// byQuerySearchParams are the URL parameters that shape the search of a
// by-query request (the rest are the request's own).
func byQuerySearchParams(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"q", "df", "analyzer", "analyze_wildcard", "default_operator", "lenient", "routing", "preference", "search_type"} {
		if q.Has(k) {
			out.Set(k, q.Get(k))
		}
	}
	if v := q.Get("search_timeout"); v != "" {
		out.Set("timeout", v)
	}
	return out
}

// readByQuery reads what _delete_by_query and _update_by_query share: the
// body (with a query, or q=, when needQuery), its options and the indices
// of the path.
func (s *Server) readByQuery(w http.ResponseWriter, r *http.Request, needQuery bool) (map[string]json.RawMessage, byQueryOptions, coord.Resolved, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, byQueryOptions{}, coord.Resolved{}, err
	}
	b, err := readByQueryBody(body)
	if err != nil {
		return nil, byQueryOptions{}, coord.Resolved{}, err
	}
	if _, ok := b["query"]; needQuery && !ok && !r.URL.Query().Has("q") {
		return nil, byQueryOptions{}, coord.Resolved{}, validationErr("query is missing")
	}
	o, err := parseByQueryOptions(r, b)
	if err != nil {
		return nil, byQueryOptions{}, coord.Resolved{}, err
	}
	res, err := s.resolveReq(r.Context(), r.PathValue("index"), r.URL.Query(), coord.DefaultResolve)
	if err == nil {
		// The documents are found by a search: read too, as in
		// Elasticsearch.
		err = s.authorizeAction(r.Context(), auth.ActionSearch, res.Indices)
	}
	return b, o, res, err
}

// handleDeleteByQuery serves POST /{index}/_delete_by_query.
func (s *Server) handleDeleteByQuery(w http.ResponseWriter, r *http.Request) error {
	b, o, res, err := s.readByQuery(w, r, true)
	if err != nil {
		return err
	}
	routing := r.URL.Query().Get("routing")
	return s.runByQuery(w, r, res, b["query"], byQuerySearchParams(r.URL.Query()), o, func(batch []coord.ScanHit) ([]vocab.Op, error) {
		ops := make([]vocab.Op, len(batch))
		for k, h := range batch {
			seq, term := h.SeqNo, h.Term
			ops[k] = vocab.Op{Type: vocab.OpDelete, Index: h.Index, ID: h.ID, Routing: routing, IfSeqNo: &seq, IfPrimaryTerm: &term}
		}
		return ops, nil
	})
}

// handleUpdateByQuery serves POST /{index}/_update_by_query: every
// matching document is indexed again as it is (picking up mapping changes),
// conditional on the seq no the search saw. Without a script nothing else
// changes.
func (s *Server) handleUpdateByQuery(w http.ResponseWriter, r *http.Request) error {
	b, o, res, err := s.readByQuery(w, r, false)
	if err != nil {
		return err
	}
	for _, n := range res.Indices {
		if s.sourceDisabled(n) {
			return illegalArgument("[%s] has _source disabled: _update_by_query needs the documents' source", n)
		}
	}
	routing := r.URL.Query().Get("routing")
	return s.runByQuery(w, r, res, b["query"], byQuerySearchParams(r.URL.Query()), o, func(batch []coord.ScanHit) ([]vocab.Op, error) {
		ops := make([]vocab.Op, len(batch))
		for k, h := range batch {
			seq, term := h.SeqNo, h.Term
			ops[k] = vocab.Op{Type: vocab.OpIndex, Index: h.Index, ID: h.ID, Routing: routing, Source: h.Source, IfSeqNo: &seq, IfPrimaryTerm: &term}
		}
		return ops, nil
	})
}

// reindexBody is _reindex's body.
type reindexBody struct {
	Source struct {
		Index        json.RawMessage `json:"index"`
		Query        json.RawMessage `json:"query"`
		Size         int             `json:"size"`
		Source       json.RawMessage `json:"_source"`
		Remote       json.RawMessage `json:"remote"`
		Slice        json.RawMessage `json:"slice"`
		Sort         json.RawMessage `json:"sort"`
		RuntimeMaps  json.RawMessage `json:"runtime_mappings"`
		MaxDocsInSrc json.RawMessage `json:"max_docs"`
	} `json:"source"`
	Dest struct {
		Index       string `json:"index"`
		OpType      string `json:"op_type"`
		VersionType string `json:"version_type"`
		Routing     string `json:"routing"`
		Pipeline    string `json:"pipeline"`
	} `json:"dest"`
	Conflicts string          `json:"conflicts"`
	MaxDocs   json.RawMessage `json:"max_docs"`
	Script    json.RawMessage `json:"script"`
	Size      json.RawMessage `json:"size"`
}

// handleReindex serves POST /_reindex within this cluster: the source
// documents (optionally a query's, a _source filter of them) are indexed
// into dest (op_type index or create; version_type internal, or external
// to keep the source versions). Remote sources, scripts, pipelines and
// slices are refused.
func (s *Server) handleReindex(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var b reindexBody
	if err := decodeStrict(body, &b); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the _reindex body: %v", err)
	}
	switch {
	case b.Source.Remote != nil:
		return illegalArgument("reindex from [remote] is not supported: Weft reindexes within its own cluster")
	case b.Script != nil:
		return illegalArgument("scripts are not supported by Weft; reindex without [script]")
	case b.Source.Slice != nil:
		return illegalArgument("[slice] is not supported; Weft runs one slice")
	case b.Source.Sort != nil || b.Size != nil:
		return illegalArgument("[sort] and [size] of _reindex were removed in Elasticsearch 8; use max_docs")
	case b.Source.RuntimeMaps != nil:
		return illegalArgument("[runtime_mappings] are not supported")
	case b.Dest.Pipeline != "":
		return illegalArgument("[pipeline] is not supported: ingest pipelines are not")
	case b.Dest.Index == "":
		return validationErr("index is missing")
	case len(b.Source.Index) == 0:
		return validationErr("use _all if you really want to copy from all existing indexes")
	}
	var srcNames []string
	if err := json.Unmarshal(b.Source.Index, &srcNames); err != nil {
		var one string
		if err := json.Unmarshal(b.Source.Index, &one); err != nil {
			return illegalArgument("[source.index] must be a string or a list of strings")
		}
		srcNames = []string{one}
	}
	extra := map[string]json.RawMessage{}
	if b.Conflicts != "" {
		extra["conflicts"], _ = json.Marshal(b.Conflicts)
	}
	if b.MaxDocs != nil {
		extra["max_docs"] = b.MaxDocs
	}
	o, err := parseByQueryOptions(r, extra)
	if err != nil {
		return err
	}
	if b.Source.Size > 0 {
		o.batch = b.Source.Size
	}
	opType := vocab.OpIndex
	switch b.Dest.OpType {
	case "", "index":
	case "create":
		opType = vocab.OpCreate
	default:
		return illegalArgument("opType must be 'create' or 'index', found: [%s]", b.Dest.OpType)
	}
	var vt vocab.VersionType
	switch b.Dest.VersionType {
	case "", "internal":
	case "external":
		vt = vocab.VersionExternal
	case "external_gte":
		vt = vocab.VersionExternalGTE
	default:
		return illegalArgument("[dest.version_type] %s is not supported; use internal, external or external_gte", b.Dest.VersionType)
	}
	if vt != vocab.VersionInternal && opType == vocab.OpCreate {
		return validationErr("create operations only support internal versioning. use index instead")
	}
	res, err := s.resolveReq(withAction(r.Context(), auth.ActionSearch), strings.Join(srcNames, ","), url.Values{}, coord.DefaultResolve)
	if err != nil {
		return err
	}
	if err := s.authorizeWrite(r.Context(), vocab.Op{Type: opType, Index: b.Dest.Index}); err != nil {
		return err
	}
	for _, n := range res.Indices {
		if n == b.Dest.Index {
			return validationErr("reindex cannot write into an index its reading from [" + n + "]")
		}
		if s.sourceDisabled(n) {
			return illegalArgument("[%s] has _source disabled: _reindex needs the documents' source", n)
		}
	}
	var filter json.RawMessage
	if b.Source.Source != nil {
		filter = b.Source.Source
	}
	// dest.routing: keep (the source documents' routing, which Weft does
	// not store: none), discard (none) or =value.
	destRouting := ""
	switch rt := b.Dest.Routing; {
	case rt == "" || rt == "keep" || rt == "discard":
	case strings.HasPrefix(rt, "="):
		destRouting = rt[1:]
	default:
		return illegalArgument("[dest.routing] must be keep, discard or =value, got [%s]", rt)
	}
	return s.runByQuery(w, r, res, b.Source.Query, url.Values{}, o, func(batch []coord.ScanHit) ([]vocab.Op, error) {
		ops := make([]vocab.Op, len(batch))
		for k, h := range batch {
			src := h.Source
			if filter != nil {
				var err error
				if src, err = esdsl.FilterSource(src, filter, nil); err != nil {
					return nil, err
				}
			}
			op := vocab.Op{Type: opType, Index: b.Dest.Index, ID: h.ID, Source: src, Routing: destRouting}
			if vt != vocab.VersionInternal {
				op.Version, op.VersionType = h.Version, vt
			}
			ops[k] = op
		}
		return ops, nil
	})
}
