package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shard"
)

// handleInfo answers GET / with the body the official clients check. It
// answers before the node has joined a cluster too, with the cluster UUID
// "_na_" as Elasticsearch's.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) error {
	uuid := "_na_"
	if v, err := s.eng.ClusterView(); err == nil && v.ClusterUUID != "" {
		uuid = v.ClusterUUID
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
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
	})
	return nil
}

// createIndexBody is the body of PUT /{index}.
type createIndexBody struct {
	Settings map[string]json.RawMessage `json:"settings"`
	Mappings json.RawMessage            `json:"mappings"`
	Aliases  map[string]json.RawMessage `json:"aliases"`
}

// parseSettings reads index settings in any of Elasticsearch's three forms
// ({"number_of_shards":1}, {"index":{"number_of_shards":1}},
// {"index.number_of_shards":1}), numbers given as numbers or strings. It
// returns which of the two known settings were present; any other setting
// is a 400 naming it.
func parseSettings(raw map[string]json.RawMessage) (shards, replicas *int, err error) {
	flat := map[string]json.RawMessage{}
	for k, v := range raw {
		if k == "index" {
			var inner map[string]json.RawMessage
			if err := json.Unmarshal(v, &inner); err != nil {
				return nil, nil, badRequest("settings_exception", "settings.index must be an object: %v", err)
			}
			for ik, iv := range inner {
				flat["index."+ik] = iv
			}
			continue
		}
		if !strings.HasPrefix(k, "index.") {
			k = "index." + k
		}
		flat[k] = v
	}
	for k, v := range flat {
		var dst **int
		switch k {
		case "index.number_of_shards":
			dst = &shards
		case "index.number_of_replicas":
			dst = &replicas
		default:
			return nil, nil, illegalArgument("unknown setting [%s]; Weft supports index.number_of_shards and index.number_of_replicas", k)
		}
		n, perr := intSetting(v)
		if perr != nil || n < 0 {
			return nil, nil, illegalArgument("failed to parse value [%s] for setting [%s]; expected a non-negative integer", string(v), k)
		}
		*dst = &n
	}
	return shards, replicas, nil
}

func intSetting(v json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(v, &n); err == nil {
		return n, nil
	}
	var str string
	if err := json.Unmarshal(v, &str); err != nil {
		return 0, err
	}
	return strconv.Atoi(str)
}

func (s *Server) handleCreateIndex(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("index")
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
	if len(req.Aliases) > 0 {
		return illegalArgument("aliases are not supported by Weft; create the index without \"aliases\"")
	}
	settings := shard.IndexSettings{NumberOfShards: 1, NumberOfReplicas: 1}
	shards, replicas, err := parseSettings(req.Settings)
	if err != nil {
		return err
	}
	if shards != nil {
		if *shards < 1 {
			return illegalArgument("Failed to parse value [%d] for setting [index.number_of_shards] must be >= 1", *shards)
		}
		settings.NumberOfShards = *shards
	}
	if replicas != nil {
		settings.NumberOfReplicas = *replicas
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
// ResolveIndices already does; a wildcard matching nothing gives no names.
func (s *Server) resolve(expr string) ([]string, error) {
	if expr == "" {
		expr = "_all"
	}
	return s.eng.ResolveIndices(expr)
}

// resolveOpts expands an index expression as resolve does, under
// Elasticsearch's index options: ignore_unavailable (skip missing concrete
// names), allow_no_indices (false: an expression that matches nothing is
// an index_not_found_exception) and expand_wildcards (which indices a
// wildcard matches: open, all and hidden match every index, closed and none
// match none, since Weft has no closed indices).
func (s *Server) resolveOpts(expr string, q url.Values) ([]string, error) {
	ignore, err := queryBool(q, "ignore_unavailable", false)
	if err != nil {
		return nil, err
	}
	allowNone, err := queryBool(q, "allow_no_indices", true)
	if err != nil {
		return nil, err
	}
	wild := !q.Has("expand_wildcards")
	for _, v := range splitComma(q.Get("expand_wildcards")) {
		switch v {
		case "open", "all", "hidden":
			wild = true
		case "closed", "none":
		default:
			return nil, illegalArgument("No enum constant org.elasticsearch.action.support.IndicesOptions.WildcardStates.%s; expand_wildcards takes open, closed, hidden, none or all", strings.ToUpper(v))
		}
	}
	if expr == "" {
		expr = "_all"
	}
	seen := map[string]bool{}
	out := []string{}
	for _, part := range splitComma(expr) {
		if isWildcard(part) && !wild {
			continue
		}
		names, err := s.eng.ResolveIndices(part)
		if err != nil {
			if ignore && errors.Is(err, shard.ErrIndexNotFound) {
				continue
			}
			return nil, err
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 && !allowNone {
		return nil, fmt.Errorf("%w: no such index [%s]", shard.ErrIndexNotFound, expr)
	}
	sort.Strings(out)
	return out, nil
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

func (s *Server) infos(expr string) ([]shard.IndexInfo, error) {
	names, err := s.resolve(expr)
	if err != nil {
		return nil, err
	}
	out := make([]shard.IndexInfo, 0, len(names))
	for _, n := range names {
		info, err := s.eng.Index(n)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// indexSettingsJSON is the "settings" object of GET /{index} and _settings.
func indexSettingsJSON(info shard.IndexInfo) map[string]any {
	return map[string]any{"index": map[string]any{
		"number_of_shards":   strconv.Itoa(info.Settings.NumberOfShards),
		"number_of_replicas": strconv.Itoa(info.Settings.NumberOfReplicas),
		"uuid":               info.UUID,
		"provided_name":      info.Name,
		"creation_date":      strconv.FormatInt(info.CreationDate.UnixMilli(), 10),
		"version":            map[string]any{"created": "8521000"},
	}}
}

func mappingJSON(info shard.IndexInfo) (json.RawMessage, error) {
	if info.Mapping == nil {
		return json.RawMessage(`{}`), nil
	}
	return info.Mapping.MarshalJSON()
}

func (s *Server) handleGetIndex(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.PathValue("index"))
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
		out[info.Name] = map[string]any{"aliases": map[string]any{}, "mappings": m, "settings": indexSettingsJSON(info)}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *Server) handleDeleteIndex(w http.ResponseWriter, r *http.Request) error {
	expr := r.PathValue("index")
	for _, part := range strings.Split(expr, ",") {
		if part == "_all" || part == "*" || strings.ContainsAny(part, "*?") {
			return illegalArgument("Wildcard expressions or all indices are not allowed when deleting [%s]; name each index to delete", expr)
		}
	}
	names, err := s.resolve(expr)
	if err != nil {
		return err
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	for _, n := range names {
		if err := s.eng.DeleteIndex(ctx, n); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

func (s *Server) handleGetMapping(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.PathValue("index"))
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
	names, err := s.resolve(r.PathValue("index"))
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
	infos, err := s.infos(r.PathValue("index"))
	if err != nil {
		return err
	}
	out := make(map[string]any, len(infos))
	for _, info := range infos {
		out[info.Name] = map[string]any{"settings": indexSettingsJSON(info)}
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// handlePutSettings changes number_of_replicas, the one dynamic setting
// Weft has; number_of_shards is fixed at creation, as in Elasticsearch.
func (s *Server) handlePutSettings(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolve(r.PathValue("index"))
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
	shards, replicas, err := parseSettings(raw)
	if err != nil {
		return err
	}
	if shards != nil {
		return illegalArgument("can't change the non-dynamic setting [index.number_of_shards] of an existing index; reindex into a new index instead")
	}
	if replicas == nil {
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: no settings to update;"}
	}
	ctx, cancel, err := metadataContext(r)
	if err != nil {
		return err
	}
	defer cancel()
	for _, n := range names {
		if err := s.eng.UpdateSettings(ctx, n, *replicas); err != nil {
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
