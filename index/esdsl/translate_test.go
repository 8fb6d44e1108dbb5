package esdsl

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
)

var fixedNow = time.Date(2024, 6, 15, 12, 30, 0, 0, time.UTC)

func translateQuery(t *testing.T, body string) query.Query {
	t.Helper()
	s, err := parseSearchAt([]byte(body), nil, &testFields{types: testTypes, m: testMapping(t)}, fixedNow, Scope{})
	require.NoError(t, err)
	return s.Request.Query
}

func queryJSON(t *testing.T, q query.Query) string {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	return string(raw)
}

func TestTranslateQueryStructure(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // the bleve query as JSON
	}{
		{name: "match short form", body: `{"query":{"match":{"title":"quick fox"}}}`,
			want: `{"match":"quick fox","field":"title","prefix_length":0,"fuzziness":0}`},
		{name: "match operator fuzziness AUTO", body: `{"query":{"match":{"title":{"query":"quick","operator":"and","fuzziness":"AUTO","prefix_length":1,"boost":2}}}}`,
			want: `{"match":"quick","field":"title","boost":2,"prefix_length":1,"fuzziness":"auto","operator":"and"}`},
		{name: "match analyzer resolved", body: `{"query":{"match":{"title":{"query":"x","analyzer":"standard"}}}}`,
			want: `{"match":"x","field":"title","analyzer":"es_standard","prefix_length":0,"fuzziness":0}`},
		{name: "match minimum_should_match expands terms", body: `{"query":{"match":{"body":{"query":"a b c","minimum_should_match":"-1"}}}}`,
			want: `{"disjuncts":[{"term":"a","field":"body"},{"term":"b","field":"body"},{"term":"c","field":"body"}],"min":2}`},
		{name: "match on long is an exact value", body: `{"query":{"match":{"views":"7"}}}`,
			want: `{"min":7,"max":7,"inclusive_min":true,"inclusive_max":true,"field":"views"}`},
		{name: "match_phrase", body: `{"query":{"match_phrase":{"body":{"query":"lazy dog","boost":1.5}}}}`,
			want: `{"match_phrase":"lazy dog","field":"body","boost":1.5,"fuzziness":0}`},
		{name: "multi_match with boosts", body: `{"query":{"multi_match":{"query":"fox","fields":["title^3","body"]}}}`,
			want: `{"dis_max":[{"match":"fox","field":"title","boost":3,"prefix_length":0,"fuzziness":0},{"match":"fox","field":"body","prefix_length":0,"fuzziness":0}],"tie_breaker":0}`},
		{name: "term keyword", body: `{"query":{"term":{"tags":{"value":"Food","boost":2}}}}`,
			want: `{"term":"Food","field":"tags","boost":2}`},
		{name: "term boolean", body: `{"query":{"term":{"active":"true"}}}`, want: `{"bool":true,"field":"active"}`},
		{name: "term date", body: `{"query":{"term":{"published":"2024-03-10"}}}`,
			want: `{"start":"2024-03-10T00:00:00Z","inclusive_start":true,"end":"2024-03-10T00:00:00Z","inclusive_end":true,"field":"published"}`},
		{name: "terms", body: `{"query":{"terms":{"tags":["a","b"],"boost":2}}}`,
			want: `{"boosted":{"query":{"disjuncts":[{"term":"a","field":"tags"},{"term":"b","field":"tags"}],"min":0},"boost":2}}`},
		{name: "terms on _id", body: `{"query":{"terms":{"_id":["1","2"]}}}`, want: `{"ids":["1","2"]}`},
		{name: "range numeric", body: `{"query":{"range":{"price":{"gt":1,"lte":5}}}}`,
			want: `{"min":1,"max":5,"inclusive_min":false,"inclusive_max":true,"field":"price"}`},
		{name: "range date math now", body: `{"query":{"range":{"published":{"gte":"now-1d/d","lt":"now/d"}}}}`,
			want: `{"start":"2024-06-14T00:00:00Z","inclusive_start":true,"end":"2024-06-15T00:00:00Z","inclusive_end":false,"field":"published"}`},
		{name: "range keyword", body: `{"query":{"range":{"tags":{"gte":"a","lt":"m"}}}}`,
			want: `{"min":"a","max":"m","inclusive_min":true,"inclusive_max":false,"field":"tags"}`},
		{name: "bool with filter", body: `{"query":{"bool":{"must":[{"term":{"tags":"a"}}],"filter":{"term":{"tags":"b"}},"must_not":{"term":{"tags":"c"}},"boost":2}}}`,
			want: `{"boosted":{"query":{"must":{"conjuncts":[{"term":"a","field":"tags"}]},"must_not":{"disjuncts":[{"term":"c","field":"tags"}],"min":0},"filter":{"term":"b","field":"tags"}},"boost":2}}`},
		{name: "bool should min", body: `{"query":{"bool":{"should":[{"term":{"tags":"a"}},{"term":{"tags":"b"}},{"term":{"tags":"c"}}],"minimum_should_match":"66%"}}}`,
			want: `{"should":{"disjuncts":[{"term":"a","field":"tags"},{"term":"b","field":"tags"},{"term":"c","field":"tags"}],"min":1}}`},
		{name: "bool several filters", body: `{"query":{"bool":{"filter":[{"term":{"tags":"a"}},{"term":{"tags":"b"}}]}}}`,
			want: `{"must":{"conjuncts":[{"match_all":{},"boost":null}]},"filter":{"conjuncts":[{"term":"a","field":"tags"},{"term":"b","field":"tags"}]}}`},
		{name: "query_string AND OR", body: `{"query":{"query_string":{"query":"tags:a AND (tags:b OR tags:c)"}}}`,
			want: `{"must":{"conjuncts":[{"match":"a","field":"tags","prefix_length":0,"fuzziness":0},{"should":{"disjuncts":[{"match":"b","field":"tags","prefix_length":0,"fuzziness":0},{"match":"c","field":"tags","prefix_length":0,"fuzziness":0}],"min":1}}]}}`},
		{name: "query_string NOT and boost", body: `{"query":{"query_string":{"query":"title:fox^2 -tags:x","default_operator":"and"}}}`,
			want: `{"must":{"conjuncts":[{"match":"fox","field":"title","boost":2,"prefix_length":0,"fuzziness":0,"operator":"and"}]},"must_not":{"disjuncts":[{"match":"x","field":"tags","prefix_length":0,"fuzziness":0,"operator":"and"}],"min":0}}`},
		{name: "query_string wildcard lower-cased", body: `{"query":{"query_string":{"query":"Qu?ck*","default_field":"title"}}}`,
			want: `{"wildcard":"qu?ck*","field":"title"}`},
		{name: "prefix", body: `{"query":{"prefix":{"tags":{"value":"fo"}}}}`, want: `{"prefix":"fo","field":"tags"}`},
		{name: "wildcard", body: `{"query":{"wildcard":{"tags":"f*d"}}}`, want: `{"wildcard":"f*d","field":"tags"}`},
		{name: "regexp", body: `{"query":{"regexp":{"tags":{"value":"f.*","flags":"ALL"}}}}`, want: `{"regexp":"f.*","field":"tags"}`},
		{name: "fuzzy default AUTO", body: `{"query":{"fuzzy":{"title":"quikc"}}}`, want: `{"term":"quikc","field":"title","fuzziness":"auto","prefix_length":0}`},
		{name: "exists numeric", body: `{"query":{"exists":{"field":"views"}}}`, want: `{"min":-1.7976931348623157e+308,"field":"views"}`},
		{name: "ids", body: `{"query":{"ids":{"values":["a"]}}}`, want: `{"ids":["a"]}`},
		{name: "match_all boost", body: `{"query":{"match_all":{"boost":2}}}`, want: `{"match_all":{},"boost":2}`},
		{name: "match_none", body: `{"query":{"match_none":{}}}`, want: `{"match_none":{},"boost":null}`},
		{name: "constant_score", body: `{"query":{"constant_score":{"filter":{"term":{"tags":"a"}}}}}`,
			want: `{"must":{"conjuncts":[{"match_all":{},"boost":1}]},"filter":{"term":"a","field":"tags"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.JSONEq(t, tt.want, queryJSON(t, translateQuery(t, tt.body)))
		})
	}
}

func TestDateMathRounding(t *testing.T) {
	tests := []struct {
		name      string
		rng       string
		wantStart time.Time
		wantEnd   time.Time
	}{
		{name: "gt rounds up to the last millisecond", rng: `{"gt":"2024-01-10||/M","time_zone":"+01:00"}`,
			wantStart: time.Date(2024, 1, 31, 22, 59, 59, 999e6, time.UTC)},
		{name: "gte rounds down", rng: `{"gte":"2024-01-10T10:00:00||/M"}`, wantStart: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "lte rounds up", rng: `{"lte":"now/d"}`, wantEnd: time.Date(2024, 6, 15, 23, 59, 59, 999e6, time.UTC)},
		{name: "lt rounds down", rng: `{"lt":"now-1w/w"}`, wantEnd: time.Date(2024, 6, 3, 0, 0, 0, 0, time.UTC)},
		{name: "arithmetic", rng: `{"gte":"now+1M-2d+3h"}`, wantStart: time.Date(2024, 7, 13, 15, 30, 0, 0, time.UTC)},
		{name: "epoch_second format", rng: `{"gte":1700000000,"format":"epoch_second"}`, wantStart: time.Unix(1700000000, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := translateQuery(t, `{"query":{"range":{"published":`+tt.rng+`}}}`).(*query.DateRangeQuery)
			require.True(t, tt.wantStart.Equal(q.Start.Time), "start %v", q.Start.Time)
			require.True(t, tt.wantEnd.Equal(q.End.Time), "end %v", q.End.Time)
		})
	}
}

func TestTranslateRequest(t *testing.T) {
	fields := &testFields{types: testTypes, m: testMapping(t)}
	s, err := parseSearchAt([]byte(`{"from":5,"size":7,"sort":[{"price":{"order":"desc","missing":"_first","mode":"max"}},"_score",{"_id":"asc"}],"highlight":{"fields":{"body":{}}},"aggs":{"t":{"terms":{"field":"tags","size":3}}},"timeout":"2s","explain":true}`),
		url.Values{"typed_keys": {"true"}}, fields, fixedNow, Scope{})
	require.NoError(t, err)
	r := s.Request
	require.Equal(t, 5, r.From)
	require.Equal(t, 7, r.Size)
	require.True(t, r.Explain)
	require.True(t, r.IncludeLocations)
	require.Equal(t, []string{index.SourceField}, r.Fields)
	require.Equal(t, 2*time.Second, s.Timeout)
	require.Len(t, r.Sort, 3)
	sf := r.Sort[0].(*search.SortField)
	require.Equal(t, "price", sf.Field)
	require.True(t, sf.Desc)
	require.Equal(t, search.SortFieldAsNumber, sf.Type)
	require.Equal(t, search.SortFieldMissingFirst, sf.Missing)
	require.Equal(t, search.SortFieldMax, sf.Mode)
	require.True(t, r.Sort[1].(*search.SortScore).Desc)
	require.False(t, r.Sort[2].(*search.SortDocID).Desc)
	require.Empty(t, r.Facets, "aggregations are collected from doc values, not bleve facets")
	require.Equal(t, []string{"tags"}, s.aggs.fields)

	s, err = parseSearchAt([]byte(`{"_source":false}`), nil, fields, fixedNow, Scope{})
	require.NoError(t, err)
	require.Empty(t, s.Request.Fields, "no stored field is loaded when _source is off")
	require.Equal(t, 10, s.Request.Size)
}
