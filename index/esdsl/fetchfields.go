package esdsl

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/index"
)

// The "fields" of hits: the values of chosen fields, read from each
// document's stored _source and shaped by the mapping, for the fields
// option (any mapped field), docvalue_fields (fields with doc values: not
// text) and stored_fields (fields mapped with store: true). Weft keeps no
// separate stored or doc-value copies; the values are the source's, typed
// as the mapping says, which is what Elasticsearch returns for them.

// Paths is an optional ability of Fields: every mapped leaf path with its
// type (patterns in fields options expand against it).
type Paths interface {
	Paths() map[string]string
}

// StoredFields is an optional ability of Fields: whether the field at path
// is mapped with store: true.
type StoredFields interface {
	Stored(path string) bool
}

// fetchSpec is a request's fields, docvalue_fields and stored_fields; the
// zero value fetches nothing.
type fetchSpec struct {
	fields   []string // patterns of the fields option
	docvalue []string // patterns of docvalue_fields
	stored   []string // names (and patterns) of stored_fields
}

func (f *fetchSpec) empty() bool {
	return len(f.fields) == 0 && len(f.docvalue) == 0 && len(f.stored) == 0
}

// parseFieldList reads a fields or docvalue_fields list: names, patterns,
// or {"field": name, "format": ...} objects (the format is refused unless
// it is the default one, "use_field_mapping").
func parseFieldList(raw json.RawMessage, what string) ([]string, error) {
	var entries []json.RawMessage
	if kind(raw) == 'a' {
		entries = decodeArray(raw)
	} else {
		entries = []json.RawMessage{raw}
	}
	var out []string
	for _, e := range entries {
		switch kind(e) {
		case 's':
			s, _ := asString(e, what)
			out = append(out, s)
		case 'o':
			o, err := asObject(e, what)
			if err != nil {
				return nil, err
			}
			name := ""
			for _, k := range o.sortedKeys() {
				switch k {
				case "field":
					if name, err = asString(o[k], what+".field"); err != nil {
						return nil, err
					}
				case "format":
					fm, _ := asString(o[k], what+".format")
					if fm != "use_field_mapping" {
						return nil, argErr("[%s] format [%s] is not supported; values are returned as the mapping formats them", what, fm)
					}
				case "include_unmapped":
					return nil, argErr("[%s] include_unmapped is not supported; only mapped fields are returned", what)
				default:
					return nil, parsingErr("[%s] unknown key [%s]", what, k)
				}
			}
			if name == "" {
				return nil, argErr("[%s] entry needs a [field]", what)
			}
			out = append(out, name)
		default:
			return nil, argErr("[%s] must list field names or {\"field\": name} objects", what)
		}
	}
	return out, nil
}

// values computes a document's fields: nil when none of them has a value.
func (f *fetchSpec) values(fields Fields, src []byte) (map[string][]any, error) {
	if f.empty() || len(src) == 0 || fields == nil {
		return nil, nil
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(src)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil
	}
	var paths map[string]string
	if p, ok := fields.(Paths); ok {
		paths = p.Paths()
	}
	out := map[string][]any{}
	add := func(patterns []string, want func(path, typ string) bool) {
		for _, pat := range patterns {
			for _, p := range matchPaths(pat, paths) {
				typ := paths[p]
				if !want(p, typ) {
					continue
				}
				if vals := typedValues(fields, p, typ, sourceValues(doc, sourcePath(p, paths))); len(vals) > 0 {
					out[p] = vals
				}
			}
		}
	}
	add(f.fields, func(string, string) bool { return true })
	add(f.docvalue, func(_, typ string) bool { return typ != "text" })
	stored, _ := fields.(StoredFields)
	add(f.stored, func(p, _ string) bool { return stored != nil && stored.Stored(p) })
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// checkDocvalue refuses docvalue_fields naming text fields, as
// Elasticsearch does.
func checkDocvalue(fields Fields, patterns []string) error {
	for _, p := range patterns {
		if !isPattern(p) && fields.FieldType(p) == "text" {
			return argErr("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Can't load fielddata on [%s]", p)
		}
	}
	return nil
}

func isPattern(s string) bool { return strings.ContainsAny(s, "*?") }

// matchPaths expands a field pattern against the mapped paths (sorted); a
// plain name is itself when mapped.
func matchPaths(pat string, paths map[string]string) []string {
	if !isPattern(pat) {
		if _, ok := paths[pat]; ok {
			return []string{pat}
		}
		return nil
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if globMatch(pat, p, false) {
			out = append(out, p)
		}
	}
	return out
}

// sourcePath is where a field's values are in the source: a multi-field
// (title.keyword) reads its parent's.
func sourcePath(p string, paths map[string]string) string {
	for {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return p
		}
		parent := p[:i]
		if t, ok := paths[parent]; ok && t != "object" {
			p = parent
			continue
		}
		return p
	}
}

// sourceValues collects the values at a dotted path of a source object,
// through arrays of objects, with arrays flattened; dotted keys in the
// source ({"a.b": 1}) count as paths too.
func sourceValues(obj map[string]any, p string) []any {
	var out []any
	var walk func(v any, rest string)
	walk = func(v any, rest string) {
		if rest == "" {
			switch x := v.(type) {
			case []any:
				for _, e := range x {
					walk(e, "")
				}
			case nil, map[string]any:
			default:
				out = append(out, x)
			}
			return
		}
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e, rest)
			}
		case map[string]any:
			for k, child := range x {
				if k == rest {
					walk(child, "")
				} else if r, ok := strings.CutPrefix(rest, k+"."); ok {
					walk(child, r)
				}
			}
		}
	}
	walk(obj, p)
	return out
}

// typedValues shapes source values as the field's type returns them:
// numbers as numbers, booleans as booleans, dates in the field's format,
// everything else as strings.
func typedValues(fields Fields, p, typ string, vals []any) []any {
	out := make([]any, 0, len(vals))
	for _, v := range vals {
		str := ""
		switch x := v.(type) {
		case json.Number:
			str = x.String()
		case string:
			str = x
		case bool:
			str = strconv.FormatBool(x)
		default:
			continue
		}
		switch {
		case isNumeric(typ):
			f, err := strconv.ParseFloat(str, 64)
			if err != nil {
				continue
			}
			if typ == "long" || typ == "integer" || typ == "short" || typ == "byte" || typ == "unsigned_long" {
				out = append(out, int64(math.Trunc(f)))
			} else {
				out = append(out, f)
			}
		case typ == "boolean":
			out = append(out, str == "true")
		case typ == "date" || typ == "date_nanos":
			out = append(out, formatFieldDate(fields, p, str))
		default:
			out = append(out, str)
		}
	}
	return out
}

// formatFieldDate prints a date value in the field's format (its first
// one), or Elasticsearch's default output when that is a built-in name.
func formatFieldDate(fields Fields, p, v string) string {
	format := ""
	if df, ok := fields.(interface{ DateFormat(string) string }); ok {
		format = df.DateFormat(p)
	}
	f, err := index.ParseDateFormat(format)
	if err != nil {
		return v
	}
	t, ok := f.Parse(v, time.UTC)
	if !ok {
		return v
	}
	switch layout := f.Layout(); layout {
	case "":
		return t.UTC().Format("2006-01-02T15:04:05.000Z")
	case "epoch_millis":
		return strconv.FormatInt(t.UnixMilli(), 10)
	case "epoch_second":
		return strconv.FormatInt(t.Unix(), 10)
	default:
		return t.UTC().Format(layout)
	}
}

// StoredFieldValues are the values a document get returns for its
// stored_fields parameter (names or patterns; only fields mapped with
// store: true have values), nil when none has one.
func StoredFieldValues(fields Fields, src []byte, names []string) map[string][]any {
	f := fetchSpec{stored: names}
	out, _ := f.values(fields, src)
	return out
}
