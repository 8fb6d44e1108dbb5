package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// filter, filters and missing: buckets of the documents that match a query
// (tested with the index's filter walk, index.MatchedDoc.Matches) or that
// have no value in a field.

type filtersAgg struct {
	single   bool // filter: one bucket, rendered flat
	names    []string
	queries  []query.Query
	keyed    bool
	other    bool
	otherKey string
}

func (f *filtersAgg) singleBucket() bool          { return f.single }
func (f *filtersAgg) filters() []query.Query      { return f.queries }
func (f *filtersAgg) typedName(a *aggSpec) string { return a.typ }

func (f *filtersAgg) parse(a *aggSpec, p object, t *translator) error {
	if a.typ == "filter" {
		f.single = true
		q, err := t.query(json.RawMessage(objectJSON(p)), a.where())
		if err != nil {
			return err
		}
		f.queries = []query.Query{q}
		return nil
	}
	f.otherKey = "_other_"
	var filtersRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "filters":
			filtersRaw = v
		case "other_bucket":
			f.other, err = asBool(v, a.where()+".other_bucket")
		case "other_bucket_key":
			if f.otherKey, err = asString(v, a.where()+".other_bucket_key"); err == nil {
				f.other = true
			}
		case "keyed":
			_, err = asBool(v, a.where()+".keyed")
		default:
			err = a.unknownKey(k)
		}
		if err != nil {
			return err
		}
	}
	// Named filters render keyed by name unless keyed is false; anonymous
	// ones as a list.
	f.keyed = kind(filtersRaw) == 'o'
	if v, ok := p["keyed"]; ok && f.keyed {
		f.keyed, _ = asBool(v, "")
	}
	switch kind(filtersRaw) {
	case 'o':
		o, _ := asObject(filtersRaw, "")
		for _, name := range o.sortedKeys() {
			q, err := t.query(o[name], a.where()+".filters."+name)
			if err != nil {
				return err
			}
			f.names, f.queries = append(f.names, name), append(f.queries, q)
		}
	case 'a':
		for _, e := range decodeArray(filtersRaw) {
			q, err := t.query(e, a.where()+".filters")
			if err != nil {
				return err
			}
			f.queries = append(f.queries, q)
		}
	default:
		return argErr("[filters] cannot be empty.")
	}
	if len(f.queries) == 0 {
		return argErr("[filters] cannot be empty.")
	}
	return nil
}

// objectJSON re-encodes a parsed object (it came from JSON, so this cannot
// fail).
func objectJSON(o object) []byte {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

type filtersCollector struct {
	a       *aggSpec
	f       *filtersAgg
	buckets []*bucketCollector // one per filter, then other
}

func (f *filtersAgg) newCollector(a *aggSpec) aggCollector {
	n := len(f.queries)
	if f.other {
		n++
	}
	fc := &filtersCollector{a: a, f: f, buckets: make([]*bucketCollector, n)}
	for k := range fc.buckets {
		fc.buckets[k] = newBucket(a.subs)
	}
	return fc
}

func (fc *filtersCollector) collect(d *index.MatchedDoc) error {
	any := false
	for k := range fc.f.queries {
		ok, err := d.Matches(fc.a.filterSlot + k)
		if err != nil {
			return err
		}
		if ok {
			any = true
			if err := fc.buckets[k].add(d); err != nil {
				return err
			}
		}
	}
	if fc.f.other && !any {
		return fc.buckets[len(fc.f.queries)].add(d)
	}
	return nil
}

func (fc *filtersCollector) finish(snap *index.Snapshot) error {
	for _, b := range fc.buckets {
		if err := finishAll(b.subs, snap); err != nil {
			return err
		}
	}
	return nil
}

func (fc *filtersCollector) partial() *AggPartial {
	if fc.f.single {
		b := fc.buckets[0]
		return &AggPartial{DocCount: b.docCount, Sub: partialsOf(fc.a.subs, b.subs)}
	}
	out := &AggPartial{}
	for k, b := range fc.buckets {
		out.Buckets = append(out.Buckets, &AggBucket{Num: float64(k), DocCount: b.docCount, Sub: partialsOf(fc.a.subs, b.subs)})
	}
	return out
}

func (f *filtersAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	if f.single {
		return reduceSingle(a, parts)
	}
	return &AggPartial{Buckets: mergeBuckets(a.subs, bucketLists(parts)...)}
}

// reduceSingle merges single-bucket partials.
func reduceSingle(a *aggSpec, parts []*AggPartial) *AggPartial {
	out := &AggPartial{}
	subs := make([]AggPartials, 0, len(parts))
	for _, p := range parts {
		out.DocCount += p.DocCount
		subs = append(subs, p.Sub)
	}
	out.Sub = reduceAll(a.subs, subs)
	return out
}

// renderSingle renders a single-bucket partial.
func renderSingle(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	out := map[string]any{"doc_count": p.DocCount}
	return out, r.into(out, a.subs, p.Sub)
}

func (f *filtersAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	if f.single {
		return renderSingle(a, p, r)
	}
	byPos := map[int]*AggBucket{}
	for _, b := range p.Buckets {
		byPos[int(b.Num)] = b
	}
	n := len(f.queries)
	if f.other {
		n++
	}
	keyed := map[string]any{}
	list := []any{}
	for k := 0; k < n; k++ {
		b := byPos[k]
		if b == nil {
			b = &AggBucket{Num: float64(k), Sub: reduceAll(a.subs, nil)}
		}
		m, err := r.bucket(a.subs, b, map[string]any{})
		if err != nil {
			return nil, err
		}
		name := f.otherKey
		if k < len(f.names) {
			name = f.names[k]
		}
		if f.keyed {
			keyed[name] = m
		} else {
			if k < len(f.names) {
				m["key"] = name
			}
			list = append(list, m)
		}
	}
	if f.keyed {
		return map[string]any{"buckets": keyed}, nil
	}
	return map[string]any{"buckets": list}, nil
}

// ---- missing ----

type missingAgg struct{}

func (m *missingAgg) singleBucket() bool          { return true }
func (m *missingAgg) typedName(a *aggSpec) string { return "missing" }

func (m *missingAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	for _, k := range p.sortedKeys() {
		if k != "field" {
			return parsingErr("[%s] unknown key [%s]", a.where(), k)
		}
	}
	return nil
}

type missingCollector struct {
	a *aggSpec
	b *bucketCollector
}

func (m *missingAgg) newCollector(a *aggSpec) aggCollector {
	return &missingCollector{a: a, b: newBucket(a.subs)}
}

func (mc *missingCollector) collect(d *index.MatchedDoc) error {
	if s := mc.a.slot; s >= 0 && (len(d.Numbers(s)) > 0 || len(d.Strings(s)) > 0) {
		return nil
	}
	return mc.b.add(d)
}

func (mc *missingCollector) finish(snap *index.Snapshot) error { return finishAll(mc.b.subs, snap) }

func (mc *missingCollector) partial() *AggPartial {
	return &AggPartial{DocCount: mc.b.docCount, Sub: partialsOf(mc.a.subs, mc.b.subs)}
}

func (m *missingAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	return reduceSingle(a, parts)
}

func (m *missingAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	return renderSingle(a, p, r)
}
