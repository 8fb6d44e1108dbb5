package esdsl

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
)

var fuzzSeeds = []string{
	``,
	`{}`,
	`{"query":{"match":{"title":{"query":"quick fox","operator":"and","fuzziness":"AUTO"}}}}`,
	`{"query":{"match":{"body":{"query":"lazy dog bread","minimum_should_match":"-25%"}}},"size":3}`,
	`{"query":{"multi_match":{"query":"fox","fields":["title^2","body"],"type":"phrase"}}}`,
	`{"query":{"bool":{"must":[{"match":{"body":"fox"}}],"filter":[{"range":{"views":{"gte":10,"lt":200}}},{"term":{"active":true}}],"must_not":{"terms":{"tags":["news"]}},"should":[{"prefix":{"title":"qu"}}],"minimum_should_match":1,"boost":2}}}`,
	`{"query":{"query_string":{"query":"title:(quick OR brown) AND -tags:news AND views:[10 TO *] AND published:>=2024-01-01","default_operator":"AND"}}}`,
	`{"query":{"simple_query_string":{"query":"\"lazy dog\" +fox -hound | recip*","fields":["title","body^2"]}}}`,
	`{"query":{"range":{"published":{"gte":"now-1y/d","lt":"2024-03-01||+1M","format":"strict_date_optional_time||epoch_millis","time_zone":"+02:00"}}}}`,
	`{"query":{"constant_score":{"filter":{"exists":{"field":"views"}},"boost":1.5}}}`,
	`{"query":{"wildcard":{"tags":{"value":"f*d"}}},"sort":[{"views":{"order":"desc","missing":"_first"}},"_score",{"_id":"asc"}],"search_after":[100,1.5,"1"]}`,
	`{"query":{"regexp":{"body":"sl[e]+ps"}},"_source":{"includes":["ti*"],"excludes":["user.*"]},"highlight":{"pre_tags":["<b>"],"post_tags":["</b>"],"fields":{"*":{"fragment_size":20,"number_of_fragments":2}}}}`,
	`{"query":{"fuzzy":{"body":{"value":"flower","fuzziness":2,"prefix_length":1}}},"track_total_hits":3,"explain":true}`,
	`{"size":0,"aggs":{"t":{"terms":{"field":"tags","size":2}},"v":{"terms":{"field":"views"}},"p":{"range":{"field":"price","ranges":[{"to":10},{"from":10,"key":"k"}]}},"d":{"date_range":{"field":"published","ranges":[{"from":"now-10y","to":"now"}]}},"h":{"histogram":{"field":"views","interval":50,"hard_bounds":{"min":0,"max":500},"extended_bounds":{"min":0,"max":400}}},"m":{"date_histogram":{"field":"published","calendar_interval":"quarter","format":"yyyy-MM","hard_bounds":{"min":"2023-01-01","max":"2024-12-31"}}}}}`,
	`{"query":{"ids":{"values":["1","2"]}},"from":1,"size":1,"timeout":"1s","track_scores":true,"sort":["_doc"]}`,
	`{"query":{"match_phrase":{"body":{"query":"lazy dog","zero_terms_query":"all"}}}}`,
	`{"query":{"bool":{"should":[{"regexp":{"body":"(?i)f.x"}},{"query_string":{"query":"/qu.*k/ OR body:b?own"}}]}}}`,
	`{"query":{"query_string":{"query":"lazy (dog OR cat) bread","minimum_should_match":"-1"}},"aggs":{"t":{"terms":{"field":"tags","include":{"partition":1,"num_partitions":3}}}}}`,
	`{"query":{"simple_query_string":{"query":"lazy dog | bread","minimum_should_match":"67%"}},"aggs":{"v":{"terms":{"field":"views","value_type":"long","include":{"partition":0,"num_partitions":2}}}}}`,
	// @elastic/search-ui's default query and Searchkit's.
	`{"query":{"bool":{"should":[{"multi_match":{"query":"quick bro","fields":["title^3","body","user.name"],"type":"best_fields","operator":"and"}},{"multi_match":{"query":"quick bro","fields":["title^3","body","user.name"],"type":"cross_fields"}},{"multi_match":{"query":"quick bro","fields":["title^3","body","user.name"],"type":"phrase_prefix"}}]}},"from":0,"size":20}`,
	`{"query":{"bool":{"should":[{"multi_match":{"query":"quik","fields":["title^3","body"],"fuzziness":"AUTO:4,8"}},{"multi_match":{"query":"quik","fields":["title^3","body"],"type":"bool_prefix"}}]}}}`,
	`{"query":{"multi_match":{"query":"alice fox 100","type":"cross_fields","fields":["user.*","title","views","tags"],"operator":"and","minimum_should_match":"50%","tie_breaker":0.3,"lenient":true}}}`,
	`{"query":{"multi_match":{"query":"lazy d","type":"most_fields","fields":["title","body^2"],"fuzziness":"AUTO:2,5","prefix_length":1}}}`,
	`{"query":{"match_phrase_prefix":{"body":{"query":"the quick b","max_expansions":2,"slop":0,"zero_terms_query":"all"}}}}`,
	`{"query":{"match_bool_prefix":{"title":{"query":"quick re","fuzziness":"auto:3,6","operator":"or","minimum_should_match":1}}}}`,
	`{"query":{"fuzzy":{"title":{"value":"recipy","fuzziness":"AUTO:0,1"}}}}`,
}

func FuzzParseSearch(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "")
	}
	f.Add(`{}`, "q=title:fox+AND+views:>10&sort=views:desc&size=2&_source_includes=title")
	f.Add(`{"size":2}`, "scroll=1m&typed_keys=true&rest_total_hits_as_int=true")
	ti := newTestIndex(f)
	f.Fuzz(func(t *testing.T, body, rawParams string) {
		params, err := url.ParseQuery(rawParams)
		if err != nil {
			return
		}
		s, err := parseSearchAt([]byte(body), params, ti.fields, fixedNow, Scope{})
		if err != nil {
			requireClientError(t, err)
			return
		}
		// A translated request must run: bleve errors here would be 5xx.
		res, err := ti.idx.Search(s.Request)
		require.NoError(t, err, "body %q params %q", body, rawParams)
		resp := s.Response(res, time.Millisecond)
		require.NotNil(t, resp)
		if s.Scroll > 0 {
			id, err := s.ScrollID("pit", []string{"test"})
			require.NoError(t, err)
			sc, err := ParseScroll(id, "")
			require.NoError(t, err)
			page, after := s.ScrollCursor(res)
			_, err = sc.Page(ti.fields, page, after)
			require.NoError(t, err)
		}
	})
}

func requireClientError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not an *Error", err, err)
	require.ErrorIs(t, e, ErrInvalidRequest, "a client error")
	require.NotEmpty(t, e.Type)
	require.NotEmpty(t, e.Reason)
}

func FuzzParseMsearch(f *testing.F) {
	f.Add("{\"index\":\"a\"}\n{\"query\":{\"match_all\":{}}}\n{}\n{\"size\":0,\"aggs\":{\"t\":{\"terms\":{\"field\":\"tags\"}}}}\n")
	f.Add("{\"index\":[\"a\",\"b\"],\"routing\":\"r\"}\r\n{\"query\":{\"match\":{\"title\":\"fox\"}}}")
	f.Add("\n{}\n")
	f.Add("{\"search_type\":\"dfs_query_then_fetch\"}\n{\"query\":\n")
	fields := &testFields{types: testTypes, m: testMapping(f)}
	f.Fuzz(func(t *testing.T, body string) {
		items, err := ParseMsearch([]byte(body))
		if err != nil {
			requireClientError(t, err)
			return
		}
		require.NotEmpty(t, items)
		for _, it := range items {
			if _, err := parseSearchAt(it.Body, it.Params, fields, fixedNow, Scope{}); err != nil {
				requireClientError(t, err)
			}
		}
	})
}

func FuzzParseScroll(f *testing.F) {
	fields := &testFields{types: testTypes, m: testMapping(f)}
	for _, body := range []string{`{"size":2}`, `{"sort":[{"views":"desc"}],"query":{"match":{"body":"fox"}}}`} {
		s, err := parseSearchAt([]byte(body), url.Values{"scroll": {"1m"}}, fields, fixedNow, Scope{})
		require.NoError(f, err)
		id, err := s.ScrollID("pit", []string{"test"})
		require.NoError(f, err)
		f.Add(id, "30s")
	}
	f.Add("", "")
	f.Add("AAAAAAAAAAAA", "1m")
	f.Fuzz(func(t *testing.T, id, keepAlive string) {
		sc, err := ParseScroll(id, keepAlive)
		if err != nil {
			requireClientError(t, err)
			return
		}
		require.NotEmpty(t, sc.PIT)
		if _, err := sc.Page(fields, 1, nil); err != nil {
			requireClientError(t, err)
		}
	})
}

// FuzzQueryString drives the Lucene query-string parser directly, in both
// query_string and simple_query_string modes, and runs what it builds.
func FuzzQueryString(f *testing.F) {
	for _, s := range []string{
		`title:(quick OR brown) AND -tags:news`, `views:[10 TO 100} OR published:>=2024-01-01`,
		`"lazy dog"~0 +fox^2 NOT hound`, `/qu.*k/ OR b?own* OR hund~1`, `_exists_:views && !tags:food`,
		`fox -lazy | (bread + "whole wheat")`, `a\:b \(c\) "unterminated`, `((((a))))`, `*:*`, `*`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	ti := newTestIndex(f)
	f.Fuzz(func(t *testing.T, text string, simple bool) {
		tr := &translator{fields: ti.fields, now: fixedNow}
		q, err := tr.parseQueryString(text, qsOptions{simple: simple, match: matchOpts{boost: 1}, allowLeading: true})
		if err != nil {
			requireClientError(t, err)
			return
		}
		req := bleve.NewSearchRequest(q)
		if err := req.Validate(); err != nil {
			return // ParseSearch turns this into a 400
		}
		_, err = ti.idx.Search(req)
		require.NoError(t, err, "query %q simple=%v", text, simple)
	})
}
