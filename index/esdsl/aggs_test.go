package esdsl

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAggregations(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		agg    string
		want   map[string]any
	}{
		{name: "terms on keyword", agg: "tags", body: `{"size":0,"aggs":{"tags":{"terms":{"field":"tags","size":2}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 4.0, "buckets": []any{
				map[string]any{"key": "animal", "doc_count": 3.0}, map[string]any{"key": "fast", "doc_count": 2.0}}}},
		{name: "terms follows the query", agg: "t", body: `{"query":{"term":{"active":false}},"aggs":{"t":{"terms":{"field":"tags"}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 0.0, "buckets": []any{
				map[string]any{"key": "animal", "doc_count": 1.0}, map[string]any{"key": "fast", "doc_count": 1.0},
				map[string]any{"key": "food", "doc_count": 1.0}, map[string]any{"key": "slow", "doc_count": 1.0}}}},
		{name: "terms on long", agg: "v", body: `{"size":0,"query":{"range":{"views":{"gte":50}}},"aggs":{"v":{"terms":{"field":"views","size":2}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 2.0, "buckets": []any{
				map[string]any{"key": 50.0, "doc_count": 1.0}, map[string]any{"key": 75.0, "doc_count": 1.0}}}},
		{name: "terms on boolean", agg: "a", body: `{"size":0,"aggs":{"a":{"terms":{"field":"active"}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 0.0, "buckets": []any{
				map[string]any{"key": 1.0, "key_as_string": "true", "doc_count": 4.0},
				map[string]any{"key": 0.0, "key_as_string": "false", "doc_count": 2.0}}}},
		{name: "terms on date", agg: "d", body: `{"size":0,"query":{"ids":{"values":["5"]}},"aggs":{"d":{"terms":{"field":"published"}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 0.0, "buckets": []any{
				map[string]any{"key": 1710028800000.0, "key_as_string": "2024-03-10T00:00:00.000Z", "doc_count": 1.0}}}},
		{name: "terms on unmapped", agg: "u", body: `{"size":0,"aggs":{"u":{"terms":{"field":"nope"}}}}`,
			want: map[string]any{"doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 0.0, "buckets": []any{}}},
		{name: "range", agg: "p", body: `{"size":0,"aggs":{"p":{"range":{"field":"price","ranges":[{"from":10,"to":20},{"to":10},{"from":20,"key":"pricey"}]}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": "*-10.0", "to": 10.0, "doc_count": 3.0},
				map[string]any{"key": "10.0-20.0", "from": 10.0, "to": 20.0, "doc_count": 2.0},
				map[string]any{"key": "pricey", "from": 20.0, "doc_count": 1.0}}}},
		{name: "range keyed", agg: "p", body: `{"size":0,"aggs":{"p":{"range":{"field":"views","keyed":true,"ranges":[{"to":60},{"from":60}]}}}}`,
			want: map[string]any{"buckets": map[string]any{
				"*-60.0": map[string]any{"to": 60.0, "doc_count": 2.0},
				"60.0-*": map[string]any{"from": 60.0, "doc_count": 3.0}}}},
		{name: "date_range", agg: "d", body: `{"size":0,"aggs":{"d":{"date_range":{"field":"published","ranges":[{"to":"2024-01-01"},{"from":"2024-01-01","to":"2024-03-01"}]}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": "*-2024-01-01T00:00:00.000Z", "to": 1704067200000.0, "to_as_string": "2024-01-01T00:00:00.000Z", "doc_count": 1.0},
				map[string]any{"key": "2024-01-01T00:00:00.000Z-2024-03-01T00:00:00.000Z", "from": 1704067200000.0, "from_as_string": "2024-01-01T00:00:00.000Z",
					"to": 1709251200000.0, "to_as_string": "2024-03-01T00:00:00.000Z", "doc_count": 3.0}}}},
		{name: "histogram trims empty edges", agg: "h", body: `{"size":0,"aggs":{"h":{"histogram":{"field":"views","interval":100,"hard_bounds":{"min":-1000,"max":1000}}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": 0.0, "doc_count": 3.0}, map[string]any{"key": 100.0, "doc_count": 1.0},
				map[string]any{"key": 200.0, "doc_count": 0.0}, map[string]any{"key": 300.0, "doc_count": 1.0}}}},
		{name: "histogram min_doc_count and extended bounds", agg: "h", body: `{"size":0,"aggs":{"h":{"histogram":{"field":"price","interval":10,"min_doc_count":1,"hard_bounds":{"min":0,"max":50},"extended_bounds":{"min":0,"max":50}}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": 0.0, "doc_count": 3.0}, map[string]any{"key": 10.0, "doc_count": 2.0}, map[string]any{"key": 30.0, "doc_count": 1.0}}}},
		{name: "date_histogram calendar month", agg: "m", body: `{"size":0,"aggs":{"m":{"date_histogram":{"field":"published","calendar_interval":"month","hard_bounds":{"min":"2023-01-01","max":"2024-12-31"}}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": 1701388800000.0, "key_as_string": "2023-12-01T00:00:00.000Z", "doc_count": 1.0},
				map[string]any{"key": 1704067200000.0, "key_as_string": "2024-01-01T00:00:00.000Z", "doc_count": 1.0},
				map[string]any{"key": 1706745600000.0, "key_as_string": "2024-02-01T00:00:00.000Z", "doc_count": 2.0},
				map[string]any{"key": 1709251200000.0, "key_as_string": "2024-03-01T00:00:00.000Z", "doc_count": 2.0}}}},
		{name: "date_histogram fixed interval with format", agg: "w", body: `{"size":0,"query":{"range":{"published":{"gte":"2024-03-01"}}},"aggs":{"w":{"date_histogram":{"field":"published","fixed_interval":"1d","format":"yyyy-MM-dd","min_doc_count":1,"hard_bounds":{"min":"2024-03-01","max":"2024-03-31"}}}}}`,
			want: map[string]any{"buckets": []any{
				map[string]any{"key": 1710028800000.0, "key_as_string": "2024-03-10", "doc_count": 1.0},
				map[string]any{"key": 1710115200000.0, "key_as_string": "2024-03-11", "doc_count": 1.0}}}},
		{name: "typed_keys", agg: "sterms#tags", params: url.Values{"typed_keys": {"true"}}, body: `{"size":0,"aggs":{"tags":{"terms":{"field":"tags","size":1},"meta":{"k":"v"}}}}`,
			want: map[string]any{"meta": map[string]any{"k": "v"}, "doc_count_error_upper_bound": 0.0, "sum_other_doc_count": 6.0, "buckets": []any{
				map[string]any{"key": "animal", "doc_count": 3.0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ti.search(t, tt.body, tt.params)
			aggs, ok := resp["aggregations"].(map[string]any)
			require.True(t, ok, "no aggregations in %v", resp)
			require.Equal(t, tt.want, aggs[tt.agg])
		})
	}
}
