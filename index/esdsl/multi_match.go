package esdsl

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

// multiMatchTypes are the multi_match types and the tie_breaker each uses
// when the request gives none, as Elasticsearch's MultiMatchQueryBuilder
// Type: the types that combine fields take the best field's score, the
// types that sum them a tie breaker of 1.
var multiMatchTypes = map[string]float64{
	"best_fields":   0,
	"most_fields":   1,
	"cross_fields":  0,
	"phrase":        0,
	"phrase_prefix": 0,
	"bool_prefix":   1,
}

// multiMatchRequest is a parsed multi_match.
type multiMatchRequest struct {
	opts   matchOpts
	typ    string
	slop   int
	tie    float64
	names  []string
	boosts []float64
}

func (t *translator) multiMatch(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	r := multiMatchRequest{opts: newMatchOpts(), typ: "best_fields"}
	var fields []string
	hasQuery, hasTie, hasSlop := false, false, false
	ps := r.opts.params()
	ps["query"] = r.opts.queryText(&hasQuery)
	ps["fields"] = stringsParam(&fields)
	ps["type"] = strParam(&r.typ)
	ps["tie_breaker"] = func(v json.RawMessage, where string) error {
		hasTie = true
		return tieBreakerParam(&r.tie)(v, where)
	}
	ps["slop"] = func(v json.RawMessage, where string) error {
		hasSlop = true
		return intParam(&r.slop)(v, where)
	}
	if err := ps.readObject(body, "multi_match", &c); err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[multi_match] needs [query]")
	}
	defaultTie, ok := multiMatchTypes[r.typ]
	if !ok {
		return nil, invalid("parse_exception", fmt.Sprintf("failed to parse [multi_match] query type [%s]. unknown type.", r.typ))
	}
	if !hasTie {
		r.tie = defaultTie
	}
	if r.opts.hasFuzziness {
		switch r.typ {
		case "cross_fields", "phrase", "phrase_prefix":
			return nil, parsingErr("Fuzziness not allowed for type [%s]", r.typ)
		}
	}
	if hasSlop && r.typ == "bool_prefix" {
		return nil, parsingErr("[slop] not allowed for type [bool_prefix]")
	}
	if r.slop < 0 {
		return nil, argErr("No negative slop allowed.")
	}
	if err := t.multiMatchFields(&r, fields); err != nil {
		return nil, err
	}
	var q query.Query
	var err error
	if r.typ == "cross_fields" {
		q, err = t.crossFields(r)
	} else {
		q, err = t.perField(r)
	}
	if err != nil {
		return nil, err
	}
	return t.apply(q, c), nil
}

// multiMatchFields resolves the requested fields ("title^3", patterns; "*"
// when none) to field names and boosts in r.
func (t *translator) multiMatchFields(r *multiMatchRequest, fields []string) error {
	if len(fields) == 0 {
		fields = []string{"*"}
	}
	for _, spec := range fields {
		name, fboost, err := fieldBoost(spec)
		if err != nil {
			return err
		}
		if !strings.Contains(name, "*") {
			r.names, r.boosts = append(r.names, name), append(r.boosts, fboost)
			continue
		}
		expanded, ok, err := t.expandFields(name)
		if err != nil {
			return err
		}
		if !ok {
			return argErr("[multi_match] field pattern [%s] cannot be expanded on this node; name the fields, e.g. \"fields\": [\"title^2\", \"body\"]", name)
		}
		if name == "*" {
			r.opts.lenient = true
		}
		for _, e := range expanded {
			r.names, r.boosts = append(r.names, e), append(r.boosts, fboost)
		}
	}
	if len(r.names) > maxFieldExpansion {
		return argErr("[multi_match] names %d fields, more than the %d allowed", len(r.names), maxFieldExpansion)
	}
	return nil
}

// perField builds the field-centric types: one query per field (match,
// match_phrase, match_phrase_prefix or match_bool_prefix, with the field's
// boost), joined by a dis_max with the type's tie breaker, so best_fields,
// phrase and phrase_prefix score the best field (plus tie_breaker times the
// others) and most_fields and bool_prefix the sum of the fields.
func (t *translator) perField(r multiMatchRequest) (query.Query, error) {
	clauses := make([]query.Query, 0, len(r.names))
	for i, name := range r.names {
		fo := r.opts
		fo.boost = r.boosts[i]
		po := phraseOpts{text: fo.text, analyzer: fo.analyzer, slop: r.slop, zeroAll: fo.zeroTermsAll, maxExpansions: fo.maxExpansions, boost: fo.boost}
		var q query.Query
		var err error
		switch r.typ {
		case "phrase":
			q, err = t.buildPhrase(name, po.text, po.analyzer, po.slop, po.zeroAll, po.boost)
		case "phrase_prefix":
			q, err = t.buildPhrasePrefix(name, po)
		case "bool_prefix":
			q, err = t.buildBoolPrefix(name, fo)
		default:
			q, err = t.buildMatch(name, fo)
		}
		if err != nil && r.opts.lenient {
			q, err = query.NewMatchNoneQuery(), nil
		}
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	if len(clauses) == 1 {
		return clauses[0], nil
	}
	return scoring.NewDisMax(clauses, r.tie), nil
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
