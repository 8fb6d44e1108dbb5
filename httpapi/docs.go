package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/vocab"
)

// writeResult is the reply to a single-document write and one item of a
// _bulk reply, in Elasticsearch's shape.
type writeResult struct {
	Index       string        `json:"_index"`
	ID          string        `json:"_id"`
	Version     int64         `json:"_version,omitempty"`
	Result      string        `json:"result,omitempty"`
	Shards      *shardsHeader `json:"_shards,omitempty"`
	SeqNo       *uint64       `json:"_seq_no,omitempty"`
	PrimaryTerm uint64        `json:"_primary_term,omitempty"`
	Status      int           `json:"status,omitempty"`
	Error       *esErrorCause `json:"error,omitempty"`
	// ForcedRefresh is set on writes with refresh=true, as in
	// Elasticsearch.
	ForcedRefresh bool `json:"forced_refresh,omitempty"`
	// Get is an update's document after the update, when _source was
	// asked for.
	Get *updateGet `json:"get,omitempty"`
}

// updateGet is the "get" of an update reply.
type updateGet struct {
	SeqNo       uint64          `json:"_seq_no"`
	PrimaryTerm uint64          `json:"_primary_term"`
	Found       bool            `json:"found"`
	Source      json.RawMessage `json:"_source,omitempty"`
}

// shardsCache answers the "_shards" header of write replies, looking each
// index up once per request: the lookup reads index statistics, which is
// too slow to repeat for every item of a bulk.
type shardsCache struct {
	s    *Server
	seen map[string]shardsHeader
}

func (s *Server) newShardsCache() *shardsCache {
	return &shardsCache{s: s, seen: map[string]shardsHeader{}}
}

// forWrite is the _shards header of one write to name: every copy of the
// document's shard counts in total, and the primary succeeds (itemResult
// puts in how many copies did).
func (c *shardsCache) forWrite(name string) shardsHeader {
	if h, ok := c.seen[name]; ok {
		return h
	}
	h := shardsHeader{Total: 1, Successful: 1}
	if info, err := c.s.eng.Index(name); err == nil {
		h.Total = 1 + info.Settings.NumberOfReplicas
	}
	c.seen[name] = h
	return h
}

// itemResult converts one engine result.
func itemResult(res vocab.OpResult, withStatus bool, shards *shardsCache) writeResult {
	out := writeResult{Index: res.Index, ID: res.ID}
	if res.Result == "not_found" {
		res.Err = nil // a delete of a missing document is a result, not an error
	}
	if withStatus {
		out.Status = itemStatus(res)
	}
	if res.Err != nil {
		ae := translate(res.Err)
		if ae.Index == "" && !errors.Is(res.Err, state.ErrIndexBlocked) { // ES's block reason names the index itself
			ae.Index = res.Index
		}
		c := ae.cause()
		out.Error = &c
		return out
	}
	seq := res.SeqNo
	out.Version, out.Result, out.SeqNo, out.PrimaryTerm = res.Version, res.Result, &seq, res.PrimaryTerm
	h := shards.forWrite(res.Index)
	if res.Copies > 0 {
		h.Successful = res.Copies
	}
	if res.Result == "noop" {
		h = shardsHeader{}
	}
	out.Shards = &h
	return out
}

// itemStatus is the HTTP status of one write's result: the status of its
// error's kind when it failed; 201 for a document created, 404 for a
// delete that found nothing, 200 for any other success.
func itemStatus(res vocab.OpResult) int {
	switch {
	case res.Result == "not_found":
		return http.StatusNotFound
	case res.Err != nil:
		return translate(res.Err).Status
	case res.Result == "created":
		return http.StatusCreated
	}
	return http.StatusOK
}

// writeOne runs one write through the engine and replies as Elasticsearch
// does for single-document endpoints; after, when not nil, completes a
// successful reply.
func (s *Server) writeOne(w http.ResponseWriter, r *http.Request, op vocab.Op, after func(*writeResult) error) error {
	opts, err := writeOptions(r)
	if err != nil {
		return err
	}
	if op.RequireAlias, err = boolParam(r, "require_alias", false); err != nil {
		return err
	}
	if err := s.authorizeWrite(r.Context(), op); err != nil {
		return err
	}
	if op.IfSeqNo, err = uintParam(r, "if_seq_no"); err != nil {
		return err
	}
	if op.IfPrimaryTerm, err = uintParam(r, "if_primary_term"); err != nil {
		return err
	}
	if q := r.URL.Query(); q.Has("version") || q.Has("version_type") {
		action := map[vocab.OpType]string{vocab.OpIndex: actionIndex, vocab.OpCreate: actionCreate, vocab.OpUpdate: actionUpdate, vocab.OpDelete: actionDelete}[op.Type]
		var aerr *apiError
		if op.Version, op.VersionType, aerr = parseVersion(q.Get("version"), q.Has("version"), q.Get("version_type"), action); aerr != nil {
			return aerr
		}
	}
	held, err := s.eng.IndexingPressure().Reserve(membudget.Coordinating, op.Bytes())
	if err != nil {
		return err
	}
	defer held.Release()
	results, err := s.eng.Bulk(r.Context(), []vocab.Op{op}, opts)
	if err != nil {
		return err
	}
	if len(results) != 1 {
		return errors.New("httpapi: engine returned no result for a single write")
	}
	res := results[0]
	if res.Err != nil && !(op.Type == vocab.OpDelete && res.Result == "not_found") {
		ae := translate(res.Err)
		if ae.Index == "" {
			ae.Index = op.Index
		}
		return ae
	}
	status := itemStatus(res)
	res.Err = nil
	out := itemResult(res, false, s.newShardsCache())
	out.ForcedRefresh = opts.Refresh == coord.RefreshTrue
	if after != nil {
		if err := after(&out); err != nil {
			return err
		}
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", "/"+url.PathEscape(res.Index)+"/_doc/"+url.PathEscape(res.ID))
	}
	s.writeJSON(w, r, status, out)
	return nil
}

// handleIndexDoc serves PUT|POST /{index}/_doc/{id}, POST /{index}/_doc and
// PUT|POST /{index}/_create/{id}.
func (s *Server) handleIndexDoc(w http.ResponseWriter, r *http.Request) error {
	op := vocab.Op{Type: vocab.OpIndex, Index: r.PathValue("index"), ID: r.PathValue("id"), Routing: r.URL.Query().Get("routing")}
	switch opType := r.URL.Query().Get("op_type"); opType {
	case "", "index":
	case "create":
		op.Type = vocab.OpCreate
	default:
		return illegalArgument("opType must be 'create' or 'index', found: [%s]", opType)
	}
	if r.Pattern == "PUT /{index}/_create/{id}" || r.Pattern == "POST /{index}/_create/{id}" {
		op.Type = vocab.OpCreate
	}
	if r.Method == http.MethodPut && op.ID == "" {
		return illegalArgument("PUT needs a document id; use POST /%s/_doc to have one generated", op.Index)
	}
	if r.PathValue("id") == "" && r.Pattern != "POST /{index}/_doc" {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: id is missing;"}
	}
	body, err := s.readRawBody(w, r)
	if err != nil {
		return err
	}
	if aerr := docUTF8Error(body, 1, op.Index); aerr != nil {
		return aerr
	}
	if err := checkObject(body); err != nil {
		return &apiError{Status: http.StatusBadRequest, Type: "document_parsing_exception", Reason: "failed to parse the document: " + err.Error(), Index: op.Index}
	}
	op.Source = body
	return s.writeOne(w, r, op, nil)
}

// getResult is the reply of GET /{index}/_doc/{id}.
type getResult struct {
	Index       string           `json:"_index"`
	ID          string           `json:"_id"`
	Version     int64            `json:"_version,omitempty"`
	SeqNo       *uint64          `json:"_seq_no,omitempty"`
	PrimaryTerm uint64           `json:"_primary_term,omitempty"`
	Found       bool             `json:"found"`
	Source      json.RawMessage  `json:"_source,omitempty"`
	Fields      map[string][]any `json:"fields,omitempty"`
}

// sourceDisabled reports whether the index (or alias) named has _source
// disabled in its mapping: partial updates, which merge into the stored
// source, are refused there as Elasticsearch refuses them.
func (s *Server) sourceDisabled(expr string) bool {
	name, _, err := s.singleIndex(context.Background(), expr, "", false) // a lookup, authorized by the caller
	if err != nil {
		return false
	}
	ft := s.eng.SearchFields([]string{name}).FieldTypes
	if len(ft) != 1 {
		return false
	}
	enabled, _, _ := ft[0].SourceFilter()
	return !enabled
}

func errSourceMissing(index, id string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "document_source_missing_exception", Index: index,
		Reason: fmt.Sprintf("[%s]: document source missing: the index's mapping has _source disabled", id)}
}

// singleIndex resolves the target of a single-document request: an index,
// or an alias with one index (a read) or a write index (write true), with
// the routing the request and the alias give. With security on it
// authorizes the request's action on the index, or, when name does not
// resolve, on name itself (so a 404 says nothing of an index the
// principal may not touch).
func (s *Server) singleIndex(ctx context.Context, name, routing string, write bool) (string, string, error) {
	v, err := s.eng.ClusterView()
	if err != nil {
		return "", "", err
	}
	ix, routing, err := coord.SingleIndex(v, name, routing, write)
	if err != nil {
		if aerr := s.authorize(ctx, []string{name}); aerr != nil {
			return "", "", aerr
		}
		return "", "", err
	}
	if err := s.authorize(ctx, []string{ix.Name}); err != nil {
		return "", "", err
	}
	return ix.Name, routing, nil
}

// getDoc reads a document (realtime) through an index or an alias, its
// source as stored (see presentSource for replies). With
// ?version (and version_type other than force) a document at another
// version is a 409, as Elasticsearch's versioned reads are.
func (s *Server) getDoc(r *http.Request, expr, id, routing string) (string, index.Doc, error) {
	q := r.URL.Query()
	var want *int64
	if q.Has("version") {
		v, err := strconv.ParseInt(q.Get("version"), 10, 64)
		if err != nil {
			return expr, index.Doc{}, illegalArgument("[version] must be an integer, got [%s]", q.Get("version"))
		}
		want = &v
	}
	switch vt := q.Get("version_type"); vt {
	case "", "internal", "external", "external_gte":
	case "force":
		want = nil
	default:
		return expr, index.Doc{}, illegalArgument("No version type match [%s]; use internal, external, external_gte or force", vt)
	}
	name, routing, err := s.singleIndex(r.Context(), expr, routing, false)
	if err != nil {
		return expr, index.Doc{}, err
	}
	doc, err := s.eng.Get(r.Context(), name, id, routing)
	if err == nil && want != nil && doc.Version != *want {
		return name, doc, &apiError{Status: http.StatusConflict, Type: "version_conflict_engine_exception", Index: name,
			Reason: fmt.Sprintf("[%s]: version conflict, current version [%d] is different than the one provided [%d]", id, doc.Version, *want)}
	}
	return name, doc, err
}

func (s *Server) handleGetDoc(w http.ResponseWriter, r *http.Request) error {
	name, id := r.PathValue("index"), r.PathValue("id")
	name, doc, err := s.getDoc(r, name, id, r.URL.Query().Get("routing"))
	if errors.Is(err, vocab.ErrDocumentNotFound) {
		s.writeJSON(w, r, http.StatusNotFound, getResult{Index: name, ID: id})
		return nil
	}
	if err != nil {
		return err
	}
	seq := doc.SeqNo
	out := getResult{Index: name, ID: doc.ID, Version: doc.Version, SeqNo: &seq, PrimaryTerm: max(doc.PrimaryTerm, 1), Found: true}
	q := r.URL.Query()
	fields := s.eng.SearchFields([]string{name})
	if q.Has("stored_fields") {
		out.Fields = esdsl.StoredFieldValues(fields, doc.Source, splitComma(q.Get("stored_fields")))
		if !q.Has("_source") && !q.Has("_source_includes") && !q.Has("_source_excludes") {
			q.Set("_source", "false") // stored_fields alone shows no _source, as in Elasticsearch
		}
	}
	if out.Source, err = esdsl.FilterSource(esdsl.PresentSource(fields, name, doc.Source), nil, q); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *Server) handleGetSource(w http.ResponseWriter, r *http.Request) error {
	name, id := r.PathValue("index"), r.PathValue("id")
	name, doc, err := s.getDoc(r, name, id, r.URL.Query().Get("routing"))
	if errors.Is(err, vocab.ErrDocumentNotFound) {
		return &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception", Reason: "Document not found [" + name + "]/[" + id + "]"}
	}
	if err != nil {
		return err
	}
	doc.Source = esdsl.PresentSource(s.eng.SearchFields([]string{name}), name, doc.Source)
	if len(doc.Source) == 0 {
		return &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception", Reason: "Source not found [" + name + "]/[" + id + "]: the index's mapping has _source disabled"}
	}
	if doc.Source, err = esdsl.FilterSource(doc.Source, nil, r.URL.Query()); err != nil {
		return err
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(doc.Source)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(doc.Source)
	}
	return nil
}

func (s *Server) handleDeleteDoc(w http.ResponseWriter, r *http.Request) error {
	op := vocab.Op{Type: vocab.OpDelete, Index: r.PathValue("index"), ID: r.PathValue("id"), Routing: r.URL.Query().Get("routing")}
	if _, _, err := s.singleIndex(r.Context(), op.Index, op.Routing, true); err != nil {
		return err // deleting from a missing index is 404 index_not_found, not an auto-create
	}
	return s.writeOne(w, r, op, nil)
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) error {
	a := bulkAction{Action: actionUpdate, Index: r.PathValue("index"), ID: r.PathValue("id")}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if aerr := a.setSource(body); aerr != nil {
		return aerr
	}
	if err := s.authorizeWrite(r.Context(), vocab.Op{Type: vocab.OpUpdate, Index: a.Index, Routing: r.URL.Query().Get("routing")}); err != nil {
		return err
	}
	if s.sourceDisabled(a.Index) {
		return errSourceMissing(a.Index, a.ID)
	}
	op := vocab.Op{Type: vocab.OpUpdate, Index: a.Index, ID: a.ID, Routing: r.URL.Query().Get("routing"),
		Update: &vocab.UpdateSpec{Doc: a.Doc, DocAsUpsert: a.DocAsUpsert, Upsert: a.Upsert, NoDetectNoop: a.NoDetectNoop}}
	q := r.URL.Query()
	if a.SourceFilter == nil && !q.Has("_source") && !q.Has("_source_includes") && !q.Has("_source_excludes") {
		return s.writeOne(w, r, op, nil)
	}
	// _source asks for the updated document in the reply's "get".
	if _, err := esdsl.FilterSource([]byte(`{}`), a.SourceFilter, q); err != nil {
		return err
	}
	return s.writeOne(w, r, op, func(out *writeResult) error {
		_, routing, err := s.singleIndex(r.Context(), op.Index, op.Routing, true)
		if err != nil {
			return err
		}
		doc, err := s.eng.Get(r.Context(), out.Index, op.ID, routing)
		if err != nil {
			return err
		}
		g := &updateGet{SeqNo: doc.SeqNo, PrimaryTerm: max(doc.PrimaryTerm, 1), Found: true}
		if g.Source, err = esdsl.FilterSource(doc.Source, a.SourceFilter, q); err != nil {
			return err
		}
		out.Get = g
		return nil
	})
}

// bulkOpTypes are the op types of the bulk actions.
var bulkOpTypes = map[string]vocab.OpType{actionIndex: vocab.OpIndex, actionCreate: vocab.OpCreate, actionUpdate: vocab.OpUpdate, actionDelete: vocab.OpDelete}

// bulkReply is the reply of _bulk.
type bulkReply struct {
	Took   int64      `json:"took"`
	Errors bool       `json:"errors"`
	Items  []bulkItem `json:"items"`
}

// bulkItem is one item of a bulk reply, {"<action>": result}: exactly one
// field is set. A struct rather than a one-key map: a map of one
// writeResult costs about a kilobyte (a whole map group), which made the
// reply the largest part of a bulk of tiny items in memory; these point
// into one slice of results.
type bulkItem struct {
	Index  *writeResult `json:"index,omitempty"`
	Create *writeResult `json:"create,omitempty"`
	Update *writeResult `json:"update,omitempty"`
	Delete *writeResult `json:"delete,omitempty"`
}

// set makes res the item's result under action.
func (b *bulkItem) set(action string, res *writeResult) {
	switch action {
	case actionIndex:
		b.Index = res
	case actionCreate:
		b.Create = res
	case actionUpdate:
		b.Update = res
	default:
		b.Delete = res
	}
}

// handleBulk serves _bulk: the body is parsed whole (a line that cannot be
// an action rejects the request), items that failed parsing are answered
// without reaching the engine, and the rest go to the engine in one call so
// that they share one log sync.
//
// The request is held at the coordinating stage of indexing pressure until
// its reply is written: its declared length before the body is read, then
// the body, then vocab.OpOverhead for each action as it is parsed. Over
// the limit the whole request is refused with 429
// es_rejected_execution_exception and nothing of it is written, as
// Elasticsearch refuses a bulk at the coordinating stage.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	opts, err := writeOptions(r)
	if err != nil {
		return err
	}
	held, err := s.eng.IndexingPressure().Reserve(membudget.Coordinating, max(r.ContentLength, 0))
	if err != nil {
		return s.refuseUnread(w, r, err)
	}
	defer held.Release()
	body, err := s.readRawBody(w, r) // parseBulk checks UTF-8 line by line
	if err != nil {
		return err
	}
	if err := held.Grow(int64(len(body)) - held.Bytes()); err != nil {
		return err
	}
	neg, _ := negotiate(r) // checked before the handler ran
	leniency := bulkLeniency{strictKeys: neg.compat == "9", warn: func(msg string) { addWarning(w, msg) }}
	actions, err := parseBulk(body, r.PathValue("index"), r.URL.Query().Get("routing"), held.Grow, leniency)
	if err != nil {
		return err
	}
	requireAlias, err := boolParam(r, "require_alias", false)
	if err != nil {
		return err
	}
	ops := make([]vocab.Op, 0, len(actions))
	for i, a := range actions {
		if a.Err != nil {
			continue
		}
		op := vocab.Op{Index: a.Index, ID: a.ID, Routing: a.Routing, IfSeqNo: a.IfSeqNo, IfPrimaryTerm: a.IfPrimaryTerm, RequireAlias: requireAlias,
			Version: a.Version, VersionType: a.VersionType}
		if a.RequireAlias != nil {
			op.RequireAlias = *a.RequireAlias
		}
		check := op
		check.Type = bulkOpTypes[a.Action]
		if err := s.authorizeWrite(r.Context(), check); err != nil {
			// A refused item fails alone, as in Elasticsearch.
			actions[i].Err = translate(err)
			continue
		}
		switch a.Action {
		case actionIndex:
			op.Type, op.Source = vocab.OpIndex, a.Source
		case actionCreate:
			op.Type, op.Source = vocab.OpCreate, a.Source
		case actionUpdate:
			if s.sourceDisabled(a.Index) {
				actions[i].Err = errSourceMissing(a.Index, a.ID)
				continue
			}
			if a.SourceFilter != nil {
				actions[i].Err = illegalArgument("update option [_source] is not supported in _bulk; use the _update endpoint to get the updated document back")
				continue
			}
			op.Type, op.Update = vocab.OpUpdate, &vocab.UpdateSpec{Doc: a.Doc, DocAsUpsert: a.DocAsUpsert, Upsert: a.Upsert, NoDetectNoop: a.NoDetectNoop}
		case actionDelete:
			op.Type = vocab.OpDelete
		}
		ops = append(ops, op)
	}
	var results []vocab.OpResult
	if len(ops) > 0 {
		if results, err = s.eng.Bulk(r.Context(), ops, opts); err != nil {
			return err
		}
		if len(results) != len(ops) {
			return errors.New("httpapi: engine returned a different number of bulk results than operations")
		}
	}
	reply := bulkReply{Items: make([]bulkItem, len(actions))}
	items := make([]writeResult, len(actions))
	shards := s.newShardsCache()
	var ok, failed float64
	next := 0
	for i, a := range actions {
		var item writeResult
		if a.Err != nil {
			c := a.Err.cause()
			if c.Index == "" {
				c.Index = a.Index
			}
			item = writeResult{Index: a.Index, ID: a.ID, Status: a.Err.Status, Error: &c}
		} else {
			item = itemResult(results[next], true, shards)
			item.ForcedRefresh = opts.Refresh == coord.RefreshTrue && item.Error == nil
			next++
		}
		if item.Error != nil {
			reply.Errors = true
			failed++
		} else {
			ok++
		}
		items[i] = item
		reply.Items[i].set(a.Action, &items[i])
	}
	s.metrics.bulkDocs.WithLabelValues("ok").Add(ok)
	s.metrics.bulkDocs.WithLabelValues("failed").Add(failed)
	reply.Took = time.Since(start).Milliseconds()
	s.writeJSON(w, r, http.StatusOK, reply)
	return nil
}

func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return err
	}
	if err := s.eng.Refresh(r.Context(), names); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"_shards": s.copiesOf(names)})
	return nil
}

// uintParam reads an optional non-negative integer parameter.
func uintParam(r *http.Request, name string) (*uint64, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return nil, nil
	}
	n, err := strconv.ParseUint(q.Get(name), 10, 64)
	if err != nil {
		return nil, illegalArgument("[%s] must be a non-negative integer, got [%s]", name, q.Get(name))
	}
	return &n, nil
}
