package esdsl_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index/esdsl"
)

// termBuckets reads a terms aggregation's buckets as key → doc_count.
func termBuckets(t *testing.T, resp map[string]any, name string) map[string]float64 {
	t.Helper()
	aggs, ok := resp["aggregations"].(map[string]any)
	require.True(t, ok, "reply: %v", resp)
	out := map[string]float64{}
	for _, b := range aggs[name].(map[string]any)["buckets"].([]any) {
		bm := b.(map[string]any)
		out[bm["key"].(string)] = bm["doc_count"].(float64)
	}
	return out
}

// total reads hits.total as value and relation.
func total(t *testing.T, resp map[string]any) (float64, string) {
	t.Helper()
	tot := resp["hits"].(map[string]any)["total"].(map[string]any)
	return tot["value"].(float64), tot["relation"].(string)
}

// hitScores reads the hits' scores by id.
func hitScores(resp map[string]any) map[string]float64 {
	out := map[string]float64{}
	for _, h := range resp["hits"].(map[string]any)["hits"].([]any) {
		hm := h.(map[string]any)
		out[hm["_id"].(string)] = hm["_score"].(float64)
	}
	return out
}

// TestPostFilterLikeElasticsearch: post_filter narrows the hits and their
// total, never the aggregations, and does not score.
func TestPostFilterLikeElasticsearch(t *testing.T) {
	idx, fields := newEngineIndex(t)
	everyTag := map[string]float64{"animal": 3, "fast": 1, "slow": 1, "food": 1, "news": 1}
	tests := []struct {
		name   string
		body   string
		params url.Values
		check  func(t *testing.T, resp map[string]any)
	}{
		{name: "facet click: hits filtered, buckets not",
			body: `{"query":{"match_all":{}},"aggs":{"tags":{"terms":{"field":"tags"}}},"post_filter":{"term":{"tags":"food"}}}`,
			check: func(t *testing.T, resp map[string]any) {
				wantIDs("3")(t, resp)
				v, rel := total(t, resp)
				require.Equal(t, 1.0, v)
				require.Equal(t, "eq", rel)
				require.Equal(t, everyTag, termBuckets(t, resp, "tags"))
			}},
		{name: "aggregations see the query's documents only",
			body: `{"query":{"match":{"body":"fox"}},"aggs":{"tags":{"terms":{"field":"tags"}}},"post_filter":{"range":{"views":{"gte":50}}}}`,
			check: func(t *testing.T, resp map[string]any) {
				wantIDs("1")(t, resp)
				require.Equal(t, map[string]float64{"animal": 2, "fast": 1, "news": 1}, termBuckets(t, resp, "tags"))
			}},
		{name: "without aggregations",
			body:  `{"post_filter":{"bool":{"should":[{"term":{"tags":"news"}},{"term":{"tags":"food"}}]}}}`,
			check: wantIDs("3", "4")},
		{name: "size 0 counts the filtered hits",
			body: `{"size":0,"aggs":{"tags":{"terms":{"field":"tags"}}},"post_filter":{"term":{"tags":"animal"}}}`,
			check: func(t *testing.T, resp map[string]any) {
				v, _ := total(t, resp)
				require.Equal(t, 3.0, v)
				require.Equal(t, everyTag, termBuckets(t, resp, "tags"))
			}},
		{name: "track_total_hits caps the filtered total",
			body: `{"track_total_hits":2,"post_filter":{"term":{"tags":"animal"}}}`,
			check: func(t *testing.T, resp map[string]any) {
				v, rel := total(t, resp)
				require.Equal(t, 2.0, v)
				require.Equal(t, "gte", rel)
				wantIDs("1", "2", "4")(t, resp)
			}},
		{name: "track_total_hits true counts exactly",
			body: `{"track_total_hits":true,"post_filter":{"term":{"tags":"animal"}}}`,
			check: func(t *testing.T, resp map[string]any) {
				v, rel := total(t, resp)
				require.Equal(t, 3.0, v)
				require.Equal(t, "eq", rel)
			}},
		{name: "sorted hits keep their order",
			body: `{"sort":[{"views":"desc"}],"post_filter":{"term":{"active":true}}}`,
			check: func(t *testing.T, resp map[string]any) {
				require.Equal(t, []string{"3", "1", "4"}, ids(resp))
			}},
		{name: "a filter that matches nothing",
			body: `{"aggs":{"tags":{"terms":{"field":"tags"}}},"post_filter":{"term":{"tags":"nope"}}}`,
			check: func(t *testing.T, resp map[string]any) {
				wantIDs()(t, resp)
				v, _ := total(t, resp)
				require.Zero(t, v)
				require.Equal(t, everyTag, termBuckets(t, resp, "tags"))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, engineSearch(t, idx, fields, tc.body, tc.params))
		})
	}
}

// TestPostFilterDoesNotScore: hits keep the query's scores, and max_score
// is the best kept hit's.
func TestPostFilterDoesNotScore(t *testing.T) {
	idx, fields := newEngineIndex(t)
	plain := hitScores(engineSearch(t, idx, fields, `{"query":{"match":{"body":"fox lazy"}}}`, nil))
	require.Len(t, plain, 3, "docs 1, 2 and 4 match")
	resp := engineSearch(t, idx, fields, `{"query":{"match":{"body":"fox lazy"}},"post_filter":{"match":{"body":"news hound"}}}`, nil)
	filtered := hitScores(resp)
	require.Equal(t, map[string]float64{"4": plain["4"]}, filtered)
	require.Equal(t, plain["4"], resp["hits"].(map[string]any)["max_score"])
}

func TestPostFilterErrors(t *testing.T) {
	_, fields := newEngineIndex(t)
	tests := []struct{ name, body, reason string }{
		{name: "unknown query", body: `{"post_filter":{"nope":{}}}`, reason: "[nope]"},
		{name: "not an object", body: `{"post_filter":"tags:food"}`, reason: "post_filter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := esdsl.ParseSearch([]byte(tc.body), nil, fields)
			require.ErrorContains(t, err, tc.reason)
		})
	}
}
