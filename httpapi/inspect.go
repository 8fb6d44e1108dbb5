package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// The endpoints that look at the mappings, the analyzers and queries rather
// than the documents: _analyze, _field_caps, _validate/query, _explain.

// maxAnalyzeTokens is Elasticsearch's index.analyze.max_token_count default.
const maxAnalyzeTokens = 10000

type analyzeBody struct {
	Text       json.RawMessage `json:"text"`
	Analyzer   string          `json:"analyzer"`
	Field      string          `json:"field"`
	Tokenizer  json.RawMessage `json:"tokenizer"`
	Filter     json.RawMessage `json:"filter"`
	CharFilter json.RawMessage `json:"char_filter"`
	Normalizer json.RawMessage `json:"normalizer"`
	Explain    bool            `json:"explain"`
	Attributes json.RawMessage `json:"attributes"`
}

type analyzeToken struct {
	Token       string `json:"token"`
	StartOffset int    `json:"start_offset"`
	EndOffset   int    `json:"end_offset"`
	Type        string `json:"type"`
	Position    int    `json:"position"`
}

// handleAnalyze serves GET|POST /_analyze and /{index}/_analyze: the tokens
// an analyzer (named, or a field's) makes of text.
func (s *Server) handleAnalyze(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var b analyzeBody
	if err := decodeStrict(body, &b); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the _analyze body: %v", err)
	}
	q := r.URL.Query()
	if v := q.Get("analyzer"); v != "" {
		b.Analyzer = v
	}
	if v := q.Get("field"); v != "" {
		b.Field = v
	}
	if v := q.Get("text"); v != "" {
		b.Text, _ = json.Marshal(v)
	}
	switch {
	case b.Tokenizer != nil || b.Filter != nil || b.CharFilter != nil || b.Normalizer != nil:
		return illegalArgument("custom analysis chains (tokenizer, filter, char_filter, normalizer) are not supported; name an analyzer or a field")
	}
	var texts []string
	if err := json.Unmarshal(b.Text, &texts); err != nil {
		var one string
		if err := json.Unmarshal(b.Text, &one); err != nil {
			return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: text is missing;"}
		}
		texts = []string{one}
	}
	if len(texts) == 0 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: text is missing;"}
	}
	m := index.NewDynamicMapping() // no index: the analyzer by name, or standard
	maxTokens := maxAnalyzeTokens
	expr := r.PathValue("index")
	if expr == "" {
		// No index: the standard or a named analyzer. Elasticsearch asks
		// for the action on some index.
		if err := s.authorize(r.Context(), nil); err != nil {
			return err
		}
	}
	if expr != "" {
		name, _, err := s.singleIndex(r.Context(), expr, "", false)
		if err != nil {
			return err
		}
		info, err := s.eng.Index(name)
		if err != nil {
			return err
		}
		m = info.Mapping
		maxTokens = coord.IntSetting(info.Settings.Other, "index.analyze.max_token_count", maxAnalyzeTokens)
	}
	if b.Field != "" && b.Analyzer != "" {
		b.Field = "" // a named analyzer wins, as in Elasticsearch
	}
	tokens := []analyzeToken{}
	base, pos := 0, 0 // across texts, offsets and positions continue
	for _, text := range texts {
		got, err := m.AnalyzeTokens(b.Field, b.Analyzer, text)
		if err != nil {
			return illegalArgument("%v", strings.TrimPrefix(err.Error(), index.ErrInvalidMapping.Error()+": "))
		}
		last := -1
		for _, t := range got {
			tokens = append(tokens, analyzeToken{Token: t.Term, StartOffset: base + utf8.RuneCountInString(text[:t.Start]),
				EndOffset: base + utf8.RuneCountInString(text[:t.End]), Type: t.Type, Position: pos + t.Position})
			last = max(last, t.Position)
			if len(tokens) > maxTokens {
				return illegalArgument("The number of tokens produced by calling _analyze has exceeded the allowed maximum of [%d]. This limit can be set by changing the [index.analyze.max_token_count] index level setting.", maxTokens)
			}
		}
		base += utf8.RuneCountInString(text) + 1
		pos += last + 1 + 100 // position_increment_gap between values
	}
	if b.Explain {
		// The analyzer's output with its details, as Elasticsearch's
		// explain shows a whole analyzer (Weft does not break it down into
		// its tokenizer and filters).
		name := b.Analyzer
		if name == "" {
			name = m.AnalyzerName(b.Field, "")
		}
		detailed := make([]map[string]any, len(tokens))
		for i, t := range tokens {
			detailed[i] = map[string]any{"token": t.Token, "start_offset": t.StartOffset, "end_offset": t.EndOffset, "type": t.Type,
				"position": t.Position, "bytes": hexBytes(t.Token), "positionLength": 1, "termFrequency": 1}
		}
		s.writeJSON(w, r, http.StatusOK, map[string]any{"detail": map[string]any{"custom_analyzer": false,
			"analyzer": map[string]any{"name": name, "tokens": detailed}}})
		return nil
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"tokens": tokens})
	return nil
}

// hexBytes renders a token's UTF-8 bytes as Elasticsearch's explain does:
// "[74 68 65]".
func hexBytes(s string) string {
	parts := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		parts[i] = strconv.FormatUint(uint64(s[i]), 16)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// fieldCap is one (field, type) entry of _field_caps.
type fieldCap struct {
	Type            string   `json:"type"`
	MetadataField   bool     `json:"metadata_field"`
	Searchable      bool     `json:"searchable"`
	Aggregatable    bool     `json:"aggregatable"`
	Indices         []string `json:"indices,omitempty"`
	NonSearchable   []string `json:"non_searchable_indices,omitempty"`
	NonAggregatable []string `json:"non_aggregatable_indices,omitempty"`
}

// handleFieldCaps serves GET|POST /_field_caps and /{index}/_field_caps:
// each field matching ?fields (patterns), by type, with whether it can be
// searched and aggregated, and in which indices where they differ.
func (s *Server) handleFieldCaps(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	patterns := splitComma(q.Get("fields"))
	if len(strings.TrimSpace(string(body))) > 0 {
		var b struct {
			Fields      []string        `json:"fields"`
			IndexFilter json.RawMessage `json:"index_filter"`
			Runtime     json.RawMessage `json:"runtime_mappings"`
		}
		if err := decodeStrict(body, &b); err != nil {
			return badRequest("x_content_parse_exception", "failed to parse the _field_caps body: %v", err)
		}
		if b.IndexFilter != nil || b.Runtime != nil {
			return illegalArgument("[index_filter] and [runtime_mappings] are not supported by _field_caps on this node")
		}
		patterns = append(patterns, b.Fields...)
	}
	if len(patterns) == 0 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: specified fields can't be null or empty;"}
	}
	includeUnmapped, err := queryBool(q, "include_unmapped", false)
	if err != nil {
		return err
	}
	names, err := s.resolveOpts(r.Context(), r.PathValue("index"), q)
	if err != nil {
		return err
	}
	// per field, per type: the indices that have it, and those where it is
	// not searchable or not aggregatable.
	type caps struct{ in, noSearch, noAgg []string }
	byField := map[string]map[string]*caps{}
	for _, n := range names {
		info, err := s.eng.Index(n)
		if err != nil {
			return err
		}
		for path, fc := range fieldCapsOf(info.Mapping) {
			if !matchesAny(patterns, path) {
				continue
			}
			if byField[path] == nil {
				byField[path] = map[string]*caps{}
			}
			c := byField[path][fc.Type]
			if c == nil {
				c = &caps{}
				byField[path][fc.Type] = c
			}
			c.in = append(c.in, n)
			if !fc.Searchable {
				c.noSearch = append(c.noSearch, n)
			}
			if !fc.Aggregatable {
				c.noAgg = append(c.noAgg, n)
			}
		}
	}
	out := map[string]map[string]fieldCap{}
	for path, types := range byField {
		out[path] = map[string]fieldCap{}
		seen := 0
		for typ, c := range types {
			fc := fieldCap{Type: typ, Searchable: len(c.noSearch) < len(c.in), Aggregatable: len(c.noAgg) < len(c.in)}
			if len(types) > 1 || (includeUnmapped && len(c.in) < len(names)) {
				fc.Indices = c.in
			}
			if len(c.noSearch) > 0 && len(c.noSearch) < len(c.in) {
				fc.NonSearchable, fc.Searchable = c.noSearch, false
			}
			if len(c.noAgg) > 0 && len(c.noAgg) < len(c.in) {
				fc.NonAggregatable, fc.Aggregatable = c.noAgg, false
			}
			out[path][typ] = fc
			seen += len(c.in)
		}
		if includeUnmapped && seen < len(names) {
			var missing []string
			for _, n := range names {
				found := false
				for _, c := range types {
					for _, in := range c.in {
						found = found || in == n
					}
				}
				if !found {
					missing = append(missing, n)
				}
			}
			out[path]["unmapped"] = fieldCap{Type: "unmapped", Indices: missing}
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"indices": names, "fields": out})
	return nil
}

// fieldCapsOf lists a mapping's fields (objects included) with their
// capabilities.
func fieldCapsOf(m *index.Mapping) map[string]fieldCap {
	out := map[string]fieldCap{}
	for path, typ := range m.FieldPaths() {
		f := m.Field(path)
		searchable := f == nil || !f.NoIndex
		agg := false
		switch typ {
		case index.TypeKeyword, index.TypeIP, index.TypeBoolean, index.TypeDate, index.TypeDateNanos,
			index.TypeLong, index.TypeInteger, index.TypeShort, index.TypeByte, index.TypeDouble, index.TypeFloat,
			index.TypeHalfFloat, index.TypeScaledFloat:
			agg = true
		}
		out[path] = fieldCap{Type: typ, Searchable: searchable, Aggregatable: agg}
		// Every dotted prefix that is not itself a field is an object.
		for i := strings.IndexByte(path, '.'); i > 0; i = nextDot(path, i) {
			parent := path[:i]
			if m.FieldType(parent) == index.TypeObject {
				out[parent] = fieldCap{Type: "object"}
			}
		}
	}
	return out
}

func nextDot(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if p == "*" || p == s {
			return true
		}
		if strings.Contains(p, "*") && globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern whose only wildcard is *.
func globMatch(p, s string) bool {
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for k, part := range parts[1:] {
		if k == len(parts)-2 {
			return strings.HasSuffix(s, part)
		}
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// handleValidateQuery serves GET|POST /_validate/query and
// /{index}/_validate/query: whether the query translates, and with
// ?explain why not (or what it became).
func (s *Server) handleValidateQuery(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	explain, err := queryBool(q, "explain", false)
	if err != nil {
		return err
	}
	names, sc, err := s.scoped(r.Context(), r.PathValue("index"), q)
	if err != nil {
		return err
	}
	params := q
	for _, k := range []string{"explain", "rewrite", "all_shards"} {
		params.Del(k)
	}
	srch, err := sc.ParseValidate(body, params, s.eng.SearchFields(names))
	out := map[string]any{"_shards": shardsHeader{Total: 1, Successful: 1}, "valid": err == nil}
	if err != nil {
		ae := translate(err)
		if ae.Status >= 500 {
			return err
		}
		if explain {
			out["error"] = javaException(ae.Type) + ": " + ae.Reason
		}
	} else if explain {
		var list []map[string]any
		for _, n := range names {
			list = append(list, map[string]any{"index": n, "valid": true, "explanation": srch.QueryString()})
		}
		out["explanations"] = list
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// javaException names the Java class of an Elasticsearch exception type, as
// _validate/query's error text does.
func javaException(typ string) string {
	switch typ {
	case "parsing_exception":
		return "org.elasticsearch.common.ParsingException"
	case "x_content_parse_exception":
		return "org.elasticsearch.xcontent.XContentParseException"
	case "query_shard_exception":
		return "org.elasticsearch.index.query.QueryShardException"
	}
	return "java.lang.IllegalArgumentException"
}

// handleExplain serves GET|POST /{index}/_explain/{id}: whether the
// document matches the query, and how it scores.
func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	expr, id := r.PathValue("index"), r.PathValue("id")
	name, routing, err := s.singleIndex(r.Context(), expr, r.URL.Query().Get("routing"), false)
	if err != nil {
		return err
	}
	_, sc, err := s.scoped(r.Context(), expr, url.Values{})
	if err != nil {
		return err
	}
	srch, err := sc.ParseExplain(body, r.URL.Query(), id, routing, s.eng.SearchFields([]string{name}))
	if err != nil {
		return err
	}
	res, err := s.eng.Search(r.Context(), []string{name}, srch)
	if err != nil {
		return err
	}
	out := map[string]any{"_index": name, "_id": id, "matched": false}
	resp := srch.Response(res.SearchResult, 0)
	for _, h := range resp.Hits.Hits {
		if h.ID == id && h.Explanation != nil {
			out["matched"], out["explanation"] = true, h.Explanation
		}
	}
	if out["matched"] == false {
		if _, err := s.eng.Get(r.Context(), name, id, routing); err != nil {
			if errors.Is(err, vocab.ErrDocumentNotFound) {
				s.writeJSON(w, r, http.StatusNotFound, out)
				return nil
			}
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}
