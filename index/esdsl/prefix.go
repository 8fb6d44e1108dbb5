package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) prefix(body json.RawMessage) (query.Query, error) {
	return t.textPattern(body, "prefix", func(s string, ci bool) fieldQuery {
		if ci {
			return query.NewRegexpQuery(foldPattern(s, false, true))
		}
		return query.NewPrefixQuery(s)
	})
}

// fieldQuery is a bleve query aimed at one field.
type fieldQuery interface {
	query.Query
	SetField(string)
}

// textPattern translates the prefix and wildcard queries, which share their
// shape — {"<kind>":{"field":"pattern"}} or
// {"<kind>":{"field":{"value" or "<kind>":"pattern","boost":..}}} — and
// apply to text and keyword fields only.
//
// build makes the query for the pattern; ci is case_insensitive.
func (t *translator) textPattern(body json.RawMessage, name string, build func(pattern string, ci bool) fieldQuery) (query.Query, error) {
	c := newCommon()
	var value string
	has := false
	val := func(v json.RawMessage, where string) (err error) {
		has = true
		value, err = asScalarString(v, where)
		return err
	}
	var ci bool
	ps := params{"value": val, name: val, "case_insensitive": boolParam(&ci), "rewrite": ignoredString}
	field, err := ps.readField(body, name, "value", &c)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, parsingErr("[%s] query for field [%s] needs [value]", name, field)
	}
	if err := t.textOnly(field, name); err != nil {
		return nil, err
	}
	q := build(value, ci)
	q.SetField(field)
	return t.apply(q, c), nil
}
