package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/weftsearch/weft/coord"
)

// Index settings: the ones Elasticsearch clients set are accepted, checked
// for their type, stored in the cluster's metadata and returned by GET
// _settings; those Weft has a meaning for are honoured (the limits below,
// analysis). Settings Elasticsearch does not know are refused by name, as
// Elasticsearch refuses them, and so are the few whose meaning Weft cannot
// give (they are listed in refusedSettings with the reason).

// settingKind is the type a setting's value must have.
type settingKind int

const (
	kindInt settingKind = iota
	kindBool
	kindTime   // a time value: "1s", "500ms", "-1"
	kindString // any scalar, kept as a string
)

// settingSpec describes one index setting.
type settingSpec struct {
	kind settingKind
	// static settings are fixed at creation (or changed only while the
	// index is closed, as Elasticsearch allows).
	static bool
	// min is the smallest value of an int setting.
	min int
}

// knownSettings are the index settings accepted besides number_of_shards
// and number_of_replicas, by flat key. Prefixes ending in "." accept every
// key below them (see settingSpecFor).
var knownSettings = map[string]settingSpec{
	// Honoured: see coord.Coordinator.Scope and handleAnalyze.
	"index.max_result_window":        {kind: kindInt, min: 1},
	"index.max_inner_result_window":  {kind: kindInt, min: 1},
	"index.max_terms_count":          {kind: kindInt, min: 1},
	"index.analyze.max_token_count":  {kind: kindInt, min: 1},
	"index.number_of_routing_shards": {kind: kindInt, static: true, min: 1},
	"index.analysis.":                {kind: kindString, static: true},
	// Accepted and returned; Weft has nothing they would change: writes
	// are searchable when acknowledged (no refresh cycle), segments are
	// bleve's, there is no translog apart from the shard log.
	"index.refresh_interval":                     {kind: kindTime},
	"index.hidden":                               {kind: kindBool},
	"index.codec":                                {kind: kindString, static: true},
	"index.auto_expand_replicas":                 {kind: kindString},
	"index.priority":                             {kind: kindInt},
	"index.query.default_field":                  {kind: kindString},
	"index.max_ngram_diff":                       {kind: kindInt},
	"index.max_shingle_diff":                     {kind: kindInt},
	"index.max_docvalue_fields_search":           {kind: kindInt},
	"index.max_script_fields":                    {kind: kindInt},
	"index.max_refresh_listeners":                {kind: kindInt},
	"index.max_regex_length":                     {kind: kindInt},
	"index.max_rescore_window":                   {kind: kindInt},
	"index.max_slices_per_scroll":                {kind: kindInt},
	"index.highlight.max_analyzed_offset":        {kind: kindInt},
	"index.mapping.total_fields.limit":           {kind: kindInt},
	"index.mapping.depth.limit":                  {kind: kindInt},
	"index.mapping.nested_fields.limit":          {kind: kindInt},
	"index.mapping.nested_objects.limit":         {kind: kindInt},
	"index.mapping.field_name_length.limit":      {kind: kindInt},
	"index.mapping.ignore_malformed":             {kind: kindBool},
	"index.mapping.coerce":                       {kind: kindBool},
	"index.gc_deletes":                           {kind: kindTime},
	"index.shard.check_on_startup":               {kind: kindString, static: true},
	"index.load_fixed_bitset_filters_eagerly":    {kind: kindBool},
	"index.queries.cache.enabled":                {kind: kindBool, static: true},
	"index.requests.cache.enable":                {kind: kindBool},
	"index.write.wait_for_active_shards":         {kind: kindString},
	"index.unassigned.node_left.delayed_timeout": {kind: kindTime},
	"index.soft_deletes.retention_lease.period":  {kind: kindTime},
	"index.translog.":                            {kind: kindString},
	"index.merge.":                               {kind: kindString},
	"index.routing.":                             {kind: kindString},
	"index.search.":                              {kind: kindString},
	"index.indexing.":                            {kind: kindString},
	"index.lifecycle.":                           {kind: kindString},
	"index.blocks.":                              {kind: kindBool},
	"index.store.":                               {kind: kindString, static: true},
}

// refusedSettings are Elasticsearch settings Weft refuses, with why.
var refusedSettings = map[string]string{
	"index.soft_deletes.enabled": "soft deletes are always on (Elasticsearch 8 refuses false too)",
	"index.sort.":                "index sorting is not supported: bleve segments keep documents in insertion order",
	"index.default_pipeline":     "ingest pipelines are not supported",
	"index.final_pipeline":       "ingest pipelines are not supported",
	"index.mode":                 "only the standard index mode is supported",
	"index.similarity.":          "custom similarities are not supported: Weft scores with BM25 (k1 1.2, b 0.75)",
	"index.version.":             "index.version is private to the node",
}

// settingSpecFor finds the spec of a flat key.
func settingSpecFor(key string) (settingSpec, bool) {
	if sp, ok := knownSettings[key]; ok {
		return sp, true
	}
	for prefix, sp := range knownSettings {
		if strings.HasSuffix(prefix, ".") && strings.HasPrefix(key, prefix) {
			return sp, true
		}
	}
	return settingSpec{}, false
}

// parsedSettings are a settings body: the shard and replica counts when
// given, and every other setting by flat key with its value normalised as
// Elasticsearch returns it (a JSON string), or JSON null (a reset).
type parsedSettings struct {
	shards, replicas *int
	other            map[string]json.RawMessage
}

// parseSettings reads index settings in any of Elasticsearch's forms
// ({"number_of_shards":1}, {"index":{"number_of_shards":1}},
// {"index.number_of_shards":1}, nested objects at any depth), values given
// as numbers, booleans or strings. A setting Elasticsearch does not know,
// or one Weft refuses, is a 400 naming it; so is a value of the wrong type.
func parseSettings(raw map[string]json.RawMessage) (parsedSettings, error) {
	var out parsedSettings
	for k, v := range flattenSettings(raw) {
		if !strings.HasPrefix(k, "index.") {
			k = "index." + k
		}
		switch k {
		case "index.number_of_shards", "index.number_of_replicas":
			n, err := coord.ParseIntSetting(v)
			if err != nil || n < 0 {
				return out, illegalArgument("failed to parse value [%s] for setting [%s]; expected a non-negative integer", string(v), k)
			}
			if k == "index.number_of_shards" {
				out.shards = &n
			} else {
				out.replicas = &n
			}
			continue
		}
		if why := refusal(k, v); why != "" {
			return out, illegalArgument("setting [%s] is not supported: %s", k, why)
		}
		sp, ok := settingSpecFor(k)
		if !ok {
			return out, illegalArgument("unknown setting [%s] please check that any required plugins are installed, or check the breaking changes documentation for removed settings", k)
		}
		norm, err := normalizeSetting(k, v, sp)
		if err != nil {
			return out, err
		}
		if out.other == nil {
			out.other = map[string]json.RawMessage{}
		}
		out.other[k] = norm
	}
	return out, nil
}

// refusal says why Weft refuses the setting, "" when it does not.
func refusal(key string, v json.RawMessage) string {
	if key == "index.soft_deletes.enabled" && strings.Trim(string(v), `"`) == "true" {
		return ""
	}
	for prefix, why := range refusedSettings {
		if key == prefix || (strings.HasSuffix(prefix, ".") && strings.HasPrefix(key, prefix)) {
			return why
		}
	}
	return ""
}

// isNull reports whether a JSON value is null.
func isNull(v json.RawMessage) bool { return strings.TrimSpace(string(v)) == "null" }

// normalizeSetting checks a value against its kind and returns it as the
// JSON string Elasticsearch stores (null stays null: a reset). Arrays are
// kept as arrays of strings (analysis filter lists).
func normalizeSetting(key string, v json.RawMessage, sp settingSpec) (json.RawMessage, error) {
	if isNull(v) {
		return json.RawMessage(`null`), nil
	}
	if len(v) > 0 && v[0] == '[' {
		var list []any
		if err := json.Unmarshal(v, &list); err != nil || sp.kind != kindString {
			return nil, illegalArgument("failed to parse value [%s] for setting [%s]", string(v), key)
		}
		strs := make([]string, len(list))
		for i, e := range list {
			strs[i] = fmt.Sprint(e)
		}
		return mustJSON(strs), nil
	}
	var val any
	if err := json.Unmarshal(v, &val); err != nil {
		return nil, illegalArgument("failed to parse value [%s] for setting [%s]", string(v), key)
	}
	var str string
	switch x := val.(type) {
	case string:
		str = x
	case float64:
		str = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		str = strconv.FormatBool(x)
	default:
		return nil, illegalArgument("failed to parse value [%s] for setting [%s]; expected a single value", string(v), key)
	}
	switch sp.kind {
	case kindInt:
		n, err := strconv.Atoi(str)
		if err != nil {
			return nil, illegalArgument("Failed to parse value [%s] for setting [%s]; expected an integer", str, key)
		}
		if n < sp.min {
			return nil, illegalArgument("Failed to parse value [%d] for setting [%s] must be >= %d", n, key, sp.min)
		}
	case kindBool:
		if str != "true" && str != "false" {
			return nil, illegalArgument("Failed to parse value [%s] as only [true] or [false] are allowed for setting [%s]", str, key)
		}
	case kindTime:
		if str != "-1" {
			if _, err := parseTimeValue(str); err != nil {
				return nil, illegalArgument("failed to parse setting [%s] with value [%s] as a time value: unit is missing or unrecognized", key, str)
			}
		}
	}
	return mustJSON(str), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and string lists always encode
	}
	return b
}

// checkStaticSettings refuses to change static settings of an open index.
func checkStaticSettings(other map[string]json.RawMessage, name string, closed bool) error {
	var static []string
	for k := range other {
		if sp, ok := settingSpecFor(k); ok && sp.static {
			static = append(static, k)
		}
	}
	if len(static) > 0 && !closed {
		slices.Sort(static)
		return illegalArgument("Can't update non dynamic settings [%v] for open indices [[%s]]; close the index first", static, name)
	}
	return nil
}

// settingsJSON is the "settings" object of GET /{index} and _settings:
// nested under "index" like Elasticsearch's, or flat keys with
// flat_settings.
func settingsJSON(info coord.IndexInfo, flat bool) map[string]any {
	all := map[string]any{
		"index.number_of_shards":   strconv.Itoa(info.Settings.NumberOfShards),
		"index.number_of_replicas": strconv.Itoa(info.Settings.NumberOfReplicas),
		"index.uuid":               info.UUID,
		"index.provided_name":      info.Name,
		"index.creation_date":      strconv.FormatInt(info.CreationDate.UnixMilli(), 10),
		"index.version.created":    "8521000",
	}
	if info.Closed {
		all["index.verified_before_close"] = "true"
	}
	for k, v := range info.Settings.Other {
		var val any
		if json.Unmarshal(v, &val) == nil {
			all[k] = val
		}
	}
	if flat {
		return all
	}
	nested := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		m := nested
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			inner, ok := m[p].(map[string]any)
			if !ok {
				inner = map[string]any{}
				m[p] = inner
			}
			m = inner
		}
		m[parts[len(parts)-1]] = all[k]
	}
	return nested
}
