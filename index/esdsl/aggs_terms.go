package esdsl

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"

	"github.com/weftsearch/weft/index"
)

// terms: one bucket per value of a field. Each shard keeps its shard_size
// best buckets (by the requested order) and counts the documents of the
// others; the coordinating node merges, orders and keeps size, as
// Elasticsearch does (exact when shard_size covers every term).

type termsAgg struct {
	size, shardSize int
	minDocCount     int64
	order           []termsOrder
	include         *termFilter
	exclude         *termFilter
	missing         *AggBucket // the key of documents without the field
	valueType       string     // how an unmapped field's missing key renders
	showError       bool
	format          *dateParser
	layout          string
}

// termsOrder is one criterion of a terms order: _count, _key or a
// sub-aggregation path.
type termsOrder struct {
	key  string // "_count", "_key" or a path
	desc bool
	path *aggPath
}

// termFilter is an include or exclude: exact values, a pattern or (an
// include only) a partition.
type termFilter struct {
	strs map[string]bool
	nums map[float64]bool
	re   *regexp.Regexp
	part *termPartition
}

func (f *termFilter) match(b *AggBucket, str bool) bool {
	if f.part != nil {
		return f.part.holds(b, str)
	}
	if f.re != nil {
		return str && f.re.MatchString(b.Key)
	}
	if str {
		return f.strs[b.Key]
	}
	return f.nums[b.Num]
}

// keep reports whether a bucket passes include and exclude.
func (ta *termsAgg) keep(b *AggBucket, str bool) bool {
	if ta.include != nil && !ta.include.match(b, str) {
		return false
	}
	return ta.exclude == nil || !ta.exclude.match(b, str)
}

func (ta *termsAgg) typedName(a *aggSpec) string {
	switch ft := ta.renderType(a); {
	case ft == "keyword" || ft == "ip" || ft == "" || ft == "string":
		return "sterms"
	case ft == "double" || ft == "float" || ft == "half_float" || ft == "scaled_float":
		return "dterms"
	}
	return "lterms"
}

// renderType is the field type keys render as: the field's, or for an
// unmapped field the value_type.
func (ta *termsAgg) renderType(a *aggSpec) string {
	if a.ftype != "" {
		return a.ftype
	}
	switch ta.valueType {
	case "string":
		return "keyword"
	case "long", "integer", "short", "byte":
		return "long"
	case "double", "float", "number", "numeric":
		return "double"
	}
	return ta.valueType
}

// stringKeys reports whether the field's keys are strings.
func (ta *termsAgg) stringKeys(a *aggSpec) bool {
	switch ta.renderType(a) {
	case "keyword", "ip", "", "string":
		return true
	}
	return false
}

func (ta *termsAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	ta.size, ta.shardSize, ta.minDocCount = 10, -1, 1
	var orderRaw, incRaw, excRaw, missRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "field":
		case "size":
			if ta.size, err = asInt(v, a.where()+".size"); err == nil && ta.size < 1 {
				err = argErr("[size] must be greater than 0. Found [%d] in [%s]", ta.size, a.name)
			}
		case "shard_size":
			if ta.shardSize, err = asInt(v, a.where()+".shard_size"); err == nil && ta.shardSize < 1 {
				err = argErr("[shard_size] must be greater than 0. Found [%d] in [%s]", ta.shardSize, a.name)
			}
		case "min_doc_count":
			var n int
			if n, err = asInt(v, a.where()+".min_doc_count"); err == nil && n < 0 {
				err = argErr("[min_doc_count] must be greater than or equal to 0. Found [%d] in [%s]", n, a.name)
			}
			ta.minDocCount = int64(n)
		case "shard_min_doc_count":
			_, err = asInt(v, a.where()+"."+k)
		case "order":
			orderRaw = v
		case "include":
			incRaw = v
		case "exclude":
			excRaw = v
		case "missing":
			missRaw = v
		case "value_type":
			ta.valueType, err = asString(v, a.where()+".value_type")
		case "show_term_doc_count_error":
			ta.showError, err = asBool(v, a.where()+"."+k)
		case "execution_hint", "collect_mode":
			_, err = asString(v, a.where()+"."+k)
		case "format":
			var s string
			if s, err = asString(v, a.where()+".format"); err == nil && a.ftype == "date" {
				var dp *dateParser
				if dp, err = newDateParser(s, "", t.now); err == nil {
					ta.format, ta.layout = dp, dp.df.Layout()
				}
			}
		default:
			err = a.unknownKey(k)
		}
		if err != nil {
			return err
		}
	}
	if !valueTypeFits(ta.valueType, a.ftype) {
		return argErr("Field [%s] of type [%s] is incompatible with the specified value_type [%s]", a.field, a.ftype, ta.valueType)
	}
	if ta.renderType(a) == "date" && ta.format == nil {
		dp, err := t.dateParserFor(a.field, "", "")
		if err != nil {
			return err
		}
		ta.format, ta.layout = dp, dp.df.Layout()
	}
	var err error
	if ta.order, err = parseTermsOrder(orderRaw, a.where()); err != nil {
		return err
	}
	if ta.include, err = ta.parseFilter(a, t, incRaw, "include"); err != nil {
		return err
	}
	if ta.exclude, err = ta.parseFilter(a, t, excRaw, "exclude"); err != nil {
		return err
	}
	if missRaw != nil {
		b, err := ta.keyOf(a, t, missRaw, "missing")
		if err != nil {
			return err
		}
		ta.missing = b
	}
	return nil
}

// keyOf reads a value given in the request (missing, include, exclude) as
// a bucket key of this field.
func (ta *termsAgg) keyOf(a *aggSpec, t *translator, v json.RawMessage, what string) (*AggBucket, error) {
	s, err := asScalarString(v, a.where()+"."+what)
	if err != nil {
		return nil, err
	}
	switch rt := ta.renderType(a); {
	case ta.stringKeys(a):
		if rt == "ip" {
			addr, err := index.ParseIP(s)
			if err != nil {
				return nil, argErr("[%s.%s] %v", a.where(), what, err)
			}
			s = addr.String()
		}
		return &AggBucket{Key: s}, nil
	case rt == "date":
		dp, err := t.dateParserFor(a.field, "", "")
		if err != nil {
			return nil, err
		}
		tm, err := dp.parse(s, kind(v) == 'n', false)
		if err != nil {
			return nil, err
		}
		return &AggBucket{Num: float64(tm.UnixMilli())}, nil
	case rt == "boolean":
		switch s {
		case "true":
			return &AggBucket{Num: 1}, nil
		case "false":
			return &AggBucket{Num: 0}, nil
		}
		return nil, argErr("[%s.%s] must be true or false, got [%s]", a.where(), what, s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, argErr("[%s.%s] value [%s] is not a number", a.where(), what, s)
	}
	return &AggBucket{Num: f}, nil
}

func (ta *termsAgg) parseFilter(a *aggSpec, t *translator, raw json.RawMessage, what string) (*termFilter, error) {
	if raw == nil {
		return nil, nil
	}
	switch kind(raw) {
	case 's':
		pat, _ := asString(raw, "")
		if !ta.stringKeys(a) || ta.renderType(a) == "ip" {
			return nil, argErr("[%s] a regular expression in [%s] applies to string fields, not to [%s] of type [%s]; list the values instead", a.where(), what, a.field, a.ftype)
		}
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			return nil, argErr("[%s.%s] invalid regular expression [%s]: %v", a.where(), what, pat, err)
		}
		return &termFilter{re: re}, nil
	case 'a':
		f := &termFilter{strs: map[string]bool{}, nums: map[float64]bool{}}
		for _, e := range decodeArray(raw) {
			b, err := ta.keyOf(a, t, e, what)
			if err != nil {
				return nil, err
			}
			f.strs[b.Key], f.nums[b.Num] = true, true
		}
		return f, nil
	case 'o':
		if what != "include" {
			return nil, argErr("[%s.%s] cannot be partitioned; partition the include", a.where(), what)
		}
		if ta.renderType(a) == "ip" {
			return nil, aggErr("[%s] a partitioned include on [%s] of type [ip] is not supported; list the values or use a pattern", a.where(), a.field)
		}
		p, err := parsePartition(raw, a.where()+"."+what, ta.typedName(a) == "dterms")
		if err != nil {
			return nil, err
		}
		return &termFilter{part: p}, nil
	}
	return nil, argErr("[%s.%s] must be a pattern or an array of values", a.where(), what)
}

func parseTermsOrder(raw json.RawMessage, where string) ([]termsOrder, error) {
	if raw == nil {
		return []termsOrder{{key: "_count", desc: true}}, nil
	}
	var entries []json.RawMessage
	if kind(raw) == 'a' {
		entries = decodeArray(raw)
	} else {
		entries = []json.RawMessage{raw}
	}
	var out []termsOrder
	for _, e := range entries {
		o, err := asObject(e, where+".order")
		if err != nil {
			return nil, err
		}
		for _, k := range o.sortedKeys() {
			d, err := asString(o[k], where+".order."+k)
			if err != nil {
				return nil, err
			}
			var desc bool
			switch d {
			case "asc":
			case "desc":
				desc = true
			default:
				return nil, parsingErr("Unknown terms order direction [%s] in terms aggregation; use asc or desc", d)
			}
			if k == "_term" {
				k = "_key"
			}
			out = append(out, termsOrder{key: k, desc: desc})
		}
	}
	return out, nil
}

// resolveOrder resolves sub-aggregation paths in the order, once the
// sub-aggregations are parsed.
func (ta *termsAgg) resolveOrder(a *aggSpec) error {
	for k := range ta.order {
		o := &ta.order[k]
		if o.key == "_count" || o.key == "_key" {
			continue
		}
		p, err := resolvePath(a.subs, o.key)
		if err != nil {
			return err
		}
		o.path = p
	}
	return nil
}

// less orders buckets by the request's order, then by key ascending.
func (ta *termsAgg) less(x, y *AggBucket) bool {
	for _, o := range ta.order {
		var c int
		switch o.key {
		case "_count":
			c = cmpInt(x.DocCount, y.DocCount)
		case "_key":
			c = cmpKey(x, y)
		default:
			vx, okx := o.path.value(x)
			vy, oky := o.path.value(y)
			switch {
			case okx != oky:
				return okx // a bucket without a value sorts last
			case vx < vy:
				c = -1
			case vx > vy:
				c = 1
			}
		}
		if o.desc {
			c = -c
		}
		if c != 0 {
			return c < 0
		}
	}
	return cmpKey(x, y) < 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpKey(x, y *AggBucket) int {
	switch {
	case x.Num < y.Num:
		return -1
	case x.Num > y.Num:
		return 1
	case x.Key < y.Key:
		return -1
	case x.Key > y.Key:
		return 1
	}
	return 0
}

// countOrdered reports whether the first criterion is _count desc (the
// order whose shard-level cut Elasticsearch bounds the error of).
func (ta *termsAgg) countOrdered() bool {
	return len(ta.order) > 0 && ta.order[0].key == "_count" && ta.order[0].desc
}

func (ta *termsAgg) shardKeep() int {
	if ta.shardSize > 0 {
		return max(ta.shardSize, ta.size)
	}
	return ta.size*3/2 + 10
}

type termsCollector struct {
	a   *aggSpec
	ta  *termsAgg
	set *bucketSet
	out *AggPartial
}

func (ta *termsAgg) newCollector(a *aggSpec) aggCollector {
	return &termsCollector{a: a, ta: ta, set: newBucketSet(a.subs)}
}

func (tc *termsCollector) collect(d *index.MatchedDoc) error {
	a, ta := tc.a, tc.ta
	found := false
	if a.slot >= 0 {
		switch d.Kind(a.slot) {
		case index.KindString:
			for _, v := range d.Strings(a.slot) {
				found = true
				if ta.keep(&AggBucket{Key: v}, true) {
					if err := tc.set.add(v, 0, d); err != nil {
						return err
					}
				}
			}
		case index.KindNumber:
			for _, v := range d.Numbers(a.slot) {
				found = true
				if ta.keep(&AggBucket{Num: v}, false) {
					if err := tc.set.add("", v, d); err != nil {
						return err
					}
				}
			}
		}
	}
	if !found && ta.missing != nil && ta.keep(ta.missing, ta.stringKeys(a)) {
		return tc.set.add(ta.missing.Key, ta.missing.Num, d)
	}
	return nil
}

func (tc *termsCollector) finish(snap *index.Snapshot) error {
	if err := tc.set.finish(snap); err != nil {
		return err
	}
	bs := tc.set.buckets()
	if tc.ta.minDocCount == 0 && tc.a.field != "" && tc.ta.stringKeys(tc.a) {
		seen := map[string]bool{}
		for _, b := range bs {
			seen[b.Key] = true
		}
		err := snap.Terms(tc.a.field, func(term string) {
			b := &AggBucket{Key: term}
			if !seen[term] && tc.ta.keep(b, true) {
				b.Sub = partialsOf(tc.a.subs, newCollectors(tc.a.subs))
				bs = append(bs, b)
			}
		})
		if err != nil {
			return err
		}
	}
	sort.SliceStable(bs, func(i, j int) bool { return tc.ta.less(bs[i], bs[j]) })
	out := &AggPartial{}
	if keep := tc.ta.shardKeep(); len(bs) > keep {
		for _, b := range bs[keep:] {
			out.Other += b.DocCount
		}
		if tc.ta.countOrdered() {
			out.Error = bs[keep-1].DocCount
		}
		bs = bs[:keep]
	}
	out.Buckets = bs
	tc.out = out
	return nil
}

func (tc *termsCollector) partial() *AggPartial {
	if tc.out == nil {
		return &AggPartial{}
	}
	return tc.out
}

func (ta *termsAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	out := &AggPartial{Buckets: mergeBuckets(a.subs, bucketLists(parts)...)}
	for _, p := range parts {
		out.Other += p.Other
		out.Error += p.Error
	}
	return out
}

func (ta *termsAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	bs := append([]*AggBucket(nil), p.Buckets...)
	sort.SliceStable(bs, func(i, j int) bool { return ta.less(bs[i], bs[j]) })
	other := p.Other
	list := []any{}
	shown := 0
	for _, b := range bs {
		if shown >= ta.size || b.DocCount < ta.minDocCount {
			other += b.DocCount
			continue
		}
		m, err := r.bucket(a.subs, b, ta.keyFields(a, b))
		if err != nil {
			return nil, err
		}
		if ta.showError {
			m["doc_count_error_upper_bound"] = 0
		}
		list = append(list, m)
		shown++
	}
	return map[string]any{"doc_count_error_upper_bound": p.Error, "sum_other_doc_count": other, "buckets": list}, nil
}

// keyFields renders a bucket's key (and key_as_string where
// Elasticsearch gives one).
func (ta *termsAgg) keyFields(a *aggSpec, b *AggBucket) map[string]any {
	m := map[string]any{}
	switch rt := ta.renderType(a); {
	case ta.stringKeys(a):
		m["key"] = b.Key
	case rt == "date":
		m["key"] = int64(b.Num)
		m["key_as_string"] = formatMillis(int64(b.Num), ta.format, ta.layout)
	case rt == "boolean":
		m["key"] = int64(b.Num)
		m["key_as_string"] = strconv.FormatBool(b.Num != 0)
	default:
		m["key"] = numberKey(rt, b.Num)
	}
	return m
}

// valueTypeFits reports whether a mapped field of type ftype can be read
// as value_type vt (which is a hint for unmapped fields): a keyword as a
// string, an ip only as an ip; numbers, dates and booleans as one another.
// An unset or unknown value_type and an unmapped field always fit.
func valueTypeFits(vt, ftype string) bool {
	family := func(t string) string {
		switch {
		case t == "string" || t == "keyword":
			return "string"
		case t == "ip":
			return "ip"
		case t == "number" || t == "numeric" || t == "date" || t == "date_nanos" || t == "boolean" || isNumeric(t):
			return "number"
		}
		return ""
	}
	a, b := family(vt), family(ftype)
	return a == "" || b == "" || a == b
}
