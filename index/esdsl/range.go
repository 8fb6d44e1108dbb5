package esdsl

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

type rangeBounds struct {
	lower, upper       json.RawMessage
	inclLower, inclUpp bool
	format, timeZone   string
	relation           string
}

// bound stores a bound and whether it includes its value; a null bound is
// no bound, as Elasticsearch treats it.
func bound(dst *json.RawMessage, incl *bool, inclusive bool) param {
	return func(v json.RawMessage, _ string) error {
		if kind(v) == 'z' {
			return nil
		}
		*dst, *incl = v, inclusive
		return nil
	}
}

func (t *translator) rangeQuery(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "range")
	if err != nil {
		return nil, err
	}
	field, v, _, err := fieldAndParams(o, "range")
	if err != nil {
		return nil, err
	}
	p, err := asObject(v, "range."+field)
	if err != nil {
		return nil, err
	}
	c := newCommon()
	rb := rangeBounds{inclLower: true, inclUpp: true}
	ps := params{
		"gt":            bound(&rb.lower, &rb.inclLower, false),
		"gte":           bound(&rb.lower, &rb.inclLower, true),
		"from":          bound(&rb.lower, &rb.inclLower, true),
		"lt":            bound(&rb.upper, &rb.inclUpp, false),
		"lte":           bound(&rb.upper, &rb.inclUpp, true),
		"to":            bound(&rb.upper, &rb.inclUpp, true),
		"include_lower": nullable(boolParam(&rb.inclLower)),
		"include_upper": nullable(boolParam(&rb.inclUpp)),
		"format":        strParam(&rb.format),
		"time_zone":     strParam(&rb.timeZone),
		"relation": checked(strParam(&rb.relation), func(string) error {
			switch strings.ToLower(rb.relation) {
			case "intersects", "within", "contains":
				return nil
			}
			return argErr("[range] relation [%s] is not supported; use intersects, within or contains", rb.relation)
		}),
	}
	if err := ps.read(p, "range", &c); err != nil {
		return nil, err
	}
	for _, b := range []json.RawMessage{rb.lower, rb.upper} {
		if b != nil {
			if k := kind(b); k != 's' && k != 'n' && k != 'b' {
				return nil, parsingErr("[range] bound for field [%s] must be a string or number, got %s", field, kindName(k))
			}
		}
	}
	q, err := t.buildRange(field, rb)
	if err != nil {
		return nil, err
	}
	return t.apply(q, c), nil
}

// nullable skips a null value (the parameter keeps its default).
func nullable(p param) param {
	return func(v json.RawMessage, where string) error {
		if kind(v) == 'z' {
			return nil
		}
		return p(v, where)
	}
}

func (t *translator) buildRange(field string, rb rangeBounds) (query.Query, error) {
	ft := t.fieldType(field)
	if rb.lower == nil && rb.upper == nil {
		return t.existsField(field)
	}
	if ft == "" {
		// Unmapped: guess from the values so the (empty) answer is quick.
		if kind(rb.lower) == 'n' || kind(rb.upper) == 'n' {
			ft = "double"
		}
	}
	switch {
	case ft == index.TypeIP:
		return t.ipRange(field, rb)
	case index.IsRange(ft):
		return t.rangeFieldRange(field, ft, rb)
	case isNumeric(ft):
		var lo, hi *float64
		for i, b := range []json.RawMessage{rb.lower, rb.upper} {
			if b == nil {
				continue
			}
			f, err := asFloat(b, "range."+field)
			if err != nil {
				return nil, shardErr("failed to create query: range bound for numeric field [%s] is not a number", field)
			}
			if i == 0 {
				lo = &f
			} else {
				hi = &f
			}
		}
		q := query.NewNumericRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
		q.SetField(field)
		return q, nil
	case ft == "date":
		dp, err := t.dateParserFor(field, rb.format, rb.timeZone)
		if err != nil {
			return nil, err
		}
		var lo, hi time.Time
		for i, b := range []json.RawMessage{rb.lower, rb.upper} {
			if b == nil {
				continue
			}
			s, err := asScalarString(b, "range."+field)
			if err != nil {
				return nil, err
			}
			// gt and lte round up, gte and lt round down (Elasticsearch's rule).
			roundUp := (i == 0 && !rb.inclLower) || (i == 1 && rb.inclUpp)
			tm, err := dp.parse(s, kind(b) == 'n', roundUp)
			if err != nil {
				return nil, err
			}
			if err := checkDateRange(tm, field); err != nil {
				return nil, err
			}
			if i == 0 {
				lo = tm
			} else {
				hi = tm
			}
		}
		q := query.NewDateRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		return nil, argErr("[range] on boolean field [%s] is not supported; use a term query", field)
	}
	var lo, hi string
	for i, b := range []json.RawMessage{rb.lower, rb.upper} {
		if b == nil {
			continue
		}
		s, err := asScalarString(b, "range."+field)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			lo = s
		} else {
			hi = s
		}
	}
	q := query.NewTermRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
	q.SetField(field)
	return q, nil
}
