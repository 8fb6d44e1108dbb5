package esdsl

import (
	"encoding/json"
	"regexp/syntax"

	"github.com/blevesearch/bleve/v2/search/query"
	vregexp "github.com/blevesearch/vellum/regexp"
)

func (t *translator) regexp(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var value, flags string
	has := false
	ps := params{
		"value": func(v json.RawMessage, where string) (err error) {
			has = true
			value, err = asScalarString(v, where)
			return err
		},
		"flags": checked(strParam(&flags), func(string) error {
			if flags != "ALL" && flags != "NONE" && flags != "" {
				return argErr("[regexp] flags [%s] are not supported; the pattern uses RE2 syntax, drop flags", flags)
			}
			return nil
		}),
		"max_determinized_states": ignoredInt,
		"flags_value":             ignoredInt,
		"case_insensitive":        refuseCaseInsensitive,
		"rewrite":                 ignoredString,
	}
	field, err := ps.readField(body, "regexp", "value", &c)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, parsingErr("[regexp] query for field [%s] needs [value]", field)
	}
	if err := t.textOnly(field, "regexp"); err != nil {
		return nil, err
	}
	if err := checkRegexp(value); err != nil {
		return nil, err
	}
	q := query.NewRegexpQuery(value)
	q.SetField(field)
	return t.apply(q, c), nil
}

func checkRegexp(s string) error {
	if len(s) > 1000 {
		return argErr("regexp is %d characters, more than the 1000 allowed", len(s))
	}
	if _, err := syntax.Parse(s, syntax.Perl); err != nil {
		return argErr("invalid regexp [%s]: %v", s, err)
	}
	// The term dictionary is searched with vellum's automata, which refuse
	// anchors, word boundaries and lazy quantifiers; say so now rather than
	// fail the search.
	if _, err := vregexp.New(s); err != nil {
		return argErr("regexp [%s] is not supported: %v (patterns always match whole terms, so ^ and $ are not needed)", s, err)
	}
	return nil
}

// refuseCaseInsensitive reads case_insensitive, which only false may be on
// a regexp query (folding an arbitrary pattern's letters is not done).
var refuseCaseInsensitive param = func(v json.RawMessage, where string) error {
	b, err := asBool(v, where)
	if err == nil && b {
		err = argErr("[regexp] case_insensitive true is not supported; write the pattern with both cases, e.g. [aA]")
	}
	return err
}
