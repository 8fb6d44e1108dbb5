package esdsl

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
)

// Aggregations are computed by bleve facets: terms aggregations by term
// facets, range-like aggregations by numeric or date range facets with one
// range per bucket. Histograms therefore need their bucket range up front
// (hard_bounds); sub-aggregations and metric aggregations are refused.

// maxBuckets bounds the range facets one histogram may ask bleve for.
const maxBuckets = 2000

type aggSpec struct {
	name     string
	typ      string
	field    string
	ftype    string
	meta     json.RawMessage
	facets   map[string]*bleve.FacetRequest
	size     int
	keyed    bool
	minCount int
	buckets  []aggBucket // range-like aggregations, in response order
	trim     bool        // histogram without extended_bounds: trim empty edges
	extLo    float64     // extended_bounds as bucket keys (histograms)
	extHi    float64
	hasExt   bool
	dateKeys bool
	format   *dateParser
	layout   string
}

type aggBucket struct {
	name     string // range name inside the facet
	key      string
	numKey   float64 // histogram key (epoch millis for dates)
	from, to *float64
	fromS    string
	toS      string
}

var aggTypes = "terms, range, date_range, histogram, date_histogram"

func parseAggs(raw json.RawMessage, t *translator) ([]*aggSpec, error) {
	o, err := asObject(raw, "aggs")
	if err != nil {
		return nil, err
	}
	var out []*aggSpec
	for _, name := range o.sortedKeys() {
		if name == "" || strings.ContainsAny(name, "[]>") {
			return nil, argErr("invalid aggregation name [%s]; names must not be empty or contain [, ] or >", name)
		}
		def, err := asObject(o[name], "aggs."+name)
		if err != nil {
			return nil, err
		}
		spec := &aggSpec{name: name, facets: map[string]*bleve.FacetRequest{}}
		var body json.RawMessage
		for _, k := range def.sortedKeys() {
			switch k {
			case "aggs", "aggregations":
				if sub, err := asObject(def[k], "aggs."+name+"."+k); err != nil {
					return nil, err
				} else if len(sub) > 0 {
					return nil, aggErr("sub-aggregations (under [%s]) are not supported; run each aggregation at the top level", name)
				}
			case "meta":
				if _, err := asObject(def[k], "aggs."+name+".meta"); err != nil {
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
			return nil, parsingErr("Missing definition for aggregation [%s]; add one of %s", name, aggTypes)
		}
		p, err := asObject(body, "aggs."+name+"."+spec.typ)
		if err != nil {
			return nil, err
		}
		switch spec.typ {
		case "terms":
			err = spec.parseTerms(p, t)
		case "range":
			err = spec.parseRange(p, t, false)
		case "date_range":
			err = spec.parseRange(p, t, true)
		case "histogram":
			err = spec.parseHistogram(p, t)
		case "date_histogram":
			err = spec.parseDateHistogram(p, t)
		default:
			return nil, aggErr("aggregation type [%s] (aggregation [%s]) is not supported; supported: %s", spec.typ, name, aggTypes)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

func (a *aggSpec) where() string { return "aggs." + a.name + "." + a.typ }

// fieldOf reads and checks "field".
func (a *aggSpec) fieldOf(p object, t *translator) error {
	raw, ok := p["field"]
	if !ok {
		if _, ok := p["script"]; ok {
			return aggErr("[%s] scripts are not supported; name a field", a.where())
		}
		return parsingErr("[%s] needs [field]", a.where())
	}
	f, err := asString(raw, a.where()+".field")
	if err != nil {
		return err
	}
	if err := checkMetaField(f, a.where()); err != nil {
		return err
	}
	a.field, a.ftype = f, t.fieldType(f)
	if a.ftype == "text" {
		return argErr("Fielddata is disabled on [%s]: text fields are not optimised for aggregations; aggregate on a keyword field instead ([%s.keyword] if it exists)", f, f)
	}
	if a.ftype == "object" {
		return argErr("[%s] field [%s] is an object; aggregate on one of its leaf fields", a.where(), f)
	}
	return nil
}

func (a *aggSpec) parseTerms(p object, t *translator) error {
	if err := a.fieldOf(p, t); err != nil {
		return err
	}
	a.size = 10
	shardSize := -1
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "field":
		case "size":
			if a.size, err = asInt(v, a.where()+".size"); err == nil && a.size < 1 {
				err = argErr("[size] must be greater than 0. Found [%d] in [%s]", a.size, a.name)
			}
		case "shard_size":
			shardSize, err = asInt(v, a.where()+".shard_size")
		case "min_doc_count":
			var n int
			if n, err = asInt(v, a.where()+".min_doc_count"); err == nil && n != 1 {
				if n < 1 {
					err = aggErr("[%s] min_doc_count %d is not supported (terms with no matching documents cannot be listed); use 1 or more", a.where(), n)
				}
				a.minCount = n
			}
		case "order":
			err = checkCountOrder(v, a.where())
		case "show_term_doc_count_error":
			_, err = asBool(v, a.where()+"."+k)
		case "execution_hint", "collect_mode", "value_type":
			_, err = asString(v, a.where()+"."+k)
		case "missing", "include", "exclude", "script", "format":
			err = aggErr("[%s] %s is not supported; drop it", a.where(), k)
		default:
			err = parsingErr("[%s] unknown key [%s]", a.where(), k)
		}
		if err != nil {
			return err
		}
	}
	if a.minCount == 0 {
		a.minCount = 1
	}
	if a.ftype == "" {
		return nil // unmapped: no buckets
	}
	if shardSize < a.size {
		shardSize = a.size*3/2 + 10
	}
	fr := bleve.NewFacetRequest(a.field, shardSize)
	if isNumeric(a.ftype) || a.ftype == "date" {
		// Only the full-precision (shift 0) terms of a numeric field.
		fr.SetPrefixFilter(string([]byte{numeric.ShiftStartInt64}))
	}
	a.facets[a.name] = fr
	return nil
}

// checkCountOrder accepts only the default terms order (count desc).
func checkCountOrder(v json.RawMessage, where string) error {
	entries, err := asArray(v, where+".order", true)
	if err != nil {
		return err
	}
	for i, e := range entries {
		o, err := asObject(e, where+".order")
		if err != nil {
			return err
		}
		k, dir, err := o.single(where + ".order")
		if err != nil {
			return err
		}
		d, err := asString(dir, where+".order."+k)
		if err != nil {
			return err
		}
		if i == 0 && k == "_count" && d == "desc" {
			continue
		}
		if i == 1 && k == "_key" && d == "asc" {
			continue
		}
		return aggErr("[%s] order {%q: %q} is not supported; terms come by _count desc, then _key asc", where, k, d)
	}
	return nil
}

func (a *aggSpec) parseRange(p object, t *translator, dates bool) error {
	if err := a.fieldOf(p, t); err != nil {
		return err
	}
	if a.ftype == "date" {
		dates = true
	}
	if a.ftype != "" && !isNumeric(a.ftype) && a.ftype != "date" {
		return aggErr("[%s] field [%s] of type [%s] cannot be aggregated by ranges; use a numeric or date field", a.where(), a.field, a.ftype)
	}
	if a.typ == "date_range" && a.ftype != "" && a.ftype != "date" {
		return aggErr("[%s] field [%s] is of type [%s], not date", a.where(), a.field, a.ftype)
	}
	format, tz := "", ""
	var rangesRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "field":
		case "ranges":
			rangesRaw = v
		case "keyed":
			a.keyed, err = asBool(v, a.where()+".keyed")
		case "format":
			format, err = asString(v, a.where()+".format")
		case "time_zone":
			tz, err = asString(v, a.where()+".time_zone")
		case "missing", "script":
			err = aggErr("[%s] %s is not supported; drop it", a.where(), k)
		default:
			err = parsingErr("[%s] unknown key [%s]", a.where(), k)
		}
		if err != nil {
			return err
		}
	}
	if rangesRaw == nil {
		return parsingErr("[%s] needs [ranges]", a.where())
	}
	entries, err := asArray(rangesRaw, a.where()+".ranges", false)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return argErr("[%s] needs at least one range in [ranges]", a.where())
	}
	if len(entries) > maxBuckets {
		return aggErr("[%s] has %d ranges, more than the %d allowed", a.where(), len(entries), maxBuckets)
	}
	dp, err := t.dateParserFor(a.field, format, tz)
	if err != nil {
		return err
	}
	a.dateKeys = dates
	fr := bleve.NewFacetRequest(a.field, len(entries))
	for i, e := range entries {
		ro, err := asObject(e, a.where()+".ranges")
		if err != nil {
			return err
		}
		b := aggBucket{name: strconv.Itoa(i)}
		hasKey := false
		for _, k := range ro.sortedKeys() {
			v := ro[k]
			switch k {
			case "key":
				if b.key, err = asScalarString(v, a.where()+".ranges.key"); err != nil {
					return err
				}
				hasKey = true
			case "from", "to":
				if kind(v) == 'z' {
					continue
				}
				var f float64
				if dates {
					s, err := asScalarString(v, a.where()+".ranges."+k)
					if err != nil {
						return err
					}
					tm, err := dp.parse(s, kind(v) == 'n', false)
					if err != nil {
						return err
					}
					f = float64(epochMillis(tm))
				} else if f, err = asFloat(v, a.where()+".ranges."+k); err != nil {
					return err
				}
				if k == "from" {
					b.from = &f
				} else {
					b.to = &f
				}
			default:
				return parsingErr("[%s] unknown key [%s] in a range; use from, to and key", a.where(), k)
			}
		}
		if b.from == nil && b.to == nil && a.ftype != "" {
			// An unbounded range: bleve needs a bound, and (-Inf, +Inf)
			// holds every value.
			inf := math.Inf(-1)
			if dates {
				inf = float64(math.MinInt64 / int64(time.Millisecond))
			}
			b.from = &inf
		}
		if dates {
			b.fromS, b.toS = "*", "*"
			if b.from != nil && !math.IsInf(*b.from, 0) && *b.from != float64(math.MinInt64/int64(time.Millisecond)) {
				b.fromS = formatDate(time.UnixMilli(int64(*b.from)))
			}
			if b.to != nil {
				b.toS = formatDate(time.UnixMilli(int64(*b.to)))
			}
		} else {
			b.fromS, b.toS = "*", "*"
			if b.from != nil && !math.IsInf(*b.from, 0) {
				b.fromS = javaDouble(*b.from)
			}
			if b.to != nil {
				b.toS = javaDouble(*b.to)
			}
		}
		if !hasKey {
			b.key = b.fromS + "-" + b.toS
		}
		if dates {
			var st, en time.Time
			if b.from != nil && b.fromS != "*" {
				st = time.UnixMilli(int64(*b.from))
			} else {
				st = time.Unix(0, math.MinInt64+1)
			}
			if b.to != nil {
				en = time.UnixMilli(int64(*b.to))
			}
			fr.AddDateTimeRange(b.name, st, en)
		} else {
			fr.AddNumericRange(b.name, b.from, b.to)
		}
		a.buckets = append(a.buckets, b)
	}
	// Elasticsearch returns range buckets ordered by from, then to.
	sort.SliceStable(a.buckets, func(i, j int) bool {
		fi, fj := boundOr(a.buckets[i].from, math.Inf(-1)), boundOr(a.buckets[j].from, math.Inf(-1))
		if fi != fj {
			return fi < fj
		}
		return boundOr(a.buckets[i].to, math.Inf(1)) < boundOr(a.buckets[j].to, math.Inf(1))
	})
	if a.ftype != "" {
		a.facets[a.name] = fr
	}
	return nil
}

func boundOr(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

// javaDouble formats f as Java's Double.toString does for the common cases
// ("100.0", "2.5"), which Elasticsearch uses in range keys.
func javaDouble(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e7 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	if math.Abs(f) >= 1e-3 && math.Abs(f) < 1e7 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	return mant + "E" + exp
}

// bounds reads {"min": .., "max": ..} of extended_bounds / hard_bounds.
func (a *aggSpec) bounds(v json.RawMessage, name string, conv func(json.RawMessage, string) (float64, error)) (float64, float64, error) {
	o, err := asObject(v, a.where()+"."+name)
	if err != nil {
		return 0, 0, err
	}
	lo, hi := math.NaN(), math.NaN()
	for _, k := range o.sortedKeys() {
		f, err := conv(o[k], a.where()+"."+name+"."+k)
		if err != nil {
			return 0, 0, err
		}
		switch k {
		case "min":
			lo = f
		case "max":
			hi = f
		default:
			return 0, 0, parsingErr("[%s.%s] unknown key [%s]; use min and max", a.where(), name, k)
		}
	}
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return 0, 0, argErr("[%s.%s] needs both min and max", a.where(), name)
	}
	if lo > hi {
		return 0, 0, argErr("[%s.%s] min [%v] is greater than max [%v]", a.where(), name, lo, hi)
	}
	return lo, hi, nil
}

func (a *aggSpec) histogramCommon(k string, v json.RawMessage) (bool, error) {
	var err error
	switch k {
	case "field":
	case "keyed":
		a.keyed, err = asBool(v, a.where()+".keyed")
	case "min_doc_count":
		if a.minCount, err = asInt(v, a.where()+".min_doc_count"); err == nil && a.minCount < 0 {
			err = argErr("[%s] min_doc_count must be >= 0", a.where())
		}
	case "order":
		var o object
		if o, err = asObject(v, a.where()+".order"); err == nil {
			if d, ok := o["_key"]; !ok || len(o) != 1 || strings.Trim(string(d), `" `) != "asc" {
				err = aggErr("[%s] order is not supported except {\"_key\": \"asc\"}", a.where())
			}
		}
	case "missing", "script":
		err = aggErr("[%s] %s is not supported; drop it", a.where(), k)
	default:
		return false, nil
	}
	return true, err
}

func (a *aggSpec) parseHistogram(p object, t *translator) error {
	if err := a.fieldOf(p, t); err != nil {
		return err
	}
	if a.ftype != "" && !isNumeric(a.ftype) {
		return aggErr("[%s] field [%s] of type [%s] is not numeric; use date_histogram for dates", a.where(), a.field, a.ftype)
	}
	interval, offset := 0.0, 0.0
	var hard, ext []float64
	for _, k := range p.sortedKeys() {
		v := p[k]
		if ok, err := a.histogramCommon(k, v); ok {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		switch k {
		case "interval":
			if interval, err = asFloat(v, a.where()+".interval"); err == nil && !(interval > 0) {
				err = argErr("[interval] must be >0 for histogram aggregation [%s]", a.name)
			}
		case "offset":
			offset, err = asFloat(v, a.where()+".offset")
		case "hard_bounds", "extended_bounds":
			var lo, hi float64
			if lo, hi, err = a.bounds(v, k, asFloat); err == nil {
				if k == "hard_bounds" {
					hard = []float64{lo, hi}
				} else {
					ext = []float64{lo, hi}
				}
			}
		default:
			err = parsingErr("[%s] unknown key [%s]", a.where(), k)
		}
		if err != nil {
			return err
		}
	}
	if interval == 0 {
		return parsingErr("[%s] needs [interval]", a.where())
	}
	if hard == nil {
		return aggErr("histogram [%s] needs \"hard_bounds\": {\"min\": .., \"max\": ..}: this node counts histogram buckets with range facets, so the bucket range must be given up front", a.name)
	}
	keyOf := func(v float64) float64 { return math.Floor((v-offset)/interval)*interval + offset }
	first, last := keyOf(hard[0]), keyOf(hard[1])
	n := (last-first)/interval + 1
	if n > maxBuckets {
		return aggErr("histogram [%s] would have %.0f buckets, more than the %d allowed; raise interval or narrow hard_bounds", a.name, n, maxBuckets)
	}
	fr := bleve.NewFacetRequest(a.field, int(n))
	for i := 0; i < int(n); i++ {
		k := first + float64(i)*interval
		lo, hi := k, k+interval
		b := aggBucket{name: strconv.Itoa(i), numKey: k, from: &lo, to: &hi}
		fr.AddNumericRange(b.name, b.from, b.to)
		a.buckets = append(a.buckets, b)
	}
	a.setEdges(ext, keyOf)
	if a.ftype != "" {
		a.facets[a.name] = fr
	}
	return nil
}

func (a *aggSpec) setEdges(ext []float64, keyOf func(float64) float64) {
	if a.minCount == 0 {
		a.trim = true
		if ext != nil {
			a.hasExt, a.extLo, a.extHi = true, keyOf(ext[0]), keyOf(ext[1])
		}
	}
}

var calendarUnits = map[string]byte{
	"minute": 'm', "1m": 'm', "hour": 'h', "1h": 'h', "day": 'd', "1d": 'd', "week": 'w', "1w": 'w',
	"month": 'M', "1M": 'M', "quarter": 'q', "1q": 'q', "year": 'y', "1y": 'y',
}

func (a *aggSpec) parseDateHistogram(p object, t *translator) error {
	if err := a.fieldOf(p, t); err != nil {
		return err
	}
	if a.ftype != "" && a.ftype != "date" {
		return aggErr("[%s] field [%s] of type [%s] is not a date; use histogram for numbers", a.where(), a.field, a.ftype)
	}
	var fixed time.Duration
	var cal byte
	format, tz := "", ""
	var hardRaw, extRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		if ok, err := a.histogramCommon(k, v); ok {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		switch k {
		case "fixed_interval":
			var s string
			if s, err = asString(v, a.where()+".fixed_interval"); err == nil {
				if fixed, err = parseDuration(s, "fixed_interval"); err == nil && fixed < time.Millisecond {
					err = argErr("[fixed_interval] must be at least 1ms, got [%s]", s)
				}
				if err == nil && strings.ContainsAny(s[len(s)-1:], "wMqy") {
					err = argErr("fixed_interval [%s]: weeks, months, quarters and years are calendar units; use calendar_interval", s)
				}
			}
		case "calendar_interval":
			var s string
			if s, err = asString(v, a.where()+".calendar_interval"); err == nil {
				u, ok := calendarUnits[s]
				if !ok {
					err = argErr("The supplied interval [%s] could not be parsed as a calendar interval; use minute, hour, day, week, month, quarter or year (or 1m, 1h, 1d, 1w, 1M, 1q, 1y)", s)
				}
				cal = u
			}
		case "interval", "date_histogram_interval":
			err = argErr("[%s] [interval] was removed in Elasticsearch 8; use fixed_interval or calendar_interval", a.where())
		case "format":
			format, err = asString(v, a.where()+".format")
		case "time_zone":
			tz, err = asString(v, a.where()+".time_zone")
		case "hard_bounds":
			hardRaw = v
		case "extended_bounds":
			extRaw = v
		case "offset":
			err = aggErr("[%s] offset is not supported; drop it", a.where())
		default:
			err = parsingErr("[%s] unknown key [%s]", a.where(), k)
		}
		if err != nil {
			return err
		}
	}
	if (fixed == 0) == (cal == 0) {
		return argErr("date_histogram [%s] needs exactly one of fixed_interval or calendar_interval", a.name)
	}
	if format == "" {
		if df, ok := t.fields.(DateFormatter); ok {
			// key_as_string follows the field's format, as in Elasticsearch.
			format = df.DateFormat(a.field)
		}
	}
	dp, err := newDateParser(format, tz, t.now)
	if err != nil {
		return err
	}
	a.format = dp
	// Keys print in the first format of the list, as in Elasticsearch.
	a.layout = dp.df.Layout()
	conv := func(v json.RawMessage, what string) (float64, error) {
		s, err := asScalarString(v, what)
		if err != nil {
			return 0, err
		}
		tm, err := dp.parse(s, kind(v) == 'n', false)
		if err != nil {
			return 0, err
		}
		return float64(epochMillis(tm)), nil
	}
	if hardRaw == nil {
		return aggErr("date_histogram [%s] needs \"hard_bounds\": {\"min\": .., \"max\": ..}: this node counts histogram buckets with range facets, so the bucket range must be given up front (date math such as now-7d works)", a.name)
	}
	hlo, hhi, err := a.bounds(hardRaw, "hard_bounds", conv)
	if err != nil {
		return err
	}
	var ext []float64
	if extRaw != nil {
		lo, hi, err := a.bounds(extRaw, "extended_bounds", conv)
		if err != nil {
			return err
		}
		ext = []float64{lo, hi}
	}
	loc := dp.loc
	floor := func(ms float64) time.Time {
		tm := time.UnixMilli(int64(ms)).In(loc)
		if cal != 0 {
			if cal == 'q' {
				y, m, _ := tm.Date()
				return time.Date(y, m-(m-1)%3, 1, 0, 0, 0, 0, loc)
			}
			return truncateUnit(tm, cal)
		}
		_, off := tm.Zone()
		local := tm.UnixMilli() + int64(off)*1000
		iv := fixed.Milliseconds()
		k := local - mod(local, iv)
		return time.UnixMilli(k - int64(off)*1000).In(loc)
	}
	next := func(tm time.Time) time.Time {
		switch cal {
		case 0:
			return tm.Add(fixed)
		case 'q':
			return tm.AddDate(0, 3, 0)
		}
		return addUnit(tm, cal, 1)
	}
	first, last := floor(hlo), floor(hhi)
	fr := bleve.NewFacetRequest(a.field, 1)
	for tm, i := first, 0; !tm.After(last); tm, i = next(tm), i+1 {
		if i >= maxBuckets {
			return aggErr("date_histogram [%s] would have more than %d buckets; raise the interval or narrow hard_bounds", a.name, maxBuckets)
		}
		end := next(tm)
		b := aggBucket{name: strconv.Itoa(i), numKey: float64(tm.UnixMilli())}
		fr.AddDateTimeRange(b.name, tm, end)
		a.buckets = append(a.buckets, b)
	}
	fr.Size = len(a.buckets)
	a.dateKeys = true
	a.setEdges(ext, func(v float64) float64 { return float64(floor(v).UnixMilli()) })
	if a.ftype != "" {
		a.facets[a.name] = fr
	}
	return nil
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// ---- response ----

func (a *aggSpec) typedName() string {
	switch a.typ {
	case "terms":
		switch {
		case a.ftype == "keyword" || a.ftype == "":
			return "sterms#" + a.name
		case a.ftype == "double" || a.ftype == "float" || a.ftype == "half_float" || a.ftype == "scaled_float":
			return "dterms#" + a.name
		}
		return "lterms#" + a.name
	}
	return a.typ + "#" + a.name
}

func (a *aggSpec) result(res *bleve.SearchResult) map[string]any {
	var fr *search.FacetResult
	if res != nil {
		fr = res.Facets[a.name]
	}
	out := map[string]any{}
	if a.meta != nil {
		out["meta"] = a.meta
	}
	switch a.typ {
	case "terms":
		a.termsResult(fr, res, out)
	case "range", "date_range":
		a.rangeResult(fr, out)
	default:
		a.histogramResult(fr, out)
	}
	return out
}

func (a *aggSpec) termsResult(fr *search.FacetResult, res *bleve.SearchResult, out map[string]any) {
	buckets := []any{}
	other := 0
	if fr != nil && fr.Terms != nil {
		terms := fr.Terms.Terms()
		shown := 0
		for _, tf := range terms {
			if shown >= a.size || tf.Count < a.minCount {
				other += tf.Count
				continue
			}
			b, ok := a.termBucket(tf)
			if !ok {
				continue
			}
			buckets = append(buckets, b)
			shown++
		}
		if isNumeric(a.ftype) || a.ftype == "date" {
			// Total counts every prefix-coded term of the field: 16 per
			// value (precision step 4 over 64 bits).
			values := fr.Total / 16
			listed := 0
			for _, tf := range terms {
				listed += tf.Count
			}
			other += values - listed
		} else {
			other += fr.Other
		}
	}
	if other < 0 {
		other = 0
	}
	out["doc_count_error_upper_bound"] = 0
	out["sum_other_doc_count"] = other
	out["buckets"] = buckets
}

func (a *aggSpec) termBucket(tf *search.TermFacet) (map[string]any, bool) {
	b := map[string]any{"doc_count": tf.Count}
	switch {
	case isNumeric(a.ftype):
		i, err := numeric.PrefixCoded(tf.Term).Int64()
		if err != nil {
			return nil, false
		}
		f := numeric.Int64ToFloat64(i)
		if isIntegral(a.ftype) && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			b["key"] = int64(f)
		} else {
			b["key"] = f
		}
	case a.ftype == "date":
		i, err := numeric.PrefixCoded(tf.Term).Int64()
		if err != nil {
			return nil, false
		}
		tm := time.Unix(0, i)
		b["key"] = epochMillis(tm)
		b["key_as_string"] = formatDate(tm)
	case a.ftype == "boolean":
		if tf.Term == "T" {
			b["key"], b["key_as_string"] = 1, "true"
		} else {
			b["key"], b["key_as_string"] = 0, "false"
		}
	default:
		b["key"] = tf.Term
	}
	return b, true
}

func (a *aggSpec) counts(fr *search.FacetResult) map[string]int {
	c := map[string]int{}
	if fr == nil {
		return c
	}
	for _, r := range fr.NumericRanges {
		c[r.Name] = r.Count
	}
	for _, r := range fr.DateRanges {
		c[r.Name] = r.Count
	}
	return c
}

func (a *aggSpec) rangeResult(fr *search.FacetResult, out map[string]any) {
	counts := a.counts(fr)
	list := make([]any, 0, len(a.buckets))
	keyed := map[string]any{}
	for _, b := range a.buckets {
		m := map[string]any{"doc_count": counts[b.name]}
		if !a.keyed {
			m["key"] = b.key
		}
		if b.from != nil && b.fromS != "*" {
			m["from"] = *b.from
			if a.dateKeys {
				m["from_as_string"] = b.fromS
			}
		}
		if b.to != nil {
			m["to"] = *b.to
			if a.dateKeys {
				m["to_as_string"] = b.toS
			}
		}
		list = append(list, m)
		keyed[b.key] = m
	}
	if a.keyed {
		out["buckets"] = keyed
	} else {
		out["buckets"] = list
	}
}

func (a *aggSpec) histogramResult(fr *search.FacetResult, out map[string]any) {
	counts := a.counts(fr)
	lo, hi := 0, len(a.buckets)
	if a.trim {
		for lo < hi && counts[a.buckets[lo].name] == 0 && !(a.hasExt && a.buckets[lo].numKey >= a.extLo) {
			lo++
		}
		for hi > lo && counts[a.buckets[hi-1].name] == 0 && !(a.hasExt && a.buckets[hi-1].numKey <= a.extHi) {
			hi--
		}
	}
	list := []any{}
	keyed := map[string]any{}
	for _, b := range a.buckets[lo:hi] {
		n := counts[b.name]
		if n < a.minCount {
			continue
		}
		m := map[string]any{"doc_count": n}
		var keyStr string
		if a.dateKeys {
			ms := int64(b.numKey)
			m["key"] = ms
			keyStr = a.formatKey(ms)
			m["key_as_string"] = keyStr
		} else {
			m["key"] = b.numKey
			keyStr = javaDouble(b.numKey)
		}
		list = append(list, m)
		keyed[keyStr] = m
	}
	if a.keyed {
		out["buckets"] = keyed
	} else {
		out["buckets"] = list
	}
}

func (a *aggSpec) formatKey(ms int64) string {
	tm := time.UnixMilli(ms)
	switch a.layout {
	case "epoch_millis":
		return strconv.FormatInt(ms, 10)
	case "epoch_second":
		return strconv.FormatInt(tm.Unix(), 10)
	}
	if a.layout != "" {
		return tm.In(a.format.loc).Format(a.layout)
	}
	if a.format != nil && a.format.loc != time.UTC {
		return tm.In(a.format.loc).Format("2006-01-02T15:04:05.000Z07:00")
	}
	return formatDate(tm)
}
