package esdsl

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// phraseOpts are the options of the phrase queries (match_phrase,
// match_phrase_prefix and multi_match's phrase types).
type phraseOpts struct {
	text          string
	analyzer      string
	slop          int
	zeroAll       bool
	maxExpansions int
	boost         float64
}

func (t *translator) matchPhrasePrefix(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	o := phraseOpts{maxExpansions: index.DefaultMaxExpansions}
	hasQuery := false
	m := newMatchOpts()
	ps := params{
		"query": func(v json.RawMessage, where string) (err error) {
			hasQuery = true
			o.text, err = asScalarString(v, where)
			return err
		},
		"analyzer":         strParam(&o.analyzer),
		"slop":             intParam(&o.slop),
		"zero_terms_query": zeroTermsParam(&o.zeroAll),
		"max_expansions":   m.maxExpansionsParam,
	}
	field, err := ps.readField(body, "match_phrase_prefix", "query", &c)
	if err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[match_phrase_prefix] query for field [%s] needs [query]", field)
	}
	o.maxExpansions, o.boost = m.maxExpansions, c.boost
	q, err := t.buildPhrasePrefix(field, o)
	if err != nil {
		return nil, err
	}
	return t.apply(q, common{boost: 1, name: c.name}), nil
}

// buildPhrasePrefix builds a match_phrase_prefix on one field: the text as
// a phrase whose final term is a prefix standing for up to maxExpansions
// indexed terms (index.PhrasePrefix). Fields that hold values rather than
// terms refuse it, as Elasticsearch's do.
func (t *translator) buildPhrasePrefix(field string, o phraseOpts) (query.Query, error) {
	if o.slop < 0 {
		return nil, argErr("No negative slop allowed.")
	}
	if o.slop > 0 {
		return nil, argErr("phrase slop %d on field [%s] is not supported (bleve matches phrases exactly); use slop 0, or a match_bool_prefix query", o.slop, field)
	}
	if err := t.textOnly(field, "prefix"); err != nil {
		return nil, err
	}
	if o.zeroAll {
		all, err := t.zeroTerms(field, o.analyzer, o.text)
		if err != nil {
			return nil, err
		}
		if all {
			return setBoost(query.NewMatchAllQuery(), o.boost), nil
		}
	}
	analyzer, err := t.resolveAnalyzer(o.analyzer)
	if err != nil {
		return nil, err
	}
	q := index.NewPhrasePrefix(o.text, field)
	q.Analyzer = analyzer
	q.MaxExpansions = o.maxExpansions
	return setBoost(q, o.boost), nil
}

// zeroTerms reports whether text analyzes to no terms on field, for
// zero_terms_query "all"; it needs the Analyzer ability.
func (t *translator) zeroTerms(field, analyzer, text string) (bool, error) {
	terms, ok, err := t.analyze(field, analyzer, text)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, argErr("zero_terms_query \"all\" on field [%s] needs the index's analyzer, which this node does not expose; drop zero_terms_query", field)
	}
	return len(terms) == 0, nil
}
