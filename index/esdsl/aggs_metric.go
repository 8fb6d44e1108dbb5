package esdsl

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"
	"github.com/influxdata/tdigest"

	"github.com/weftsearch/weft/index"
)

// Metric aggregations: avg, sum, min, max, stats, extended_stats and
// value_count from counts and sums; cardinality from a HyperLogLog++
// sketch; percentiles from a t-digest. Their partials merge exactly
// (counts, sums, extremes, sketch registers) or, for the t-digest, as
// Elasticsearch merges them (centroids).

// metricSource is how a metric reads its field: the values of a document,
// or the "missing" value for a document without any.
type metricSource struct {
	missing    *float64
	missingStr string
	format     *dateParser // dates: how value_as_string prints
	layout     string
	numFormat  string // numbers: DecimalFormat pattern for value_as_string
}

// parseSource reads the keys every metric shares; ok is false for a key
// that is not one of them.
func (m *metricSource) parseKey(a *aggSpec, t *translator, k string, v json.RawMessage) (bool, error) {
	switch k {
	case "field":
		return true, nil
	case "missing":
		if kind(v) == 's' {
			s, _ := asString(v, a.where()+".missing")
			if a.ftype == "date" {
				dp, err := t.dateParserFor(a.field, "", "")
				if err != nil {
					return true, err
				}
				tm, err := dp.parse(s, false, false)
				if err != nil {
					return true, err
				}
				f := float64(tm.UnixMilli())
				m.missing = &f
				return true, nil
			}
			m.missingStr = s
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				m.missing = &f
			}
			return true, nil
		}
		if kind(v) == 'b' {
			b, _ := asBool(v, "")
			f := 0.0
			if b {
				f = 1
			}
			m.missing = &f
			m.missingStr = strconv.FormatBool(b)
			return true, nil
		}
		f, err := asFloat(v, a.where()+".missing")
		if err != nil {
			return true, err
		}
		m.missing = &f
		m.missingStr = javaDouble(f)
		return true, nil
	case "format":
		s, err := asString(v, a.where()+".format")
		if err != nil {
			return true, err
		}
		if a.ftype == "date" {
			dp, err := newDateParser(s, "", t.now)
			if err != nil {
				return true, err
			}
			m.format, m.layout = dp, dp.df.Layout()
		} else {
			m.numFormat = s
		}
		return true, nil
	case "value_type":
		_, err := asString(v, a.where()+"."+k)
		return true, err
	case "script":
		return true, aggErr("[%s] scripts are not supported; name a field", a.where())
	}
	return false, nil
}

// dateFormat sets the default value_as_string format of a date field.
func (m *metricSource) dateFormat(a *aggSpec, t *translator) error {
	if a.ftype != "date" || m.format != nil {
		return nil
	}
	dp, err := t.dateParserFor(a.field, "", "")
	if err != nil {
		return err
	}
	m.format, m.layout = dp, dp.df.Layout()
	return nil
}

// numbers calls fn with each numeric value of the document (the missing
// value when it has none).
func (m *metricSource) numbers(a *aggSpec, d *index.MatchedDoc, fn func(float64)) {
	if a.slot >= 0 && d.Kind(a.slot) == index.KindNumber {
		if vs := d.Numbers(a.slot); len(vs) > 0 {
			for _, v := range vs {
				fn(v)
			}
			return
		}
	}
	if m.missing != nil {
		fn(*m.missing)
	}
}

// values calls fn with each value of the document as text, whatever the
// field's kind (the missing value when it has none).
func (m *metricSource) values(a *aggSpec, d *index.MatchedDoc, fn func(string)) {
	if a.slot >= 0 {
		switch d.Kind(a.slot) {
		case index.KindNumber:
			if vs := d.Numbers(a.slot); len(vs) > 0 {
				for _, v := range vs {
					fn(strconv.FormatFloat(v, 'g', -1, 64))
				}
				return
			}
		case index.KindString:
			if vs := d.Strings(a.slot); len(vs) > 0 {
				for _, v := range vs {
					fn(v)
				}
				return
			}
		}
	}
	switch {
	case m.missing != nil && a.ftype != "keyword" && a.ftype != "ip":
		fn(strconv.FormatFloat(*m.missing, 'g', -1, 64))
	case m.missingStr != "":
		fn(m.missingStr)
	}
}

// asString renders a metric value's value_as_string (ok false: none).
func (m *metricSource) asString(f float64) (string, bool) {
	switch {
	case m.format != nil:
		return formatMillis(int64(f), m.format, m.layout), true
	case m.numFormat != "":
		return decimalFormat(m.numFormat, f), true
	}
	return "", false
}

// numericOnly refuses fields whose values are not numbers.
func numericOnly(a *aggSpec) error {
	if a.ftype == "" || isNumeric(a.ftype) || a.ftype == "date" || a.ftype == "boolean" {
		return nil
	}
	return aggErr("Field [%s] of type [%s] is not supported for aggregation [%s]", a.field, a.ftype, a.typ)
}

// ---- avg, sum, min, max, stats, extended_stats, value_count ----

type metricAgg struct {
	src   metricSource
	sigma float64
}

func (m *metricAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	m.sigma = 2
	for _, k := range p.sortedKeys() {
		ok, err := m.src.parseKey(a, t, k, p[k])
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if k == "sigma" && a.typ == "extended_stats" {
			if m.sigma, err = asFloat(p[k], a.where()+".sigma"); err == nil && m.sigma < 0 {
				err = argErr("[sigma] must be greater than or equal to 0. Found [%v] in [%s]", m.sigma, a.name)
			}
			if err != nil {
				return err
			}
			continue
		}
		return parsingErr("[%s] unknown key [%s]", a.where(), k)
	}
	if a.typ != "value_count" {
		if err := numericOnly(a); err != nil {
			return err
		}
	}
	return m.src.dateFormat(a, t)
}

func (m *metricAgg) typedName(a *aggSpec) string { return a.typ }

type metricCollector struct {
	a *aggSpec
	m *metricAgg
	p AggPartial
}

func (m *metricAgg) newCollector(a *aggSpec) aggCollector {
	return &metricCollector{a: a, m: m, p: AggPartial{Min: math.Inf(1), Max: math.Inf(-1)}}
}

func (c *metricCollector) collect(d *index.MatchedDoc) error {
	if c.a.typ == "value_count" {
		c.m.src.values(c.a, d, func(string) { c.p.Count++ })
		return nil
	}
	c.m.src.numbers(c.a, d, func(v float64) {
		c.p.Count++
		c.p.Sum += v
		c.p.SumSq += v * v
		c.p.Min = math.Min(c.p.Min, v)
		c.p.Max = math.Max(c.p.Max, v)
	})
	return nil
}

func (c *metricCollector) finish(*index.Snapshot) error { return nil }

func (c *metricCollector) partial() *AggPartial {
	p := c.p
	if math.IsInf(p.Min, 1) { // no values (or value_count, which keeps none)
		p.Min, p.Max = 0, 0
	}
	return &p
}

func (m *metricAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	out := &AggPartial{}
	for _, p := range parts {
		if p.Count == 0 {
			continue
		}
		if out.Count == 0 {
			out.Min, out.Max = p.Min, p.Max
		}
		out.Count += p.Count
		out.Sum += p.Sum
		out.SumSq += p.SumSq
		out.Min = math.Min(out.Min, p.Min)
		out.Max = math.Max(out.Max, p.Max)
	}
	return out
}

// stats returns every value a metric can report, nil for none.
func (m *metricAgg) stats(p *AggPartial) map[string]*float64 {
	n := float64(p.Count)
	v := func(f float64) *float64 { return &f }
	out := map[string]*float64{"count": v(n), "sum": v(p.Sum), "sum_of_squares": v(p.SumSq)}
	if p.Count == 0 {
		for _, k := range []string{"min", "max", "avg", "variance", "variance_population", "variance_sampling",
			"std_deviation", "std_deviation_population", "std_deviation_sampling"} {
			out[k] = nil
		}
		return out
	}
	avg := p.Sum / n
	varPop := math.Max(0, p.SumSq/n-avg*avg)
	varSample := math.NaN()
	if p.Count > 1 {
		varSample = math.Max(0, (p.SumSq-n*avg*avg)/(n-1))
	}
	out["min"], out["max"], out["avg"] = v(p.Min), v(p.Max), v(avg)
	out["variance"], out["variance_population"] = v(varPop), v(varPop)
	out["std_deviation"], out["std_deviation_population"] = v(math.Sqrt(varPop)), v(math.Sqrt(varPop))
	if !math.IsNaN(varSample) {
		out["variance_sampling"], out["std_deviation_sampling"] = v(varSample), v(math.Sqrt(varSample))
	} else {
		out["variance_sampling"], out["std_deviation_sampling"] = nil, nil
	}
	return out
}

func (m *metricAgg) value(a *aggSpec, p *AggPartial, prop string) (float64, bool) {
	st := m.stats(p)
	if prop == "" || prop == "value" {
		switch a.typ {
		case "avg":
			prop = "avg"
		case "sum":
			prop = "sum"
		case "min":
			prop = "min"
		case "max":
			prop = "max"
		case "value_count":
			prop = "count"
		}
	}
	if f, ok := st[prop]; ok && f != nil {
		return *f, true
	}
	return 0, false
}

func (m *metricAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	st := m.stats(p)
	val := func(k string) any {
		if f := st[k]; f != nil {
			return *f
		}
		return nil
	}
	out := map[string]any{}
	withString := func(key string, f *float64) {
		if f == nil {
			return
		}
		if s, ok := m.src.asString(*f); ok {
			out[key+"_as_string"] = s
		}
	}
	switch a.typ {
	case "value_count":
		out["value"] = p.Count
	case "avg", "sum", "min", "max":
		k := a.typ
		out["value"] = val(k)
		withString("value", st[k])
	default:
		out["count"] = p.Count
		for _, k := range []string{"min", "max", "avg", "sum"} {
			out[k] = val(k)
			withString(k, st[k])
		}
		if a.typ == "extended_stats" {
			for _, k := range []string{"sum_of_squares", "variance", "variance_population", "variance_sampling",
				"std_deviation", "std_deviation_population", "std_deviation_sampling"} {
				out[k] = val(k)
			}
			bounds := map[string]any{}
			for suffix, sd := range map[string]string{"": "std_deviation", "_population": "std_deviation_population", "_sampling": "std_deviation_sampling"} {
				avg, dev := st["avg"], st[sd]
				if avg == nil || dev == nil {
					bounds["upper"+suffix], bounds["lower"+suffix] = nil, nil
					continue
				}
				bounds["upper"+suffix] = *avg + m.sigma**dev
				bounds["lower"+suffix] = *avg - m.sigma**dev
			}
			out["std_deviation_bounds"] = bounds
		}
	}
	return out, nil
}

// ---- cardinality ----

type cardinalityAgg struct {
	src metricSource
}

func (c *cardinalityAgg) typedName(*aggSpec) string { return "cardinality" }

func (c *cardinalityAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	for _, k := range p.sortedKeys() {
		ok, err := c.src.parseKey(a, t, k, p[k])
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		switch k {
		case "precision_threshold":
			n, err := asInt(p[k], a.where()+"."+k)
			if err != nil {
				return err
			}
			if n < 0 {
				return argErr("[precisionThreshold] must be greater than or equal to 0. Found [%d] in [%s]", n, a.name)
			}
		case "execution_hint", "rehash":
		default:
			return a.unknownKey(k)
		}
	}
	return nil
}

type cardinalityCollector struct {
	a      *aggSpec
	c      *cardinalityAgg
	sketch *hyperloglog.Sketch
}

func (c *cardinalityAgg) newCollector(a *aggSpec) aggCollector {
	return &cardinalityCollector{a: a, c: c, sketch: hyperloglog.New14()}
}

func (cc *cardinalityCollector) collect(d *index.MatchedDoc) error {
	cc.c.src.values(cc.a, d, func(v string) { cc.sketch.Insert([]byte(v)) })
	return nil
}

func (cc *cardinalityCollector) finish(*index.Snapshot) error { return nil }

func (cc *cardinalityCollector) partial() *AggPartial {
	raw, err := cc.sketch.MarshalBinary()
	if err != nil {
		return &AggPartial{}
	}
	return &AggPartial{Sketch: raw}
}

func (c *cardinalityAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	out := hyperloglog.New14()
	for _, p := range parts {
		if len(p.Sketch) == 0 {
			continue
		}
		s := hyperloglog.New14()
		if s.UnmarshalBinary(p.Sketch) == nil {
			_ = out.Merge(s)
		}
	}
	raw, err := out.MarshalBinary()
	if err != nil {
		return &AggPartial{}
	}
	return &AggPartial{Sketch: raw}
}

func (c *cardinalityAgg) estimate(p *AggPartial) float64 {
	s := hyperloglog.New14()
	if len(p.Sketch) == 0 || s.UnmarshalBinary(p.Sketch) != nil {
		return 0
	}
	return float64(s.Estimate())
}

func (c *cardinalityAgg) value(a *aggSpec, p *AggPartial, _ string) (float64, bool) {
	return c.estimate(p), true
}

func (c *cardinalityAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	return map[string]any{"value": int64(c.estimate(p))}, nil
}

// ---- percentiles ----

// centroid is one t-digest centroid in a partial.
type centroid struct {
	Mean   float64 `json:"m"`
	Weight float64 `json:"w"`
}

type percentilesAgg struct {
	src         metricSource
	percents    []float64
	compression float64
	keyed       bool
}

var defaultPercents = []float64{1, 5, 25, 50, 75, 95, 99}

func (pa *percentilesAgg) typedName(*aggSpec) string { return "tdigest_percentiles" }

func (pa *percentilesAgg) parse(a *aggSpec, p object, t *translator) error {
	if err := a.fieldOf(p, t, true); err != nil {
		return err
	}
	pa.percents, pa.compression, pa.keyed = defaultPercents, 100, true
	for _, k := range p.sortedKeys() {
		v := p[k]
		ok, err := pa.src.parseKey(a, t, k, v)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		switch k {
		case "percents":
			if kind(v) != 'a' {
				return argErr("[percents] must be a non-empty array of numbers in [%s]", a.name)
			}
			list := decodeArray(v)
			if len(list) == 0 {
				return argErr("[percents] must not be empty in [%s]", a.name)
			}
			pa.percents = nil
			for _, e := range list {
				f, err := asFloat(e, a.where()+".percents")
				if err != nil {
					return err
				}
				if f < 0 || f > 100 {
					return argErr("percent must be in [0,100], got [%v]: [%s]", f, a.name)
				}
				pa.percents = append(pa.percents, f)
			}
		case "keyed":
			if pa.keyed, err = asBool(v, a.where()+".keyed"); err != nil {
				return err
			}
		case "tdigest":
			o, err := asObject(v, a.where()+".tdigest")
			if err != nil {
				return err
			}
			for _, tk := range o.sortedKeys() {
				switch tk {
				case "compression":
					if pa.compression, err = asFloat(o[tk], a.where()+".tdigest.compression"); err != nil {
						return err
					}
					if pa.compression < 0 {
						return argErr("[compression] must be greater than or equal to 0. Found [%s] in [%s]", javaDouble(pa.compression), a.name)
					}
				case "execution_hint":
				default:
					return parsingErr("[%s.tdigest] unknown key [%s]", a.where(), tk)
				}
			}
		case "hdr":
			return aggErr("[%s] the hdr histogram method is not supported; use the default tdigest", a.where())
		default:
			return a.unknownKey(k)
		}
	}
	if err := numericOnly(a); err != nil {
		return err
	}
	return pa.src.dateFormat(a, t)
}

type percentilesCollector struct {
	a  *aggSpec
	pa *percentilesAgg
	td *tdigest.TDigest
	n  int
}

func (pa *percentilesAgg) newCollector(a *aggSpec) aggCollector {
	return &percentilesCollector{a: a, pa: pa, td: tdigest.NewWithCompression(math.Max(pa.compression, 1))}
}

func (pc *percentilesCollector) collect(d *index.MatchedDoc) error {
	pc.pa.src.numbers(pc.a, d, func(v float64) {
		pc.td.Add(v, 1)
		pc.n++
	})
	return nil
}

func (pc *percentilesCollector) finish(*index.Snapshot) error { return nil }

func (pc *percentilesCollector) partial() *AggPartial {
	return &AggPartial{Digest: centroidsOf(pc.td)}
}

func centroidsOf(td *tdigest.TDigest) []centroid {
	cs := td.Centroids()
	out := make([]centroid, len(cs))
	for k, c := range cs {
		out[k] = centroid{Mean: c.Mean, Weight: c.Weight}
	}
	return out
}

func (pa *percentilesAgg) digest(parts ...*AggPartial) *tdigest.TDigest {
	td := tdigest.NewWithCompression(math.Max(pa.compression, 1))
	for _, p := range parts {
		list := make(tdigest.CentroidList, len(p.Digest))
		for k, c := range p.Digest {
			list[k] = tdigest.Centroid{Mean: c.Mean, Weight: c.Weight}
		}
		td.AddCentroidList(list)
	}
	return td
}

func (pa *percentilesAgg) reduce(a *aggSpec, parts []*AggPartial) *AggPartial {
	return &AggPartial{Digest: centroidsOf(pa.digest(parts...))}
}

func (pa *percentilesAgg) value(a *aggSpec, p *AggPartial, prop string) (float64, bool) {
	if len(p.Digest) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(prop, ".0"), 64)
	if err != nil {
		return 0, false
	}
	return pa.digest(p).Quantile(f / 100), true
}

func (pa *percentilesAgg) render(a *aggSpec, p *AggPartial, r *aggRenderer) (map[string]any, error) {
	td := pa.digest(p)
	empty := len(p.Digest) == 0
	keyed := map[string]any{}
	var list []any
	for _, pct := range pa.percents {
		var v any
		if !empty {
			v = td.Quantile(pct / 100)
		}
		key := javaDouble(pct)
		if pa.keyed {
			keyed[key] = v
			if f, ok := v.(float64); ok {
				if s, ok := pa.src.asString(f); ok {
					keyed[key+"_as_string"] = s
				}
			}
			continue
		}
		e := map[string]any{"key": pct, "value": v}
		if f, ok := v.(float64); ok {
			if s, ok := pa.src.asString(f); ok {
				e["value_as_string"] = s
			}
		}
		list = append(list, e)
	}
	if pa.keyed {
		return map[string]any{"values": keyed}, nil
	}
	return map[string]any{"values": list}, nil
}

// ---- shared formatting ----

// formatMillis prints epoch milliseconds in a date format's first layout,
// in its time zone.
func formatMillis(ms int64, dp *dateParser, layout string) string {
	tm := time.UnixMilli(ms)
	switch layout {
	case "epoch_millis":
		return strconv.FormatInt(ms, 10)
	case "epoch_second":
		return strconv.FormatInt(tm.Unix(), 10)
	}
	if layout != "" {
		return tm.In(dp.loc).Format(layout)
	}
	if dp != nil && dp.loc != time.UTC {
		return tm.In(dp.loc).Format("2006-01-02T15:04:05.000Z07:00")
	}
	return formatDate(tm)
}

// javaDouble formats f as Java's Double.toString does for the common cases
// ("100.0", "2.5"), which Elasticsearch uses in range and percentile keys.
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
