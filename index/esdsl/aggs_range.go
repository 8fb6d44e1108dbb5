package esdsl

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/weftsearch/weft/index"
)

// range and date_range: one bucket per [from, to) range given in the
// request; a document counts once in every range one of its values falls
// in. Buckets are identified by their position in the response order.

type rangeAgg struct {
	dates   bool
	keyed   bool
	ranges  []aggRange
	missing *float64
	format  *dateParser
	layout  string
}

type aggRange struct {
	key            string
	from, to       *float64
	fromStr, toStr string
}

func (ra *rangeAgg) typedName(a *aggSpec) string {
	if ra.dates {
		return "date_range"
	}
	return "range"
}

func (ra *rangeAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	ra.dates = a.typ == "date_range" || a.ftype == "date"
	if a.ftype != "" && !isNumeric(a.ftype) && a.ftype != "date" {
		return aggErr("Field [%s] of type [%s] is not supported for aggregation [%s]", a.field, a.ftype, a.typ)
	}
	format, tz := "", ""
	var rangesRaw, missRaw json.RawMessage
	for _, k := range p.sortedKeys() {
		v := p[k]
		var err error
		switch k {
		case "field":
		case "ranges":
			rangesRaw = v
		case "keyed":
			ra.keyed, err = asBool(v, a.where()+".keyed")
		case "format":
			format, err = asString(v, a.where()+".format")
		case "time_zone":
			tz, err = asString(v, a.where()+".time_zone")
		case "missing":
			missRaw = v
		default:
			err = a.unknownKey(k)
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
		return argErr("No [ranges] specified for the [%s] aggregation", a.name)
	}
	if len(entries) > maxBuckets {
		return tooManyBuckets()
	}
	dp, err := t.dateParserFor(a.field, format, tz)
	if err != nil {
		return err
	}
	ra.format, ra.layout = dp, dp.df.Layout()
	conv := func(v json.RawMessage, what string) (float64, error) {
		if !ra.dates {
			return asFloat(v, what)
		}
		s, err := asScalarString(v, what)
		if err != nil {
			return 0, err
		}
		tm, err := dp.parse(s, kind(v) == 'n', false)
		if err != nil {
			return 0, err
		}
		return float64(tm.UnixMilli()), nil
	}
	if missRaw != nil {
		f, err := conv(missRaw, a.where()+".missing")
		if err != nil {
			return err
		}
		ra.missing = &f
	}
	for _, e := range entries {
		ro, err := asObject(e, a.where()+".ranges")
		if err != nil {
			return err
		}
		var r aggRange
		hasKey := false
		for _, k := range ro.sortedKeys() {
			v := ro[k]
			switch k {
			case "key":
				if r.key, err = asScalarString(v, a.where()+".ranges.key"); err != nil {
					return err
				}
				hasKey = true
			case "from", "to":
				if kind(v) == 'z' {
					continue
				}
				f, err := conv(v, a.where()+".ranges."+k)
				if err != nil {
					return err
				}
				if k == "from" {
					r.from = &f
				} else {
					r.to = &f
				}
			default:
				return parsingErr("[%s] unknown key [%s] in a range; use from, to and key", a.where(), k)
			}
		}
		r.fromStr, r.toStr = "*", "*"
		if r.from != nil {
			r.fromStr = ra.str(*r.from)
		}
		if r.to != nil {
			r.toStr = ra.str(*r.to)
		}
		if !hasKey {
			r.key = r.fromStr + "-" + r.toStr
		}
		ra.ranges = append(ra.ranges, r)
	}
	// Elasticsearch orders range buckets by from, then to.
	sort.SliceStable(ra.ranges, func(i, j int) bool {
		fi, fj := boundOr(ra.ranges[i].from, math.Inf(-1)), boundOr(ra.ranges[j].from, math.Inf(-1))
		if fi != fj {
			return fi < fj
		}
		return boundOr(ra.ranges[i].to, math.Inf(1)) < boundOr(ra.ranges[j].to, math.Inf(1))
	})
	return nil
}

func (ra *rangeAgg) str(f float64) string {
	if ra.dates {
		return formatMillis(int64(f), ra.format, ra.layout)
	}
	return javaDouble(f)
}

func boundOr(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

func (r aggRange) holds(v float64) bool {
	return (r.from == nil || v >= *r.from) && (r.to == nil || v < *r.to)
}

type rangeCollector struct {
	a       *aggSpec
	ra      *rangeAgg
	buckets []*bucketCollector
}

func (ra *rangeAgg) newCollector(a *aggSpec) aggCollector {
	rc := &rangeCollector{a: a, ra: ra, buckets: make([]*bucketCollector, len(ra.ranges))}
	for k := range rc.buckets {
		rc.buckets[k] = newBucket(a.subs)
	}
	return rc
}

func (rc *rangeCollector) collect(d *index.MatchedDoc) error {
	var vals []float64
	if rc.a.slot >= 0 && d.Kind(rc.a.slot) == index.KindNumber {
		vals = d.Numbers(rc.a.slot)
	}
	if len(vals) == 0 && rc.ra.missing != nil {
		vals = []float64{*rc.ra.missing}
	}
	for k, r := range rc.ra.ranges {
		for _, v := range vals {
			if r.holds(v) {
				if err := rc.buckets[k].add(d); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

func (rc *rangeCollector) finish(snap *index.Snapshot) error {
	for _, b := range rc.buckets {
		if err := finishAll(b.subs, snap); err != nil {
			return err
		}
	}
	return nil
}

func (rc *rangeCollector) partial() *AggPartial {
	out := &AggPartial{}
	for k, b := range rc.buckets {
		out.Buckets = append(out.Buckets, &AggBucket{Num: float64(k), DocCount: b.docCount, Sub: partialsOf(rc.a.subs, b.subs)})
	}
	return out
}

func (ra *rangeAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	return &AggPartial{Buckets: mergeBuckets(a.subs, bucketLists(parts)...)}
}

func (ra *rangeAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	byPos := map[int]*AggBucket{}
	for _, b := range p.Buckets {
		byPos[int(b.Num)] = b
	}
	list := []any{}
	keyed := map[string]any{}
	for k, rg := range ra.ranges {
		b := byPos[k]
		if b == nil {
			b = &AggBucket{Num: float64(k), Sub: reduceAll(a.subs, nil)}
		}
		fields := map[string]any{}
		if !ra.keyed {
			fields["key"] = rg.key
		}
		if rg.from != nil {
			fields["from"] = *rg.from
			if ra.dates {
				fields["from_as_string"] = rg.fromStr
			}
		}
		if rg.to != nil {
			fields["to"] = *rg.to
			if ra.dates {
				fields["to_as_string"] = rg.toStr
			}
		}
		m, err := r.bucket(a.subs, b, fields)
		if err != nil {
			return nil, err
		}
		list = append(list, m)
		keyed[rg.key] = m
	}
	if ra.keyed {
		return map[string]any{"buckets": keyed}, nil
	}
	return map[string]any{"buckets": list}, nil
}
