package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

// constantScore wraps the filter in a boolean query whose only scoring
// clause is match_all, so every hit scores the boost.
func (t *translator) constantScore(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var filter query.Query
	if err := (params{"filter": t.queryParam(&filter)}).readObject(body, "constant_score", &c); err != nil {
		return nil, err
	}
	if filter == nil {
		return nil, parsingErr("[constant_score] needs [filter]")
	}
	all := query.NewMatchAllQuery()
	all.SetBoost(c.boost)
	bq := query.NewBooleanQuery([]query.Query{all}, nil, nil)
	bq.AddFilter(filter)
	return t.apply(bq, common{boost: 1, name: c.name}), nil
}
