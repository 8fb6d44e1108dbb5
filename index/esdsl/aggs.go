package esdsl

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// Aggregations run in two steps, as Elasticsearch's do. Every shard computes
// partial results (AggPartials) from the doc values of the documents its
// query matches (an index.Collector, in the same pass as the search); a
// data node sends them back in the query phase. The coordinating node
// merges the shards' partials (ReduceAggs) and shapes the merged result as
// Elasticsearch's "aggregations" section (RenderAggs), where the final cuts
// happen: the terms kept, empty histogram buckets, composite pages.
//
// Each kind of aggregation lives in a file of its own (aggs_metric.go,
// aggs_terms.go, ...) and implements aggKind. Bucket aggregations nest any
// aggregation.

// AggPartials are one shard's (or several shards' merged) partial results of
// a request's aggregations, by aggregation name. They are plain data, sent
// between nodes as JSON.
type AggPartials map[string]*AggPartial

// AggPartial is the partial result of one aggregation. Which fields are used
// depends on the aggregation's kind, which both sides know from the request.
type AggPartial struct {
	// Metrics: how many values, their sum, sum of squares, least and
	// greatest (Min and Max mean nothing when Count is 0).
	Count int64   `json:"c,omitempty"`
	Sum   float64 `json:"s,omitempty"`
	SumSq float64 `json:"q,omitempty"`
	Min   float64 `json:"lo,omitempty"`
	Max   float64 `json:"hi,omitempty"`
	// Sketch is a cardinality aggregation's HyperLogLog++ sketch.
	Sketch []byte `json:"h,omitempty"`
	// Digest is a percentiles aggregation's t-digest, as centroids.
	Digest []centroid `json:"t,omitempty"`
	// Hits are a top_hits aggregation's best hits, best first.
	Hits []*aggHit `json:"hits,omitempty"`
	// DocCount counts a single-bucket aggregation's documents (filter,
	// missing) and the documents a top_hits aggregation saw.
	DocCount int64 `json:"n,omitempty"`
	// Sub are a single-bucket aggregation's sub-aggregations.
	Sub AggPartials `json:"sub,omitempty"`
	// Buckets are a multi-bucket aggregation's buckets.
	Buckets []*AggBucket `json:"b,omitempty"`
	// Other counts the documents of terms buckets a shard left out, and
	// Error bounds a terms bucket's count error.
	Other int64 `json:"o,omitempty"`
	Error int64 `json:"e,omitempty"`
	// Float is set when some shard read a terms field as floating point.
	Float bool `json:"f,omitempty"`
}

// AggBucket is one bucket of a multi-bucket aggregation.
type AggBucket struct {
	// Key is a string key (terms on keyword and ip fields, a filters
	// bucket's name, a composite key as JSON); Num a numeric key (terms on
	// numbers, dates and booleans, histograms) or a range's position.
	Key      string      `json:"k,omitempty"`
	Num      float64     `json:"v,omitempty"`
	DocCount int64       `json:"n"`
	Sub      AggPartials `json:"sub,omitempty"`
}

func (b *AggBucket) id() string { return b.Key + "\x00" + strconv.FormatFloat(b.Num, 'g', -1, 64) }

// aggSpec is one aggregation of a request, parsed.
type aggSpec struct {
	name string
	typ  string // the aggregation type as the request names it
	meta json.RawMessage
	kind aggKind
	subs []*aggSpec
	// slot is the position of the aggregation's field in the collector's
	// Fields (-1: none); filterSlot of its first query in Filters.
	field      string
	ftype      string
	slot       int
	filterSlot int
	// ranged: field is a range field, its lower bounds read at slot and
	// its upper bounds at hiSlot (see rangeAggregator).
	ranged bool
	hiSlot int
}

// rangeAggregator is an aggregation kind that takes range fields (a
// document falls in every bucket its range overlaps).
type rangeAggregator interface{ aggregatesRanges() }

// aggKind is what each kind of aggregation implements.
type aggKind interface {
	// parse reads the aggregation's own object (p) into a and itself.
	parse(a *aggSpec, p object, t *translator) error
	// newCollector returns fresh per-bucket state for the aggregation.
	newCollector(s *aggSpec) aggCollector
	// reduce merges partial results (nil entries: shards without one).
	reduce(s *aggSpec, parts []*AggPartial) *AggPartial
	// render shapes a merged partial (never nil) as the response object.
	render(s *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error)
	// typedName is the aggregation's prefix under typed_keys.
	typedName(s *aggSpec) string
}

// aggSources is a kind that reads several fields (composite sources,
// top_hits sort fields), each named by a spec of its own.
type aggSources interface{ sourceSpecs() []*aggSpec }

// aggFilterer is a kind that tests documents against queries.
type aggFilterer interface{ filters() []query.Query }

// aggValuer is a metric that a terms aggregation can order by: prop names
// one of its values ("" for a single-value metric).
type aggValuer interface {
	value(s *aggSpec, p *AggPartial, prop string) (float64, bool)
}

// aggCollector is one aggregation's state for one bucket of its parent,
// on one shard.
type aggCollector interface {
	collect(d *index.MatchedDoc) error
	// finish runs once after the last document (top_hits reads sources).
	finish(snap *index.Snapshot) error
	partial() *AggPartial
}

// aggTree is a request's parsed aggregations with what their collectors
// read: the fields and filter queries, by slot.
type aggTree struct {
	specs   []*aggSpec
	fields  []string
	filters []query.Query
}

// usesScores reports whether an aggregation of the tree sorts by or shows
// the documents' scores (top_hits; nil: no aggregations).
func (t *aggTree) usesScores() bool {
	if t == nil {
		return false
	}
	var walk func(specs []*aggSpec) bool
	walk = func(specs []*aggSpec) bool {
		for _, a := range specs {
			if th, ok := a.kind.(*topHitsAgg); ok && th.scores {
				return true
			}
			if walk(a.subs) {
				return true
			}
		}
		return false
	}
	return walk(t.specs)
}

// maxBuckets is Elasticsearch's search.max_buckets default: a response with
// more buckets is refused.
const maxBuckets = 65536

var aggTypes = "avg, sum, min, max, stats, extended_stats, value_count, cardinality, percentiles, top_hits, " +
	"terms, histogram, date_histogram, range, date_range, filter, filters, missing, composite"

// newAggKind returns an empty aggregation of the named type, nil for a type
// not supported.
func newAggKind(typ string) aggKind {
	switch typ {
	case "avg", "sum", "min", "max", "stats", "extended_stats", "value_count":
		return &metricAgg{}
	case "cardinality":
		return &cardinalityAgg{}
	case "percentiles":
		return &percentilesAgg{}
	case "top_hits":
		return &topHitsAgg{}
	case "terms":
		return &termsAgg{}
	case "histogram", "date_histogram":
		return &histogramAgg{}
	case "range", "date_range":
		return &rangeAgg{}
	case "filter", "filters":
		return &filtersAgg{}
	case "missing":
		return &missingAgg{}
	case "composite":
		return &compositeAgg{}
	}
	return nil
}

// parseAggs reads the "aggs" object of a request.
func parseAggs(raw json.RawMessage, t *translator) (*aggTree, error) {
	specs, err := parseAggLevel(raw, t, "aggs", 0)
	if err != nil {
		return nil, err
	}
	tree := &aggTree{specs: specs}
	slots := map[string]int{}
	var assign func(specs []*aggSpec)
	assign = func(specs []*aggSpec) {
		for _, s := range specs {
			s.slot, s.filterSlot = -1, -1
			slot := func(name string) int {
				n, seen := slots[name]
				if !seen {
					n = len(tree.fields)
					slots[name] = n
					tree.fields = append(tree.fields, name)
				}
				return n
			}
			switch {
			case s.ranged:
				lo, hi := index.RangeBounds(s.field)
				s.slot, s.hiSlot = slot(lo), slot(hi)
			case s.field != "":
				s.slot = slot(s.field)
			}
			if m, ok := s.kind.(aggSources); ok {
				for _, src := range m.sourceSpecs() {
					src.slot = -1
					if src.field != "" {
						src.slot = slot(src.field)
					}
				}
			}
			if f, ok := s.kind.(aggFilterer); ok {
				s.filterSlot = len(tree.filters)
				tree.filters = append(tree.filters, f.filters()...)
			}
			assign(s.subs)
		}
	}
	assign(specs)
	return tree, nil
}

func parseAggLevel(raw json.RawMessage, t *translator, where string, depth int) ([]*aggSpec, error) {
	o, err := asObject(raw, where)
	if err != nil {
		return nil, err
	}
	var out []*aggSpec
	for _, name := range o.sortedKeys() {
		if name == "" || strings.ContainsAny(name, "[]>") {
			return nil, argErr("Invalid aggregation name [%s]. Aggregation names can contain any character except '[', ']', and '>'", name)
		}
		at := where + "." + name
		def, err := asObject(o[name], at)
		if err != nil {
			return nil, err
		}
		spec := &aggSpec{name: name}
		var body, subRaw json.RawMessage
		for _, k := range def.sortedKeys() {
			switch k {
			case "aggs", "aggregations":
				if subRaw != nil {
					return nil, parsingErr("Found two sub aggregation definitions under [%s]", name)
				}
				subRaw = def[k]
			case "meta":
				if _, err := asObject(def[k], at+".meta"); err != nil {
					return nil, err
				}
				spec.meta = def[k]
			default:
				if spec.typ != "" {
					return nil, parsingErr("Found two aggregation type definitions in [%s]: [%s] and [%s]", name, spec.typ, k)
				}
				spec.typ, body = k, def[k]
			}
		}
		if spec.typ == "" {
			return nil, parsingErr("Missing definition for aggregation [%s]", name)
		}
		spec.kind = newAggKind(spec.typ)
		if spec.kind == nil {
			return nil, aggErr("aggregation type [%s] (aggregation [%s]) is not supported; supported: %s", spec.typ, name, aggTypes)
		}
		if spec.typ == "composite" && depth > 0 {
			return nil, argErr("[composite] aggregation cannot be used with a parent aggregation of type: [%s]", where)
		}
		p, err := asObject(body, at+"."+spec.typ)
		if err != nil {
			return nil, err
		}
		if err := spec.kind.parse(spec, p, t); err != nil {
			return nil, err
		}
		if subRaw != nil {
			if _, leaf := spec.kind.(aggValuer); leaf {
				return nil, aggErr("Aggregator [%s] of type [%s] cannot accept sub-aggregations", name, spec.typ)
			}
			if _, ok := spec.kind.(*topHitsAgg); ok {
				return nil, aggErr("Aggregator [%s] of type [%s] cannot accept sub-aggregations", name, spec.typ)
			}
			if spec.subs, err = parseAggLevel(subRaw, t, at+".aggs", depth+1); err != nil {
				return nil, err
			}
		}
		out = append(out, spec)
	}
	if err := checkOrderPaths(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (a *aggSpec) where() string { return "aggs." + a.name + "." + a.typ }

// unknownKey is the error for a key an aggregation does not take.
func (a *aggSpec) unknownKey(k string) error {
	if k == "script" {
		return aggErr("[%s] scripts are not supported; name a field", a.where())
	}
	return parsingErr("[%s] unknown key [%s]", a.where(), k)
}

// fieldOf reads "field" (and refuses "script"). Unmapped fields are
// allowed: they aggregate nothing (or the "missing" value).
func (a *aggSpec) fieldOf(p object, t *translator, required bool) error {
	raw, ok := p["field"]
	if !ok {
		if _, ok := p["script"]; ok {
			return aggErr("[%s] scripts are not supported; name a field", a.where())
		}
		if required {
			return argErr("Required one of fields [field, script], but none were specified.")
		}
		return nil
	}
	f, err := asString(raw, a.where()+".field")
	if err != nil {
		return err
	}
	if err := checkMetaField(f, a.where()); err != nil {
		return err
	}
	a.field, a.ftype = f, t.fieldType(f)
	switch {
	case a.ftype == "text":
		return argErr("Fielddata is disabled on [%s]: text fields are not optimised for operations that require per-document field data like aggregations and sorting; aggregate on a keyword field instead ([%s.keyword] if it exists)", f, f)
	case a.ftype == "object":
		return argErr("[%s] field [%s] is an object; aggregate on one of its leaf fields", a.where(), f)
	case index.IsRange(a.ftype) && a.ftype != index.TypeIPRange:
		if _, ok := a.kind.(rangeAggregator); ok {
			a.ranged = true
			return nil
		}
		return aggErr("[%s] field [%s] is a range field; only histogram and date_histogram aggregate range fields", a.where(), f)
	case index.IsRange(a.ftype):
		return aggErr("[%s] field [%s] is a range field; aggregating range fields is not supported", a.where(), f)
	}
	return nil
}

// ---- collection ----

// AggCollector computes a request's partial aggregations on one shard; the
// index runs it alongside the search (index.Index.SearchCollect). It is
// used by one search of one shard.
type AggCollector interface {
	index.Collector
	// Partials are the results, valid after Finish.
	Partials() AggPartials
}

// AggCollector returns a collector of the request's aggregations over
// shard number shardNum of the named index, nil when the request has none
// (or is a scroll continuation, which repeats none).
func (s *Search) AggCollector(indexName string, shardNum int) AggCollector {
	if s.aggs == nil || s.scrollPage > 0 {
		return nil
	}
	return &aggRoot{tree: s.aggs, subs: newCollectors(s.aggs.specs), index: indexName, shard: shardNum}
}

type aggRoot struct {
	tree  *aggTree
	subs  []aggCollector
	parts AggPartials
	index string
	shard int
}

func (r *aggRoot) Fields() []string                  { return r.tree.fields }
func (r *aggRoot) Filters() []query.Query            { return r.tree.filters }
func (r *aggRoot) Collect(d *index.MatchedDoc) error { return collectAll(r.subs, d) }
func (r *aggRoot) Partials() AggPartials             { return r.parts }

func (r *aggRoot) Finish(snap *index.Snapshot) error {
	if err := finishAll(r.subs, snap); err != nil {
		return err
	}
	r.parts = partialsOf(r.tree.specs, r.subs)
	setHitShard(r.parts, r.index, r.shard)
	return nil
}

// setHitShard names the index and shard of every top_hits hit in parts.
func setHitShard(parts AggPartials, name string, num int) {
	for _, p := range parts {
		for _, h := range p.Hits {
			h.Index, h.Shard = name, num
		}
		setHitShard(p.Sub, name, num)
		for _, b := range p.Buckets {
			setHitShard(b.Sub, name, num)
		}
	}
}

func newCollectors(specs []*aggSpec) []aggCollector {
	out := make([]aggCollector, len(specs))
	for k, s := range specs {
		out[k] = s.kind.newCollector(s)
	}
	return out
}

func collectAll(cs []aggCollector, d *index.MatchedDoc) error {
	for _, c := range cs {
		if err := c.collect(d); err != nil {
			return err
		}
	}
	return nil
}

func finishAll(cs []aggCollector, snap *index.Snapshot) error {
	for _, c := range cs {
		if err := c.finish(snap); err != nil {
			return err
		}
	}
	return nil
}

func partialsOf(specs []*aggSpec, cs []aggCollector) AggPartials {
	if len(specs) == 0 {
		return nil
	}
	out := make(AggPartials, len(specs))
	for k, s := range specs {
		out[s.name] = cs[k].partial()
	}
	return out
}

// bucketCollector is the state of one bucket: its documents and its
// sub-aggregations.
type bucketCollector struct {
	docCount int64
	subs     []aggCollector
}

func newBucket(specs []*aggSpec) *bucketCollector {
	return &bucketCollector{subs: newCollectors(specs)}
}

func (b *bucketCollector) add(d *index.MatchedDoc) error {
	b.docCount++
	return collectAll(b.subs, d)
}

// bucketSet holds a multi-bucket aggregation's buckets by key.
type bucketSet struct {
	specs []*aggSpec
	byID  map[string]*AggBucket
	state map[string]*bucketCollector
}

func newBucketSet(specs []*aggSpec) *bucketSet {
	return &bucketSet{specs: specs, byID: map[string]*AggBucket{}, state: map[string]*bucketCollector{}}
}

// add counts d in the bucket with key (key, num).
func (bs *bucketSet) add(key string, num float64, d *index.MatchedDoc) error {
	b := &AggBucket{Key: key, Num: num}
	id := b.id()
	st, ok := bs.state[id]
	if !ok {
		st = newBucket(bs.specs)
		bs.state[id], bs.byID[id] = st, b
	}
	return st.add(d)
}

func (bs *bucketSet) finish(snap *index.Snapshot) error {
	for _, st := range bs.state {
		if err := finishAll(st.subs, snap); err != nil {
			return err
		}
	}
	return nil
}

// buckets returns the buckets with their counts and sub-partials, in no
// particular order.
func (bs *bucketSet) buckets() []*AggBucket {
	out := make([]*AggBucket, 0, len(bs.byID))
	for id, b := range bs.byID {
		st := bs.state[id]
		b.DocCount = st.docCount
		b.Sub = partialsOf(bs.specs, st.subs)
		out = append(out, b)
	}
	return out
}

// ---- reduction ----

// ReduceAggs merges the partial aggregations of several shards (nil entries
// are shards that returned none) into one.
func (s *Search) ReduceAggs(parts []AggPartials) AggPartials {
	if s.aggs == nil {
		return nil
	}
	return reduceAll(s.aggs.specs, parts)
}

func reduceAll(specs []*aggSpec, parts []AggPartials) AggPartials {
	if len(specs) == 0 {
		return nil
	}
	out := make(AggPartials, len(specs))
	for _, s := range specs {
		ps := make([]*AggPartial, 0, len(parts))
		for _, p := range parts {
			if p != nil && p[s.name] != nil {
				ps = append(ps, p[s.name])
			}
		}
		out[s.name] = s.kind.reduce(s, ps)
	}
	return out
}

// mergeBuckets merges buckets with the same key, summing counts and
// reducing sub-aggregations; the order of first appearance is kept.
func mergeBuckets(specs []*aggSpec, lists ...[]*AggBucket) []*AggBucket {
	var order []string
	merged := map[string]*AggBucket{}
	subs := map[string][]AggPartials{}
	for _, list := range lists {
		for _, b := range list {
			id := b.id()
			m, ok := merged[id]
			if !ok {
				m = &AggBucket{Key: b.Key, Num: b.Num}
				merged[id] = m
				order = append(order, id)
			}
			m.DocCount += b.DocCount
			subs[id] = append(subs[id], b.Sub)
		}
	}
	out := make([]*AggBucket, len(order))
	for k, id := range order {
		m := merged[id]
		m.Sub = reduceAll(specs, subs[id])
		out[k] = m
	}
	return out
}

// bucketLists returns the bucket lists of parts.
func bucketLists(parts []*AggPartial) [][]*AggBucket {
	out := make([][]*AggBucket, len(parts))
	for k, p := range parts {
		out[k] = p.Buckets
	}
	return out
}

// ---- rendering ----

// aggRenderer carries what rendering needs beyond the partials.
type aggRenderer struct {
	typedKeys bool
	buckets   int       // buckets rendered so far, against maxBuckets
	fields    Fields    // the mapping: its SourcePolicy shapes top_hits sources
	fetch     fetchSpec // the request's fields option, which top_hits return too
}

// RenderAggs shapes merged partials as Elasticsearch's "aggregations"
// section; nil when the request has no aggregations (or is a scroll
// continuation). Errors are *Error (too many buckets).
func (s *Search) RenderAggs(p AggPartials) (map[string]any, error) {
	if s.aggs == nil || s.scrollPage > 0 {
		return nil, nil
	}
	r := &aggRenderer{typedKeys: s.typedKeys, fields: s.fields, fetch: fetchSpec{fields: s.fetch.fields}}
	return r.all(s.aggs.specs, p)
}

func (r *aggRenderer) all(specs []*aggSpec, p AggPartials) (map[string]any, error) {
	out := make(map[string]any, len(specs))
	if err := r.into(out, specs, p); err != nil {
		return nil, err
	}
	return out, nil
}

// into adds the rendering of every spec to out.
func (r *aggRenderer) into(out map[string]any, specs []*aggSpec, p AggPartials) error {
	for _, s := range specs {
		part := p[s.name]
		if part == nil {
			part = s.kind.reduce(s, nil)
		}
		m, err := s.kind.render(s, part, r)
		if err != nil {
			return err
		}
		if s.meta != nil {
			m["meta"] = s.meta
		}
		name := s.name
		if r.typedKeys {
			name = s.kind.typedName(s) + "#" + s.name
		}
		out[name] = m
	}
	return nil
}

// bucket renders one bucket: the given fields, doc_count and the
// sub-aggregations.
func (r *aggRenderer) bucket(specs []*aggSpec, b *AggBucket, fields map[string]any) (map[string]any, error) {
	r.buckets++
	if r.buckets > maxBuckets {
		return nil, tooManyBuckets()
	}
	fields["doc_count"] = b.DocCount
	return fields, r.into(fields, specs, b.Sub)
}

func tooManyBuckets() error {
	return &Error{Kind: ErrInvalidRequest, Type: "too_many_buckets_exception",
		Reason: "Trying to create too many buckets. Must be less than or equal to: [" + strconv.Itoa(maxBuckets) + "] but this number of buckets was exceeded. This limit can be set by changing the [search.max_buckets] cluster level setting."}
}

// ---- ordering by sub-aggregations ----

// aggPath is a parsed order path such as "price", "stats.max" or
// "filtered>avg_price": single-bucket aggregations to descend through, then
// a metric (and one of its values), or "_count"/"doc_count".
type aggPath struct {
	steps []*aggSpec
	prop  string
}

// resolvePath parses path against the sub-aggregations specs.
func resolvePath(specs []*aggSpec, path string) (*aggPath, error) {
	out := &aggPath{}
	parts := strings.Split(path, ">")
	cur := specs
	for k, part := range parts {
		name, prop := part, ""
		if k == len(parts)-1 {
			if i := strings.IndexByte(part, '.'); i >= 0 {
				name, prop = part[:i], part[i+1:]
			}
			if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
				name, prop = part[:i], part[i+1:len(part)-1]
			}
		}
		if name == "_count" && k > 0 {
			out.prop = "_count"
			return out, nil
		}
		var found *aggSpec
		for _, s := range cur {
			if s.name == name {
				found = s
			}
		}
		if found == nil {
			return nil, aggErr("Invalid aggregator order path [%s]. The provided aggregation [%s] either does not exist, or is a pipeline aggregation and cannot be used to sort the buckets.", path, name)
		}
		out.steps = append(out.steps, found)
		if k < len(parts)-1 {
			if !isSingleBucket(found) {
				return nil, aggErr("Invalid aggregator order path [%s]. Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end.", path)
			}
			cur = found.subs
			continue
		}
		_, metric := found.kind.(aggValuer)
		if !metric && !isSingleBucket(found) {
			return nil, aggErr("Invalid aggregator order path [%s]. Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end.", path)
		}
		out.prop = prop
	}
	return out, nil
}

// singleBucket is implemented by the kinds that can have one bucket
// (filter, missing).
type singleBucket interface{ singleBucket() bool }

func isSingleBucket(s *aggSpec) bool {
	sb, ok := s.kind.(singleBucket)
	return ok && sb.singleBucket()
}

// value reads the path's value from a bucket's sub-partials; ok is false
// when the metric has no value (it sorts last).
func (ap *aggPath) value(b *AggBucket) (float64, bool) {
	sub := b.Sub
	for k, s := range ap.steps {
		p := sub[s.name]
		if p == nil {
			p = s.kind.reduce(s, nil)
		}
		if k < len(ap.steps)-1 {
			sub = p.Sub
			continue
		}
		if ap.prop == "_count" || ap.prop == "doc_count" {
			return float64(p.DocCount), true
		}
		if isSingleBucket(s) {
			return float64(p.DocCount), true
		}
		return s.kind.(aggValuer).value(s, p, ap.prop)
	}
	return float64(b.DocCount), true
}

// checkOrderPaths validates the order paths of terms aggregations once
// their sub-aggregations are known.
func checkOrderPaths(specs []*aggSpec) error {
	for _, s := range specs {
		if t, ok := s.kind.(*termsAgg); ok {
			if err := t.resolveOrder(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- helpers shared by the kinds ----

// numberKey renders a numeric key: whole numbers of integral fields as
// integers.
func numberKey(ftype string, f float64) any {
	if (isIntegral(ftype) || ftype == "boolean") && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// sortBuckets orders buckets by numeric key, then string key.
func sortBucketsByKey(bs []*AggBucket, desc bool) {
	sort.SliceStable(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		if a.Num != b.Num {
			return (a.Num < b.Num) != desc
		}
		if a.Key != b.Key {
			return (a.Key < b.Key) != desc
		}
		return false
	})
}
