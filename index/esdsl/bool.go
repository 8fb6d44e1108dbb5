package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) boolQuery(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var must, should, mustNot, filter []query.Query
	msm := ""
	ps := params{
		"must":                 t.queriesParam(&must),
		"should":               t.queriesParam(&should),
		"must_not":             t.queriesParam(&mustNot),
		"filter":               t.queriesParam(&filter),
		"minimum_should_match": scalarParam(&msm),
		"adjust_pure_negative": ignoredBool,
	}
	if err := ps.readObject(body, "bool", &c); err != nil {
		return nil, err
	}
	min := 0
	if msm != "" && len(should) > 0 {
		var err error
		if min, err = minimumShouldMatch(msm, len(should)); err != nil {
			return nil, err
		}
	} else if len(must) == 0 && len(filter) == 0 && len(should) > 0 {
		min = 1
	}
	return t.apply(buildBool(must, should, mustNot, filter, min), c), nil
}

// buildBool assembles a bleve boolean query with Elasticsearch semantics:
// should clauses are optional when must or filter clauses exist unless min
// says otherwise; filter clauses restrict without scoring; an empty bool
// matches everything.
func buildBool(must, should, mustNot, filter []query.Query, min int) query.Query {
	if len(must) == 0 && len(should) == 0 && len(mustNot) == 0 && len(filter) == 0 {
		return query.NewMatchAllQuery()
	}
	if len(should) > 0 && min == 0 && len(must) == 0 {
		// Optional should clauses beside a filter: every filtered doc
		// matches, should only adds score.
		must = append(must, query.NewMatchAllQuery())
	}
	if len(should) > 0 && min > len(should) {
		return query.NewMatchNoneQuery()
	}
	bq := query.NewBooleanQuery(must, should, mustNot)
	if len(should) > 0 {
		bq.SetMinShould(float64(min))
	}
	switch len(filter) {
	case 0:
	case 1:
		bq.AddFilter(filter[0])
	default:
		bq.AddFilter(query.NewConjunctionQuery(filter))
	}
	if len(must) == 0 && len(should) == 0 && len(mustNot) == 0 {
		// Filter only: match_all restricted by the filter.
		bq.AddMust(query.NewMatchAllQuery())
	}
	return bq
}
