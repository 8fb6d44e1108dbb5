package esdsl

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"unsafe"
)

// sourceFilter is the _source part of a request: disabled, or includes and
// excludes with * wildcards over dotted paths.
type sourceFilter struct {
	disabled bool
	includes []string
	excludes []string
}

func (f sourceFilter) passthrough() bool {
	return !f.disabled && len(f.includes) == 0 && len(f.excludes) == 0
}

func parseSourceFilter(raw json.RawMessage, params url.Values) (sourceFilter, error) {
	var f sourceFilter
	if raw != nil {
		switch kind(raw) {
		case 'b':
			b, err := asBool(raw, "_source")
			if err != nil {
				return f, err
			}
			f.disabled = !b
		case 's', 'a':
			list, err := stringList(raw, "_source")
			if err != nil {
				return f, err
			}
			f.includes = list
		case 'o':
			o, _ := asObject(raw, "_source")
			for _, k := range o.sortedKeys() {
				list, err := stringList(o[k], "_source."+k)
				if err != nil {
					return f, err
				}
				switch k {
				case "includes", "include":
					f.includes = append(f.includes, list...)
				case "excludes", "exclude":
					f.excludes = append(f.excludes, list...)
				default:
					return f, parsingErr("[_source] unknown key [%s]; use includes and excludes", k)
				}
			}
		default:
			return f, contentErr("[_source] must be a boolean, a string, an array or an object, got %s", kindName(kind(raw)))
		}
	}
	if params.Has("_source") {
		switch v := params.Get("_source"); v {
		case "false":
			f = sourceFilter{disabled: true}
		case "true", "":
			f = sourceFilter{}
		default:
			f = sourceFilter{includes: splitList(v)}
		}
	}
	for _, k := range []string{"_source_includes", "_source_include"} {
		if params.Has(k) {
			f.disabled = false
			f.includes = splitList(params.Get(k))
		}
	}
	for _, k := range []string{"_source_excludes", "_source_exclude"} {
		if params.Has(k) {
			f.disabled = false
			f.excludes = splitList(params.Get(k))
		}
	}
	return f, nil
}

func stringList(raw json.RawMessage, what string) ([]string, error) {
	arr, err := asArray(raw, what, true)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, err := asString(e, what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// apply filters one document's JSON source. It returns nil when the source
// is disabled; malformed stored JSON is returned unchanged. Unfiltered, the
// result shares src's bytes (no copy of every hit's source per reply), so
// it must only be read, never modified.
func (f sourceFilter) apply(src string) json.RawMessage {
	if f.disabled {
		return nil
	}
	if f.passthrough() {
		if src == "" {
			return json.RawMessage{}
		}
		return unsafe.Slice(unsafe.StringData(src), len(src))
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return json.RawMessage(src)
	}
	out := f.filterObject(doc, "", len(f.includes) == 0)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return json.RawMessage(src)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func (f sourceFilter) filterObject(obj map[string]any, prefix string, included bool) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if anyGlob(f.excludes, p) {
			continue
		}
		inc := included || anyGlob(f.includes, p)
		if !inc && !anyGlobPrefix(f.includes, p+".") {
			continue
		}
		fv, keep := f.filterValue(v, p, inc)
		if keep {
			out[k] = fv
		}
	}
	return out
}

func (f sourceFilter) filterValue(v any, p string, included bool) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		o := f.filterObject(x, p, included)
		return o, included || len(o) > 0
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if fv, keep := f.filterValue(e, p, included); keep {
				out = append(out, fv)
			}
		}
		return out, included || len(out) > 0
	}
	return v, included
}

func anyGlob(patterns []string, s string) bool {
	for _, p := range patterns {
		if globMatch(p, s, false) {
			return true
		}
	}
	return false
}

func anyGlobPrefix(patterns []string, s string) bool {
	for _, p := range patterns {
		if globMatch(p, s, true) {
			return true
		}
	}
	return false
}

// globMatch matches s against pattern where * matches any run of
// characters (dots included). With prefix, it reports whether some string
// that starts with s could match.
func globMatch(pattern, s string, prefix bool) bool {
	// NFA simulation over pattern positions.
	states := map[int]bool{0: true}
	closure := func(st map[int]bool) {
		for changed := true; changed; {
			changed = false
			for i := range st {
				if i < len(pattern) && pattern[i] == '*' && !st[i+1] {
					st[i+1] = true
					changed = true
				}
			}
		}
	}
	closure(states)
	for j := 0; j < len(s); j++ {
		next := map[int]bool{}
		for i := range states {
			if i >= len(pattern) {
				continue
			}
			if pattern[i] == '*' {
				next[i] = true
			} else if pattern[i] == s[j] {
				next[i+1] = true
			}
		}
		closure(next)
		if len(next) == 0 {
			return false
		}
		states = next
	}
	if prefix {
		return len(states) > 0
	}
	return states[len(pattern)]
}

// FilterSource applies the _source, _source_includes and _source_excludes
// URL parameters of a document get (and a body's "_source", as an update
// body may hold; nil when none) to src: nil when _source is false, the
// filtered object otherwise. Bad values are an *Error.
func FilterSource(src []byte, body json.RawMessage, params url.Values) (json.RawMessage, error) {
	f, err := parseSourceFilter(body, params)
	if err != nil {
		return nil, err
	}
	if f.passthrough() {
		return src, nil
	}
	return f.apply(string(src)), nil
}

// SourcePolicy is an optional ability of Fields: the _source mapping
// parameter of an index — enabled false hides every document's source,
// includes and excludes filter it — which replies apply before the
// request's own source filtering, as if the source had been stored so.
type SourcePolicy interface {
	SourcePolicy(index string) (enabled bool, includes, excludes []string)
}

// PresentSource applies an index's source policy (from fields, when it has
// the ability) to a stored source: nil when the index shows no source.
func PresentSource(fields Fields, index string, src []byte) json.RawMessage {
	sp, ok := fields.(SourcePolicy)
	if !ok {
		return src
	}
	enabled, inc, exc := sp.SourcePolicy(index)
	f := sourceFilter{disabled: !enabled, includes: inc, excludes: exc}
	if f.passthrough() {
		return src
	}
	return f.apply(string(src))
}
