package esyaml

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// resolve replaces stashed values: a string "$name" by the value stashed
// under name, "${name}" inside a string by its text, in values and keys.
func (st *state) resolve(v any) any {
	switch x := v.(type) {
	case string:
		if name, ok := strings.CutPrefix(x, "$"); ok && !strings.HasPrefix(name, "{") {
			if name == "body" && st.last != nil {
				return st.last.body
			}
			if sv, ok := st.stash[name]; ok {
				return sv
			}
			return x
		}
		if strings.Contains(x, "${") {
			for name, sv := range st.stash {
				x = strings.ReplaceAll(x, "${"+name+"}", fmt.Sprint(plain(sv)))
			}
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if rk, ok := st.resolve(k).(string); ok {
				k = rk
			} else if rk := st.resolve(k); rk != nil {
				k = fmt.Sprint(plain(rk))
			}
			out[k] = st.resolve(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = st.resolve(e)
		}
		return out
	}
	return v
}

// plain turns a json.Number into a Go number for printing.
func plain(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
		f, _ := n.Float64()
		return f
	}
	return v
}

// lookup follows a dotted path ("hits.hits.0._source.title", "\." escapes
// a dot, "$body" the whole body, "$name" a stashed key) into the last
// response.
func (st *state) lookup(path string) (any, bool) {
	if st.last == nil {
		return nil, false
	}
	cur := st.last.body
	if path == "$body" || path == "" {
		return cur, true
	}
	for _, seg := range splitPath(path) {
		if r, ok := st.resolve(seg).(string); ok {
			seg = r
		} else {
			seg = fmt.Sprint(plain(st.resolve(seg)))
		}
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func splitPath(p string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '.':
			b.WriteByte('.')
			i++
		case p[i] == '.':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(p[i])
		}
	}
	return append(out, b.String())
}

func (st *state) set(arg any) error {
	m, _ := arg.(map[string]any)
	for path, name := range m {
		v, ok := st.lookup(path)
		if !ok {
			return failf("set: no value at [%s]", path)
		}
		st.stash[fmt.Sprint(name)] = v
	}
	return nil
}

func (st *state) truth(kind string, arg any) error {
	path := fmt.Sprint(arg)
	if arg == nil {
		path = ""
	}
	v, ok := st.lookup(path)
	t := ok && !falsy(v)
	if kind == "is_true" && !t {
		return failf("[%s] is not true: %v", path, show(v, ok))
	}
	if kind == "is_false" && t {
		return failf("[%s] is not false: %v", path, show(v, ok))
	}
	return nil
}

// falsy is Elasticsearch's runner's notion of a false value: null, or a
// value whose text is "", "false" (in any case) or "0".
func falsy(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == "" || x == "0" || strings.EqualFold(x, "false")
	case json.Number:
		return x.String() == "0"
	}
	return false
}

func show(v any, ok bool) string {
	if !ok {
		return "(missing)"
	}
	b, _ := json.Marshal(v)
	return clip(b)
}

func (st *state) compare(kind string, arg any) error {
	m, ok := arg.(map[string]any)
	if !ok {
		return failf("%s needs a map", kind)
	}
	for path, want := range m {
		want = st.resolve(want)
		got, ok := st.lookup(path)
		switch kind {
		case "match":
			if err := match(path, got, ok, want); err != nil {
				return err
			}
		case "length":
			n, okN := number(want)
			l := -1
			switch g := got.(type) {
			case []any:
				l = len(g)
			case map[string]any:
				l = len(g)
			case string:
				l = len(g)
			}
			if !ok || !okN || float64(l) != n {
				return failf("length of [%s]: want %v, got %d (%v)", path, want, l, show(got, ok))
			}
		case "contains":
			list, _ := got.([]any)
			found := false
			for _, e := range list {
				if equal(e, want) || subset(want, e) {
					found = true
				}
			}
			if !found {
				return failf("[%s] does not contain %v: %v", path, want, show(got, ok))
			}
		case "close_to":
			wm, _ := want.(map[string]any)
			w, _ := number(wm["value"])
			e, _ := number(wm["error"])
			g, okG := number(got)
			if !okG || math.Abs(g-w) > e {
				return failf("[%s]: want %v ± %v, got %v", path, w, e, show(got, ok))
			}
		default: // gt, gte, lt, lte
			g, okG := number(got)
			w, okW := number(want)
			if !okG || !okW {
				return failf("%s [%s]: not numbers: %v, %v", kind, path, show(got, ok), want)
			}
			pass := map[string]bool{"gt": g > w, "gte": g >= w, "lt": g < w, "lte": g <= w}[kind]
			if !pass {
				return failf("[%s]: want %s %v, got %v", path, kind, w, g)
			}
		}
	}
	return nil
}

func match(path string, got any, ok bool, want any) error {
	if s, isStr := want.(string); isStr {
		if re, isRe := regexOf(s, true); isRe {
			var text string
			if gs, isGs := got.(string); isGs {
				text = gs
			} else {
				text = fmt.Sprint(plain(got))
			}
			if !ok || !re.MatchString(text) {
				return failf("[%s] %s does not match %s", path, show(got, ok), strings.TrimSpace(s))
			}
			return nil
		}
	}
	if want == nil {
		if ok && got != nil {
			return failf("[%s]: want null, got %s", path, show(got, ok))
		}
		return nil
	}
	if !ok || !equal(got, want) {
		w, _ := json.Marshal(want)
		return failf("[%s]: want %s, got %s", path, clip(w), show(got, ok))
	}
	return nil
}

// equal compares a decoded reply value with an expected YAML value;
// numbers compare by value.
func equal(got, want any) bool {
	if g, ok := number(got); ok {
		if w, ok := number(want); ok {
			return g == w
		}
		return false
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !equal(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !equal(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

// subset reports whether every key of want (a map) matches in got.
func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if !ok || !ok2 {
		return false
	}
	for k, wv := range wm {
		if !equal(gm[k], wv) {
			return false
		}
	}
	return true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// regexOf reads "/pattern/". With comments (match assertions) it is read
// in Java's COMMENTS mode, where unescaped whitespace outside character
// classes and # comments are ignored, and $ is Java's (the end, or before
// a last line break); a catch pattern is read as it is.
func regexOf(s string, comments bool) (*regexp.Regexp, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '/' || s[len(s)-1] != '/' {
		return nil, false
	}
	src := s[1 : len(s)-1]
	if !comments {
		re, err := regexp.Compile(src)
		return re, err == nil
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			if src[i+1] == ' ' || src[i+1] == '#' {
				b.WriteByte(src[i+1])
			} else {
				b.WriteByte(c)
				b.WriteByte(src[i+1])
			}
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '$':
			b.WriteString(`(?:\n?\z)`)
		default:
			b.WriteByte(c)
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, false
	}
	return re, true
}
