package esdsl

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/scoring"
)

// Each query kind lives in a file of its own (match.go, term.go, bool.go,
// ...) and reads its parameters through params (params.go); this file holds
// the translator and the table that dispatches a query object to its kind.

// translator turns query DSL objects into bleve queries. It is built per
// request and is not shared.
type translator struct {
	fields Fields
	now    time.Time
	scope  Scope
	depth  int          // nesting of compound queries
	named  []namedQuery // queries with a _name, in the order met
}

// namedQuery is a query given a "_name", whose matches are reported in
// each hit's matched_queries.
type namedQuery struct {
	name string
	q    query.Query
}

// maxQueryDepth bounds the nesting of compound queries, as Elasticsearch's
// indices.query.bool.max_nested_depth does.
const maxQueryDepth = 30

// fieldType returns the type of the field at path as the translator treats
// it: date_nanos as date (bleve dates hold nanoseconds), completion as
// keyword (its inputs are indexed as terms).
func (t *translator) fieldType(path string) string {
	if t.fields == nil {
		return ""
	}
	switch ft := t.fields.FieldType(path); ft {
	case index.TypeDateNanos:
		return index.TypeDate
	case index.TypeCompletion:
		return index.TypeKeyword
	default:
		return ft
	}
}

// queryKind returns the translation of the query called name, or nil. (A
// switch, not a map: the translations call back into query, which a
// package-level map of them would make an initialization cycle.)
func queryKind(name string) func(t *translator, body json.RawMessage) (query.Query, error) {
	switch name {
	case "bool":
		return (*translator).boolQuery
	case "constant_score":
		return (*translator).constantScore
	case "dis_max":
		return (*translator).disMax
	case "exists":
		return (*translator).exists
	case "fuzzy":
		return (*translator).fuzzy
	case "ids":
		return (*translator).ids
	case "match":
		return (*translator).match
	case "match_all":
		return (*translator).matchAll
	case "match_none":
		return (*translator).matchNone
	case "match_bool_prefix":
		return (*translator).matchBoolPrefix
	case "match_phrase":
		return (*translator).matchPhrase
	case "match_phrase_prefix":
		return (*translator).matchPhrasePrefix
	case "multi_match":
		return (*translator).multiMatch
	case "prefix":
		return (*translator).prefix
	case "query_string":
		return func(t *translator, b json.RawMessage) (query.Query, error) { return t.queryString(b, false) }
	case "range":
		return (*translator).rangeQuery
	case "regexp":
		return (*translator).regexp
	case "simple_query_string":
		return func(t *translator, b json.RawMessage) (query.Query, error) { return t.queryString(b, true) }
	case "term":
		return (*translator).term
	case "terms":
		return (*translator).terms
	case "wildcard":
		return (*translator).wildcard
	}
	return nil
}

// queryNames lists the supported query names for error messages.
const queryNames = "bool, constant_score, dis_max, exists, fuzzy, ids, match, match_all, match_bool_prefix, match_none, match_phrase, match_phrase_prefix, multi_match, prefix, query_string, range, regexp, simple_query_string, term, terms, wildcard"

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
	kind := queryKind(name)
	if kind == nil {
		return nil, parsingErr("unknown query [%s]%s; supported: %s", name, didYouMean(name, strings.Split(queryNames, ", ")), queryNames)
	}
	return kind(t, body)
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
	if ft := t.fieldType(field); isValueType(ft) {
		return argErr("can only use %s queries on keyword and text fields, not on [%s] which is of type [%s]", queryName, field, ft)
	}
	return nil
}
