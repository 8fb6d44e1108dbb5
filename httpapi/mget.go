package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
)

// mgetBody is the body of _mget: docs naming their index (or taking the
// URL's), or bare ids of the URL's index.
type mgetBody struct {
	Docs []mgetDoc `json:"docs"`
	IDs  []string  `json:"ids"`
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
	var b mgetBody
	if err := decodeStrict(body, &b); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the _mget body: %v", err)
	}
	q := r.URL.Query()
	defIndex := r.PathValue("index")
	docs := b.Docs
	for _, id := range b.IDs {
		raw, _ := json.Marshal(id)
		docs = append(docs, mgetDoc{ID: raw})
	}
	if len(docs) == 0 {
		return validationErr("no documents to get")
	}
	type target struct {
		expr, name, id string
		source         json.RawMessage
		stored         json.RawMessage
		err            error
	}
	targets := make([]target, len(docs))
	var items []shard.MgetItem
	var itemOf []int
	for k, d := range docs {
		t := &targets[k]
		t.expr, t.source, t.stored = d.Index, d.Source, d.StoredFields
		if t.expr == "" {
			t.expr = defIndex
		}
		id, aerr := scalarString(d.ID, "_id")
		switch {
		case len(d.ID) == 0 || (aerr == nil && id == ""):
			return validationErr("id is missing for doc " + strconv.Itoa(k))
		case aerr != nil:
			return aerr
		case t.expr == "":
			return validationErr("index is missing for doc " + strconv.Itoa(k))
		}
		t.id = id
		routing := d.Routing
		if routing == "" {
			routing = q.Get("routing")
		}
		t.name, routing, t.err = s.singleIndex(t.expr, routing, false)
		if t.err != nil {
			t.name = t.expr
			continue
		}
		items = append(items, shard.MgetItem{Index: t.name, ID: id, Routing: routing})
		itemOf = append(itemOf, k)
	}
	results, err := s.eng.Mget(r.Context(), items)
	if err != nil {
		return err
	}
	out := make([]any, len(docs))
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
		doc := res.Doc
		seq := doc.SeqNo
		rep.Version, rep.SeqNo, rep.PrimaryTerm = doc.Version, &seq, max(doc.PrimaryTerm, 1)
		params := url.Values{}
		for _, p := range []string{"_source", "_source_includes", "_source_excludes"} {
			if q.Has(p) {
				params.Set(p, q.Get(p))
			}
		}
		fields := s.fieldsOf([]string{t.name})
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
		if rep.Source, err = esdsl.FilterSource(esdsl.PresentSource(fields, t.name, doc.Source), t.source, params); err != nil {
			return err
		}
	}
	for k := range targets {
		if t := &targets[k]; t.err != nil {
			ae := translate(t.err)
			if ae.Status >= 500 {
				s.log.Error("httpapi: mget item failed", "index", t.name, "id", t.id, "err", t.err)
			}
			c := ae.cause()
			if c.Index == "" {
				c.Index = t.name
			}
			out[k] = mgetError{Index: t.name, ID: t.id, Error: c}
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"docs": out})
	return nil
}
