package esdsl

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

func (t *translator) multiMatch(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	opts := matchOpts{boost: 1}
	var fields []string
	typ := "best_fields"
	hasQuery := false
	slop := 0
	tie := 0.0
	ps := opts.params()
	ps["query"] = opts.queryText(&hasQuery)
	ps["fields"] = stringsParam(&fields)
	ps["type"] = strParam(&typ)
	ps["tie_breaker"] = tieBreakerParam(&tie)
	ps["slop"] = intParam(&slop)
	if err := ps.readObject(body, "multi_match", &c); err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[multi_match] needs [query]")
	}
	if len(fields) == 0 {
		fields = []string{"*"}
	}
	var names []string
	var boosts []float64
	for _, spec := range fields {
		name, fboost, err := fieldBoost(spec)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(name, "*") {
			names, boosts = append(names, name), append(boosts, fboost)
			continue
		}
		expanded, ok, err := t.expandFields(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, argErr("[multi_match] field pattern [%s] cannot be expanded on this node; name the fields, e.g. \"fields\": [\"title^2\", \"body\"]", name)
		}
		if name == "*" {
			opts.lenient = true
		}
		for _, e := range expanded {
			names, boosts = append(names, e), append(boosts, fboost)
		}
	}
	if len(names) > maxFieldExpansion {
		return nil, argErr("[multi_match] names %d fields, more than the %d allowed", len(names), maxFieldExpansion)
	}
	switch typ {
	case "best_fields", "most_fields", "phrase":
	default:
		return nil, argErr("[multi_match] type [%s] is not supported; use best_fields, most_fields or phrase", typ)
	}
	clauses := make([]query.Query, 0, len(names))
	for i, name := range names {
		fboost := boosts[i]
		var q query.Query
		var err error
		if typ == "phrase" {
			q, err = t.buildPhrase(name, opts.text, opts.analyzer, slop, opts.zeroTermsAll, fboost)
		} else {
			fo := opts
			fo.boost = fboost
			q, err = t.buildMatch(name, fo)
		}
		if err != nil && opts.lenient {
			q, err = query.NewMatchNoneQuery(), nil
		}
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	var q query.Query
	switch {
	case len(clauses) == 1:
		q = clauses[0]
	case typ == "most_fields":
		q = query.NewDisjunctionQuery(clauses)
	default:
		q = scoring.NewDisMax(clauses, tie)
	}
	return t.apply(q, c), nil
}

// stringsParam reads a string or an array of strings.
func stringsParam(dst *[]string) param {
	return func(v json.RawMessage, where string) error {
		arr, err := asArray(v, where, true)
		if err != nil {
			return err
		}
		for _, e := range arr {
			s, err := asString(e, where)
			if err != nil {
				return err
			}
			*dst = append(*dst, s)
		}
		return nil
	}
}

// tieBreakerParam reads a dis_max tie_breaker: a number in [0, 1].
func tieBreakerParam(dst *float64) param {
	return func(v json.RawMessage, where string) error {
		f, err := asFloat(v, where)
		if err != nil {
			return err
		}
		if f < 0 || f > 1 {
			return argErr("[%s] must be between 0 and 1, got [%v]", where, f)
		}
		*dst = f
		return nil
	}
}

// fieldBoost splits "title^2" into the field and its boost.
func fieldBoost(spec string) (string, float64, error) {
	i := strings.LastIndexByte(spec, '^')
	if i < 0 {
		return spec, 1, nil
	}
	b, err := strconv.ParseFloat(spec[i+1:], 64)
	if err != nil || b < 0 || math.IsInf(b, 0) || math.IsNaN(b) {
		return "", 0, argErr("field [%s]: boost after ^ must be a number >= 0", spec)
	}
	return spec[:i], b, nil
}
