// Package esdsl translates Elasticsearch search requests (query DSL, sort,
// _source filtering, highlight, aggregations, scroll, _count and _msearch
// bodies) into bleve v2 search requests, and bleve results back into
// Elasticsearch 8 response JSON.
//
// The caller (the HTTP layer) parses with ParseSearch, runs Search.Request
// on the shards, shapes the result with Search.Response and, for scrolls,
// adds Search.ScrollID. ParseScroll continues a scroll, ParseCount and
// ParseMsearch serve _count and _msearch. The package keeps no state: every
// function is safe for concurrent use, and every error it returns for bad
// input is an *Error carrying Elasticsearch's error type and a kind
// (ErrInvalidRequest); the caller decides what status a kind is answered
// with.
//
// Mapping knowledge comes from the caller-owned Fields interface (field
// types by dotted path). Optional abilities, checked at run time, widen what
// can be translated: Analyzer (minimum_should_match, zero_terms_query,
// match_bool_prefix, multi_match cross_fields and bool_prefix, and
// fuzziness AUTO:low,high other than AUTO:3,6 need the terms before the
// search runs), AnalyzerResolver (an "analyzer" named
// in a query), FieldLister (the default "*" field list and field patterns
// such as "title*") and DateFormatter (a date field's mapping format).
// Without them, those requests are refused (ErrInvalidRequest) with a
// reason that says what is missing, or
// query_string searches the index's default field.
//
// Conventions shared with the index package: a bleve field is named by the
// ES dotted path, keyword sub-fields are fields of their own
// ("title.keyword"), the original document is the stored field
// index.SourceField, dates are bleve datetime fields and booleans bleve
// boolean fields ("T"/"F" terms).
//
// Where bleve cannot express Elasticsearch's behaviour the request is
// refused (ErrInvalidRequest) naming the feature, never answered differently:
// phrase slop > 0 (match_phrase, match_phrase_prefix, multi_match phrase
// types, query_string "a b"~N), aggregations on range fields and scripts, and the body
// keys listed in unsupportedBodyKeys. Aggregations are computed per shard
// from doc values (AggCollector), merged (ReduceAggs) and rendered
// (RenderAggs); see aggs.go. Known differences that do not change
// which documents match:
//   - bleve normalises query weights, so absolute scores differ from
//     Elasticsearch's (a lone boost does not show in the score); dis_max,
//     every multi_match type and query_string over several fields take the
//     best clause plus tie_breaker times the others (index/scoring.DisMax;
//     most_fields and bool_prefix default to a tie_breaker of 1, a sum),
//     and boosts on bool, terms and other compound queries are applied
//     (index/scoring.Boost), as in Elasticsearch;
//   - multi_match cross_fields matches as Elasticsearch's does (fields
//     grouped by how they analyze the text, each term a dis_max over a
//     group's fields) but does not blend the fields' term statistics; the
//     final prefix of match_bool_prefix scores as its best expansion where
//     Elasticsearch scores it as a constant (see multi_match_cross.go and
//     index.BestPrefix);
//   - highlights are cut from _source around the matched terms' offsets
//     (bleve's term locations), so they need term vectors on the field;
//   - scroll pages are search_after pages under a total sort (the request's
//     sort, then _id) over a point in time (see scroll.go);
//   - matched_queries lists a hit's named queries but not their scores
//     (include_named_queries_score is refused).
package esdsl
