package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// boolPrefixParams are the parameters match_bool_prefix takes besides
// query: the match options without zero_terms_query, lenient and the
// query_string spellings, as Elasticsearch's MatchBoolPrefixQueryBuilder.
func boolPrefixParams(m *matchOpts) params {
	ps := m.params()
	for _, k := range []string{"zero_terms_query", "lenient", "default_operator", "fuzzy_prefix_length", "fuzzy_max_expansions", "auto_generate_synonyms_phrase_query"} {
		delete(ps, k)
	}
	ps["fuzzy_rewrite"] = ignoredString
	return ps
}

func (t *translator) matchBoolPrefix(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	opts := newMatchOpts()
	hasQuery := false
	ps := boolPrefixParams(&opts)
	ps["query"] = opts.queryText(&hasQuery)
	field, err := ps.readField(body, "match_bool_prefix", "query", &c)
	if err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[match_bool_prefix] query for field [%s] needs [query]", field)
	}
	opts.boost = c.boost
	q, err := t.buildBoolPrefix(field, opts)
	if err != nil {
		return nil, err
	}
	return t.apply(q, common{boost: 1, name: c.name}), nil
}

// buildBoolPrefix builds a match_bool_prefix on one field: a bool of one
// clause per analyzed term, the final term a prefix query and the others
// term queries (fuzzy ones under fuzziness, which never applies to the
// prefix), joined by operator and minimum_should_match. The prefix scores
// as its best expansion (index.BestPrefix). As in
// Elasticsearch, a field that holds values matches the text exactly.
func (t *translator) buildBoolPrefix(field string, m matchOpts) (query.Query, error) {
	if field == "_id" || isValueType(t.fieldType(field)) {
		m.fuzzy, m.hasFuzziness = fuzziness{}, false
		return t.buildMatch(field, m)
	}
	terms, ok, err := t.analyze(field, m.analyzer, m.text)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, argErr("match_bool_prefix on field [%s] needs the index's analyzer, which this node does not expose; use a match or prefix query", field)
	}
	if len(terms) == 0 {
		return query.NewMatchNoneQuery(), nil
	}
	clauses := make([]query.Query, 0, len(terms))
	for _, term := range terms[:len(terms)-1] {
		clauses = append(clauses, t.termClause(field, term, m))
	}
	pq := index.NewBestPrefix(terms[len(terms)-1], field)
	clauses = append(clauses, pq)
	if len(clauses) == 1 {
		return setBoost(pq, m.boost), nil
	}
	return combineTerms(clauses, m)
}
