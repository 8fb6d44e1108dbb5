package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

// disMax matches what any of its queries matches, scored by the best
// matching clause plus tie_breaker times the others.
func (t *translator) disMax(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var clauses []query.Query
	tie := 0.0
	ps := params{"queries": t.queriesParam(&clauses), "tie_breaker": tieBreakerParam(&tie)}
	if err := ps.readObject(body, "dis_max", &c); err != nil {
		return nil, err
	}
	if len(clauses) == 0 {
		return nil, parsingErr("[dis_max] requires 'queries' field with at least one clause")
	}
	return t.apply(scoring.NewDisMax(clauses, tie), c), nil
}
