package esdsl

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireKind(t *testing.T, err error, kind error, reasonPart string) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, e, kind, e.Reason)
	require.Contains(t, e.Reason, reasonPart)
}

func TestParseSearchErrors(t *testing.T) {
	fields := &testFields{types: testTypes, m: testMapping(t)}
	tests := []struct {
		name   string
		body   string
		params url.Values
		typ    string
		reason string // a part of the reason
	}{
		{name: "malformed JSON", body: `{"query":`, typ: "x_content_parse_exception", reason: "not a JSON object"},
		{name: "not an object", body: `[1]`, typ: "x_content_parse_exception", reason: "JSON object"},
		{name: "trailing data", body: `{} {}`, typ: "x_content_parse_exception", reason: "after the JSON object"},
		{name: "unknown top-level key", body: `{"querry":{}}`, typ: "parsing_exception", reason: "[querry]"},
		{name: "unsupported top-level key", body: `{"collapse":{}}`, typ: "illegal_argument_exception", reason: "[collapse]"},
		{name: "unknown query", body: `{"query":{"span_near":{}}}`, typ: "parsing_exception", reason: "[span_near]"},
		{name: "two queries in one object", body: `{"query":{"match_all":{},"match_none":{}}}`, typ: "parsing_exception", reason: "match_all, match_none"},
		{name: "unknown key in match", body: `{"query":{"match":{"title":{"query":"x","operatr":"and"}}}}`, typ: "parsing_exception", reason: "[operatr]"},
		{name: "unknown key in bool", body: `{"query":{"bool":{"mustt":[]}}}`, typ: "parsing_exception", reason: "[mustt]"},
		{name: "match two fields", body: `{"query":{"match":{"a":"x","b":"y"}}}`, typ: "parsing_exception", reason: "multiple fields"},
		{name: "wrong type size", body: `{"size":"ten"}`, typ: "x_content_parse_exception", reason: "[size]"},
		{name: "wrong type query", body: `{"query":"x"}`, typ: "x_content_parse_exception", reason: "must be an object"},
		{name: "wrong type bool clause", body: `{"query":{"bool":{"must":"x"}}}`, typ: "x_content_parse_exception", reason: "bool.must"},
		{name: "term value object", body: `{"query":{"term":{"tags":{"value":{}}}}}`, typ: "parsing_exception", reason: "string, number or boolean"},
		{name: "term number on long field", body: `{"query":{"term":{"views":"abc"}}}`, typ: "query_shard_exception", reason: "not a number"},
		{name: "bad operator", body: `{"query":{"match":{"title":{"query":"x","operator":"xor"}}}}`, typ: "illegal_argument_exception", reason: "xor"},
		{name: "bad fuzziness", body: `{"query":{"match":{"title":{"query":"x","fuzziness":3}}}}`, typ: "illegal_argument_exception", reason: "Valid edit distances are [0, 1, 2] but was [3]"},
		{name: "phrase slop", body: `{"query":{"match_phrase":{"body":{"query":"a b","slop":2}}}}`, typ: "illegal_argument_exception", reason: "slop"},
		{name: "bad date", body: `{"query":{"range":{"published":{"gte":"yesterday"}}}}`, typ: "illegal_argument_exception", reason: "yesterday"},
		{name: "date out of range", body: `{"query":{"range":{"published":{"gte":"3000-01-01"}}}}`, typ: "illegal_argument_exception", reason: "outside the supported range"},
		{name: "bad regexp", body: `{"query":{"regexp":{"tags":"a(b"}}}`, typ: "illegal_argument_exception", reason: "invalid regexp"},
		{name: "regexp anchors", body: `{"query":{"regexp":{"body":"^fox$"}}}`, typ: "illegal_argument_exception", reason: "zero width"},
		{name: "regexp word boundary", body: `{"query":{"regexp":{"body":"\\bfox"}}}`, typ: "illegal_argument_exception", reason: "word boundaries"},
		{name: "wildcard on long", body: `{"query":{"wildcard":{"views":"1*"}}}`, typ: "illegal_argument_exception", reason: "[views]"},
		{name: "prefix on date", body: `{"query":{"prefix":{"published":"2024"}}}`, typ: "illegal_argument_exception", reason: "[published]"},
		{name: "query_string syntax", body: `{"query":{"query_string":{"query":"a AND (b"}}}`, typ: "query_shard_exception", reason: "missing ')'"},
		{name: "query_string field without value", params: url.Values{"q": {"0:"}}, typ: "query_shard_exception", reason: "no value"},
		{name: "negative from", body: `{"from":-1}`, typ: "illegal_argument_exception", reason: "[from]"},
		{name: "result window", body: `{"from":9995,"size":10}`, typ: "illegal_argument_exception", reason: "Result window is too large"},
		{name: "sort on text", body: `{"sort":["title"]}`, typ: "illegal_argument_exception", reason: "title.keyword"},
		{name: "sort on unmapped", body: `{"sort":["nope"]}`, typ: "query_shard_exception", reason: "No mapping found for [nope]"},
		{name: "search_after without sort", body: `{"search_after":[1]}`, typ: "illegal_argument_exception", reason: "needs a [sort]"},
		{name: "search_after length", body: `{"sort":["views"],"search_after":[1,2]}`, typ: "illegal_argument_exception", reason: "must match"},
		{name: "unknown agg type", body: `{"aggs":{"a":{"geohash_grid":{"field":"tags"}}}}`, typ: "illegal_argument_exception", reason: "[geohash_grid]"},
		{name: "sub-aggregations of a metric", body: `{"aggs":{"a":{"avg":{"field":"views"},"aggs":{"b":{"terms":{"field":"views"}}}}}}`, typ: "illegal_argument_exception", reason: "cannot accept sub-aggregations"},
		{name: "terms agg on text", body: `{"aggs":{"a":{"terms":{"field":"title"}}}}`, typ: "illegal_argument_exception", reason: "Fielddata is disabled"},
		{name: "terms agg order by unknown path", body: `{"aggs":{"a":{"terms":{"field":"tags","order":{"nope":"asc"}}}}}`, typ: "illegal_argument_exception", reason: "Invalid aggregator order path [nope]"},
		{name: "histogram without interval", body: `{"aggs":{"h":{"histogram":{"field":"views"}}}}`, typ: "illegal_argument_exception", reason: "[interval]"},
		{name: "composite under a parent", body: `{"aggs":{"a":{"terms":{"field":"tags"},"aggs":{"c":{"composite":{"sources":[{"t":{"terms":{"field":"tags"}}}]}}}}}}`, typ: "illegal_argument_exception", reason: "[composite] aggregation cannot be used with a parent aggregation"},
		{name: "avg on a keyword", body: `{"aggs":{"a":{"avg":{"field":"tags"}}}}`, typ: "illegal_argument_exception", reason: "Field [tags] of type [keyword] is not supported for aggregation [avg]"},
		{name: "percentiles compression", body: `{"aggs":{"p":{"percentiles":{"field":"views","tdigest":{"compression":-1}}}}}`, typ: "illegal_argument_exception", reason: "[compression] must be greater than or equal to 0. Found [-1.0]"},
		{name: "empty filters", body: `{"aggs":{"f":{"filters":{"filters":[]}}}}`, typ: "illegal_argument_exception", reason: "[filters] cannot be empty"},
		{name: "date_histogram legacy interval", body: `{"aggs":{"h":{"date_histogram":{"field":"published","interval":"1d"}}}}`, typ: "illegal_argument_exception", reason: "fixed_interval or calendar_interval"},
		{name: "date_histogram bad calendar", body: `{"aggs":{"h":{"date_histogram":{"field":"published","calendar_interval":"2d","hard_bounds":{"min":0,"max":1}}}}}`, typ: "illegal_argument_exception", reason: "calendar interval"},
		{name: "agg without type", body: `{"aggs":{"a":{}}}`, typ: "parsing_exception", reason: "Missing definition"},
		{name: "unknown URL parameter", params: url.Values{"bogus": {"1"}}, typ: "illegal_argument_exception", reason: "[bogus]"},
		{name: "bad URL size", params: url.Values{"size": {"x"}}, typ: "illegal_argument_exception", reason: "[size]"},
		{name: "bad track_total_hits", body: `{"track_total_hits":"maybe"}`, typ: "illegal_argument_exception", reason: "track_total_hits"},
		{name: "bad scroll keep-alive", params: url.Values{"scroll": {"forever"}}, typ: "illegal_argument_exception", reason: "scroll"},
		{name: "scroll with from", body: `{"from":5}`, params: url.Values{"scroll": {"1m"}}, typ: "illegal_argument_exception", reason: "scroll context"},
		{name: "highlight without fields", body: `{"highlight":{}}`, typ: "parsing_exception", reason: "[fields]"},
		{name: "highlight unknown key", body: `{"highlight":{"fields":{"a":{}},"colour":"red"}}`, typ: "parsing_exception", reason: "[colour]"},
		{name: "bad _source", body: `{"_source":5}`, typ: "x_content_parse_exception", reason: "_source"},
		{name: "analyzer unknown", body: `{"query":{"match":{"title":{"query":"x","analyzer":"klingon"}}}}`, typ: "illegal_argument_exception", reason: "klingon"},
		{name: "exists on object", body: `{"query":{"exists":{"field":"user"}}}`, typ: "illegal_argument_exception", reason: "leaf"},
		{name: "terms agg on _index", body: `{"aggs":{"i":{"terms":{"field":"_index"}}}}`, typ: "illegal_argument_exception", reason: "[_index]"},
		{name: "match on _index", body: `{"query":{"match":{"_index":"x"}}}`, typ: "illegal_argument_exception", reason: "[_index]"},
		{name: "scroll with size 0", body: `{"size":0}`, params: url.Values{"scroll": {"1m"}}, typ: "illegal_argument_exception", reason: "[size] cannot be [0] in a scroll context"},
		{name: "stored_fields _none_ with _source", body: `{"stored_fields":"_none_","_source":true}`, typ: "illegal_argument_exception", reason: "stored_fields"},
		{name: "nesting too deep", body: `{"query":` + strings.Repeat(`{"bool":{"must":`, 31) + `{"match_all":{}}` + strings.Repeat(`}}`, 31) + `}`, typ: "illegal_argument_exception", reason: "nested deeper"},
		{name: "negative boost", body: `{"query":{"match_all":{"boost":-1}}}`, typ: "illegal_argument_exception", reason: "boost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSearchAt([]byte(tt.body), tt.params, fields, fixedNow, Scope{})
			var e *Error
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, e, ErrInvalidRequest)
			require.Equal(t, tt.typ, e.Type, e.Reason)
			require.Contains(t, e.Reason, tt.reason)
		})
	}
}

func TestWithoutAnalyzerAbilities(t *testing.T) {
	// A Fields that only knows types: requests that need the analyzer get a
	// clear 400 instead of a different analysis.
	plain := fieldTypes(testTypes)
	for body, reason := range map[string]string{
		`{"query":{"match":{"title":{"query":"a b","minimum_should_match":1}}}}`: "analyzer",
		`{"query":{"match":{"title":{"query":"a","analyzer":"standard"}}}}`:      "analyzer",
		`{"query":{"multi_match":{"query":"x"}}}`:                                "pattern",
		`{"query":{"query_string":{"query":"x","fields":["ti*"]}}}`:              "pattern",
	} {
		_, err := ParseSearch([]byte(body), nil, plain)
		requireKind(t, err, ErrInvalidRequest, reason)
	}
	// Without a field list, query_string searches bleve's default field.
	s, err := ParseSearch([]byte(`{"query":{"query_string":{"query":"x"}}}`), nil, plain)
	require.NoError(t, err)
	require.JSONEq(t, `{"match":"x","prefix_length":0,"fuzziness":0}`, queryJSON(t, s.Request.Query))
	_, err = ParseSearch([]byte(`{"query":{"match":{"title":"a b"}}}`), nil, plain)
	require.NoError(t, err)
}

type fieldTypes map[string]string

func (f fieldTypes) FieldType(p string) string { return f[p] }

func TestParseMsearch(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []MsearchItem
	}{
		{name: "pairs", body: "{\"index\":\"a\"}\n{\"query\":{\"match_all\":{}}}\n{}\n{}\n",
			want: []MsearchItem{{Index: "a", Body: []byte(`{"query":{"match_all":{}}}`), Params: url.Values{}}, {Body: []byte(`{}`), Params: url.Values{}}}},
		{name: "index list and params, CRLF, no final newline", body: "{\"index\":[\"a\",\"b\"],\"routing\":\"r\",\"request_cache\":true}\r\n{\"size\":1}",
			want: []MsearchItem{{Index: "a,b", Body: []byte(`{"size":1}`), Params: url.Values{"routing": {"r"}, "request_cache": {"true"}}}}},
		{name: "empty header line", body: "\n{\"size\":0}\n",
			want: []MsearchItem{{Body: []byte(`{"size":0}`), Params: url.Values{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMsearch([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	bad := []struct{ name, body, reason string }{
		{"empty", "", "no requests"},
		{"header not JSON", "{x\n{}\n", "line 1"},
		{"header without body", "{}\n{}\n{}\n", "line 3"},
		{"unknown header key", "{\"size\":1}\n{}\n", "[size]"},
		{"body not an object", "{}\n[1]\n", "line 2"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMsearch([]byte(tt.body))
			requireKind(t, err, ErrInvalidRequest, tt.reason)
		})
	}
}
