package esdsl

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/weftsearch/weft/index"
)

// histogram and date_histogram: one bucket per interval that holds a value.
// Shards count the buckets their documents fall in; the coordinating node
// merges them and, with min_doc_count 0 (the default), adds the empty
// buckets between the first and last (or extended_bounds).

type histogramAgg struct {
	dates bool
	// legacyInterval accepts "interval" (composite sources still do).
	legacyInterval bool
	interval       float64 // histogram interval; date_histogram fixed interval in ms
	cal            byte    // date_histogram calendar unit ('m', 'h', 'd', 'w', 'M', 'q', 'y'); 0: fixed
	offset         float64 // in the key's unit (ms for dates)
	minCount       int64
	keyed          bool
	orderKey       string // "_key" or "_count"
	desc           bool
	ext            []float64 // extended_bounds (as values)
	hard           []float64 // hard_bounds
	missing        *float64
	format         *dateParser
	layout         string
	numFmt         string
	loc            *time.Location
}

func (h *histogramAgg) typedName(a *aggSpec) string {
	if h.dates {
		return "date_histogram"
	}
	return "histogram"
}

var calendarUnits = map[string]byte{
	"minute": 'm', "1m": 'm', "hour": 'h', "1h": 'h', "day": 'd', "1d": 'd', "week": 'w', "1w": 'w',
	"month": 'M', "1M": 'M', "quarter": 'q', "1q": 'q', "year": 'y', "1y": 'y',
}

func (h *histogramAgg) parse(a *aggSpec, p object, t *translator) error {
	h.dates = a.typ == "date_histogram"
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	if h.dates && a.ftype != "" && a.ftype != "date" && a.ftype != index.TypeDateRange {
		return aggErr("Field [%s] of type [%s] is not supported for aggregation [date_histogram]", a.field, a.ftype)
	}
	if !h.dates && a.ftype != "" && !isNumeric(a.ftype) && a.ftype != "date" && a.ftype != "boolean" && (!a.ranged || a.ftype == index.TypeDateRange) {
		return aggErr("Field [%s] of type [%s] is not supported for aggregation [histogram]", a.field, a.ftype)
	}
	h.orderKey = "_key"
	format, tz := "", ""
	var extRaw, hardRaw, offRaw, missRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "field":
		case "keyed":
			h.keyed, err = asBool(v, a.where()+".keyed")
		case "min_doc_count":
			var n int
			if n, err = asInt(v, a.where()+".min_doc_count"); err == nil && n < 0 {
				err = argErr("[min_doc_count] must be greater than or equal to 0. Found [%d] in [%s]", n, a.name)
			}
			h.minCount = int64(n)
		case "order":
			err = h.parseOrder(v, a)
		case "extended_bounds":
			extRaw = v
		case "hard_bounds":
			hardRaw = v
		case "offset":
			offRaw = v
		case "missing":
			missRaw = v
		case "format":
			format, err = asString(v, a.where()+".format")
		case "time_zone":
			if !h.dates {
				return parsingErr("[%s] unknown key [%s]", a.where(), k)
			}
			tz, err = asString(v, a.where()+".time_zone")
		case "interval":
			if h.dates && !h.legacyInterval {
				err = argErr("[%s] [interval] was removed in Elasticsearch 8; use fixed_interval or calendar_interval", a.where())
			} else if h.dates {
				err = h.parseDateInterval(v, a, "any")
			} else if h.interval, err = asFloat(v, a.where()+".interval"); err == nil && !(h.interval > 0) {
				err = argErr("[interval] must be >0 for histogram aggregation [%s]", a.name)
			}
		case "fixed_interval", "calendar_interval":
			if !h.dates {
				return parsingErr("[%s] unknown key [%s]", a.where(), k)
			}
			mode := "fixed"
			if k == "calendar_interval" {
				mode = "calendar"
			}
			err = h.parseDateInterval(v, a, mode)
		default:
			err = a.unknownKey(k)
		}
		if err != nil {
			return err
		}
	}
	if h.interval == 0 && h.cal == 0 {
		if h.dates {
			return argErr("Invalid interval specified, must be non-null and non-empty")
		}
		return argErr("[interval] must be >0 for histogram aggregation [%s]", a.name)
	}
	if h.dates {
		if format == "" {
			if df, ok := t.fields.(DateFormatter); ok {
				format = df.DateFormat(a.field)
			}
		}
		dp, err := newDateParser(format, tz, t.now)
		if err != nil {
			return err
		}
		h.format, h.layout, h.loc = dp, dp.df.Layout(), dp.loc
	} else {
		h.numFmt = format
	}
	conv := func(v json.RawMessage, what string) (float64, error) {
		if !h.dates {
			return asFloat(v, what)
		}
		s, err := asScalarString(v, what)
		if err != nil {
			return 0, err
		}
		tm, err := h.format.parse(s, kind(v) == 'n', false)
		if err != nil {
			return 0, err
		}
		return float64(tm.UnixMilli()), nil
	}
	var err error
	if offRaw != nil {
		if h.offset, err = h.parseOffset(offRaw, a); err != nil {
			return err
		}
	}
	if missRaw != nil {
		f, err := conv(missRaw, a.where()+".missing")
		if err != nil {
			return err
		}
		h.missing = &f
	}
	if extRaw != nil {
		lo, hi, err := bounds(a, extRaw, "extended_bounds", conv)
		if err != nil {
			return err
		}
		h.ext = []float64{lo, hi}
	}
	if hardRaw != nil {
		lo, hi, err := bounds(a, hardRaw, "hard_bounds", conv)
		if err != nil {
			return err
		}
		h.hard = []float64{lo, hi}
	}
	return nil
}

func (h *histogramAgg) parseOrder(v json.RawMessage, a *aggSpec) error {
	o, err := asObject(v, a.where()+".order")
	if err != nil {
		return err
	}
	k, d, err := o.single(a.where() + ".order")
	if err != nil {
		return err
	}
	dir, err := asString(d, a.where()+".order."+k)
	if err != nil {
		return err
	}
	if k != "_key" && k != "_count" {
		return aggErr("[%s] order by [%s] is not supported; use _key or _count", a.where(), k)
	}
	if dir != "asc" && dir != "desc" {
		return parsingErr("Unknown order direction [%s]; use asc or desc", dir)
	}
	h.orderKey, h.desc = k, dir == "desc"
	return nil
}

// parseDateInterval reads a date interval: mode "calendar"
// (calendar_interval), "fixed" (fixed_interval) or "any" (the legacy
// interval, still taken in composite sources).
func (h *histogramAgg) parseDateInterval(v json.RawMessage, a *aggSpec, mode string) error {
	s, err := asString(v, a.where()+"."+mode+"_interval")
	if err != nil {
		return err
	}
	if u, ok := calendarUnits[s]; ok && mode != "fixed" {
		h.cal = u
		return nil
	}
	if mode == "calendar" {
		return argErr("The supplied interval [%s] could not be parsed as a calendar interval.", s)
	}
	if strings.ContainsAny(s[len(s)-1:], "wMqy") {
		return argErr("failed to parse setting [date_histogram.fixedInterval] with value [%s] as a time value: weeks, months, quarters and years are calendar units; use calendar_interval", s)
	}
	d, err := parseDuration(s, "fixed_interval")
	if err != nil || d < time.Millisecond {
		return argErr("failed to parse setting [date_histogram.fixedInterval] with value [%s] as a time value: unit is missing or unrecognized", s)
	}
	h.interval = float64(d.Milliseconds())
	return nil
}

// parseOffset reads offset: a number for histograms, a signed duration
// ("+1d", "-2h", "4h") for date histograms.
func (h *histogramAgg) parseOffset(v json.RawMessage, a *aggSpec) (float64, error) {
	if !h.dates {
		return asFloat(v, a.where()+".offset")
	}
	s, err := asScalarString(v, a.where()+".offset")
	if err != nil {
		return 0, err
	}
	sign := 1.0
	switch {
	case strings.HasPrefix(s, "-"):
		sign, s = -1, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	d, err := parseDuration(s, "offset")
	if err != nil {
		return 0, err
	}
	return sign * float64(d.Milliseconds()), nil
}

// bounds reads {"min": .., "max": ..} of extended_bounds / hard_bounds.
func bounds(a *aggSpec, v json.RawMessage, name string, conv func(json.RawMessage, string) (float64, error)) (float64, float64, error) {
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
		return 0, 0, argErr("[%s] min bound [%v] is greater than max bound [%v]", name, lo, hi)
	}
	return lo, hi, nil
}

// key returns the bucket key of a value.
func (h *histogramAgg) key(v float64) float64 {
	if !h.dates {
		return math.Floor((v-h.offset)/h.interval)*h.interval + h.offset
	}
	ms := int64(v) - int64(h.offset)
	tm := time.UnixMilli(ms).In(h.loc)
	var k time.Time
	switch h.cal {
	case 0:
		_, off := tm.Zone()
		local := ms + int64(off)*1000
		iv := int64(h.interval)
		k = time.UnixMilli(local - mod(local, iv) - int64(off)*1000)
	case 'q':
		y, m, _ := tm.Date()
		k = time.Date(y, m-(m-1)%3, 1, 0, 0, 0, 0, h.loc)
	default:
		k = truncateUnit(tm, h.cal)
	}
	return float64(k.UnixMilli() + int64(h.offset))
}

// next returns the key of the bucket after the one with key k.
func (h *histogramAgg) next(k float64) float64 {
	if !h.dates || h.cal == 0 {
		return k + h.interval
	}
	tm := time.UnixMilli(int64(k) - int64(h.offset)).In(h.loc)
	switch h.cal {
	case 'q':
		tm = tm.AddDate(0, 3, 0)
	default:
		tm = addUnit(tm, h.cal, 1)
	}
	return float64(tm.UnixMilli() + int64(h.offset))
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

type histogramCollector struct {
	a    *aggSpec
	h    *histogramAgg
	set  *bucketSet
	keys []float64
}

func (h *histogramAgg) newCollector(a *aggSpec) aggCollector {
	return &histogramCollector{a: a, h: h, set: newBucketSet(a.subs)}
}

func (h *histogramAgg) aggregatesRanges() {}

// rangeKeys adds the keys of the buckets the document's range overlaps
// (clipped to hard_bounds).
func (hc *histogramCollector) rangeKeys(d *index.MatchedDoc) error {
	if d.Kind(hc.a.slot) != index.KindNumber {
		return nil
	}
	los, his := d.Numbers(hc.a.slot), d.Numbers(hc.a.hiSlot)
	if len(los) == 0 || len(his) == 0 {
		return nil
	}
	if len(los) != 1 || len(his) != 1 {
		// Bounds are kept sorted per document, so the pairs are lost.
		return aggErr("[%s] a document holds several ranges in [%s]; Weft aggregates documents with one range each", hc.a.where(), hc.a.field)
	}
	lo, hi := los[0], his[0]
	if hc.h.hard != nil {
		lo, hi = math.Max(lo, hc.h.hard[0]), math.Min(hi, hc.h.hard[1])
	}
	for k := hc.h.key(lo); k <= hi; k = hc.h.next(k) {
		if len(hc.keys) >= maxBuckets {
			return tooManyBuckets()
		}
		hc.keys = append(hc.keys, k)
	}
	return nil
}

func (hc *histogramCollector) collect(d *index.MatchedDoc) error {
	hc.keys = hc.keys[:0]
	if hc.a.ranged {
		if err := hc.rangeKeys(d); err != nil {
			return err
		}
	} else if hc.a.slot >= 0 && d.Kind(hc.a.slot) == index.KindNumber {
		for _, v := range d.Numbers(hc.a.slot) {
			hc.keys = append(hc.keys, hc.h.key(v))
		}
	}
	if len(hc.keys) == 0 && hc.h.missing != nil {
		hc.keys = append(hc.keys, hc.h.key(*hc.h.missing))
	}
	// A document counts once in each bucket its values fall in.
	sort.Float64s(hc.keys)
	for k, key := range hc.keys {
		if k > 0 && key == hc.keys[k-1] {
			continue
		}
		if hc.h.hard != nil && (key < hc.h.key(hc.h.hard[0]) || key > hc.h.hard[1]) {
			continue
		}
		if err := hc.set.add("", key, d); err != nil {
			return err
		}
	}
	return nil
}

func (hc *histogramCollector) finish(snap *index.Snapshot) error { return hc.set.finish(snap) }

func (hc *histogramCollector) partial() *AggPartial { return &AggPartial{Buckets: hc.set.buckets()} }

func (h *histogramAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	return &AggPartial{Buckets: mergeBuckets(a.subs, bucketLists(parts)...)}
}

func (h *histogramAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	bs := append([]*AggBucket(nil), p.Buckets...)
	sortBucketsByKey(bs, false)
	if h.minCount == 0 {
		filled, err := h.fill(bs)
		if err != nil {
			return nil, err
		}
		bs = filled
	}
	switch {
	case h.orderKey == "_count":
		sort.SliceStable(bs, func(i, j int) bool {
			if bs[i].DocCount != bs[j].DocCount {
				return (bs[i].DocCount < bs[j].DocCount) != h.desc
			}
			return bs[i].Num < bs[j].Num
		})
	case h.desc:
		sortBucketsByKey(bs, true)
	}
	list := []any{}
	keyed := map[string]any{}
	for _, b := range bs {
		if b.DocCount < h.minCount {
			continue
		}
		fields := map[string]any{}
		var keyStr string
		if h.dates {
			ms := int64(b.Num)
			keyStr = formatMillis(ms, h.format, h.layout)
			fields["key"], fields["key_as_string"] = ms, keyStr
		} else {
			fields["key"] = b.Num
			keyStr = javaDouble(b.Num)
			if h.numFmt != "" {
				keyStr = decimalFormat(h.numFmt, b.Num)
				fields["key_as_string"] = keyStr
			}
		}
		m, err := r.bucket(a.subs, b, fields)
		if err != nil {
			return nil, err
		}
		list = append(list, m)
		keyed[keyStr] = m
	}
	if h.keyed {
		return map[string]any{"buckets": keyed}, nil
	}
	return map[string]any{"buckets": list}, nil
}

// fill adds the empty buckets between the first and last key, widened to
// extended_bounds and narrowed to hard_bounds.
func (h *histogramAgg) fill(bs []*AggBucket) ([]*AggBucket, error) {
	lo, hi, any := math.Inf(1), math.Inf(-1), false
	if len(bs) > 0 {
		lo, hi, any = bs[0].Num, bs[len(bs)-1].Num, true
	}
	if h.ext != nil {
		lo, hi, any = math.Min(lo, h.key(h.ext[0])), math.Max(hi, h.key(h.ext[1])), true
	}
	if h.hard != nil {
		lo, hi = math.Max(lo, h.key(h.hard[0])), math.Min(hi, h.hard[1])
	}
	if !any || lo > hi {
		return bs, nil
	}
	if !h.dates || h.cal == 0 {
		if n := (hi-lo)/h.interval + 1; n > maxBuckets {
			return nil, tooManyBuckets()
		}
	}
	have := map[float64]*AggBucket{}
	for _, b := range bs {
		have[b.Num] = b
	}
	var out []*AggBucket
	for k, n := lo, 0; k <= hi; k, n = h.next(k), n+1 {
		if n >= maxBuckets {
			return nil, tooManyBuckets()
		}
		if b, ok := have[k]; ok {
			out = append(out, b)
			delete(have, k)
			continue
		}
		out = append(out, &AggBucket{Num: k})
	}
	for _, b := range have { // keys off the interval grid (cannot happen) stay
		out = append(out, b)
	}
	sortBucketsByKey(out, false)
	return out, nil
}
