package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

// maxTermsCount is Elasticsearch's index.max_terms_count default.
const maxTermsCount = 65536

func (t *translator) terms(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "terms")
	if err != nil {
		return nil, err
	}
	field, v, extra, err := fieldAndParams(o, "terms", "boost", "_name")
	if err != nil {
		return nil, err
	}
	c := newCommon()
	if err := (params{}).read(extra, "terms", &c); err != nil {
		return nil, err
	}
	if kind(v) == 'o' {
		return nil, argErr("[terms] lookup (an object for field [%s]) is not supported; list the values in an array", field)
	}
	vals, err := asArray(v, "terms."+field, false)
	if err != nil {
		return nil, err
	}
	if max := t.scope.maxTermsCount(); len(vals) > max {
		return nil, argErr("The number of terms [%d] used in the Terms Query request has exceeded the allowed maximum of [%d]. This maximum can be set by changing the [index.max_terms_count] index level setting.", len(vals), max)
	}
	if field == "_id" {
		ids := make([]string, 0, len(vals))
		for _, e := range vals {
			s, err := asScalarString(e, "terms._id")
			if err != nil {
				return nil, err
			}
			ids = append(ids, s)
		}
		return t.apply(query.NewDocIDQuery(ids), c), nil
	}
	if len(vals) == 0 {
		return t.apply(query.NewMatchNoneQuery(), common{boost: 1, name: c.name}), nil
	}
	clauses := make([]query.Query, 0, len(vals))
	for _, e := range vals {
		q, err := t.termValue(field, e, "terms")
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	return t.apply(query.NewDisjunctionQuery(clauses), c), nil
}
