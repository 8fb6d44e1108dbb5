package esdsl

import (
	"encoding/json"
	"html"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2/search"
)

// Highlights are built from each hit's term locations (bleve's
// IncludeLocations) and its _source, so they work on fields that are not
// stored separately, honour any pre/post tags, and cut fragments of the
// requested size around the matches.

type highlightSpec struct {
	fields []hlField
}

type hlField struct {
	pattern     string
	pre, post   string
	fragSize    int
	numFrags    int
	noMatchSize int
	orderScore  bool
	encodeHTML  bool
}

var highlightKeys = map[string]bool{
	"pre_tags": true, "post_tags": true, "fragment_size": true, "number_of_fragments": true,
	"type": true, "encoder": true, "require_field_match": true, "order": true, "no_match_size": true,
	"boundary_scanner": true, "boundary_chars": true, "boundary_max_scan": true, "fragmenter": true,
	"tags_schema": true, "fragment_offset": true, "phrase_limit": true, "max_analyzed_offset": true,
}

func parseHighlight(raw json.RawMessage) (*highlightSpec, error) {
	o, err := asObject(raw, "highlight")
	if err != nil {
		return nil, err
	}
	global := hlField{pre: "<em>", post: "</em>", fragSize: 100, numFrags: 5}
	if err := global.apply(o, "highlight", true); err != nil {
		return nil, err
	}
	fraw, ok := o["fields"]
	if !ok {
		return nil, parsingErr("[highlight] needs [fields], e.g. {\"fields\": {\"title\": {}}}")
	}
	spec := &highlightSpec{}
	addField := func(name string, v json.RawMessage) error {
		fo, err := asObject(v, "highlight.fields."+name)
		if err != nil {
			return err
		}
		f := global
		f.pattern = name
		if err := f.apply(fo, "highlight.fields."+name, false); err != nil {
			return err
		}
		spec.fields = append(spec.fields, f)
		return nil
	}
	switch kind(fraw) {
	case 'o':
		fo, _ := asObject(fraw, "highlight.fields")
		for _, k := range fo.sortedKeys() {
			if err := addField(k, fo[k]); err != nil {
				return nil, err
			}
		}
	case 'a':
		arr, _ := asArray(fraw, "highlight.fields", false)
		for _, e := range arr {
			fo, err := asObject(e, "highlight.fields[]")
			if err != nil {
				return nil, err
			}
			k, v, err := fo.single("highlight.fields[]")
			if err != nil {
				return nil, err
			}
			if err := addField(k, v); err != nil {
				return nil, err
			}
		}
	default:
		return nil, contentErr("[highlight.fields] must be an object or an array, got %s", kindName(kind(fraw)))
	}
	return spec, nil
}

func (f *hlField) apply(o object, where string, top bool) error {
	for _, k := range o.sortedKeys() {
		v := o[k]
		if k == "fields" && top {
			continue
		}
		if !highlightKeys[k] {
			if k == "highlight_query" || k == "matched_fields" {
				return argErr("[%s] %s is not supported; highlights follow the search query", where, k)
			}
			return parsingErr("[%s] unknown key [%s]", where, k)
		}
		var err error
		switch k {
		case "pre_tags", "post_tags":
			var list []string
			if list, err = stringList(v, where+"."+k); err != nil {
				return err
			}
			if len(list) == 0 {
				return argErr("[%s] %s must not be empty", where, k)
			}
			if k == "pre_tags" {
				f.pre = list[0]
			} else {
				f.post = list[0]
			}
		case "tags_schema":
			var s string
			if s, err = asString(v, where+".tags_schema"); err == nil && s == "styled" {
				f.pre, f.post = `<em class="hlt1">`, "</em>"
			}
		case "fragment_size":
			if f.fragSize, err = asInt(v, where+".fragment_size"); err == nil && f.fragSize < 1 {
				err = argErr("[%s] fragment_size must be >= 1, got %d", where, f.fragSize)
			}
		case "number_of_fragments":
			if f.numFrags, err = asInt(v, where+".number_of_fragments"); err == nil && f.numFrags < 0 {
				err = argErr("[%s] number_of_fragments must be >= 0, got %d", where, f.numFrags)
			}
		case "no_match_size":
			if f.noMatchSize, err = asInt(v, where+".no_match_size"); err == nil && f.noMatchSize < 0 {
				err = argErr("[%s] no_match_size must be >= 0", where)
			}
		case "order":
			var s string
			if s, err = asString(v, where+".order"); err == nil {
				f.orderScore = s == "score"
			}
		case "encoder":
			var s string
			if s, err = asString(v, where+".encoder"); err == nil {
				switch s {
				case "html":
					f.encodeHTML = true
				case "default":
				default:
					err = argErr("[%s] encoder must be default or html, got %q", where, s)
				}
			}
		case "type", "boundary_scanner", "boundary_chars", "fragmenter":
			_, err = asString(v, where+"."+k)
		case "require_field_match":
			_, err = asBool(v, where+"."+k)
		default:
			_, err = asInt(v, where+"."+k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// build returns the highlight section of one hit, or nil.
func (h *highlightSpec) build(hit *search.DocumentMatch, src map[string]any) map[string][]string {
	out := map[string][]string{}
	for _, f := range h.fields {
		names := []string{f.pattern}
		if strings.Contains(f.pattern, "*") {
			names = names[:0]
			for name := range hit.Locations {
				if globMatch(f.pattern, name, false) {
					names = append(names, name)
				}
			}
			sort.Strings(names)
		}
		for _, name := range names {
			if _, done := out[name]; done {
				continue
			}
			if frags := f.fragments(hit.Locations[name], valuesAt(src, name)); len(frags) > 0 {
				out[name] = frags
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type fieldValue struct {
	ap   []uint64
	text string
}

// valuesAt returns the string values at a dotted path of a source document,
// each with its array positions as bleve records them.
func valuesAt(doc map[string]any, path string) []fieldValue {
	var out []fieldValue
	var walk func(v any, rest []string, ap []uint64)
	walk = func(v any, rest []string, ap []uint64) {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				walk(e, rest, append(append([]uint64(nil), ap...), uint64(i)))
			}
		case map[string]any:
			// Keys may themselves contain dots ({"user.name": ...}).
			for n := 1; n <= len(rest); n++ {
				if c, ok := x[strings.Join(rest[:n], ".")]; ok {
					walk(c, rest[n:], ap)
				}
			}
		case string:
			if len(rest) == 0 {
				out = append(out, fieldValue{ap: ap, text: x})
			}
		}
	}
	walk(doc, strings.Split(path, "."), nil)
	return out
}

type span struct{ start, end int }

type fragment struct {
	text       string // the whole value the fragment is cut from
	start, end int
	spans      []span
	score      int
}

func sameAP(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fragments cuts the highlighted fragments of one field.
func (f hlField) fragments(tlm search.TermLocationMap, values []fieldValue) []string {
	var frags []fragment
	for _, val := range values {
		var spans []span
		for _, locs := range tlm {
			for _, l := range locs {
				if !sameAP(l.ArrayPositions, val.ap) || l.End > uint64(len(val.text)) || l.Start >= l.End {
					continue
				}
				spans = append(spans, span{int(l.Start), int(l.End)})
			}
		}
		if len(spans) == 0 {
			continue
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		spans = mergeSpans(spans)
		if f.numFrags == 0 {
			frags = append(frags, fragment{text: val.text, start: 0, end: len(val.text), spans: spans, score: len(spans)})
			continue
		}
		frags = append(frags, cutFragments(val.text, spans, f.fragSize)...)
	}
	if len(frags) == 0 {
		if f.noMatchSize > 0 && len(values) > 0 {
			t := values[0].text
			end := wordEnd(t, min(f.noMatchSize, len(t)))
			return []string{f.encode(t[:end])}
		}
		return nil
	}
	if f.orderScore {
		sort.SliceStable(frags, func(i, j int) bool { return frags[i].score > frags[j].score })
	}
	limit := f.numFrags
	if limit == 0 || limit > len(frags) {
		limit = len(frags)
	}
	out := make([]string, 0, limit)
	for _, fr := range frags[:limit] {
		out = append(out, f.render(fr))
	}
	return out
}

func mergeSpans(spans []span) []span {
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start <= last.end {
			if s.end > last.end {
				last.end = s.end
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// cutFragments groups the spans of one value into windows of about size
// bytes, each widened to word boundaries and centred on its matches.
func cutFragments(text string, spans []span, size int) []fragment {
	var out []fragment
	for i := 0; i < len(spans); {
		start := spans[i].start
		j := i
		for j+1 < len(spans) && spans[j+1].end-start <= size {
			j++
		}
		end := spans[j].end
		if pad := (size - (end - start)) / 2; pad > 0 {
			start = wordStart(text, max(0, start-pad))
			end = wordEnd(text, min(len(text), end+pad))
		}
		out = append(out, fragment{text: text, start: start, end: end, spans: append([]span(nil), spans[i:j+1]...), score: j - i + 1})
		i = j + 1
	}
	return out
}

func wordStart(s string, i int) int {
	for i > 0 && !isBoundary(s[i-1]) {
		i--
	}
	return i
}

func wordEnd(s string, i int) int {
	for i < len(s) && !isBoundary(s[i]) {
		i++
	}
	return i
}

func isBoundary(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '.' || c == ',' || c == ';' || c == '!' || c == '?'
}

func (f hlField) encode(s string) string {
	if f.encodeHTML {
		return html.EscapeString(s)
	}
	return s
}

func (f hlField) render(fr fragment) string {
	var b strings.Builder
	pos := fr.start
	for _, s := range fr.spans {
		b.WriteString(f.encode(fr.text[pos:s.start]))
		b.WriteString(f.pre)
		b.WriteString(f.encode(fr.text[s.start:s.end]))
		b.WriteString(f.post)
		pos = s.end
	}
	b.WriteString(f.encode(fr.text[pos:fr.end]))
	return b.String()
}
