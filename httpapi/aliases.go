package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index/esdsl"
)

// Aliases, as Elasticsearch's: given at index creation, changed one at a
// time (PUT and DELETE /{index}/_alias/{name}) or atomically in a batch
// (POST /_aliases), read back with GET /_alias and _cat/aliases. They are
// part of each index's committed metadata; resolution (searching and
// writing through an alias) is package shard's.

// aliasReadParams are the parameters GET _alias takes.
var aliasReadParams = []string{"local", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards"}

// parseAlias reads one alias definition: filter, routing (both routings),
// index_routing, search_routing, is_write_index and is_hidden; a filter
// must translate as a query against the index's fields.
func (s *Server) parseAlias(raw json.RawMessage, alias string, indices []string) (state.Alias, error) {
	var spec state.Alias
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		return spec, nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		return spec, badRequest("x_content_parse_exception", "alias [%s] must be an object: %v", alias, err)
	}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		v := o[k]
		var err error
		switch k {
		case "filter":
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return spec, illegalArgument("failed to parse filter for alias [%s]: it must be a query object", alias)
			}
			body := append(append([]byte(`{"query":`), v...), '}')
			if _, perr := esdsl.ParseCount(body, nil, s.eng.SearchFields(indices)); perr != nil {
				return spec, illegalArgument("failed to parse filter for alias [%s]: %s", alias, translate(perr).Reason)
			}
			spec.Filter = compactJSON(v)
		case "routing":
			if spec.IndexRouting, err = scalarString(v, k); err == nil {
				spec.SearchRouting = spec.IndexRouting
			}
		case "index_routing":
			spec.IndexRouting, err = scalarString(v, k)
		case "search_routing":
			spec.SearchRouting, err = scalarString(v, k)
		case "is_write_index":
			var b bool
			if b, err = boolValue(v, k); err == nil {
				spec.IsWriteIndex = &b
			}
		case "is_hidden":
			spec.IsHidden, err = boolValue(v, k)
		default:
			return spec, badRequest("x_content_parse_exception", "[alias] unknown field [%s] in alias [%s]", k, alias)
		}
		if err != nil {
			return spec, err
		}
	}
	if strings.Contains(spec.IndexRouting, ",") {
		return spec, illegalArgument("alias [%s] has several index routing values [%s]; index routing takes one", alias, spec.IndexRouting)
	}
	return spec, nil
}

func compactJSON(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// scalarString reads a string or number as a string.
func scalarString(v json.RawMessage, name string) (string, error) {
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str, nil
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), nil
	}
	return "", illegalArgument("[%s] must be a string, got %s", name, string(v))
}

// boolValue reads true, false, "true" or "false".
func boolValue(v json.RawMessage, name string) (bool, error) {
	switch strings.Trim(string(bytes.TrimSpace(v)), `"`) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, illegalArgument("Failed to parse value [%s] as only [true] or [false] are allowed for [%s]", string(v), name)
}

// parseAliases reads the "aliases" object of an index creation body.
func (s *Server) parseAliases(raw map[string]json.RawMessage, index string) (map[string]state.Alias, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := map[string]state.Alias{}
	for name, body := range raw {
		resolved, err := esdsl.ResolveDateMathName(name, s.now())
		if err != nil {
			return nil, err
		}
		spec, err := s.parseAlias(body, resolved, nil)
		if err != nil {
			return nil, err
		}
		out[resolved] = spec
	}
	return out, nil
}

// handlePutAlias serves PUT|POST /{index}/_alias/{name} (and _aliases):
// adds the alias to every index the expression names.
func (s *Server) handlePutAlias(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolveAdmin(r.PathValue("index"), r)
	if err != nil {
		return err
	}
	alias := r.PathValue("name")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var o map[string]json.RawMessage
		if err := json.Unmarshal(body, &o); err != nil {
			return badRequest("x_content_parse_exception", "failed to parse the alias body: %v", err)
		}
		if inner, ok := o["alias"]; ok { // {"alias":"name", ...} repeats the path
			if n, _ := scalarString(inner, "alias"); n != alias {
				return illegalArgument("the alias in the body [%s] is not the one in the path [%s]", string(inner), alias)
			}
			delete(o, "alias")
			body, _ = json.Marshal(o)
		}
	}
	spec, err := s.parseAlias(body, alias, names)
	if err != nil {
		return err
	}
	actions := make([]state.AliasAction, 0, len(names))
	for _, n := range names {
		actions = append(actions, state.AliasAction{Type: state.AliasAdd, Index: n, Alias: alias, Spec: spec})
	}
	return s.applyAliases(w, r, actions)
}

// handleDeleteAlias serves DELETE /{index}/_alias/{name} (and _aliases);
// name may be a list or a pattern; a name matching no alias is a 404.
func (s *Server) handleDeleteAlias(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolveAdmin(r.PathValue("index"), r)
	if err != nil {
		return err
	}
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	var actions []state.AliasAction
	var missing []string
	for _, pat := range splitComma(r.PathValue("name")) {
		found := false
		for _, n := range names {
			for a := range v.Indices[n].Aliases {
				if aliasMatches(pat, a) {
					actions = append(actions, state.AliasAction{Type: state.AliasRemove, Index: n, Alias: a})
					found = true
				}
			}
		}
		if !found {
			missing = append(missing, pat)
		}
	}
	if len(missing) > 0 {
		return &apiError{Status: http.StatusNotFound, Type: "aliases_not_found_exception", Reason: fmt.Sprintf("aliases [%s] missing", strings.Join(missing, ","))}
	}
	return s.applyAliases(w, r, actions)
}

func aliasMatches(pattern, alias string) bool {
	if pattern == "_all" || pattern == "*" {
		return true
	}
	ok, _ := path.Match(pattern, alias)
	return ok
}

// updateAliasesBody is POST /_aliases's body.
type updateAliasesBody struct {
	Actions []map[string]json.RawMessage `json:"actions"`
}

// aliasActionBody is one add, remove or remove_index action.
type aliasActionBody struct {
	Index     string          `json:"index"`
	Indices   []string        `json:"indices"`
	Alias     string          `json:"alias"`
	Aliases   []string        `json:"aliases"`
	MustExist *bool           `json:"must_exist"`
	Filter    json.RawMessage `json:"filter"`
	Routing   json.RawMessage `json:"routing"`
	IndexR    json.RawMessage `json:"index_routing"`
	SearchR   json.RawMessage `json:"search_routing"`
	Write     json.RawMessage `json:"is_write_index"`
	Hidden    json.RawMessage `json:"is_hidden"`
}

// handleUpdateAliases serves POST /_aliases: add, remove and remove_index
// actions, applied all or none.
func (s *Server) handleUpdateAliases(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var b updateAliasesBody
	if err := decodeStrict(body, &b); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the _aliases body: %v", err)
	}
	if len(b.Actions) == 0 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: no actions specified;"}
	}
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	var actions []state.AliasAction
	for k, entry := range b.Actions {
		if len(entry) != 1 {
			return badRequest("x_content_parse_exception", "[aliases] action %d must have exactly one of add, remove, remove_index", k)
		}
		for typ, raw := range entry {
			acts, err := s.aliasActions(r.Context(), v, typ, raw)
			if err != nil {
				return err
			}
			actions = append(actions, acts...)
		}
	}
	return s.applyAliases(w, r, actions)
}

// aliasActions expands one _aliases action over the indices and aliases
// it names.
func (s *Server) aliasActions(ctx context.Context, v *state.State, typ string, raw json.RawMessage) ([]state.AliasAction, error) {
	var a aliasActionBody
	if err := decodeStrict(raw, &a); err != nil {
		return nil, badRequest("x_content_parse_exception", "failed to parse the [%s] action: %v", typ, err)
	}
	indexExpr := strings.Join(append(a.Indices, a.Index), ",")
	if strings.Trim(indexExpr, ",") == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: One of [index] or [indices] is required;"}
	}
	res, err := coord.Resolve(v, indexExpr, coord.ResolveOptions{ExpandOpen: true, ExpandClosed: true, NoAliases: true, Visible: visibility(ctx)})
	if err := s.authorizeResolved(ctx, indexExpr, res.Indices, err); err != nil {
		return nil, err
	}
	aliases := append(a.Aliases, a.Alias)
	aliases = slices.DeleteFunc(aliases, func(s string) bool { return s == "" })
	var out []state.AliasAction
	switch typ {
	case "remove_index":
		for _, n := range res.Indices {
			out = append(out, state.AliasAction{Type: state.AliasRemoveIndex, Index: n})
		}
		return out, nil
	case "add", "remove":
	default:
		return nil, badRequest("x_content_parse_exception", "[aliases] unknown action [%s]; use add, remove or remove_index", typ)
	}
	if len(aliases) == 0 {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: One of [alias] or [aliases] is required;"}
	}
	if typ == "remove" {
		mustExist := a.MustExist != nil && *a.MustExist
		for _, n := range res.Indices {
			for _, pat := range aliases {
				matched := false
				for alias := range v.Indices[n].Aliases {
					if aliasMatches(pat, alias) {
						out = append(out, state.AliasAction{Type: state.AliasRemove, Index: n, Alias: alias, MustExist: mustExist})
						matched = true
					}
				}
				if !matched && mustExist {
					return nil, &apiError{Status: http.StatusNotFound, Type: "aliases_not_found_exception", Reason: fmt.Sprintf("aliases [%s] missing", pat)}
				}
			}
		}
		return out, nil
	}
	def := map[string]json.RawMessage{}
	for k, val := range map[string]json.RawMessage{"filter": a.Filter, "routing": a.Routing, "index_routing": a.IndexR,
		"search_routing": a.SearchR, "is_write_index": a.Write, "is_hidden": a.Hidden} {
		if len(val) > 0 {
			def[k] = val
		}
	}
	spec, err := s.parseAlias(mustJSON(def), strings.Join(aliases, ","), res.Indices)
	if err != nil {
		return nil, err
	}
	for _, n := range res.Indices {
		for _, alias := range aliases {
			out = append(out, state.AliasAction{Type: state.AliasAdd, Index: n, Alias: alias, Spec: spec})
		}
	}
	return out, nil
}

func (s *Server) applyAliases(w http.ResponseWriter, r *http.Request, actions []state.AliasAction) error {
	if len(actions) > 0 {
		ctx, cancel, err := metadataContext(r)
		if err != nil {
			return err
		}
		defer cancel()
		if err := s.eng.UpdateAliases(ctx, actions); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true, "errors": false})
	return nil
}

// aliasJSON renders an alias as GET _alias does.
func aliasJSON(a state.Alias) map[string]any {
	out := map[string]any{}
	if len(a.Filter) > 0 {
		out["filter"] = a.Filter
	}
	if a.IndexRouting != "" {
		out["index_routing"] = a.IndexRouting
	}
	if a.SearchRouting != "" {
		out["search_routing"] = a.SearchRouting
	}
	if a.IsWriteIndex != nil {
		out["is_write_index"] = *a.IsWriteIndex
	}
	if a.IsHidden {
		out["is_hidden"] = true
	}
	return out
}

// handleGetAlias serves GET and HEAD /_alias, /_alias/{name},
// /{index}/_alias and /{index}/_alias/{name}: every index the expression
// names with its aliases matching name. A named alias found nowhere is a
// 404 (with what was found, as Elasticsearch answers).
func (s *Server) handleGetAlias(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	expr := r.PathValue("index")
	res, err := s.resolveReq(r.Context(), expr, r.URL.Query(), coord.ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ExpandClosed: true})
	if err != nil {
		return err
	}
	patterns := splitComma(r.PathValue("name"))
	out := map[string]any{}
	seen := map[string]bool{}
	for _, n := range res.Indices {
		aliases := map[string]any{}
		for a, spec := range v.Indices[n].Aliases {
			if len(patterns) > 0 && !slices.ContainsFunc(patterns, func(p string) bool { return aliasMatches(p, a) }) {
				continue
			}
			aliases[a] = aliasJSON(spec)
			seen[a] = true
		}
		if len(aliases) > 0 || (len(patterns) == 0 && expr != "") {
			out[n] = map[string]any{"aliases": aliases}
		}
	}
	var missing []string
	for _, p := range patterns {
		if p != "_all" && !isPattern(p) && !seen[p] {
			missing = append(missing, p)
		}
	}
	status := http.StatusOK
	if len(missing) > 0 || (len(patterns) > 0 && len(seen) == 0) {
		status = http.StatusNotFound
		if len(missing) > 0 {
			out["error"] = fmt.Sprintf("alias [%s] missing", strings.Join(missing, ","))
			out["status"] = http.StatusNotFound
		}
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return nil
	}
	s.writeJSON(w, r, status, out)
	return nil
}

func isPattern(s string) bool { return strings.ContainsAny(s, "*?") }

// handleCatAliases serves GET /_cat/aliases[/{name}].
func (s *Server) handleCatAliases(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	patterns := splitComma(r.PathValue("name"))
	t := catTable{cols: []string{"alias", "index", "filter", "routing.index", "routing.search", "is_write_index"},
		aliases: map[string]string{"a": "alias", "i": "index", "idx": "index", "f": "filter", "fi": "filter", "ri": "routing.index",
			"routingIndex": "routing.index", "rs": "routing.search", "routingSearch": "routing.search", "w": "is_write_index", "isWriteIndex": "is_write_index"}}
	visible := visibility(r.Context())
	if err := s.authorize(r.Context(), nil); err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(v.Indices)) {
		ix := v.Indices[n]
		if visible != nil && !visible(n) {
			continue
		}
		for _, a := range slices.Sorted(maps.Keys(ix.Aliases)) {
			if len(patterns) > 0 && !slices.ContainsFunc(patterns, func(p string) bool { return aliasMatches(p, a) }) {
				continue
			}
			spec := ix.Aliases[a]
			filter, write := "-", "-"
			if len(spec.Filter) > 0 {
				filter = "*"
			}
			if spec.IsWriteIndex != nil {
				write = strconv.FormatBool(*spec.IsWriteIndex)
			}
			t.rows = append(t.rows, []string{a, n, filter, dash(spec.IndexRouting), dash(spec.SearchRouting), write})
		}
	}
	return s.writeCat(w, r, t)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// resolveAdmin resolves the index expression of an administrative request
// (aliases, open, close): concrete indices, open or closed, never through
// aliases; a missing name is a 404 unless ignore_unavailable.
func (s *Server) resolveAdmin(expr string, r *http.Request) ([]string, error) {
	res, err := s.resolveReq(r.Context(), expr, r.URL.Query(), coord.ResolveOptions{ExpandOpen: true, ExpandClosed: true, NoAliases: true})
	if err != nil {
		return nil, err
	}
	if len(res.Indices) == 0 {
		return nil, fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, expr)
	}
	return res.Indices, nil
}
