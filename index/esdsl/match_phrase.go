package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

func (t *translator) matchPhrase(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var text, analyzer string
	var slop int
	var zeroAll, hasQuery bool
	ps := params{
		"query": func(v json.RawMessage, where string) (err error) {
			hasQuery = true
			text, err = asScalarString(v, where)
			return err
		},
		"analyzer":         strParam(&analyzer),
		"slop":             intParam(&slop),
		"zero_terms_query": zeroTermsParam(&zeroAll),
	}
	field, err := ps.readField(body, "match_phrase", "query", &c)
	if err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[match_phrase] query for field [%s] needs [query]", field)
	}
	q, err := t.buildPhrase(field, text, analyzer, slop, zeroAll, c.boost)
	if err != nil {
		return nil, err
	}
	return t.apply(q, common{boost: 1, name: c.name}), nil
}

func (t *translator) buildPhrase(field, text, analyzer string, slop int, zeroAll bool, boost float64) (query.Query, error) {
	if slop < 0 {
		return nil, argErr("[match_phrase] slop must be >= 0, got %d", slop)
	}
	if slop > 0 {
		return nil, argErr("phrase slop %d on field [%s] is not supported (bleve matches phrases exactly); use slop 0, or a match query with operator and", slop, field)
	}
	if ft := t.fieldType(field); isValueType(ft) {
		q, err := t.exactValue(field, ft, text, false)
		if err != nil {
			return nil, err
		}
		return setBoost(q, boost), nil
	}
	if zeroAll {
		terms, ok, err := t.analyze(field, analyzer, text)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, argErr("zero_terms_query \"all\" on field [%s] needs the index's analyzer, which this node does not expose; drop zero_terms_query", field)
		}
		if len(terms) == 0 {
			return setBoost(query.NewMatchAllQuery(), boost), nil
		}
	}
	bleveAnalyzer, err := t.resolveAnalyzer(analyzer)
	if err != nil {
		return nil, err
	}
	q := query.NewMatchPhraseQuery(text)
	q.SetField(field)
	q.Analyzer = bleveAnalyzer
	return setBoost(index.NewMatchPhrase(q), boost), nil
}
