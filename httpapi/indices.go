package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// handleInfo answers GET / with the body the official clients check. It
// answers before the node has joined a cluster too, with the cluster UUID
// "_na_" as Elasticsearch's.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) error {
	uuid := "_na_"
	if v, err := s.eng.ClusterView(); err == nil && v.ClusterUUID != "" {
		uuid = v.ClusterUUID
	}
	info := map[string]any{
		"name":         s.cfg.NodeName,
		"cluster_name": s.cfg.ClusterName,
		"cluster_uuid": uuid,
		"version": map[string]any{
			"number":                              Version,
			"build_flavor":                        "default",
			"build_type":                          "weft",
			"build_hash":                          "weft",
			"build_date":                          "2026-01-01T00:00:00.000Z",
			"build_snapshot":                      false,
			"lucene_version":                      "9.12.1",
			"minimum_wire_compatibility_version":  "7.17.0",
			"minimum_index_compatibility_version": "7.0.0",
		},
		"tagline": "You Know, for Search",
	}
	if s.cfg.SecurityInfo != nil {
		info["security"] = s.cfg.SecurityInfo
	}
	s.writeJSON(w, r, http.StatusOK, info)
	return nil
}

// createIndexBody is the body of PUT /{index}.
type createIndexBody struct {
	Settings map[string]json.RawMessage `json:"settings"`
	Mappings json.RawMessage            `json:"mappings"`
	Aliases  map[string]json.RawMessage `json:"aliases"`
}

func (s *Server) handleCreateIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := esdsl.ResolveDateMathName(r.PathValue("index"), s.now())
	if err != nil {
		return err
	}
	if err := s.authorize(r.Context(), []string{name}); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req createIndexBody
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return badRequest("x_content_parse_exception", "failed to parse the create index body: %v", err)
		}
	}
	settings := coord.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}
	ps, err := parseSettings(req.Settings)
	if err != nil {
		return err
	}
	if ps.shards != nil {
		if *ps.shards < 1 {
			return illegalArgument("Failed to parse value [%d] for setting [index.number_of_shards] must be >= 1", *ps.shards)
		}
		settings.NumberOfShards = *ps.shards
	}
	if ps.replicas != nil {
		settings.NumberOfReplicas = *ps.replicas
	}
	for k, v := range ps.other {
		if isNull(v) {
			delete(ps.other, k) // a reset at creation is the default
		}
	}
	if rs := coord.IntSetting(ps.other, "index.number_of_routing_shards", 0); rs > 0 && (rs < settings.NumberOfShards || rs%settings.NumberOfShards != 0) {
		return illegalArgument("the number of routing shards [%d] must be a multiple of the number of shards [%d]", rs, settings.NumberOfShards)
	}
	settings.Other = ps.other
	if settings.Aliases, err = s.parseAliases(req.Aliases, name); err != nil {
		return err
	}
	mp := index.NewDynamicMapping()
	if len(req.Mappings) > 0 && string(req.Mappings) != "null" {
		if mp, err = index.ParseMapping(req.Mappings); err != nil {
			return err
		}
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.eng.CreateIndex(ctx, name, settings, mp); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": name})
	return nil
}

// resolve turns an index expression from the URL into index names. For
// endpoints where Elasticsearch answers a missing concrete index with 404,
// the coordinator's default resolution already does; a wildcard matching nothing gives no names.
//
// With security on, wildcards expand only to the indices the principal may
// run the request's action on, and the action is authorized on the
// concrete indices (authorizeResolved).
func (s *Server) resolve(ctx context.Context, expr string) ([]string, error) {
	if expr == "" {
		expr = "_all"
	}
	o := coord.ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ExpandClosed: true}
	if visible := visibility(ctx); visible != nil {
		o.Visible = visible
		res, err := s.eng.Resolve(expr, o)
		return res.Indices, s.authorizeResolved(ctx, expr, res.Indices, err)
	}
	res, err := s.eng.Resolve(expr, o)
	return res.Indices, err
}

// resolveReq expands an index expression under the request's indices
// options, on top of base: ignore_unavailable (skip missing and closed
// concrete names), allow_no_indices (false: an expression that matches
// nothing is an index_not_found_exception) and expand_wildcards (which
// indices wildcards match: open, closed, all, hidden, none). With
// security on it authorizes as resolve does.
func (s *Server) resolveReq(ctx context.Context, expr string, q url.Values, base coord.ResolveOptions) (coord.Resolved, error) {
	o := base
	var err error
	if o.IgnoreUnavailable, err = queryBool(q, "ignore_unavailable", base.IgnoreUnavailable); err != nil {
		return coord.Resolved{}, err
	}
	if o.AllowNoIndices, err = queryBool(q, "allow_no_indices", base.AllowNoIndices); err != nil {
		return coord.Resolved{}, err
	}
	if q.Has("expand_wildcards") {
		o.ExpandOpen, o.ExpandClosed = false, false
		for _, v := range splitComma(q.Get("expand_wildcards")) {
			switch v {
			case "open", "hidden":
				o.ExpandOpen = true
			case "closed":
				o.ExpandClosed = true
			case "all":
				o.ExpandOpen, o.ExpandClosed = true, true
			case "none":
			default:
				return coord.Resolved{}, illegalArgument("No enum constant org.elasticsearch.action.support.IndicesOptions.WildcardStates.%s; expand_wildcards takes open, closed, hidden, none or all", strings.ToUpper(v))
			}
		}
	}
	parts := splitComma(expr)
	for k, p := range parts {
		if parts[k], err = esdsl.ResolveDateMathName(p, s.now()); err != nil {
			return coord.Resolved{}, err
		}
	}
	expr = strings.Join(parts, ",")
	o.Visible = visibility(ctx)
	res, err := s.eng.Resolve(expr, o)
	if err := s.authorizeResolved(ctx, expr, res.Indices, err); err != nil {
		return coord.Resolved{}, err
	}
	return res, nil
}

// resolveOpts expands the index expression of a read (search, count,
// field caps) under the request's indices options: closed indices are
// refused, wildcards match open ones by default.
func (s *Server) resolveOpts(ctx context.Context, expr string, q url.Values) ([]string, error) {
	res, err := s.resolveReq(ctx, expr, q, coord.DefaultResolve)
	return res.Indices, err
}

func isWildcard(part string) bool {
	return part == "_all" || strings.ContainsAny(part, "*?")
}

func splitComma(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// infos describes the indices an administrative read (GET /{index},
// _mapping, _settings, _cat/indices) names, open or closed, under the
// request's indices options.
func (s *Server) infos(ctx context.Context, expr string, q url.Values) ([]coord.IndexInfo, error) {
	res, err := s.resolveReq(ctx, expr, q, coord.ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ExpandClosed: true})
	if err != nil {
		return nil, err
	}
	names := res.Indices
	out := make([]coord.IndexInfo, 0, len(names))
	for _, n := range names {
		info, err := s.eng.Index(n)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func mappingJSON(info coord.IndexInfo) (json.RawMessage, error) {
	if info.Mapping == nil {
		return json.RawMessage(`{}`), nil
	}
	return info.Mapping.MarshalJSON()
}

func (s *Server) handleGetIndex(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.Context(), r.PathValue("index"), r.URL.Query())
	if err != nil {
		return err
	}
	if len(infos) == 0 && r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	out := make(map[string]any, len(infos))
	for _, info := range infos {
		m, err := mappingJSON(info)
		if err != nil {
			return err
		}
		aliases := map[string]any{}
		for a, spec := range info.Settings.Aliases {
			aliases[a] = aliasJSON(spec)
		}
		out[info.Name] = map[string]any{"aliases": aliases, "mappings": m, "settings": settingsJSON(info, flagParam(r, "flat_settings"))}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// handleDeleteIndex serves DELETE /{index}: concrete names (an alias is
// refused, as in Elasticsearch), and wildcards unless the cluster setting
// action.destructive_requires_name (default true) forbids them.
func (s *Server) handleDeleteIndex(w http.ResponseWriter, r *http.Request) error {
	expr := r.PathValue("index")
	if s.destructiveRequiresName() {
		for _, part := range strings.Split(expr, ",") {
			if part == "_all" || part == "*" || strings.ContainsAny(part, "*?") {
				return illegalArgument("Wildcard expressions or all indices are not allowed when deleting [%s]; name each index to delete, or set the cluster setting action.destructive_requires_name to false", expr)
			}
		}
	}
	res, err := s.resolveReq(r.Context(), expr, r.URL.Query(), coord.ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ExpandClosed: true, NoAliases: true})
	if err != nil {
		return err
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	for _, n := range res.Indices {
		if err := s.eng.DeleteIndex(ctx, n); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

func (s *Server) handleGetMapping(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.Context(), r.PathValue("index"), r.URL.Query())
	if err != nil {
		return err
	}
	out := make(map[string]any, len(infos))
	for _, info := range infos {
		m, err := mappingJSON(info)
		if err != nil {
			return err
		}
		out[info.Name] = map[string]any{"mappings": m}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *Server) handlePutMapping(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: "Validation Failed: 1: mapping source is missing; send {\"properties\":{...}};"}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil && len(top) == 1 && top["_doc"] != nil {
		return illegalArgument("Types cannot be provided in put mapping requests")
	}
	mp, err := index.ParseMapping(body)
	if err != nil {
		return err
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	for _, n := range names {
		if err := s.eng.PutMapping(ctx, n, mp.Clone()); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

func (s *Server) handleGetSettings(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.Context(), r.PathValue("index"), r.URL.Query())
	if err != nil {
		return err
	}
	out := make(map[string]any, len(infos))
	for _, info := range infos {
		out[info.Name] = map[string]any{"settings": settingsJSON(info, flagParam(r, "flat_settings"))}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// handlePutSettings changes an index's dynamic settings: number_of_replicas
// and the stored ones (see settings.go); static settings only while the
// index is closed, number_of_shards never, as in Elasticsearch.
func (s *Server) handlePutSettings(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolveAdmin(r.PathValue("index"), r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := decodeStrict(body, &raw); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the settings body: %v", err)
	}
	if inner, ok := raw["settings"]; ok && len(raw) == 1 {
		raw = nil
		if err := json.Unmarshal(inner, &raw); err != nil {
			return badRequest("x_content_parse_exception", "settings must be an object: %v", err)
		}
	}
	ps, err := parseSettings(raw)
	if err != nil {
		return err
	}
	if ps.shards != nil {
		return illegalArgument("can't change the non-dynamic setting [index.number_of_shards] of an existing index; reindex into a new index instead")
	}
	if ps.replicas == nil && len(ps.other) == 0 {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: no settings to update;"}
	}
	if _, ok := ps.other["index.number_of_routing_shards"]; ok {
		return illegalArgument("can't change the non-dynamic setting [index.number_of_routing_shards] of an existing index")
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	for _, n := range names {
		info, err := s.eng.Index(n)
		if err != nil {
			return err
		}
		if err := checkStaticSettings(ps.other, n, info.Closed); err != nil {
			return err
		}
		if err := s.eng.UpdateSettings(ctx, n, coord.SettingsUpdate{NumberOfReplicas: ps.replicas, Other: ps.other}); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

// shardsHeader is the "_shards" object of replies.
type shardsHeader struct {
	Total      int `json:"total"`
	Successful int `json:"successful"`
	Skipped    int `json:"skipped,omitempty"`
	Failed     int `json:"failed"`
}

// copiesOf is the _shards header of a refresh of the named indexes: every
// copy is counted in total and only the primaries (which the refresh waits
// on) succeed.
func (s *Server) copiesOf(names []string) shardsHeader {
	var h shardsHeader
	for _, n := range names {
		info, err := s.eng.Index(n)
		if err != nil {
			continue
		}
		h.Total += info.Settings.NumberOfShards * (1 + info.Settings.NumberOfReplicas)
		h.Successful += info.Settings.NumberOfShards
	}
	return h
}

// defaultMetadataTimeout is how long a metadata change waits for the
// cluster to commit it, when the request names no timeout (Elasticsearch's
// master_timeout default).
const defaultMetadataTimeout = 30 * time.Second

// metadataContext bounds a metadata change by the request's timeout or
// master_timeout (the shorter), so that a node cut off from the cluster
// answers 503 in time rather than waiting.
func metadataContext(r *http.Request) (context.Context, context.CancelFunc, error) {
	limit := defaultMetadataTimeout
	for _, p := range []string{"timeout", "master_timeout"} {
		if v := r.URL.Query().Get(p); v != "" {
			d, err := parseTimeValue(v)
			if err != nil {
				return nil, nil, err
			}
			if d > 0 {
				limit = min(limit, d)
			}
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), limit)
	return ctx, cancel, nil
}
