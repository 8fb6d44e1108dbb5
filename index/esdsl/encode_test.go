package esdsl

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stdJSON encodes v as encoding/json does without HTML escaping (as the
// node's replies are written), without the trailing newline.
func stdJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return strings.TrimSuffix(buf.String(), "\n")
}

// TestAppendJSONMatchesEncodingJSON checks AppendJSON byte for byte against
// encoding/json on real search replies, and that it declines the replies it
// does not cover rather than encoding them differently.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	ti := newTestIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		fast   bool
	}{
		{"match", `{"query":{"match":{"body":"fox"}}}`, nil, true},
		{"term size 2", `{"query":{"term":{"body":"quick"}},"size":2}`, nil, true},
		{"phrase", `{"query":{"match_phrase":{"body":"brown fox"}}}`, nil, true},
		{"bool", `{"query":{"bool":{"must":[{"match":{"body":"fox"}}],"must_not":[{"term":{"tags":"food"}}]}}}`, nil, true},
		{"no hits", `{"query":{"term":{"body":"zebra"}}}`, nil, true},
		{"match_all", `{}`, nil, true},
		{"source filter", `{"query":{"match":{"body":"fox"}},"_source":["title"]}`, nil, true},
		{"no source", `{"query":{"match":{"body":"fox"}},"_source":false}`, nil, true},
		{"total as int", `{"query":{"match":{"body":"fox"}}}`, url.Values{"rest_total_hits_as_int": {"true"}}, true},
		{"no total", `{"query":{"match":{"body":"fox"}},"track_total_hits":false}`, nil, true},
		{"total capped", `{"track_total_hits":2}`, nil, true},
		{"sorted by field (no scores, sort values)", `{"sort":[{"views":"desc"}]}`, nil, false},
		{"highlight", `{"query":{"match":{"body":"fox"}},"highlight":{"fields":{"body":{}}}}`, nil, false},
		{"aggregations", `{"size":0,"aggs":{"t":{"terms":{"field":"tags"}}}}`, nil, false},
		{"explain", `{"query":{"match":{"body":"fox"}},"explain":true}`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSearch([]byte(tc.body), tc.params, ti.fields)
			require.NoError(t, err)
			res, err := ti.idx.Search(s.Request)
			require.NoError(t, err)
			for _, h := range res.Hits {
				h.Index = "test"
			}
			resp := s.Response(res, 3*time.Millisecond)
			if s.aggs != nil {
				resp.Aggregations = map[string]any{"t": map[string]any{"buckets": []any{}}}
			}
			got, ok := resp.AppendJSON([]byte("prefix:"))
			require.Equal(t, tc.fast, ok)
			if !ok {
				require.Equal(t, "prefix:", string(got), "a declined reply leaves the buffer as it was")
				return
			}
			require.Equal(t, "prefix:"+stdJSON(t, resp), string(got))
		})
	}
}

func TestAppendJSONEdgeCases(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	base := func() *SearchResponse {
		return &SearchResponse{Took: 7, Shards: ShardsInfo{Total: 5, Successful: 5},
			Hits: Hits{Total: &TotalHits{Value: 2, Relation: "gte"}, MaxScore: f(1.5), Hits: []Hit{
				{Index: "i", ID: "a", Score: f(1.5), Source: json.RawMessage(`{"x":[1,2]}`)},
				{Index: "i", ID: "b", Score: f(0.000001)},
			}}}
	}
	tests := []struct {
		name   string
		modify func(r *SearchResponse)
		fast   bool
	}{
		{"plain", func(*SearchResponse) {}, true},
		{"scroll id", func(r *SearchResponse) { r.ScrollID = "c2Nyb2xs-_" }, true},
		{"timed out, nil max score and score", func(r *SearchResponse) {
			r.TimedOut, r.Hits.MaxScore, r.Hits.Hits[0].Score = true, nil, nil
		}, true},
		{"nil hits", func(r *SearchResponse) { r.Hits.Hits = nil }, true},
		{"zero and large scores", func(r *SearchResponse) { *r.Hits.Hits[0].Score, *r.Hits.Hits[1].Score = 0, 12345678.25 }, true},
		{"exponent score", func(r *SearchResponse) { *r.Hits.Hits[1].Score = 1e-7 }, false},
		{"NaN score", func(r *SearchResponse) { *r.Hits.Hits[1].Score = math.NaN() }, false},
		{"id needing escapes", func(r *SearchResponse) { r.Hits.Hits[0].ID = `a"b` }, false},
		{"non-ASCII id", func(r *SearchResponse) { r.Hits.Hits[0].ID = "é" }, false},
		{"shard failure", func(r *SearchResponse) { r.Shards.Failures = []ShardFailure{{Index: "i"}} }, false},
		{"sort values", func(r *SearchResponse) { r.Hits.Hits[0].Sort = []any{1} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.modify(r)
			got, ok := r.AppendJSON(nil)
			require.Equal(t, tc.fast, ok)
			if ok {
				require.Equal(t, stdJSON(t, r), string(got))
			}
		})
	}
}
