package esdsl

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueriesAgainstIndex(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name    string
		body    string
		params  url.Values
		want    []string // expected ids, any order
		ordered bool
	}{
		{name: "match_all", body: `{}`, want: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "empty body", body: ``, want: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "match short form", body: `{"query":{"match":{"body":"fox"}}}`, want: []string{"1", "4"}},
		{name: "match or", body: `{"query":{"match":{"title":"quick bread"}}}`, want: []string{"1", "3", "5"}},
		{name: "match and", body: `{"query":{"match":{"title":{"query":"quick brown","operator":"and"}}}}`, want: []string{"1"}},
		{name: "match fuzziness AUTO", body: `{"query":{"match":{"title":{"query":"quik","fuzziness":"AUTO"}}}}`, want: []string{"1", "5"}},
		{name: "match fuzziness 1", body: `{"query":{"match":{"body":{"query":"brwn","fuzziness":1}}}}`, want: []string{"1", "3"}},
		{name: "match minimum_should_match", body: `{"query":{"match":{"body":{"query":"quick brown lazy dog","minimum_should_match":"75%"}}}}`, want: []string{"1"}},
		{name: "match minimum_should_match 2", body: `{"query":{"match":{"body":{"query":"lazy dog bread","minimum_should_match":2}}}}`, want: []string{"1", "2"}},
		{name: "match on numeric field", body: `{"query":{"match":{"views":"100"}}}`, want: []string{"1"}},
		{name: "match analyzer keyword", body: `{"query":{"match":{"title":{"query":"quick recipes","analyzer":"keyword"}}}}`, want: []string{}},
		{name: "match nested object path", body: `{"query":{"match":{"user.name":"smith"}}}`, want: []string{"1", "3", "5"}},
		{name: "match_phrase", body: `{"query":{"match_phrase":{"body":"lazy dog"}}}`, want: []string{"1", "2"}},
		{name: "match_phrase order matters", body: `{"query":{"match_phrase":{"body":"dog lazy"}}}`, want: []string{}},
		{name: "multi_match best_fields", body: `{"query":{"multi_match":{"query":"fox","fields":["title^2","body"]}}}`, want: []string{"1", "4"}},
		{name: "multi_match phrase", body: `{"query":{"multi_match":{"query":"brown bread","type":"phrase","fields":["title","body"]}}}`, want: []string{"3"}},
		{name: "term on keyword", body: `{"query":{"term":{"tags":"animal"}}}`, want: []string{"1", "2", "4"}},
		{name: "term on text is exact analyzed term", body: `{"query":{"term":{"title":"Quick"}}}`, want: []string{}},
		{name: "term lower-case on text", body: `{"query":{"term":{"title":{"value":"quick","boost":2}}}}`, want: []string{"1", "5"}},
		{name: "term on keyword sub-field", body: `{"query":{"term":{"title.keyword":"Ocean Waves"}}}`, want: []string{"6"}},
		{name: "term on long", body: `{"query":{"term":{"views":50}}}`, want: []string{"2"}},
		{name: "term on boolean", body: `{"query":{"term":{"active":false}}}`, want: []string{"2", "5"}},
		{name: "term on date", body: `{"query":{"term":{"published":"2024-03-10"}}}`, want: []string{"5"}},
		{name: "term on _id", body: `{"query":{"term":{"_id":"3"}}}`, want: []string{"3"}},
		{name: "match on _id", body: `{"query":{"match":{"_id":"4"}}}`, want: []string{"4"}},
		{name: "prefix on _id", body: `{"query":{"prefix":{"_id":"5"}}}`, want: []string{"5"}},
		{name: "terms", body: `{"query":{"terms":{"tags":["news","slow"]}}}`, want: []string{"2", "4"}},
		{name: "terms numeric", body: `{"query":{"terms":{"views":[10,300]}}}`, want: []string{"3", "4"}},
		{name: "range numeric gte lt", body: `{"query":{"range":{"views":{"gte":50,"lt":100}}}}`, want: []string{"2", "5"}},
		{name: "range numeric gt lte", body: `{"query":{"range":{"price":{"gt":9.99,"lte":30}}}}`, want: []string{"2", "5", "6"}},
		{name: "range date", body: `{"query":{"range":{"published":{"gte":"2024-02-01","lt":"2024-03-01"}}}}`, want: []string{"2", "3"}},
		{name: "range date format", body: `{"query":{"range":{"published":{"gte":"01/02/2024","format":"dd/MM/yyyy"}}}}`, want: []string{"2", "3", "5", "6"}},
		{name: "range date epoch millis", body: `{"query":{"range":{"published":{"lt":1704067200000}}}}`, want: []string{"4"}},
		{name: "range date math rounding", body: `{"query":{"range":{"published":{"gte":"2024-03-10T15:00:00Z||/d","lte":"2024-03-10||/d"}}}}`, want: []string{"5"}},
		{name: "range keyword", body: `{"query":{"range":{"tags":{"gte":"n","lte":"o"}}}}`, want: []string{"4"}},
		{name: "bool must filter must_not", body: `{"query":{"bool":{"must":{"match":{"tags":"animal"}},"filter":[{"range":{"views":{"gte":10}}}],"must_not":[{"term":{"active":false}}]}}}`, want: []string{"1", "4"}},
		{name: "bool should min 2", body: `{"query":{"bool":{"should":[{"term":{"tags":"animal"}},{"term":{"tags":"fast"}},{"term":{"active":true}}],"minimum_should_match":2}}}`, want: []string{"1", "4"}},
		{name: "bool should optional beside filter", body: `{"query":{"bool":{"filter":{"term":{"tags":"food"}},"should":{"match":{"title":"quick"}}}}}`, want: []string{"3", "5"}},
		{name: "bool only must_not", body: `{"query":{"bool":{"must_not":{"exists":{"field":"tags"}}}}}`, want: []string{"6"}},
		{name: "empty bool", body: `{"query":{"bool":{}}}`, want: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "query_string minimum_should_match", body: `{"query":{"query_string":{"query":"lazy dog bread","default_field":"body","minimum_should_match":2}}}`, want: []string{"1", "2"}},
		{name: "simple_query_string minimum_should_match", body: `{"query":{"simple_query_string":{"query":"lazy dog bread","fields":["body"],"minimum_should_match":"67%"}}}`, want: []string{"1", "2"}},
		{name: "query_string AND", body: `{"query":{"query_string":{"query":"quick AND brown","default_field":"body"}}}`, want: []string{"1"}},
		{name: "query_string OR NOT", body: `{"query":{"query_string":{"query":"(fox OR bread) NOT hound","default_field":"body"}}}`, want: []string{"1", "3"}},
		{name: "query_string fields and range", body: `{"query":{"query_string":{"query":"tags:animal AND views:[50 TO 100]"}}}`, want: []string{"1", "2"}},
		{name: "query_string default operator and", body: `{"query":{"query_string":{"query":"lazy dog","fields":["body"],"default_operator":"AND"}}}`, want: []string{"1", "2"}},
		{name: "query_string wildcard phrase", body: `{"query":{"query_string":{"query":"title:rec* OR body:\"whole wheat\""}}}`, want: []string{"3", "5"}},
		{name: "query_string exists and comparison", body: `{"query":{"query_string":{"query":"_exists_:views AND views:>=100"}}}`, want: []string{"1", "3"}},
		{name: "query_string fuzzy", body: `{"query":{"query_string":{"query":"body:hund~1"}}}`, want: []string{"4"}},
		{name: "q URL parameter", params: url.Values{"q": {"title:fox"}}, want: []string{"1", "4"}},
		{name: "q with df", params: url.Values{"q": {"sun"}, "df": {"body"}}, want: []string{"2"}},
		{name: "q over all fields", params: url.Values{"q": {"fox"}}, want: []string{"1", "4"}},
		{name: "q over all fields, number", params: url.Values{"q": {"300"}}, want: []string{"3"}},
		{name: "query_string field pattern", body: `{"query":{"query_string":{"query":"smith","fields":["user.*"]}}}`, want: []string{"1", "3", "5"}},
		{name: "query_string field pattern in text", body: `{"query":{"query_string":{"query":"ti*:recipes"}}}`, want: []string{"5"}},
		{name: "multi_match without fields", body: `{"query":{"multi_match":{"query":"hound"}}}`, want: []string{"4"}},
		{name: "multi_match field pattern", body: `{"query":{"multi_match":{"query":"smith","fields":["user*"]}}}`, want: []string{"1", "3", "5"}},
		{name: "simple_query_string or", body: `{"query":{"simple_query_string":{"query":"fox | bread","fields":["body"]}}}`, want: []string{"1", "3", "4"}},
		{name: "simple_query_string negation with OR is Elasticsearch's", body: `{"query":{"simple_query_string":{"query":"fox -lazy","fields":["body"]}}}`, want: []string{"1", "3", "4", "5", "6"}},
		{name: "simple_query_string negation with AND", body: `{"query":{"simple_query_string":{"query":"fox -hound","fields":["body"],"default_operator":"and"}}}`, want: []string{"1"}},
		{name: "simple_query_string left to right", body: `{"query":{"simple_query_string":{"query":"bread | hound + news","fields":["body"]}}}`, want: []string{"4"}},
		{name: "simple_query_string group and phrase", body: `{"query":{"simple_query_string":{"query":"(bread | sun) + \"whole wheat\"","fields":["body"]}}}`, want: []string{"3"}},
		{name: "simple_query_string prefix", body: `{"query":{"simple_query_string":{"query":"recip*","fields":["title","body"]}}}`, want: []string{"3", "5"}},
		{name: "prefix", body: `{"query":{"prefix":{"title":"bre"}}}`, want: []string{"3"}},
		{name: "wildcard", body: `{"query":{"wildcard":{"tags":{"value":"f*t"}}}}`, want: []string{"1", "5"}},
		{name: "regexp", body: `{"query":{"regexp":{"body":"sl[e]+ps"}}}`, want: []string{"2"}},
		{name: "fuzzy", body: `{"query":{"fuzzy":{"body":{"value":"flower","fuzziness":2}}}}`, want: []string{"3"}},
		{name: "exists keyword", body: `{"query":{"exists":{"field":"tags"}}}`, want: []string{"1", "2", "3", "4", "5"}},
		{name: "exists numeric", body: `{"query":{"exists":{"field":"views"}}}`, want: []string{"1", "2", "3", "4", "5"}},
		{name: "exists date", body: `{"query":{"exists":{"field":"published"}}}`, want: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "exists unmapped", body: `{"query":{"exists":{"field":"nope"}}}`, want: []string{}},
		{name: "ids", body: `{"query":{"ids":{"values":["2","5","99"]}}}`, want: []string{"2", "5"}},
		{name: "match_none", body: `{"query":{"match_none":{}}}`, want: []string{}},
		{name: "dis_max", body: `{"query":{"dis_max":{"queries":[{"match":{"title":"fox"}},{"match":{"body":"bread"}}],"tie_breaker":0.7}}}`, want: []string{"1", "3", "4"}},
		{name: "constant_score", body: `{"query":{"constant_score":{"filter":{"term":{"tags":"food"}},"boost":3}}}`, want: []string{"3", "5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ti.search(t, tt.body, tt.params)
			require.ElementsMatch(t, tt.want, hitIDs(resp))
			require.EqualValues(t, len(tt.want), total(resp)["value"])
		})
	}
}
