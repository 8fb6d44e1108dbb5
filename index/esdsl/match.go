package esdsl

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

// matchOpts are the options of a full-text match, shared by match,
// multi_match and the query string queries.
type matchOpts struct {
	text         string
	isNumber     bool
	operatorAnd  bool
	fuzzy        fuzziness
	prefix       int
	analyzer     string
	msm          string
	lenient      bool
	zeroTermsAll bool
	boost        float64
	hasFuzziness bool
	// maxExpansions bounds the terms a phrase prefix stands for; fuzzy
	// matching takes every candidate within the edits.
	maxExpansions int
}

// newMatchOpts returns the defaults of the match options.
func newMatchOpts() matchOpts {
	return matchOpts{boost: 1, maxExpansions: index.DefaultMaxExpansions}
}

// queryText reads the text to match: a string, number or boolean.
func (m *matchOpts) queryText(has *bool) param {
	return func(v json.RawMessage, where string) (err error) {
		*has = true
		m.isNumber = kind(v) == 'n'
		m.text, err = asScalarString(v, where)
		return err
	}
}

// params returns the readers of the match options (without the text).
func (m *matchOpts) params() params {
	return params{
		"operator":             m.operatorParam,
		"default_operator":     m.operatorParam,
		"fuzziness":            m.fuzzinessParam,
		"prefix_length":        m.prefixParam,
		"fuzzy_prefix_length":  m.prefixParam,
		"analyzer":             strParam(&m.analyzer),
		"minimum_should_match": scalarParam(&m.msm),
		"lenient":              boolParam(&m.lenient),
		"zero_terms_query":     zeroTermsParam(&m.zeroTermsAll),
		"max_expansions":       m.maxExpansionsParam,
		"fuzzy_max_expansions": ignoredInt,
		// bleve's fuzzy matching counts a transposition as two edits
		// either way; synonyms are not configured, so both are no-ops.
		"fuzzy_transpositions":                ignoredBool,
		"auto_generate_synonyms_phrase_query": ignoredBool,
	}
}

// set parses one match option; where names the query.
func (m *matchOpts) set(k string, v json.RawMessage, where string) error {
	p, ok := m.params()[k]
	if !ok {
		return unknownKey(where, k)
	}
	return p(v, where+"."+k)
}

func (m *matchOpts) operatorParam(v json.RawMessage, where string) error {
	s, err := asString(v, where)
	if err != nil {
		return err
	}
	switch strings.ToLower(s) {
	case "and":
		m.operatorAnd = true
	case "or":
		m.operatorAnd = false
	default:
		q, k, _ := strings.Cut(where, ".")
		return argErr("[%s] %s must be \"and\" or \"or\", got %q", q, k, s)
	}
	return nil
}

func (m *matchOpts) fuzzinessParam(v json.RawMessage, where string) error {
	s, err := asScalarString(v, where)
	if err != nil {
		return err
	}
	m.hasFuzziness = true
	m.fuzzy, err = parseFuzziness(s)
	return err
}

func (m *matchOpts) maxExpansionsParam(v json.RawMessage, where string) (err error) {
	if m.maxExpansions, err = asInt(v, where); err != nil {
		return err
	}
	if m.maxExpansions < 0 {
		return argErr("No negative maxExpansions allowed.")
	}
	return nil
}

func (m *matchOpts) prefixParam(v json.RawMessage, where string) (err error) {
	if m.prefix, err = asInt(v, where); err != nil {
		return err
	}
	if m.prefix < 0 {
		q, k, _ := strings.Cut(where, ".")
		return argErr("[%s] %s must be >= 0, got %d", q, k, m.prefix)
	}
	return nil
}

// zeroTermsParam reads zero_terms_query: "none" or "all".
func zeroTermsParam(all *bool) param {
	return func(v json.RawMessage, where string) error {
		s, err := asString(v, where)
		if err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "none":
			*all = false
		case "all":
			*all = true
		default:
			q, _, _ := strings.Cut(where, ".")
			return argErr("[%s] zero_terms_query must be \"none\" or \"all\", got %q", q, s)
		}
		return nil
	}
}

func (t *translator) match(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	opts := newMatchOpts()
	hasQuery := false
	ps := opts.params()
	ps["query"] = opts.queryText(&hasQuery)
	field, err := ps.readField(body, "match", "query", &c)
	if err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[match] query for field [%s] needs [query]", field)
	}
	opts.boost = c.boost
	q, err := t.buildMatch(field, opts)
	if err != nil {
		return nil, err
	}
	return t.apply(q, common{boost: 1, name: c.name}), nil
}

// buildMatch builds a match on one field, honouring the field's type the
// way Elasticsearch does: full text for text/keyword, an exact value for
// numbers, dates and booleans.
func (t *translator) buildMatch(field string, m matchOpts) (query.Query, error) {
	ft := t.fieldType(field)
	switch {
	case field == "_id":
		return setBoost(query.NewDocIDQuery([]string{m.text}), m.boost), nil
	case isValueType(ft):
		if m.hasFuzziness && m.fuzzy.enabled() && !m.lenient {
			return nil, argErr("can only use fuzzy queries on keyword and text fields, not on [%s] which is of type [%s]", field, ft)
		}
		q, err := t.exactValue(field, ft, m.text, m.isNumber)
		if err != nil {
			if m.lenient {
				return query.NewMatchNoneQuery(), nil
			}
			return nil, err
		}
		return setBoost(q, m.boost), nil
	}
	if (m.msm != "" && !m.operatorAnd) || (m.fuzzy.auto && !m.fuzzy.defaultAuto()) {
		// Per-term clauses: minimum_should_match counts them, and custom
		// AUTO thresholds give each term its own edits.
		return t.matchTerms(field, m)
	}
	analyzer, err := t.resolveAnalyzer(m.analyzer)
	if err != nil {
		return nil, err
	}
	mq := query.NewMatchQuery(m.text)
	mq.SetField(field)
	mq.Analyzer = analyzer
	if m.operatorAnd {
		mq.SetOperator(query.MatchQueryOperatorAnd)
	}
	if m.fuzzy.auto {
		mq.SetAutoFuzziness(true) // bleve's AUTO is AUTO:3,6
	} else {
		mq.SetFuzziness(m.fuzzy.edits)
	}
	mq.SetPrefix(m.prefix)
	if m.zeroTermsAll {
		if terms, ok, err := t.analyze(field, m.analyzer, m.text); err != nil {
			return nil, err
		} else if ok && len(terms) == 0 {
			return setBoost(query.NewMatchAllQuery(), m.boost), nil
		} else if !ok {
			return nil, argErr("[match] zero_terms_query \"all\" on field [%s] needs the index's analyzer, which this node does not expose; drop zero_terms_query", field)
		}
	}
	return setBoost(mq, m.boost), nil
}

// analyze runs the field's analyzer when Fields can; ok is false when it
// cannot.
func (t *translator) analyze(field, analyzer, text string) ([]string, bool, error) {
	a, ok := t.fields.(Analyzer)
	if !ok {
		return nil, false, nil
	}
	terms, err := a.AnalyzeField(field, analyzer, text)
	if err != nil {
		return nil, true, argErr("analyzing %q for field [%s]: %v", text, field, err)
	}
	return terms, true, nil
}

// matchTerms expands a match into one clause per analyzed term and
// requires all of them (operator and), minimum_should_match of them, or one.
func (t *translator) matchTerms(field string, m matchOpts) (query.Query, error) {
	terms, ok, err := t.analyze(field, m.analyzer, m.text)
	if err != nil {
		return nil, err
	}
	if !ok {
		if m.msm != "" {
			return nil, argErr("minimum_should_match on field [%s] needs the index's analyzer, which this node does not expose; use operator and/or instead", field)
		}
		return nil, argErr("fuzziness [AUTO:%d,%d] on field [%s] needs the index's analyzer, which this node does not expose; use AUTO, 0, 1 or 2", m.fuzzy.low, m.fuzzy.high, field)
	}
	if len(terms) == 0 {
		if m.zeroTermsAll {
			return setBoost(query.NewMatchAllQuery(), m.boost), nil
		}
		return query.NewMatchNoneQuery(), nil
	}
	clauses := make([]query.Query, 0, len(terms))
	for _, term := range terms {
		clauses = append(clauses, t.termClause(field, term, m))
	}
	return combineTerms(clauses, m)
}

// combineTerms joins the per-term clauses of a match as its operator and
// minimum_should_match say.
func combineTerms(clauses []query.Query, m matchOpts) (query.Query, error) {
	if m.operatorAnd {
		return setBoost(query.NewConjunctionQuery(clauses), m.boost), nil
	}
	min := 1
	if m.msm != "" {
		var err error
		if min, err = minimumShouldMatch(m.msm, len(clauses)); err != nil {
			return nil, err
		}
		min = max(min, 1)
	}
	d := query.NewDisjunctionQuery(clauses)
	d.SetMin(float64(min))
	return setBoost(d, m.boost), nil
}

// termClause is the clause of one analyzed term: a term query, or a fuzzy
// one with the edits the match's fuzziness gives the term.
func (t *translator) termClause(field, term string, m matchOpts) query.Query {
	return m.fuzzy.fuzzyTerm(field, term, m.prefix)
}

// minimumShouldMatch resolves an Elasticsearch minimum_should_match value
// ("2", "-1", "75%", "-25%") against n optional clauses.
func minimumShouldMatch(spec string, n int) (int, error) {
	s := strings.TrimSpace(spec)
	if strings.ContainsAny(s, "< ") {
		return 0, argErr("minimum_should_match [%s]: conditional forms (N<M%%) are not supported; use an integer or a percentage", spec)
	}
	var v int
	if strings.HasSuffix(s, "%") {
		p, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
		if err != nil || p > 100 || p < -100 {
			return 0, argErr("minimum_should_match [%s] must be an integer or a percentage between -100%% and 100%%", spec)
		}
		if p < 0 {
			v = n - (n*(-p))/100
		} else {
			v = (n * p) / 100
		}
	} else {
		i, err := strconv.Atoi(s)
		if err != nil {
			return 0, argErr("minimum_should_match [%s] must be an integer or a percentage", spec)
		}
		if i < 0 {
			v = n + i
		} else {
			v = i
		}
	}
	return max(0, min(v, n)), nil
}
