package esdsl

import (
	"encoding/json"
	"math"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
	vregexp "github.com/blevesearch/vellum/regexp"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/scoring"
)

// translator turns query DSL objects into bleve queries. It is built per
// request and is not shared.
type translator struct {
	fields Fields
	now    time.Time
	depth  int // nesting of compound queries
}

// maxQueryDepth bounds the nesting of compound queries, as Elasticsearch's
// indices.query.bool.max_nested_depth does.
const maxQueryDepth = 30

func (t *translator) fieldType(path string) string {
	if t.fields == nil {
		return ""
	}
	return t.fields.FieldType(path)
}

// query translates one query object such as {"match": {...}}.
func (t *translator) query(raw json.RawMessage, where string) (query.Query, error) {
	o, err := asObject(raw, where)
	if err != nil {
		return nil, err
	}
	name, body, err := o.single(where)
	if err != nil {
		return nil, err
	}
	t.depth++
	defer func() { t.depth-- }()
	if t.depth > maxQueryDepth {
		return nil, argErr("query nested deeper than %d levels at [%s]; flatten the bool queries", maxQueryDepth, where)
	}
	switch name {
	case "match":
		return t.match(body)
	case "match_phrase":
		return t.matchPhrase(body)
	case "multi_match":
		return t.multiMatch(body)
	case "term":
		return t.term(body)
	case "terms":
		return t.terms(body)
	case "range":
		return t.rangeQuery(body)
	case "bool":
		return t.boolQuery(body)
	case "query_string":
		return t.queryString(body, false)
	case "simple_query_string":
		return t.queryString(body, true)
	case "prefix":
		return t.prefix(body)
	case "wildcard":
		return t.wildcard(body)
	case "regexp":
		return t.regexp(body)
	case "fuzzy":
		return t.fuzzy(body)
	case "exists":
		return t.exists(body)
	case "ids":
		return t.ids(body)
	case "match_all":
		return t.matchAll(body)
	case "match_none":
		return t.matchNone(body)
	case "constant_score":
		return t.constantScore(body)
	case "dis_max":
		return t.disMax(body)
	}
	return nil, parsingErr("unknown query [%s]; supported: bool, constant_score, dis_max, exists, fuzzy, ids, match, match_all, match_none, match_phrase, multi_match, prefix, query_string, range, regexp, simple_query_string, term, terms, wildcard", name)
}

// common handles the parameters every query accepts; it reports whether key
// was one of them.
func common(key string, v json.RawMessage, boost *float64, where string) (bool, error) {
	switch key {
	case "boost":
		b, err := asFloat(v, where+".boost")
		if err != nil {
			return true, err
		}
		if b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
			return true, argErr("[%s] boost must be a finite number >= 0, got %v", where, b)
		}
		*boost = b
		return true, nil
	case "_name":
		_, err := asString(v, where+"._name")
		return true, err
	}
	return false, nil
}

// setBoost applies a boost other than the default 1 to q.
func setBoost(q query.Query, boost float64) query.Query {
	if boost == 1 {
		return q
	}
	switch q.(type) {
	case *query.BooleanQuery, *query.ConjunctionQuery, *query.DisjunctionQuery:
		// bleve keeps these queries' boost but never applies it.
		return &scoring.Boost{Query: q, Factor: boost}
	}
	if bq, ok := q.(query.BoostableQuery); ok {
		bq.SetBoost(boost)
	}
	return q
}

// ---- full-text queries ----

type matchOpts struct {
	text         string
	isNumber     bool
	operatorAnd  bool
	fuzziness    int
	autoFuzzy    bool
	prefix       int
	analyzer     string
	msm          string
	lenient      bool
	zeroTermsAll bool
	boost        float64
	hasFuzziness bool
	hasPrefixLen bool
}

func (t *translator) match(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "match")
	if err != nil {
		return nil, err
	}
	field, v, _, err := fieldAndParams(o, "match")
	if err != nil {
		return nil, err
	}
	opts := matchOpts{boost: 1}
	if kind(v) == 'o' {
		p, _ := asObject(v, "match."+field)
		hasQuery := false
		for _, k := range p.sortedKeys() {
			pv := p[k]
			if ok, err := common(k, pv, &opts.boost, "match"); ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			switch k {
			case "query":
				hasQuery = true
				opts.isNumber = kind(pv) == 'n'
				if opts.text, err = asScalarString(pv, "match.query"); err != nil {
					return nil, err
				}
			default:
				if err := opts.set(k, pv, "match"); err != nil {
					return nil, err
				}
			}
		}
		if !hasQuery {
			return nil, parsingErr("[match] query for field [%s] needs [query]", field)
		}
	} else {
		opts.isNumber = kind(v) == 'n'
		if opts.text, err = asScalarString(v, "match."+field); err != nil {
			return nil, err
		}
	}
	return t.buildMatch(field, opts)
}

// set parses one match option shared by match, multi_match and the query
// string queries.
func (m *matchOpts) set(k string, v json.RawMessage, where string) error {
	var err error
	switch k {
	case "operator", "default_operator":
		var s string
		if s, err = asString(v, where+"."+k); err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "and":
			m.operatorAnd = true
		case "or":
			m.operatorAnd = false
		default:
			return argErr("[%s] %s must be \"and\" or \"or\", got %q", where, k, s)
		}
	case "fuzziness":
		var s string
		if s, err = asScalarString(v, where+".fuzziness"); err != nil {
			return err
		}
		m.hasFuzziness = true
		m.fuzziness, m.autoFuzzy, err = parseFuzziness(s)
		return err
	case "prefix_length", "fuzzy_prefix_length":
		if m.prefix, err = asInt(v, where+"."+k); err != nil {
			return err
		}
		if m.prefix < 0 {
			return argErr("[%s] %s must be >= 0, got %d", where, k, m.prefix)
		}
	case "analyzer":
		m.analyzer, err = asString(v, where+".analyzer")
	case "minimum_should_match":
		m.msm, err = asScalarString(v, where+".minimum_should_match")
	case "lenient":
		m.lenient, err = asBool(v, where+".lenient")
	case "zero_terms_query":
		var s string
		if s, err = asString(v, where+".zero_terms_query"); err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "none":
		case "all":
			m.zeroTermsAll = true
		default:
			return argErr("[%s] zero_terms_query must be \"none\" or \"all\", got %q", where, s)
		}
	case "max_expansions", "fuzzy_max_expansions":
		_, err = asInt(v, where+"."+k)
	case "fuzzy_transpositions", "auto_generate_synonyms_phrase_query":
		// bleve's fuzzy matching counts a transposition as two edits
		// either way; synonyms are not configured, so both are no-ops.
		_, err = asBool(v, where+"."+k)
	default:
		return unknownKey(where, k)
	}
	return err
}

func parseFuzziness(s string) (int, bool, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "AUTO" || strings.HasPrefix(u, "AUTO:3,6") {
		return 0, true, nil
	}
	if strings.HasPrefix(u, "AUTO:") {
		return 0, false, argErr("fuzziness [%s]: only AUTO and AUTO:3,6 (the default thresholds) are supported; use AUTO or 0, 1, 2", s)
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > 2 {
		return 0, false, argErr("fuzziness [%s] must be AUTO, 0, 1 or 2", s)
	}
	return int(f), false, nil
}

// buildMatch builds a match on one field, honouring the field's type the
// way Elasticsearch does: full text for text/keyword, an exact value for
// numbers, dates and booleans.
func (t *translator) buildMatch(field string, m matchOpts) (query.Query, error) {
	ft := t.fieldType(field)
	switch {
	case field == "_id":
		return setBoost(query.NewDocIDQuery([]string{m.text}), m.boost), nil
	case isNumeric(ft) || ft == "date" || ft == "boolean":
		if m.hasFuzziness && (m.fuzziness > 0 || m.autoFuzzy) && !m.lenient {
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
	if m.msm != "" && !m.operatorAnd {
		return t.matchWithMinimum(field, m)
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
	if m.autoFuzzy {
		mq.SetAutoFuzziness(true)
	} else {
		mq.SetFuzziness(m.fuzziness)
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

// matchWithMinimum expands a match into one clause per analyzed term and
// requires minimum_should_match of them.
func (t *translator) matchWithMinimum(field string, m matchOpts) (query.Query, error) {
	terms, ok, err := t.analyze(field, m.analyzer, m.text)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, argErr("minimum_should_match on field [%s] needs the index's analyzer, which this node does not expose; use operator and/or instead", field)
	}
	if len(terms) == 0 {
		if m.zeroTermsAll {
			return setBoost(query.NewMatchAllQuery(), m.boost), nil
		}
		return query.NewMatchNoneQuery(), nil
	}
	min, err := minimumShouldMatch(m.msm, len(terms))
	if err != nil {
		return nil, err
	}
	if min < 1 {
		min = 1
	}
	clauses := make([]query.Query, 0, len(terms))
	for _, term := range terms {
		clauses = append(clauses, t.termClause(field, term, m))
	}
	d := query.NewDisjunctionQuery(clauses)
	d.SetMin(float64(min))
	return setBoost(d, m.boost), nil
}

func (t *translator) termClause(field, term string, m matchOpts) query.Query {
	if m.autoFuzzy || m.fuzziness > 0 {
		fq := query.NewFuzzyQuery(term)
		fq.SetField(field)
		if m.autoFuzzy {
			fq.SetAutoFuzziness(true)
		} else {
			fq.SetFuzziness(m.fuzziness)
		}
		fq.SetPrefix(m.prefix)
		return fq
	}
	tq := query.NewTermQuery(term)
	tq.SetField(field)
	return tq
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
	if v < 0 {
		v = 0
	}
	if v > n {
		v = n
	}
	return v, nil
}

func (t *translator) matchPhrase(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "match_phrase")
	if err != nil {
		return nil, err
	}
	field, v, _, err := fieldAndParams(o, "match_phrase")
	if err != nil {
		return nil, err
	}
	boost, text, analyzer, slop := 1.0, "", "", 0
	zeroAll := false
	if kind(v) == 'o' {
		p, _ := asObject(v, "match_phrase."+field)
		hasQuery := false
		for _, k := range p.sortedKeys() {
			pv := p[k]
			if ok, err := common(k, pv, &boost, "match_phrase"); ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			switch k {
			case "query":
				hasQuery = true
				text, err = asScalarString(pv, "match_phrase.query")
			case "analyzer":
				analyzer, err = asString(pv, "match_phrase.analyzer")
			case "slop":
				slop, err = asInt(pv, "match_phrase.slop")
			case "zero_terms_query":
				var s string
				s, err = asString(pv, "match_phrase.zero_terms_query")
				zeroAll = strings.EqualFold(s, "all")
				if err == nil && !zeroAll && !strings.EqualFold(s, "none") {
					err = argErr("[match_phrase] zero_terms_query must be \"none\" or \"all\", got %q", s)
				}
			default:
				return nil, unknownKey("match_phrase", k)
			}
			if err != nil {
				return nil, err
			}
		}
		if !hasQuery {
			return nil, parsingErr("[match_phrase] query for field [%s] needs [query]", field)
		}
	} else if text, err = asScalarString(v, "match_phrase."+field); err != nil {
		return nil, err
	}
	return t.buildPhrase(field, text, analyzer, slop, zeroAll, boost)
}

func (t *translator) buildPhrase(field, text, analyzer string, slop int, zeroAll bool, boost float64) (query.Query, error) {
	if slop < 0 {
		return nil, argErr("[match_phrase] slop must be >= 0, got %d", slop)
	}
	if slop > 0 {
		return nil, argErr("phrase slop %d on field [%s] is not supported (bleve matches phrases exactly); use slop 0, or a match query with operator and", slop, field)
	}
	ft := t.fieldType(field)
	if isNumeric(ft) || ft == "date" || ft == "boolean" {
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

func (t *translator) multiMatch(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "multi_match")
	if err != nil {
		return nil, err
	}
	opts := matchOpts{boost: 1}
	var fields []string
	typ := "best_fields"
	hasQuery := false
	slop := 0
	tie := 0.0
	for _, k := range o.sortedKeys() {
		v := o[k]
		if ok, err := common(k, v, &opts.boost, "multi_match"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		switch k {
		case "query":
			hasQuery = true
			opts.isNumber = kind(v) == 'n'
			opts.text, err = asScalarString(v, "multi_match.query")
		case "fields":
			var arr []json.RawMessage
			if arr, err = asArray(v, "multi_match.fields", true); err != nil {
				return nil, err
			}
			for _, f := range arr {
				s, err := asString(f, "multi_match.fields")
				if err != nil {
					return nil, err
				}
				fields = append(fields, s)
			}
		case "type":
			typ, err = asString(v, "multi_match.type")
		case "tie_breaker":
			tie, err = tieBreaker(v, "multi_match.tie_breaker")
		case "slop":
			slop, err = asInt(v, "multi_match.slop")
		default:
			err = opts.set(k, v, "multi_match")
		}
		if err != nil {
			return nil, err
		}
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
			if err != nil && opts.lenient {
				q, err = query.NewMatchNoneQuery(), nil
			}
		} else {
			fo := opts
			fo.boost = fboost
			q, err = t.buildMatch(name, fo)
			if err != nil && opts.lenient {
				q, err = query.NewMatchNoneQuery(), nil
			}
		}
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	if len(clauses) == 1 {
		return setBoost(clauses[0], opts.boost), nil
	}
	if typ == "most_fields" {
		return setBoost(query.NewDisjunctionQuery(clauses), opts.boost), nil
	}
	return setBoost(scoring.NewDisMax(clauses, tie), opts.boost), nil
}

// tieBreaker reads a dis_max tie_breaker: a number in [0, 1].
func tieBreaker(v json.RawMessage, name string) (float64, error) {
	f, err := asFloat(v, name)
	if err != nil {
		return 0, err
	}
	if f < 0 || f > 1 {
		return 0, argErr("[%s] must be between 0 and 1, got [%v]", name, f)
	}
	return f, nil
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

// ---- term-level queries ----

// fieldValue parses {"FIELD": value} or {"FIELD": {"value": v, ...}} for
// the term-level queries; valueKeys are the accepted names of the value.
func (t *translator) fieldValue(body json.RawMessage, name string, extra func(k string, v json.RawMessage) (bool, error), valueKeys ...string) (string, json.RawMessage, float64, error) {
	o, err := asObject(body, name)
	if err != nil {
		return "", nil, 0, err
	}
	field, v, _, err := fieldAndParams(o, name)
	if err != nil {
		return "", nil, 0, err
	}
	boost := 1.0
	if kind(v) != 'o' {
		return field, v, boost, nil
	}
	p, _ := asObject(v, name+"."+field)
	var value json.RawMessage
	for _, k := range p.sortedKeys() {
		pv := p[k]
		if ok, err := common(k, pv, &boost, name); ok {
			if err != nil {
				return "", nil, 0, err
			}
			continue
		}
		isValue := false
		for _, vk := range valueKeys {
			if k == vk {
				isValue = true
			}
		}
		if isValue {
			value = pv
			continue
		}
		if extra != nil {
			if ok, err := extra(k, pv); ok {
				if err != nil {
					return "", nil, 0, err
				}
				continue
			}
		}
		return "", nil, 0, unknownKey(name, k)
	}
	if value == nil {
		return "", nil, 0, parsingErr("[%s] query for field [%s] needs [%s]", name, field, valueKeys[0])
	}
	return field, value, boost, nil
}

func caseInsensitive(name string) func(string, json.RawMessage) (bool, error) {
	return func(k string, v json.RawMessage) (bool, error) {
		switch k {
		case "case_insensitive":
			b, err := asBool(v, name+".case_insensitive")
			if err == nil && b {
				err = argErr("[%s] case_insensitive true is not supported; query the lower-cased value of a text field, or a keyword field with the exact case", name)
			}
			return true, err
		case "rewrite":
			_, err := asString(v, name+".rewrite")
			return true, err
		}
		return false, nil
	}
}

func (t *translator) term(body json.RawMessage) (query.Query, error) {
	field, v, boost, err := t.fieldValue(body, "term", caseInsensitive("term"), "value")
	if err != nil {
		return nil, err
	}
	q, err := t.termValue(field, v, "term")
	if err != nil {
		return nil, err
	}
	return setBoost(q, boost), nil
}

// termValue builds an exact-value query for one JSON scalar on field.
func (t *translator) termValue(field string, v json.RawMessage, where string) (query.Query, error) {
	k := kind(v)
	if k == 'o' || k == 'a' || k == 'z' || k == 0 {
		return nil, parsingErr("[%s] value for field [%s] must be a string, number or boolean, got %s", where, field, kindName(k))
	}
	s, err := asScalarString(v, where+"."+field)
	if err != nil {
		return nil, err
	}
	if field == "_id" {
		return query.NewDocIDQuery([]string{s}), nil
	}
	return t.exactValue(field, t.fieldType(field), s, k == 'n')
}

// exactValue builds the query that matches documents whose field holds
// exactly value, by the field's type.
func (t *translator) exactValue(field, ft, value string, isNumber bool) (query.Query, error) {
	switch {
	case field == "_id":
		return query.NewDocIDQuery([]string{value}), nil
	case field == "_index" || field == "_routing" || field == "_source":
		return nil, argErr("querying the metadata field [%s] is not supported; use the index name in the URL", field)
	case isNumeric(ft):
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, shardErr("failed to create query: [%s] is not a number, but field [%s] is of type [%s]", value, field, ft)
		}
		if isIntegral(ft) && f != math.Trunc(f) {
			return query.NewMatchNoneQuery(), nil
		}
		incl := true
		q := query.NewNumericRangeInclusiveQuery(&f, &f, &incl, &incl)
		q.SetField(field)
		return q, nil
	case ft == "date":
		dp, err := t.dateParserFor(field, "", "")
		if err != nil {
			return nil, err
		}
		tm, err := dp.parse(value, isNumber, false)
		if err != nil {
			return nil, err
		}
		if err := checkDateRange(tm, field); err != nil {
			return nil, err
		}
		incl := true
		q := query.NewDateRangeInclusiveQuery(tm, tm, &incl, &incl)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		var b bool
		switch value {
		case "true":
			b = true
		case "false", "":
		default:
			return nil, shardErr("failed to create query: can't parse boolean value [%s] for field [%s], expected [true] or [false]", value, field)
		}
		q := query.NewBoolFieldQuery(b)
		q.SetField(field)
		return q, nil
	}
	q := query.NewTermQuery(value)
	q.SetField(field)
	return q, nil
}

func (t *translator) terms(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "terms")
	if err != nil {
		return nil, err
	}
	field, v, extra, err := fieldAndParams(o, "terms", "boost", "_name")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	for k, ev := range extra {
		if _, err := common(k, ev, &boost, "terms"); err != nil {
			return nil, err
		}
	}
	if kind(v) == 'o' {
		return nil, argErr("[terms] lookup (an object for field [%s]) is not supported; list the values in an array", field)
	}
	vals, err := asArray(v, "terms."+field, false)
	if err != nil {
		return nil, err
	}
	if len(vals) > 65536 {
		return nil, argErr("[terms] query for field [%s] has %d values, more than the 65536 allowed", field, len(vals))
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
		return setBoost(query.NewDocIDQuery(ids), boost), nil
	}
	if len(vals) == 0 {
		return query.NewMatchNoneQuery(), nil
	}
	clauses := make([]query.Query, 0, len(vals))
	for _, e := range vals {
		q, err := t.termValue(field, e, "terms")
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, q)
	}
	return setBoost(query.NewDisjunctionQuery(clauses), boost), nil
}

type rangeBounds struct {
	lower, upper       json.RawMessage
	inclLower, inclUpp bool
	format, timeZone   string
	boost              float64
}

func (t *translator) rangeQuery(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "range")
	if err != nil {
		return nil, err
	}
	field, v, _, err := fieldAndParams(o, "range")
	if err != nil {
		return nil, err
	}
	p, err := asObject(v, "range."+field)
	if err != nil {
		return nil, err
	}
	rb := rangeBounds{inclLower: true, inclUpp: true, boost: 1}
	for _, k := range p.sortedKeys() {
		pv := p[k]
		if ok, err := common(k, pv, &rb.boost, "range"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if kind(pv) == 'z' && k != "format" && k != "time_zone" && k != "relation" {
			continue // null bound: unbounded, as Elasticsearch treats it
		}
		switch k {
		case "gt":
			rb.lower, rb.inclLower = pv, false
		case "gte", "from":
			rb.lower, rb.inclLower = pv, true
		case "lt":
			rb.upper, rb.inclUpp = pv, false
		case "lte", "to":
			rb.upper, rb.inclUpp = pv, true
		case "include_lower":
			if rb.inclLower, err = asBool(pv, "range.include_lower"); err != nil {
				return nil, err
			}
		case "include_upper":
			if rb.inclUpp, err = asBool(pv, "range.include_upper"); err != nil {
				return nil, err
			}
		case "format":
			if rb.format, err = asString(pv, "range.format"); err != nil {
				return nil, err
			}
		case "time_zone":
			if rb.timeZone, err = asString(pv, "range.time_zone"); err != nil {
				return nil, err
			}
		case "relation":
			s, err := asString(pv, "range.relation")
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(s, "intersects") && !strings.EqualFold(s, "within") {
				return nil, argErr("[range] relation [%s] applies to range fields, which this node does not have; drop it", s)
			}
		default:
			return nil, unknownKey("range", k)
		}
	}
	for _, b := range []json.RawMessage{rb.lower, rb.upper} {
		if b != nil {
			if k := kind(b); k != 's' && k != 'n' && k != 'b' {
				return nil, parsingErr("[range] bound for field [%s] must be a string or number, got %s", field, kindName(k))
			}
		}
	}
	q, err := t.buildRange(field, rb)
	if err != nil {
		return nil, err
	}
	return setBoost(q, rb.boost), nil
}

func (t *translator) buildRange(field string, rb rangeBounds) (query.Query, error) {
	ft := t.fieldType(field)
	if rb.lower == nil && rb.upper == nil {
		return t.existsField(field)
	}
	if ft == "" {
		// Unmapped: guess from the values so the (empty) answer is quick.
		if kind(rb.lower) == 'n' || kind(rb.upper) == 'n' {
			ft = "double"
		}
	}
	switch {
	case isNumeric(ft):
		var lo, hi *float64
		for i, b := range []json.RawMessage{rb.lower, rb.upper} {
			if b == nil {
				continue
			}
			f, err := asFloat(b, "range."+field)
			if err != nil {
				return nil, shardErr("failed to create query: range bound for numeric field [%s] is not a number", field)
			}
			if i == 0 {
				lo = &f
			} else {
				hi = &f
			}
		}
		q := query.NewNumericRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
		q.SetField(field)
		return q, nil
	case ft == "date":
		dp, err := t.dateParserFor(field, rb.format, rb.timeZone)
		if err != nil {
			return nil, err
		}
		var lo, hi time.Time
		for i, b := range []json.RawMessage{rb.lower, rb.upper} {
			if b == nil {
				continue
			}
			s, err := asScalarString(b, "range."+field)
			if err != nil {
				return nil, err
			}
			// gt and lte round up, gte and lt round down (Elasticsearch's rule).
			roundUp := (i == 0 && !rb.inclLower) || (i == 1 && rb.inclUpp)
			tm, err := dp.parse(s, kind(b) == 'n', roundUp)
			if err != nil {
				return nil, err
			}
			if err := checkDateRange(tm, field); err != nil {
				return nil, err
			}
			if i == 0 {
				lo = tm
			} else {
				hi = tm
			}
		}
		q := query.NewDateRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		return nil, argErr("[range] on boolean field [%s] is not supported; use a term query", field)
	}
	var lo, hi string
	for i, b := range []json.RawMessage{rb.lower, rb.upper} {
		if b == nil {
			continue
		}
		s, err := asScalarString(b, "range."+field)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			lo = s
		} else {
			hi = s
		}
	}
	q := query.NewTermRangeInclusiveQuery(lo, hi, &rb.inclLower, &rb.inclUpp)
	q.SetField(field)
	return q, nil
}

func (t *translator) prefix(body json.RawMessage) (query.Query, error) {
	return t.textPattern(body, "prefix", func(s string) fieldQuery { return query.NewPrefixQuery(s) })
}

func (t *translator) wildcard(body json.RawMessage) (query.Query, error) {
	return t.textPattern(body, "wildcard", func(s string) fieldQuery { return query.NewWildcardQuery(s) })
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
func (t *translator) textPattern(body json.RawMessage, kind string, build func(string) fieldQuery) (query.Query, error) {
	field, v, boost, err := t.fieldValue(body, kind, caseInsensitive(kind), "value", kind)
	if err != nil {
		return nil, err
	}
	s, err := asScalarString(v, kind+"."+field)
	if err != nil {
		return nil, err
	}
	if err := t.textOnly(field, kind); err != nil {
		return nil, err
	}
	q := build(s)
	q.SetField(field)
	return setBoost(q, boost), nil
}

func (t *translator) regexp(body json.RawMessage) (query.Query, error) {
	extra := func(k string, v json.RawMessage) (bool, error) {
		switch k {
		case "flags":
			s, err := asString(v, "regexp.flags")
			if err == nil && s != "ALL" && s != "NONE" && s != "" {
				err = argErr("[regexp] flags [%s] are not supported; the pattern uses RE2 syntax, drop flags", s)
			}
			return true, err
		case "max_determinized_states", "flags_value":
			_, err := asInt(v, "regexp."+k)
			return true, err
		}
		return caseInsensitive("regexp")(k, v)
	}
	field, v, boost, err := t.fieldValue(body, "regexp", extra, "value")
	if err != nil {
		return nil, err
	}
	s, err := asScalarString(v, "regexp."+field)
	if err != nil {
		return nil, err
	}
	if err := t.textOnly(field, "regexp"); err != nil {
		return nil, err
	}
	if err := checkRegexp(s); err != nil {
		return nil, err
	}
	q := query.NewRegexpQuery(s)
	q.SetField(field)
	return setBoost(q, boost), nil
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

func (t *translator) fuzzy(body json.RawMessage) (query.Query, error) {
	opts := matchOpts{autoFuzzy: true}
	extra := func(k string, v json.RawMessage) (bool, error) {
		switch k {
		case "fuzziness", "prefix_length", "max_expansions":
			return true, opts.set(k, v, "fuzzy")
		case "transpositions":
			_, err := asBool(v, "fuzzy.transpositions")
			return true, err
		case "rewrite":
			_, err := asString(v, "fuzzy.rewrite")
			return true, err
		}
		return false, nil
	}
	field, v, boost, err := t.fieldValue(body, "fuzzy", extra, "value")
	if err != nil {
		return nil, err
	}
	s, err := asScalarString(v, "fuzzy."+field)
	if err != nil {
		return nil, err
	}
	if ft := t.fieldType(field); isNumeric(ft) || ft == "date" || ft == "boolean" {
		return nil, argErr("can only use fuzzy queries on keyword and text fields, not on [%s] which is of type [%s]", field, ft)
	}
	q := query.NewFuzzyQuery(s)
	q.SetField(field)
	if opts.autoFuzzy {
		q.SetAutoFuzziness(true)
	} else {
		q.SetFuzziness(opts.fuzziness)
	}
	q.SetPrefix(opts.prefix)
	return setBoost(q, boost), nil
}

func (t *translator) exists(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "exists")
	if err != nil {
		return nil, err
	}
	boost, field := 1.0, ""
	for _, k := range o.sortedKeys() {
		if ok, err := common(k, o[k], &boost, "exists"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if k != "field" {
			return nil, unknownKey("exists", k)
		}
		if field, err = asString(o[k], "exists.field"); err != nil {
			return nil, err
		}
	}
	if field == "" {
		return nil, parsingErr("[exists] needs [field]")
	}
	if err := checkMetaField(field, "exists"); err != nil {
		return nil, err
	}
	q, err := t.existsField(field)
	if err != nil {
		return nil, err
	}
	return setBoost(q, boost), nil
}

// existsField matches documents that have any indexed value in field.
func (t *translator) existsField(field string) (query.Query, error) {
	ft := t.fieldType(field)
	switch {
	case field == "_id":
		return query.NewMatchAllQuery(), nil
	case isNumeric(ft) || ft == "date":
		// Both are prefix-coded int64 terms; an open numeric range covers
		// every value a date field can hold (years 1678 to 2262). The bound
		// is finite so the query survives a JSON round trip.
		lo := -math.MaxFloat64
		q := query.NewNumericRangeQuery(&lo, nil)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		tq, fq := query.NewBoolFieldQuery(true), query.NewBoolFieldQuery(false)
		tq.SetField(field)
		fq.SetField(field)
		return query.NewDisjunctionQuery([]query.Query{tq, fq}), nil
	case ft == "text" || ft == "keyword":
		q := query.NewWildcardQuery("*")
		q.SetField(field)
		return q, nil
	case ft == "object":
		return nil, argErr("[exists] on object field [%s] is not supported; name one of its leaf fields", field)
	}
	return query.NewMatchNoneQuery(), nil
}

func (t *translator) ids(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "ids")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	var ids []string
	for _, k := range o.sortedKeys() {
		if ok, err := common(k, o[k], &boost, "ids"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if k != "values" {
			return nil, unknownKey("ids", k)
		}
		arr, err := asArray(o[k], "ids.values", false)
		if err != nil {
			return nil, err
		}
		for _, e := range arr {
			s, err := asScalarString(e, "ids.values")
			if err != nil {
				return nil, err
			}
			ids = append(ids, s)
		}
	}
	if len(ids) == 0 {
		return query.NewMatchNoneQuery(), nil
	}
	return setBoost(query.NewDocIDQuery(ids), boost), nil
}

func (t *translator) matchAll(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "match_all")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	for _, k := range o.sortedKeys() {
		if ok, err := common(k, o[k], &boost, "match_all"); !ok {
			return nil, unknownKey("match_all", k)
		} else if err != nil {
			return nil, err
		}
	}
	return setBoost(query.NewMatchAllQuery(), boost), nil
}

func (t *translator) matchNone(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "match_none")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	for _, k := range o.sortedKeys() {
		if ok, err := common(k, o[k], &boost, "match_none"); !ok {
			return nil, unknownKey("match_none", k)
		} else if err != nil {
			return nil, err
		}
	}
	return query.NewMatchNoneQuery(), nil
}

// constantScore wraps the filter in a boolean query whose only scoring
// clause is match_all, so every hit scores the boost.
func (t *translator) constantScore(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "constant_score")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	var filter query.Query
	for _, k := range o.sortedKeys() {
		if ok, err := common(k, o[k], &boost, "constant_score"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if k != "filter" {
			return nil, unknownKey("constant_score", k)
		}
		if filter, err = t.query(o[k], "constant_score.filter"); err != nil {
			return nil, err
		}
	}
	if filter == nil {
		return nil, parsingErr("[constant_score] needs [filter]")
	}
	all := query.NewMatchAllQuery()
	all.SetBoost(boost)
	bq := query.NewBooleanQuery([]query.Query{all}, nil, nil)
	bq.AddFilter(filter)
	return bq, nil
}

func (t *translator) boolQuery(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "bool")
	if err != nil {
		return nil, err
	}
	boost := 1.0
	var must, should, mustNot, filter []query.Query
	msm := ""
	for _, k := range o.sortedKeys() {
		v := o[k]
		if ok, err := common(k, v, &boost, "bool"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		var dst *[]query.Query
		switch k {
		case "must":
			dst = &must
		case "should":
			dst = &should
		case "must_not":
			dst = &mustNot
		case "filter":
			dst = &filter
		case "minimum_should_match":
			if msm, err = asScalarString(v, "bool.minimum_should_match"); err != nil {
				return nil, err
			}
			continue
		case "adjust_pure_negative":
			if _, err := asBool(v, "bool.adjust_pure_negative"); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, unknownKey("bool", k)
		}
		arr, err := asArray(v, "bool."+k, true)
		if err != nil {
			return nil, err
		}
		for i, e := range arr {
			q, err := t.query(e, "bool."+k+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			*dst = append(*dst, q)
		}
	}
	min := 0
	if msm != "" && len(should) > 0 {
		if min, err = minimumShouldMatch(msm, len(should)); err != nil {
			return nil, err
		}
	} else if len(must) == 0 && len(filter) == 0 && len(should) > 0 {
		min = 1
	}
	return buildBool(must, should, mustNot, filter, min, boost), nil
}

// buildBool assembles a bleve boolean query with Elasticsearch semantics:
// should clauses are optional when must or filter clauses exist unless min
// says otherwise; filter clauses restrict without scoring; an empty bool
// matches everything.
func buildBool(must, should, mustNot, filter []query.Query, min int, boost float64) query.Query {
	if len(must) == 0 && len(should) == 0 && len(mustNot) == 0 && len(filter) == 0 {
		return setBoost(query.NewMatchAllQuery(), boost)
	}
	if len(should) > 0 && min == 0 && len(must) == 0 {
		// Optional should clauses beside a filter: every filtered doc
		// matches, should only adds score.
		must = append(must, query.NewMatchAllQuery())
	}
	if len(should) > 0 && min > len(should) {
		return query.NewMatchNoneQuery()
	}
	bq := query.NewBooleanQuery(must, should, mustNot)
	if len(should) > 0 {
		bq.SetMinShould(float64(min))
	}
	switch len(filter) {
	case 0:
	case 1:
		bq.AddFilter(filter[0])
	default:
		bq.AddFilter(query.NewConjunctionQuery(filter))
	}
	if len(must) == 0 && len(should) == 0 && len(mustNot) == 0 {
		// Filter only: match_all restricted by the filter.
		bq.AddMust(query.NewMatchAllQuery())
	}
	return setBoost(bq, boost)
}

// checkDateRange refuses dates that bleve's nanosecond date fields cannot
// hold.
func checkDateRange(tm time.Time, field string) error {
	if tm.Before(query.MinRFC3339CompatibleTime) || tm.After(query.MaxRFC3339CompatibleTime) {
		return argErr("date %s for field [%s] is outside the supported range 1677-12-01 to 2262-04-11", tm.UTC().Format(time.RFC3339), field)
	}
	return nil
}

// textOnly refuses term-pattern queries on fields that hold no terms, as
// Elasticsearch does.
func (t *translator) textOnly(field, queryName string) error {
	if ft := t.fieldType(field); isNumeric(ft) || ft == "date" || ft == "boolean" {
		return argErr("can only use %s queries on keyword and text fields, not on [%s] which is of type [%s]", queryName, field, ft)
	}
	return nil
}

// disMax matches what any of its queries matches, scored by the best
// matching clause plus tie_breaker times the others.
func (t *translator) disMax(body json.RawMessage) (query.Query, error) {
	o, err := asObject(body, "dis_max")
	if err != nil {
		return nil, err
	}
	boost, tie := 1.0, 0.0
	var clauses []query.Query
	for _, k := range o.sortedKeys() {
		v := o[k]
		if ok, err := common(k, v, &boost, "dis_max"); ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		switch k {
		case "queries":
			arr, err := asArray(v, "dis_max.queries", true)
			if err != nil {
				return nil, err
			}
			for i, e := range arr {
				q, err := t.query(e, "dis_max.queries["+strconv.Itoa(i)+"]")
				if err != nil {
					return nil, err
				}
				clauses = append(clauses, q)
			}
		case "tie_breaker":
			if tie, err = tieBreaker(v, "dis_max.tie_breaker"); err != nil {
				return nil, err
			}
		default:
			return nil, unknownKey("dis_max", k)
		}
	}
	if len(clauses) == 0 {
		return nil, parsingErr("[dis_max] requires 'queries' field with at least one clause")
	}
	return setBoost(scoring.NewDisMax(clauses, tie), boost), nil
}
