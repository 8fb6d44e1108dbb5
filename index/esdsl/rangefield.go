package esdsl

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// Queries on ip fields and on range fields (integer_range, date_range,
// ...). An ip field is a keyword term of the address's canonical form plus,
// for IPv4, its 32-bit value (index.IPv4Field), which CIDR blocks and range
// queries search. A range field is its inclusive bounds (index.RangeBounds);
// a term query matches ranges that contain the value, a range query ranges
// that intersect (default), lie within or contain the query's range.

// ipValue matches an ip field holding value: an address or a CIDR block.
func (t *translator) ipValue(field, value string) (query.Query, error) {
	if !strings.Contains(value, "/") {
		addr, err := index.ParseIP(value)
		if err != nil {
			return nil, shardErr("failed to create query: %v", err)
		}
		q := query.NewTermQuery(addr.String())
		q.SetField(field)
		return q, nil
	}
	lo, hi, v4, err := index.IPv4Range(value)
	if err != nil {
		return nil, shardErr("failed to create query: %v", err)
	}
	if !v4 {
		return nil, argErr("IPv6 CIDR block [%s] on field [%s] is not supported; query IPv6 addresses one by one", value, field)
	}
	return numRange(index.IPv4Field(field), &lo, &hi, true, true), nil
}

// ipRange is a range query on an ip field (IPv4 bounds).
func (t *translator) ipRange(field string, rb rangeBounds) (query.Query, error) {
	var lo, hi *float64
	for i, b := range []json.RawMessage{rb.lower, rb.upper} {
		if b == nil {
			continue
		}
		s, err := asScalarString(b, "range."+field)
		if err != nil {
			return nil, err
		}
		l, h, v4, err := index.IPv4Range(s)
		if err != nil {
			return nil, shardErr("failed to create query: %v", err)
		}
		if !v4 {
			return nil, argErr("range on ip field [%s] with IPv6 bound [%s] is not supported", field, s)
		}
		if i == 0 {
			lo = &l
		} else {
			hi = &h
		}
	}
	return numRange(index.IPv4Field(field), lo, hi, rb.inclLower, rb.inclUpp), nil
}

func numRange(field string, lo, hi *float64, inclLo, inclHi bool) query.Query {
	q := query.NewNumericRangeInclusiveQuery(lo, hi, &inclLo, &inclHi)
	q.SetField(field)
	return q
}

// rangeFieldValue converts one query value for a range field of type ft
// to the numbers its bounds are indexed as (dates: Unix nanoseconds).
func (t *translator) rangeFieldValue(field, ft string, v json.RawMessage, roundUp bool, dp *dateParser) (float64, error) {
	s, err := asScalarString(v, "range."+field)
	if err != nil {
		return 0, err
	}
	switch ft {
	case index.TypeDateRange:
		tm, err := dp.parse(s, kind(v) == 'n', roundUp)
		if err != nil {
			return 0, err
		}
		if err := checkDateRange(tm, field); err != nil {
			return 0, err
		}
		return float64(tm.UnixNano()), nil
	case index.TypeIPRange:
		lo, _, v4, err := index.IPv4Range(s)
		if err != nil || !v4 {
			return 0, shardErr("failed to create query: [%s] is not an IPv4 address for ip_range field [%s]", s, field)
		}
		return lo, nil
	}
	f, err := asFloat(v, "range."+field)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, shardErr("failed to create query: [%s] is not a number, but field [%s] is of type [%s]", s, field, ft)
	}
	return f, nil
}

// boundQuery is lo <= field (or <, when !incl) on one bound field.
func boundQuery(name, ft string, v float64, below, incl bool) query.Query {
	if ft == index.TypeDateRange {
		tm := time.Unix(0, int64(v)).UTC()
		var q *query.DateRangeQuery
		if below {
			q = query.NewDateRangeInclusiveQuery(time.Time{}, tm, nil, &incl)
		} else {
			q = query.NewDateRangeInclusiveQuery(tm, time.Time{}, &incl, nil)
		}
		q.SetField(name)
		return q
	}
	if below {
		return numRange(name, nil, &v, true, incl)
	}
	return numRange(name, &v, nil, incl, true)
}

// rangeFieldTerm matches ranges that contain value.
func (t *translator) rangeFieldTerm(field, ft string, value json.RawMessage) (query.Query, error) {
	dp, err := t.dateParserFor(field, "", "")
	if err != nil {
		return nil, err
	}
	v, err := t.rangeFieldValue(field, ft, value, false, dp)
	if err != nil {
		return nil, err
	}
	lo, hi := index.RangeBounds(field)
	return query.NewConjunctionQuery([]query.Query{
		boundQuery(lo, ft, v, true, true),
		boundQuery(hi, ft, v, false, true),
	}), nil
}

// rangeFieldRange matches ranges related to [lower, upper] by relation.
func (t *translator) rangeFieldRange(field, ft string, rb rangeBounds) (query.Query, error) {
	dp, err := t.dateParserFor(field, rb.format, rb.timeZone)
	if err != nil {
		return nil, err
	}
	loName, hiName := index.RangeBounds(field)
	var clauses []query.Query
	relation := strings.ToLower(rb.relation)
	if relation == "" {
		relation = "intersects"
	}
	if rb.lower != nil {
		v, err := t.rangeFieldValue(field, ft, rb.lower, !rb.inclLower, dp)
		if err != nil {
			return nil, err
		}
		switch relation {
		case "intersects": // the document's upper bound reaches the query's lower
			clauses = append(clauses, boundQuery(hiName, ft, v, false, rb.inclLower))
		case "within":
			clauses = append(clauses, boundQuery(loName, ft, v, false, rb.inclLower))
		case "contains":
			clauses = append(clauses, boundQuery(loName, ft, v, true, rb.inclLower))
		}
	}
	if rb.upper != nil {
		v, err := t.rangeFieldValue(field, ft, rb.upper, rb.inclUpp, dp)
		if err != nil {
			return nil, err
		}
		switch relation {
		case "intersects":
			clauses = append(clauses, boundQuery(loName, ft, v, true, rb.inclUpp))
		case "within":
			clauses = append(clauses, boundQuery(hiName, ft, v, true, rb.inclUpp))
		case "contains":
			clauses = append(clauses, boundQuery(hiName, ft, v, false, rb.inclUpp))
		}
	}
	if len(clauses) == 0 {
		return t.existsField(field)
	}
	return query.NewConjunctionQuery(clauses), nil
}
