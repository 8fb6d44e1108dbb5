package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// mgetBody is the body of _mget: docs naming their index (or taking the
// URL's), or bare ids of the URL's index.
type mgetBody struct {
	Docs []mgetDoc `json:"docs"`
	// IDs are strings or numbers (Elasticsearch takes a number as the
	// id's text), checked as a doc's _id is.
	IDs []json.RawMessage `json:"ids"`
}

// mgetDoc is one document of an _mget body.
type mgetDoc struct {
	Index        string          `json:"_index"`
	ID           json.RawMessage `json:"_id"`
	Routing      string          `json:"routing"`
	Source       json.RawMessage `json:"_source"`
	StoredFields json.RawMessage `json:"stored_fields"`
}

// mgetError is an element of _mget's "docs" for a document that could not
// be read.
type mgetError struct {
	Index string       `json:"_index"`
	ID    string       `json:"_id"`
	Error esErrorCause `json:"error"`
}

// handleMget serves GET|POST /_mget and /{index}/_mget: realtime gets of
// many documents, grouped by shard by the engine. A document that cannot
// be read (no such index, a closed one) gets its own error entry.
func (s *Server) handleMget(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	docs, err := parseMgetBody(body)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	targets, err := s.resolveMget(r.Context(), docs, r.PathValue("index"), q.Get("routing"))
	if err != nil {
		return err
	}
	items, itemOf := mgetItems(targets)
	results, err := s.eng.Mget(r.Context(), items)
	if err != nil {
		return err
	}
	out, err := s.mgetReplies(q, targets, itemOf, results)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"docs": out})
	return nil
}

// parseMgetBody decodes an _mget body into its documents: the docs form
// first, then each of ids as a document of the URL's index. A body that
// does not parse, or names no document, is a 400.
func parseMgetBody(body []byte) ([]mgetDoc, error) {
	var b mgetBody
	if err := decodeStrict(body, &b); err != nil {
		return nil, badRequest("x_content_parse_exception", "failed to parse the _mget body: %v", err)
	}
	docs := b.Docs
	for _, id := range b.IDs {
		docs = append(docs, mgetDoc{ID: id})
	}
	if len(docs) == 0 {
		return nil, validationErr("no documents to get")
	}
	return docs, nil
}

// mgetTarget is one document of an _mget request once resolved: the
// concrete index and routing it is read with, how its reply is shaped,
// or err, why it cannot be read (its reply is then an error entry).
type mgetTarget struct {
	name, id, routing string
	source            json.RawMessage
	stored            json.RawMessage
	err               error
}

// resolveMget checks each document in order and resolves its index
// (defIndex, the URL's, when it names none) and routing (defRouting, the
// URL's, when it gives none) to a concrete index. A document without an
// id or an index, or with an id that is not a scalar, fails the whole
// request with the first such document's error; an index that does not
// resolve (missing, closed, an alias of several) fails only that
// document, whose target keeps the expression as its name.
func (s *Server) resolveMget(ctx context.Context, docs []mgetDoc, defIndex, defRouting string) ([]mgetTarget, error) {
	targets := make([]mgetTarget, len(docs))
	for k, d := range docs {
		expr, id, err := checkMgetDoc(k, d, defIndex)
		if err != nil {
			return nil, err
		}
		t := &targets[k]
		t.id, t.source, t.stored = id, d.Source, d.StoredFields
		routing := d.Routing
		if routing == "" {
			routing = defRouting
		}
		t.name, t.routing, t.err = s.singleIndex(ctx, expr, routing, false)
		if t.err != nil {
			t.name = expr
		}
	}
	return targets, nil
}

// checkMgetDoc returns the index expression (defIndex when d names none)
// and the id of document k, or the 400 for the first of: no id, an id
// that is not a string or number, no index.
func checkMgetDoc(k int, d mgetDoc, defIndex string) (expr, id string, err error) {
	expr = d.Index
	if expr == "" {
		expr = defIndex
	}
	id, aerr := scalarString(d.ID, "_id")
	switch {
	case len(d.ID) == 0 || (aerr == nil && id == ""):
		return "", "", validationErr("id is missing for doc " + strconv.Itoa(k))
	case aerr != nil:
		return "", "", aerr
	case expr == "":
		return "", "", validationErr("index is missing for doc " + strconv.Itoa(k))
	}
	return expr, id, nil
}

// mgetItems lists the engine's reads for the targets that resolved, in
// request order; itemOf[j] is the position in targets of items[j].
func mgetItems(targets []mgetTarget) (items []coord.MgetItem, itemOf []int) {
	for k := range targets {
		t := &targets[k]
		if t.err != nil {
			continue
		}
		items = append(items, coord.MgetItem{Index: t.name, ID: t.id, Routing: t.routing})
		itemOf = append(itemOf, k)
	}
	return items, itemOf
}

// mgetReplies builds _mget's "docs", one entry per target in request
// order: results[j] answers targets[itemOf[j]]. A result's error is
// recorded in its target, and every target with an error gets an error
// entry (logged when it is a 5xx). A found document whose stored_fields
// or _source filter is invalid fails the whole request.
func (s *Server) mgetReplies(q url.Values, targets []mgetTarget, itemOf []int, results []coord.MgetResult) ([]any, error) {
	out := make([]any, len(targets))
	for j, res := range results {
		k := itemOf[j]
		t := &targets[k]
		if res.Err != nil {
			t.err = res.Err
			continue
		}
		rep := &getResult{Index: t.name, ID: t.id, Found: res.Found}
		out[k] = rep
		if !res.Found {
			continue
		}
		if err := s.fillMgetFound(rep, q, k, t, res.Doc); err != nil {
			return nil, err
		}
	}
	for k := range targets {
		if t := &targets[k]; t.err != nil {
			out[k] = s.mgetErrorEntry(t)
		}
	}
	return out, nil
}

// fillMgetFound completes the reply of found document k (target t, read
// as doc): its version, seq_no and primary term, its stored fields (the
// document's stored_fields, else the URL's) and its source, filtered by
// the document's _source, else the URL's _source parameters. Asking for
// stored fields drops the source unless a _source is asked for too.
func (s *Server) fillMgetFound(rep *getResult, q url.Values, k int, t *mgetTarget, doc index.Doc) error {
	seq := doc.SeqNo
	rep.Version, rep.SeqNo, rep.PrimaryTerm = doc.Version, &seq, max(doc.PrimaryTerm, 1)
	params := url.Values{}
	for _, p := range []string{"_source", "_source_includes", "_source_excludes"} {
		if q.Has(p) {
			params.Set(p, q.Get(p))
		}
	}
	fields := s.eng.SearchFields([]string{t.name})
	stored := splitComma(q.Get("stored_fields"))
	if len(t.stored) > 0 {
		if err := json.Unmarshal(t.stored, &stored); err != nil {
			var one string
			if json.Unmarshal(t.stored, &one) != nil {
				return illegalArgument("[stored_fields] of doc %d must be a string or a list of strings", k)
			}
			stored = []string{one}
		}
	}
	if len(stored) > 0 {
		rep.Fields = esdsl.StoredFieldValues(fields, doc.Source, stored)
		if t.source == nil && !params.Has("_source") && !params.Has("_source_includes") && !params.Has("_source_excludes") {
			params.Set("_source", "false")
		}
	}
	var err error
	rep.Source, err = esdsl.FilterSource(esdsl.PresentSource(fields, t.name, doc.Source), t.source, params)
	return err
}

// mgetErrorEntry is the "docs" entry of a target that could not be read:
// the Elasticsearch error cause of t.err, its index defaulting to the
// target's. An error that translates to a 5xx is also logged.
func (s *Server) mgetErrorEntry(t *mgetTarget) mgetError {
	ae := translate(t.err)
	if ae.Status >= 500 {
		s.log.Error("httpapi: mget item failed", "index", t.name, "id", t.id, "err", t.err)
	}
	c := ae.cause()
	if c.Index == "" {
		c.Index = t.name
	}
	return mgetError{Index: t.name, ID: t.id, Error: c}
}
