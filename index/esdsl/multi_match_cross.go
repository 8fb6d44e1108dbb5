package esdsl

import (
	"slices"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

// multi_match of type cross_fields is term-centric: the fields that analyze
// the text alike form a group that is searched as if it were one blended
// field, so every term may match in any field of the group, and operator
// and minimum_should_match count terms, not fields.
//
// What matches is Elasticsearch's: per group, one clause per term, each
// clause a dis_max over the group's fields (with their boosts); the terms
// joined by operator and minimum_should_match; the groups joined by a
// dis_max with tie_breaker (so, as in Elasticsearch, operator "and" needs
// every term within one group). Fields that hold values (numbers, dates,
// booleans) are groups of their own, queried as match queries are.
//
// What approximates: Elasticsearch groups fields by analyzer, Weft by the
// terms the text analyzes to on each field (the same thing unless two
// analyzers happen to agree on this text, when their fields score as one
// group). Elasticsearch blends the term statistics of a group's fields
// (BlendedTermQuery: one document frequency, the fields' largest, for the
// term in every field), so a term rare in one field does not outscore the
// same term in another; bleve scores each field's term with that field's
// own statistics. A term's score in its group is its best field's
// (plus tie_breaker times the others), as in Elasticsearch, but the
// per-field scores it picks from are not blended.

// crossGroup is the fields of a cross_fields query that analyze the text
// to the same terms.
type crossGroup struct {
	terms  []string
	fields []string
	boosts []float64
}

// crossFields builds a multi_match of type cross_fields; see above.
func (t *translator) crossFields(r multiMatchRequest) (query.Query, error) {
	var groups []*crossGroup
	var valueClauses []query.Query
	for i, name := range r.names {
		if name == "_id" || isValueType(t.fieldType(name)) {
			fo := r.opts
			fo.boost = r.boosts[i]
			q, err := t.buildMatch(name, fo)
			if err != nil && r.opts.lenient {
				continue
			}
			if err != nil {
				return nil, err
			}
			valueClauses = append(valueClauses, q)
			continue
		}
		terms, ok, err := t.analyze(name, r.opts.analyzer, r.opts.text)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, argErr("[multi_match] type [cross_fields] needs the index's analyzers, which this node does not expose; use type best_fields or most_fields")
		}
		if len(terms) == 0 {
			continue
		}
		g := groupFor(groups, terms)
		if g == nil {
			g = &crossGroup{terms: terms}
			groups = append(groups, g)
		}
		g.fields, g.boosts = append(g.fields, name), append(g.boosts, r.boosts[i])
	}
	clauses := valueClauses
	for _, g := range groups {
		q, err := g.query(r)
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	switch len(clauses) {
	case 0:
		if r.opts.zeroTermsAll {
			return query.NewMatchAllQuery(), nil
		}
		return query.NewMatchNoneQuery(), nil
	case 1:
		return clauses[0], nil
	}
	return scoring.NewDisMax(clauses, r.tie), nil
}

// groupFor returns the group whose fields analyze the text to terms, or
// nil.
func groupFor(groups []*crossGroup, terms []string) *crossGroup {
	for _, g := range groups {
		if slices.Equal(g.terms, terms) {
			return g
		}
	}
	return nil
}

// query is the group's blended query: one clause per term, a dis_max over
// the group's fields, joined by the request's operator and
// minimum_should_match.
func (g *crossGroup) query(r multiMatchRequest) (query.Query, error) {
	perTerm := make([]query.Query, 0, len(g.terms))
	for _, term := range g.terms {
		fieldClauses := make([]query.Query, len(g.fields))
		for i, f := range g.fields {
			tq := query.NewTermQuery(term)
			tq.SetField(f)
			fieldClauses[i] = setBoost(tq, g.boosts[i])
		}
		if len(fieldClauses) == 1 {
			perTerm = append(perTerm, fieldClauses[0])
			continue
		}
		perTerm = append(perTerm, scoring.NewDisMax(fieldClauses, r.tie))
	}
	m := r.opts
	m.boost = 1
	return combineTerms(perTerm, m)
}
