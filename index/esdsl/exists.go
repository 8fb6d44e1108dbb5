package esdsl

import (
	"encoding/json"
	"math"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

func (t *translator) exists(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var field string
	if err := (params{"field": strParam(&field)}).readObject(body, "exists", &c); err != nil {
		return nil, err
	}
	if field == "" {
		return nil, parsingErr("[exists] needs [field]")
	}
	if err := checkMetaField(field, "exists"); err != nil {
		return nil, err
	}
	q, err := t.existsField(field)
	if err != nil {
		return nil, err
	}
	return t.apply(q, c), nil
}

// existsField matches documents that have any indexed value in field.
func (t *translator) existsField(field string) (query.Query, error) {
	ft := t.fieldType(field)
	switch {
	case field == "_id":
		return query.NewMatchAllQuery(), nil
	case isNumeric(ft) || ft == "date":
		// Both are prefix-coded int64 terms; an open numeric range covers
		// every value a date field can hold (years 1678 to 2262). The bound
		// is finite so the query survives a JSON round trip.
		lo := -math.MaxFloat64
		q := query.NewNumericRangeQuery(&lo, nil)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		tq, fq := query.NewBoolFieldQuery(true), query.NewBoolFieldQuery(false)
		tq.SetField(field)
		fq.SetField(field)
		return query.NewDisjunctionQuery([]query.Query{tq, fq}), nil
	case index.IsRange(ft):
		lo, _ := index.RangeBounds(field)
		if ft == index.TypeDateRange {
			q := query.NewDateRangeInclusiveQuery(query.MinRFC3339CompatibleTime, time.Time{}, nil, nil)
			q.SetField(lo)
			return q, nil
		}
		min := -math.MaxFloat64
		return numRange(lo, &min, nil, true, true), nil
	case ft == "text" || ft == "keyword" || ft == index.TypeIP:
		q := query.NewWildcardQuery("*")
		q.SetField(field)
		return q, nil
	case ft == "object":
		return nil, argErr("[exists] on object field [%s] is not supported; name one of its leaf fields", field)
	}
	return query.NewMatchNoneQuery(), nil
}
