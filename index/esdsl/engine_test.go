package esdsl_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// These tests run translated requests against the index package's own
// bleve indexes and mappings, so the conventions both sides rely on (field
// names, keyword sub-fields, _source, date and boolean encodings, term
// vectors for highlights) are checked together.

const engineMapping = `{"properties":{
	"title":{"type":"text","fields":{"keyword":{"type":"keyword"}}},
	"body":{"type":"text"},
	"tags":{"type":"keyword"},
	"views":{"type":"long"},
	"price":{"type":"double"},
	"published":{"type":"date"},
	"active":{"type":"boolean"},
	"day":{"type":"date","format":"epoch_second"},
	"user":{"properties":{"name":{"type":"text"}}}}}`

var engineDocs = map[string]string{
	"1": `{"title":"The Quick Brown Fox","body":"the quick brown fox jumps over the lazy dog","tags":["animal","fast"],"views":100,"price":9.99,"published":"2024-01-15T10:00:00Z","active":true,"user":{"name":"Alice Smith"},"day":1705276800}`,
	"2": `{"title":"Lazy Dogs Sleep","body":"a lazy dog sleeps all day in the sun","tags":["animal","slow"],"views":50,"price":19.5,"published":"2024-02-20T08:30:00Z","active":false,"user":{"name":"Bob Jones"},"day":1708387200}`,
	"3": `{"title":"Brown Bread Recipe","body":"bake brown bread with whole wheat flour","tags":["food"],"views":300,"price":5,"published":"2024-02-03","active":true,"user":{"name":"Carol Smith"}}`,
	"4": `{"title":"Fox News Today","body":"news about a fox and a hound","tags":["news","animal"],"views":10,"price":0.5,"published":"2023-12-31T23:00:00Z","active":true,"user":{"name":"Dave"}}`,
}

// The shard layer's merged mapping view is what the HTTP layer passes as
// Fields; it has every optional ability.
var (
	_ esdsl.Fields           = vocab.FieldTypes(nil)
	_ esdsl.Analyzer         = vocab.FieldTypes(nil)
	_ esdsl.AnalyzerResolver = vocab.FieldTypes(nil)
	_ esdsl.FieldLister      = vocab.FieldTypes(nil)
	_ esdsl.DateFormatter    = vocab.FieldTypes(nil)
)

func newEngineIndex(t *testing.T) (*index.Index, esdsl.Fields) {
	t.Helper()
	m, err := index.ParseMapping([]byte(engineMapping))
	require.NoError(t, err)
	idx, err := index.Create(t.TempDir(), m)
	require.NoError(t, err)
	t.Cleanup(func() { _ = idx.Close() })
	var ops []index.Op
	for _, id := range []string{"1", "2", "3", "4"} {
		ops = append(ops, index.Op{ID: id, Source: []byte(engineDocs[id]), SeqNo: uint64(len(ops) + 1), Version: 1, PrimaryTerm: 1})
	}
	require.NoError(t, idx.Apply(context.Background(), ops))
	return idx, vocab.FieldTypes{m}
}

func engineSearch(t *testing.T, idx *index.Index, fields esdsl.Fields, body string, params url.Values) map[string]any {
	t.Helper()
	s, err := esdsl.ParseSearch([]byte(body), params, fields)
	require.NoError(t, err)
	ac := s.AggCollector("test", 0)
	var c index.Collector
	if ac != nil {
		c = ac
	}
	res, err := idx.SearchCollect(context.Background(), s.Request, c, s.PostFilter())
	require.NoError(t, err)
	resp := s.Response(res, time.Millisecond)
	if ac != nil {
		resp.Aggregations, err = s.RenderAggs(s.ReduceAggs([]esdsl.AggPartials{ac.Partials()}))
		require.NoError(t, err)
	}
	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func TestAgainstIndexPackage(t *testing.T) {
	idx, fields := newEngineIndex(t)
	tests := []struct {
		name   string
		body   string
		params url.Values
		check  func(t *testing.T, resp map[string]any)
	}{
		{name: "match and bool filter", body: `{"query":{"bool":{"must":{"match":{"body":"fox"}},"filter":{"term":{"active":true}}}}}`,
			check: wantIDs("1", "4")},
		{name: "term on keyword sub-field", body: `{"query":{"term":{"title.keyword":"Lazy Dogs Sleep"}}}`, check: wantIDs("2")},
		{name: "term on text keeps stop words", body: `{"query":{"match":{"title":"the"}}}`, check: wantIDs("1")},
		{name: "numeric and date ranges", body: `{"query":{"bool":{"filter":[{"range":{"views":{"gte":50}}},{"range":{"published":{"gte":"2024-02-01","lt":"2024-03-01"}}}]}}}`,
			check: wantIDs("2", "3")},
		{name: "minimum_should_match with the index's analyzer", body: `{"query":{"match":{"body":{"query":"The LAZY dog sun","minimum_should_match":3}}}}`,
			check: wantIDs("1", "2")},
		{name: "range in the field's own date format", body: `{"query":{"range":{"day":{"gte":1706745600}}}}`, check: wantIDs("2")},
		{name: "date_histogram keys in the field's format", body: `{"size":0,"aggs":{"d":{"date_histogram":{"field":"day","calendar_interval":"month","hard_bounds":{"min":1704067200,"max":1709164800}}}}}`,
			check: func(t *testing.T, resp map[string]any) {
				b := resp["aggregations"].(map[string]any)["d"].(map[string]any)["buckets"].([]any)
				require.Len(t, b, 2)
				require.Equal(t, "1704067200", b[0].(map[string]any)["key_as_string"])
				require.Equal(t, "1706745600", b[1].(map[string]any)["key_as_string"])
			}},
		{name: "analyzer named in the query", body: `{"query":{"match":{"title":{"query":"LAZY","analyzer":"standard"}}}}`, check: wantIDs("2")},
		{name: "nested object field", body: `{"query":{"match":{"user.name":"smith"}}}`, check: wantIDs("1", "3")},
		{name: "q over all fields", params: url.Values{"q": {"hound OR bread"}}, check: wantIDs("3", "4")},
		{name: "exists", body: `{"query":{"bool":{"must_not":{"exists":{"field":"price"}}}}}`, check: wantIDs()},
		{name: "sort by date desc", body: `{"sort":[{"published":"desc"}]}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, []string{"2", "3", "1", "4"}, ids(resp))
			require.Equal(t, []any{1708417800000.0}, hits(resp)[0]["sort"])
		}},
		{name: "sort by keyword sub-field", body: `{"sort":[{"title.keyword":"asc"}]}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, []string{"3", "4", "2", "1"}, ids(resp))
		}},
		{name: "highlight", body: `{"query":{"match":{"body":"lazy"}},"highlight":{"fields":{"body":{}}},"sort":["_id"]}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, map[string]any{"body": []any{"the quick brown fox jumps over the <em>lazy</em> dog"}}, hits(resp)[0]["highlight"])
		}},
		{name: "source filter", body: `{"query":{"ids":{"values":["4"]}},"_source":["user.*","views"]}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, map[string]any{"user": map[string]any{"name": "Dave"}, "views": 10.0}, hits(resp)[0]["_source"])
		}},
		{name: "min_score leaves out hits, totals and aggregations below it", body: `{"query":{"match":{"body":"the lazy fox"}},"min_score":0.5,"aggs":{"n":{"value_count":{"field":"views"}}}}`,
			check: func(t *testing.T, resp map[string]any) {
				all := engineSearch(t, idx, fields, `{"query":{"match":{"body":"the lazy fox"}}}`, nil)
				var kept []string
				for _, h := range hits(all) {
					if h["_score"].(float64) >= 0.5 {
						kept = append(kept, h["_id"].(string))
					}
				}
				require.NotEmpty(t, kept)
				require.Less(t, len(kept), len(hits(all)), "the threshold cuts some hits")
				require.ElementsMatch(t, kept, ids(resp))
				require.EqualValues(t, len(kept), resp["hits"].(map[string]any)["total"].(map[string]any)["value"])
				require.EqualValues(t, len(kept), resp["aggregations"].(map[string]any)["n"].(map[string]any)["value"])
			}},
		{name: "min_score as a parameter", body: `{"query":{"match":{"body":"the lazy fox"}}}`, params: url.Values{"min_score": {"100"}}, check: wantIDs()},
		{name: "case_insensitive term, prefix and wildcard on keywords", body: `{"query":{"bool":{"should":[
			{"term":{"tags":{"value":"ANIMAL","case_insensitive":true}}},
			{"prefix":{"title.keyword":{"value":"brown b","case_insensitive":true}}},
			{"wildcard":{"tags":{"value":"N?w*","case_insensitive":true}}}]}}}`, check: wantIDs("1", "2", "3", "4")},
		{name: "case_insensitive wildcard alone", body: `{"query":{"wildcard":{"title.keyword":{"value":"*DOGS*","case_insensitive":true}}}}`, check: wantIDs("2")},
		{name: "case sensitive by default", body: `{"query":{"term":{"tags":"ANIMAL"}}}`, check: wantIDs()},
		{name: "stored_fields [] keeps ids, drops sources", body: `{"query":{"ids":{"values":["4"]}},"stored_fields":[]}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, "4", hits(resp)[0]["_id"])
			require.NotContains(t, hits(resp)[0], "_source")
		}},
		{name: "stored_fields * with _source, as elasticdump sends", body: `{"query":{"ids":{"values":["4"]}},"stored_fields":["*"],"_source":true}`, check: func(t *testing.T, resp map[string]any) {
			require.Equal(t, "4", hits(resp)[0]["_id"])
			require.Equal(t, "Fox News Today", hits(resp)[0]["_source"].(map[string]any)["title"])
		}},
		{name: "stored_fields _none_ drops ids too", body: `{"query":{"ids":{"values":["4"]}},"stored_fields":"_none_"}`, check: func(t *testing.T, resp map[string]any) {
			require.NotContains(t, hits(resp)[0], "_id")
			require.NotContains(t, hits(resp)[0], "_source")
		}},
		{name: "aggregations", body: `{"size":0,"aggs":{"tags":{"terms":{"field":"tags"}},"on":{"terms":{"field":"active"}},"v":{"terms":{"field":"views","size":1}},
			"months":{"date_histogram":{"field":"published","calendar_interval":"month","hard_bounds":{"min":"2023-12-01","max":"2024-02-29"}}}}}`,
			check: func(t *testing.T, resp map[string]any) {
				aggs := resp["aggregations"].(map[string]any)
				require.Equal(t, map[string]any{"key": "animal", "doc_count": 3.0}, aggs["tags"].(map[string]any)["buckets"].([]any)[0])
				require.Equal(t, map[string]any{"key": 1.0, "key_as_string": "true", "doc_count": 3.0}, aggs["on"].(map[string]any)["buckets"].([]any)[0])
				require.Equal(t, 3.0, aggs["v"].(map[string]any)["sum_other_doc_count"])
				var counts []any
				for _, b := range aggs["months"].(map[string]any)["buckets"].([]any) {
					counts = append(counts, b.(map[string]any)["doc_count"])
				}
				require.Equal(t, []any{1.0, 1.0, 2.0}, counts)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, engineSearch(t, idx, fields, tt.body, tt.params))
		})
	}
}

func hits(resp map[string]any) []map[string]any {
	var out []map[string]any
	for _, h := range resp["hits"].(map[string]any)["hits"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

func ids(resp map[string]any) []string {
	out := []string{}
	for _, h := range hits(resp) {
		out = append(out, h["_id"].(string))
	}
	return out
}

func wantIDs(want ...string) func(*testing.T, map[string]any) {
	return func(t *testing.T, resp map[string]any) {
		if want == nil {
			want = []string{}
		}
		require.ElementsMatch(t, want, ids(resp))
	}
}
