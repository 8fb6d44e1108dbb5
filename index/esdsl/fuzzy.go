package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"
)

func (t *translator) fuzzy(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	opts := matchOpts{fuzzy: autoFuzziness}
	var value string
	has := false
	ps := params{
		"value": func(v json.RawMessage, where string) (err error) {
			has = true
			value, err = asScalarString(v, where)
			return err
		},
		"fuzziness":      opts.fuzzinessParam,
		"prefix_length":  opts.prefixParam,
		"max_expansions": ignoredInt,
		"transpositions": ignoredBool,
		"rewrite":        ignoredString,
	}
	field, err := ps.readField(body, "fuzzy", "value", &c)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, parsingErr("[fuzzy] query for field [%s] needs [value]", field)
	}
	if ft := t.fieldType(field); isValueType(ft) {
		return nil, argErr("can only use fuzzy queries on keyword and text fields, not on [%s] which is of type [%s]", field, ft)
	}
	q := query.NewFuzzyQuery(value)
	q.SetField(field)
	if opts.fuzzy.defaultAuto() {
		q.SetAutoFuzziness(true)
	} else {
		q.SetFuzziness(opts.fuzzy.editsFor(value))
	}
	q.SetPrefix(opts.prefix)
	return t.apply(q, c), nil
}
