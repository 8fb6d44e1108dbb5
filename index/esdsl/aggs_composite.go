package esdsl

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/weftsearch/weft/index"
)

// composite: buckets keyed by the combination of several sources' values
// (terms, histogram, date_histogram), in key order, a page of size at a
// time; "after" continues after a key (the after_key of the last page).
// Every shard returns its first size buckets after "after": the merged
// first size buckets are exact.

type compositeAgg struct {
	size    int
	sources []*compositeSource
	after   []compKey // nil: from the start
}

type compositeSource struct {
	name      string
	typ       string // terms, histogram, date_histogram
	spec      *aggSpec
	hist      *histogramAgg // histogram and date_histogram sources
	desc      bool
	missingOK bool // missing_bucket: documents without a value get a null key
	stringKey bool
	fmt       *dateParser // date_histogram: key format, when "format" is given
	layout    string
}

// compKey is one source's value in a composite key: a string, a number or
// null.
type compKey struct {
	Null  bool
	Str   string
	Num   float64
	IsStr bool
}

func (k compKey) MarshalJSON() ([]byte, error) {
	switch {
	case k.Null:
		return []byte("null"), nil
	case k.IsStr:
		return json.Marshal(k.Str)
	}
	return json.Marshal(k.Num)
}

func (k *compKey) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*k = compKey{Null: true}
	case string:
		*k = compKey{Str: x, IsStr: true}
	case float64:
		*k = compKey{Num: x}
	}
	return nil
}

// cmp orders two values of one source: null first, then by value.
func (s *compositeSource) cmp(a, b compKey) int {
	var c int
	switch {
	case a.Null || b.Null:
		switch {
		case a.Null && b.Null:
			return 0
		case a.Null:
			return -1
		}
		return 1
	case a.IsStr:
		switch {
		case a.Str < b.Str:
			c = -1
		case a.Str > b.Str:
			c = 1
		}
	default:
		switch {
		case a.Num < b.Num:
			c = -1
		case a.Num > b.Num:
			c = 1
		}
	}
	if s.desc {
		return -c
	}
	return c
}

func (ca *compositeAgg) cmp(a, b []compKey) int {
	for k, s := range ca.sources {
		if c := s.cmp(a[k], b[k]); c != 0 {
			return c
		}
	}
	return 0
}

func (ca *compositeAgg) sourceSpecs() []*aggSpec {
	out := make([]*aggSpec, len(ca.sources))
	for k, s := range ca.sources {
		out[k] = s.spec
	}
	return out
}

func (ca *compositeAgg) typedName(*aggSpec) string { return "composite" }

func (ca *compositeAgg) parse(a *aggSpec, p object, t *translator) error {
	ca.size = 10
	var afterRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "size":
			if ca.size, err = asInt(v, a.where()+".size"); err == nil && ca.size < 1 {
				err = argErr("[size] must be greater than 0. Found [%d] in [%s]", ca.size, a.name)
			}
			if err == nil && ca.size > maxBuckets {
				err = tooManyBuckets()
			}
		case "sources":
			err = ca.parseSources(a, v, t)
		case "after":
			afterRaw = v
		default:
			err = a.unknownKey(k)
		}
		if err != nil {
			return err
		}
	}
	if len(ca.sources) == 0 {
		return argErr("Composite [sources] cannot be null or empty")
	}
	if afterRaw != nil {
		o, err := asObject(afterRaw, a.where()+".after")
		if err != nil {
			return err
		}
		if len(o) != len(ca.sources) {
			return argErr("[after] has %d value(s), but [sources] has %d; send one value per source", len(o), len(ca.sources))
		}
		for _, s := range ca.sources {
			v, ok := o[s.name]
			if !ok {
				return argErr("[after] has no value for source [%s]", s.name)
			}
			key, err := s.parseAfter(v, t)
			if err != nil {
				return err
			}
			ca.after = append(ca.after, key)
		}
	}
	return nil
}

func (ca *compositeAgg) parseSources(a *aggSpec, raw json.RawMessage, t *translator) error {
	list, err := asArray(raw, a.where()+".sources", false)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range list {
		o, err := asObject(e, a.where()+".sources")
		if err != nil {
			return err
		}
		name, body, err := o.single(a.where() + ".sources")
		if err != nil {
			return err
		}
		if seen[name] {
			return argErr("Composite source names must be unique, found duplicates: [%s]", name)
		}
		seen[name] = true
		so, err := asObject(body, a.where()+".sources."+name)
		if err != nil {
			return err
		}
		typ, tb, err := so.single(a.where() + ".sources." + name)
		if err != nil {
			return err
		}
		opts, err := asObject(tb, a.where()+".sources."+name+"."+typ)
		if err != nil {
			return err
		}
		src := &compositeSource{name: name, typ: typ, spec: &aggSpec{name: name, typ: typ}}
		rest := object{}
		for k, v := range opts {
			switch k {
			case "order":
				d, err := asString(v, a.where()+".sources."+name+".order")
				if err != nil {
					return err
				}
				src.desc = d == "desc"
			case "missing_bucket":
				if src.missingOK, err = asBool(v, a.where()+".sources."+name+".missing_bucket"); err != nil {
					return err
				}
			case "missing_order", "value_type":
			default:
				rest[k] = v
			}
		}
		switch typ {
		case "terms":
			if err := src.spec.fieldOf(rest, t, true); err != nil {
				return err
			}
			for k := range rest {
				if k != "field" {
					return parsingErr("[%s] unknown key [%s] in composite source [%s]", a.where(), k, name)
				}
			}
			switch src.spec.ftype {
			case "keyword", "ip", "":
				src.stringKey = true
			}
		case "histogram", "date_histogram":
			src.hist = &histogramAgg{legacyInterval: true}
			if err := src.hist.parse(src.spec, rest, t); err != nil {
				return err
			}
			if _, ok := rest["format"]; ok && src.hist.dates {
				src.fmt, src.layout = src.hist.format, src.hist.layout
			}
		default:
			return parsingErr("Unknown composite source [%s]; use terms, histogram or date_histogram", typ)
		}
		ca.sources = append(ca.sources, src)
	}
	return nil
}

// parseAfter reads one source's value in "after".
func (s *compositeSource) parseAfter(v json.RawMessage, t *translator) (compKey, error) {
	if kind(v) == 'z' {
		return compKey{Null: true}, nil
	}
	str, err := asScalarString(v, "after."+s.name)
	if err != nil {
		return compKey{}, err
	}
	if s.stringKey {
		return compKey{Str: str, IsStr: true}, nil
	}
	if s.hist != nil && s.hist.dates && kind(v) == 's' {
		tm, err := s.hist.format.parse(str, false, false)
		if err != nil {
			return compKey{}, err
		}
		return compKey{Num: float64(tm.UnixMilli())}, nil
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return compKey{}, argErr("[after] value [%s] of source [%s] is not a number", str, s.name)
	}
	return compKey{Num: f}, nil
}

// keys returns the source's keys for a document (nil: the document has no
// value and no missing bucket).
func (s *compositeSource) keys(d *index.MatchedDoc, slot int) []compKey {
	var out []compKey
	if slot >= 0 {
		switch d.Kind(slot) {
		case index.KindString:
			for _, v := range d.Strings(slot) {
				out = append(out, compKey{Str: v, IsStr: true})
			}
		case index.KindNumber:
			for _, v := range d.Numbers(slot) {
				if s.hist != nil {
					v = s.hist.key(v)
				}
				if len(out) > 0 && out[len(out)-1].Num == v {
					continue
				}
				out = append(out, compKey{Num: v})
			}
		}
	}
	if len(out) == 0 && s.missingOK {
		out = []compKey{{Null: true}}
	}
	return out
}

type compositeCollector struct {
	a   *aggSpec
	ca  *compositeAgg
	set *bucketSet
	out *AggPartial
}

func (ca *compositeAgg) newCollector(a *aggSpec) aggCollector {
	return &compositeCollector{a: a, ca: ca, set: newBucketSet(a.subs)}
}

func (cc *compositeCollector) collect(d *index.MatchedDoc) error {
	combos := [][]compKey{nil}
	slots := cc.slots()
	for k, s := range cc.ca.sources {
		keys := s.keys(d, slots[k])
		if len(keys) == 0 {
			return nil
		}
		var next [][]compKey
		for _, c := range combos {
			for _, key := range keys {
				next = append(next, append(append([]compKey(nil), c...), key))
			}
		}
		combos = next
	}
	for _, c := range combos {
		if cc.ca.after != nil && cc.ca.cmp(c, cc.ca.after) <= 0 {
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := cc.set.add(string(raw), 0, d); err != nil {
			return err
		}
	}
	return nil
}

// slots returns each source's field slot: the sources' fields come after
// the composite's own in the tree's field list, in order.
func (cc *compositeCollector) slots() []int {
	out := make([]int, len(cc.ca.sources))
	for k, s := range cc.ca.sources {
		out[k] = s.spec.slot
	}
	return out
}

func (cc *compositeCollector) finish(snap *index.Snapshot) error {
	if err := cc.set.finish(snap); err != nil {
		return err
	}
	bs := cc.ca.sorted(cc.set.buckets())
	if len(bs) > cc.ca.size {
		bs = bs[:cc.ca.size]
	}
	cc.out = &AggPartial{Buckets: bs}
	return nil
}

func (cc *compositeCollector) partial() *AggPartial {
	if cc.out == nil {
		return &AggPartial{}
	}
	return cc.out
}

// sorted orders buckets by their composite keys.
func (ca *compositeAgg) sorted(bs []*AggBucket) []*AggBucket {
	keys := make(map[*AggBucket][]compKey, len(bs))
	for _, b := range bs {
		var k []compKey
		_ = json.Unmarshal([]byte(b.Key), &k)
		keys[b] = k
	}
	sort.SliceStable(bs, func(i, j int) bool { return ca.cmp(keys[bs[i]], keys[bs[j]]) < 0 })
	return bs
}

func (ca *compositeAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	return &AggPartial{Buckets: mergeBuckets(a.subs, bucketLists(parts)...)}
}

func (ca *compositeAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	bs := ca.sorted(append([]*AggBucket(nil), p.Buckets...))
	if len(bs) > ca.size {
		bs = bs[:ca.size]
	}
	list := []any{}
	var last map[string]any
	for _, b := range bs {
		var keys []compKey
		_ = json.Unmarshal([]byte(b.Key), &keys)
		key := map[string]any{}
		for k, s := range ca.sources {
			if k < len(keys) {
				key[s.name] = s.render(keys[k])
			}
		}
		m, err := r.bucket(a.subs, b, map[string]any{"key": key})
		if err != nil {
			return nil, err
		}
		list = append(list, m)
		last = key
	}
	out := map[string]any{"buckets": list}
	if last != nil {
		out["after_key"] = last
	}
	return out, nil
}

// render shows one source's value as Elasticsearch does.
func (s *compositeSource) render(k compKey) any {
	switch {
	case k.Null:
		return nil
	case k.IsStr:
		return k.Str
	case s.fmt != nil:
		return formatMillis(int64(k.Num), s.fmt, s.layout)
	case s.hist != nil && s.hist.dates:
		return int64(k.Num)
	case s.hist != nil:
		return k.Num
	}
	return numberKey(s.spec.ftype, k.Num)
}
