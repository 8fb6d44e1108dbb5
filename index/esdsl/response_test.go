package esdsl

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSortAndPaging(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name      string
		body      string
		params    url.Values
		wantIDs   []string
		wantSort  [][]any
		wantScore bool
	}{
		{name: "numeric desc, missing last", body: `{"sort":[{"views":"desc"}]}`,
			wantIDs: []string{"3", "1", "5", "2", "4", "6"}, wantSort: [][]any{{300.0}, {100.0}, {75.0}, {50.0}, {10.0}, {nil}}},
		{name: "numeric asc missing first", body: `{"sort":[{"views":{"order":"asc","missing":"_first"}}]}`,
			wantIDs: []string{"6", "4", "2", "5", "1", "3"}},
		{name: "date asc as epoch millis", body: `{"sort":["published"],"size":2}`,
			wantIDs: []string{"4", "1"}, wantSort: [][]any{{1704063600000.0}, {1705312800000.0}}},
		{name: "keyword then _id", body: `{"query":{"term":{"tags":"animal"}},"sort":[{"title.keyword":"desc"},"_id"]}`,
			wantIDs: []string{"1", "2", "4"}, wantSort: [][]any{{"The Quick Brown Fox", "1"}, {"Lazy Dogs Sleep", "2"}, {"Fox News Today", "4"}}},
		{name: "boolean then price", body: `{"sort":[{"active":"asc"},{"price":"asc"}],"size":3}`,
			wantIDs: []string{"5", "2", "4"}, wantSort: [][]any{{0.0, 12.0}, {0.0, 19.5}, {1.0, 0.5}}},
		{name: "_score sort keeps scores", body: `{"query":{"match":{"body":"fox"}},"sort":["_score",{"_id":"asc"}]}`,
			wantIDs: []string{"4", "1"}, wantScore: true},
		{name: "from and size", body: `{"sort":[{"price":"asc"}],"from":2,"size":2}`, wantIDs: []string{"1", "5"}},
		{name: "URL sort and size", params: url.Values{"sort": {"price:desc"}, "size": {"2"}}, wantIDs: []string{"6", "2"}},
		{name: "search_after numeric", body: `{"sort":[{"price":"asc"}],"search_after":[9.99],"size":2}`, wantIDs: []string{"5", "2"}},
		{name: "search_after date and id", body: `{"sort":[{"published":"desc"},{"_id":"asc"}],"search_after":[1708417800000,"2"]}`, wantIDs: []string{"3", "1", "4"}},
		{name: "search_after past the hits without the field", body: `{"sort":[{"views":"asc"},"_id"],"search_after":[300,"3"]}`, wantIDs: []string{"6"}},
		{name: "search_after from a hit without the field", body: `{"sort":[{"views":{"order":"desc","missing":"_first"}},"_id"],"search_after":[null,"6"],"size":2}`, wantIDs: []string{"3", "1"}},
		{name: "search_after keyword", body: `{"sort":[{"title.keyword":"asc"}],"search_after":["Lazy Dogs Sleep"]}`, wantIDs: []string{"6", "5", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ti.search(t, tt.body, tt.params)
			require.Equal(t, tt.wantIDs, hitIDs(resp))
			hits := hitList(resp)
			for i, want := range tt.wantSort {
				require.Equal(t, want, hits[i]["sort"], "hit %d", i)
			}
			for _, h := range hits {
				if tt.wantScore {
					require.NotNil(t, h["_score"])
				} else if tt.wantSort != nil {
					require.Nil(t, h["_score"])
				}
			}
			if tt.wantSort != nil && !tt.wantScore {
				require.Nil(t, resp["hits"].(map[string]any)["max_score"])
			}
		})
	}
}

func TestScoresRankByRelevance(t *testing.T) {
	ti := newTestIndex(t)
	resp := ti.search(t, `{"query":{"match":{"body":"lazy dog"}}}`, nil)
	hits := hitList(resp)
	require.Len(t, hits, 2)
	require.Greater(t, hits[0]["_score"].(float64), 0.0)
	require.GreaterOrEqual(t, hits[0]["_score"].(float64), hits[1]["_score"].(float64))
	require.Equal(t, hits[0]["_score"], resp["hits"].(map[string]any)["max_score"])

	// Filter clauses do not score: the same filter with and without a
	// scoring must clause changes scores only through the must clause.
	a := hitList(ti.search(t, `{"query":{"bool":{"must":{"match":{"body":"fox"}}}}}`, nil))
	b := hitList(ti.search(t, `{"query":{"bool":{"must":{"match":{"body":"fox"}},"filter":{"term":{"active":true}}}}}`, nil))
	require.Len(t, b, 2)
	for i := range a {
		require.InDelta(t, a[i]["_score"], b[i]["_score"], 1e-9)
	}
	// constant_score gives every hit the same score (bleve normalizes the
	// query weight, so a lone boost does not show in the value).
	cs := hitList(ti.search(t, `{"query":{"constant_score":{"filter":{"term":{"tags":"food"}},"boost":3}}}`, nil))
	require.Len(t, cs, 2)
	require.InDelta(t, cs[0]["_score"], cs[1]["_score"], 1e-12)
}

func TestSourceFiltering(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		want   any // _source of doc 1, nil when absent
	}{
		{name: "whole source", body: `{}`, want: mustJSON(t, testDocs[0].src)},
		{name: "disabled", body: `{"_source":false}`, want: nil},
		{name: "stored_fields _none_", body: `{"stored_fields":"_none_"}`, want: nil},
		{name: "includes with wildcard", body: `{"_source":["ti*","user.name"]}`, want: map[string]any{"title": "The Quick Brown Fox", "user": map[string]any{"name": "Alice Smith"}}},
		{name: "object includes excludes", body: `{"_source":{"includes":["user","views"],"excludes":["user.*"]}}`, want: map[string]any{"views": 100.0, "user": map[string]any{}}},
		{name: "URL excludes", body: `{}`, params: url.Values{"_source_excludes": {"body,tags,user,published,active,price"}}, want: map[string]any{"title": "The Quick Brown Fox", "views": 100.0}},
		{name: "URL _source list", body: `{}`, params: url.Values{"_source": {"price"}}, want: map[string]any{"price": 9.99}},
		{name: "URL _source false", body: `{}`, params: url.Values{"_source": {"false"}}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"query":{"ids":{"values":["1"]}}`
			if tt.body != `{}` && tt.body != "" {
				body += "," + tt.body[1:]
			} else {
				body += "}"
			}
			resp := ti.search(t, body, tt.params)
			hits := hitList(resp)
			require.Len(t, hits, 1)
			require.Equal(t, tt.want, hits[0]["_source"])
		})
	}
}

func mustJSON(t *testing.T, s string) any {
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func TestHighlight(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name string
		body string
		want map[string]any // highlight of the first hit
	}{
		{name: "default tags", body: `{"query":{"match":{"body":"fox"}},"highlight":{"fields":{"body":{}}},"sort":["_id"]}`,
			want: map[string]any{"body": []any{"the quick brown <em>fox</em> jumps over the lazy dog"}}},
		{name: "custom tags and several terms", body: `{"query":{"match":{"body":"quick dog"}},"highlight":{"pre_tags":["<b>"],"post_tags":["</b>"],"fields":{"body":{}}}}`,
			want: map[string]any{"body": []any{"the <b>quick</b> brown fox jumps over the lazy <b>dog</b>"}}},
		{name: "fragment size cuts around the match", body: `{"query":{"match":{"body":"lazy"}},"highlight":{"fields":{"body":{"fragment_size":12}}},"sort":["_id"],"size":1}`,
			want: map[string]any{"body": []any{"the <em>lazy</em> dog"}}},
		{name: "wildcard field pattern", body: `{"query":{"multi_match":{"query":"fox","fields":["title","body"]}},"highlight":{"fields":{"*":{}}},"sort":["_id"],"size":1}`,
			want: map[string]any{"title": []any{"The Quick Brown <em>Fox</em>"}, "body": []any{"the quick brown <em>fox</em> jumps over the lazy dog"}}},
		{name: "keyword array", body: `{"query":{"term":{"tags":"fast"}},"highlight":{"fields":{"tags":{}}},"sort":["_id"],"size":1}`,
			want: map[string]any{"tags": []any{"<em>fast</em>"}}},
		{name: "html encoder", body: `{"query":{"match":{"title":"quick"}},"highlight":{"encoder":"html","pre_tags":["<i>"],"post_tags":["</i>"],"fields":[{"title":{"number_of_fragments":0}}]},"sort":["_id"],"size":1}`,
			want: map[string]any{"title": []any{"The <i>Quick</i> Brown Fox"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := hitList(ti.search(t, tt.body, nil))
			require.NotEmpty(t, hits)
			require.Equal(t, tt.want, hits[0]["highlight"])
		})
	}
}

func TestTrackTotalHits(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		want   any
	}{
		{name: "default exact below 10000", body: `{}`, want: map[string]any{"value": 6.0, "relation": "eq"}},
		{name: "limit below total", body: `{"track_total_hits":4}`, want: map[string]any{"value": 4.0, "relation": "gte"}},
		{name: "true", body: `{"track_total_hits":true}`, want: map[string]any{"value": 6.0, "relation": "eq"}},
		{name: "false omits total", body: `{"track_total_hits":false}`, want: nil},
		{name: "rest_total_hits_as_int", params: url.Values{"rest_total_hits_as_int": {"true"}}, want: 6.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ti.search(t, tt.body, tt.params)
			require.Equal(t, tt.want, resp["hits"].(map[string]any)["total"])
		})
	}
}

func TestExplain(t *testing.T) {
	ti := newTestIndex(t)
	hits := hitList(ti.search(t, `{"query":{"match":{"body":"fox"}},"explain":true}`, nil))
	require.NotEmpty(t, hits)
	expl := hits[0]["_explanation"].(map[string]any)
	require.InDelta(t, hits[0]["_score"], expl["value"], 1e-9)
	require.NotEmpty(t, expl["description"])
}

func TestScroll(t *testing.T) {
	ti := newTestIndex(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, body := range []string{`{"size":2}`, `{"size":2,"query":{"match":{"body":"the a"}}}`, `{"size":4,"sort":[{"views":"desc"}]}`} {
		t.Run(body, func(t *testing.T) {
			s, err := parseSearchAt([]byte(body), url.Values{"scroll": {"1m"}}, ti.fields, now, Scope{})
			require.NoError(t, err)
			res, err := ti.idx.Search(s.Request)
			require.NoError(t, err)
			want := int(res.Total)
			seen := map[string]bool{}
			for page := 0; ; page++ {
				require.Less(t, page, 10, "scroll does not end")
				if len(res.Hits) == 0 {
					break
				}
				for _, h := range res.Hits {
					require.False(t, seen[h.ID], "hit %s returned twice", h.ID)
					seen[h.ID] = true
				}
				id, err := s.ScrollID("pit", []string{"test"})
				require.NoError(t, err)
				sc, err := ParseScroll(id, "")
				require.NoError(t, err)
				require.Equal(t, []string{"test"}, sc.Indices)
				page, after := s.ScrollCursor(res)
				next, err := sc.Page(ti.fields, page, after)
				require.NoError(t, err)
				s = next
				res, err = ti.idx.Search(s.Request)
				require.NoError(t, err)
				require.EqualValues(t, want, res.Total)
			}
			require.Len(t, seen, want)
		})
	}
}

func TestScrollErrors(t *testing.T) {
	ti := newTestIndex(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := parseSearchAt([]byte(`{"size":1,"aggs":{"t":{"terms":{"field":"tags"}}}}`), url.Values{"scroll": {"1m"}}, ti.fields, now, Scope{})
	require.NoError(t, err)
	res, err := ti.idx.Search(s.Request)
	require.NoError(t, err)
	require.NotNil(t, s.AggCollector("test", 0))
	id, err := s.ScrollID("pit", []string{"test"})
	require.NoError(t, err)

	sc, err := ParseScroll(id, "5m")
	require.NoError(t, err)
	page, after := s.ScrollCursor(res)
	next, err := sc.Page(ti.fields, page, after)
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, next.Scroll)
	pit, keep := next.PointInTime()
	require.Equal(t, "pit", pit)
	require.Equal(t, 5*time.Minute, keep)
	require.Nil(t, next.AggCollector("test", 0), "aggregations only on the first page")
	rendered, err := next.RenderAggs(nil)
	require.NoError(t, err)
	require.Nil(t, rendered)

	tests := []struct {
		name string
		id   string
		kind error
		typ  string
	}{
		{name: "garbled", id: id[:len(id)-3] + "AAA", kind: ErrInvalidRequest, typ: "illegal_argument_exception"},
		{name: "not base64", id: "!!!", kind: ErrInvalidRequest, typ: "illegal_argument_exception"},
		{name: "empty", id: "", kind: ErrInvalidRequest, typ: "action_request_validation_exception"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScroll(tt.id, "")
			var e *Error
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, e, tt.kind)
			require.Equal(t, tt.typ, e.Type)
		})
	}

	// Date math keeps the first page's now.
	dm, err := parseSearchAt([]byte(`{"size":1,"query":{"range":{"published":{"lt":"now-10y"}}}}`), url.Values{"scroll": {"1m"}}, ti.fields, now, Scope{})
	require.NoError(t, err)
	dmID, err := dm.ScrollID("pit", []string{"test"})
	require.NoError(t, err)
	dmScroll, err := ParseScroll(dmID, "")
	require.NoError(t, err)
	dmNext, err := dmScroll.Page(ti.fields, 1, nil)
	require.NoError(t, err)
	require.Equal(t, queryJSON(t, dm.Request.Query), queryJSON(t, dmNext.Request.Query))

	plain, err := ParseSearch([]byte(`{}`), nil, ti.fields)
	require.NoError(t, err)
	none, err := plain.ScrollID("pit", []string{"test"})
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestCount(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		want   uint64
	}{
		{name: "all", body: ``, want: 6},
		{name: "query", body: `{"query":{"term":{"tags":"animal"}}}`, want: 3},
		{name: "q", params: url.Values{"q": {"tags:food"}}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseCount([]byte(tt.body), tt.params, ti.fields)
			require.NoError(t, err)
			res, err := ti.idx.Search(req.Request)
			require.NoError(t, err)
			require.Equal(t, tt.want, res.Total)
			require.Empty(t, res.Hits)
		})
	}
	_, err := ParseCount([]byte(`{"size":1}`), nil, ti.fields)
	requireKind(t, err, ErrInvalidRequest, "size")
}

func TestSearchAfterPagesThroughEverything(t *testing.T) {
	ti := newTestIndex(t)
	for _, sortSpec := range []string{
		`[{"views":"asc"},"_id"]`,
		`[{"views":{"order":"desc","missing":"_first"}},{"_id":"desc"}]`,
		`[{"published":"desc"},"_id"]`,
		`[{"active":"asc"},{"price":"desc"},"_id"]`,
		`[{"title.keyword":"desc"},"_id"]`,
		`["_score",{"_id":"asc"}]`,
	} {
		t.Run(sortSpec, func(t *testing.T) {
			var got []string
			after := ""
			for page := 0; page < 10; page++ {
				body := `{"size":2,"sort":` + sortSpec
				if after != "" {
					body += `,"search_after":` + after
				}
				hits := hitList(ti.search(t, body+`}`, nil))
				if len(hits) == 0 {
					break
				}
				for _, h := range hits {
					got = append(got, h["_id"].(string))
				}
				raw, err := json.Marshal(hits[len(hits)-1]["sort"])
				require.NoError(t, err)
				after = string(raw)
			}
			require.ElementsMatch(t, []string{"1", "2", "3", "4", "5", "6"}, got)
		})
	}
}

// TestScoresUsed: a search depends on scores when it shows or sorts by
// them, filters or explains by them, or a top_hits aggregation does; a
// search sorted by fields, an aggregation-only search and a count do not.
func TestScoresUsed(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		used   bool
	}{
		{"default sort", `{"query":{"match":{"body":"fox"}}}`, nil, true},
		{"sorted by a field", `{"query":{"match":{"body":"fox"}},"sort":[{"views":"desc"}]}`, nil, false},
		{"field then _score", `{"query":{"match":{"body":"fox"}},"sort":[{"views":"desc"},"_score"]}`, nil, true},
		{"track_scores", `{"query":{"match":{"body":"fox"}},"sort":[{"views":"desc"}],"track_scores":true}`, nil, true},
		{"min_score", `{"query":{"match":{"body":"fox"}},"sort":[{"views":"desc"}],"min_score":0.5}`, nil, true},
		{"explain", `{"query":{"match":{"body":"fox"}},"sort":[{"views":"desc"}],"explain":true}`, nil, true},
		{"size 0", `{"size":0,"query":{"match":{"body":"fox"}},"aggs":{"t":{"terms":{"field":"tags"}}}}`, nil, false},
		{"top_hits by score", `{"size":0,"query":{"match":{"body":"fox"}},"aggs":{"t":{"terms":{"field":"tags"},"aggs":{"h":{"top_hits":{}}}}}}`, nil, true},
		{"top_hits by field", `{"size":0,"query":{"match":{"body":"fox"}},"aggs":{"t":{"terms":{"field":"tags"},"aggs":{"h":{"top_hits":{"sort":[{"views":"asc"}]}}}}}}`, nil, false},
		{"q sorted", ``, url.Values{"q": {"body:fox"}, "sort": {"views:desc"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSearch([]byte(tc.body), tc.params, ti.fields)
			require.NoError(t, err)
			require.Equal(t, tc.used, s.ScoresUsed())
		})
	}
	c, err := ParseCount([]byte(`{"query":{"match":{"body":"fox"}}}`), nil, ti.fields)
	require.NoError(t, err)
	require.False(t, c.ScoresUsed(), "a count")
	c, err = ParseCount(nil, url.Values{"q": {"body:fox"}, "min_score": {"1"}}, ti.fields)
	require.NoError(t, err)
	require.True(t, c.ScoresUsed(), "a count with min_score")
}
