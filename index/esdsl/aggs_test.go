package esdsl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// Aggregations are computed per shard from doc values (index.SearchCollect),
// reduced, then rendered. These tests run them over real indexes, split
// into shards, and compare with Elasticsearch's documented answers.

const aggMapping = `{"properties":{
	"tag":{"type":"keyword"},"n":{"type":"long"},"price":{"type":"double"},
	"day":{"type":"date"},"flag":{"type":"boolean"},"ip":{"type":"ip"},"body":{"type":"text"}}}`

// aggDocs: four documents as in Elasticsearch's metric tests (1, 51, 101,
// 151), plus one without any number.
var aggDocs = []string{
	`{"tag":["a","b"],"n":1,"price":1.0,"day":"2024-01-01","flag":true,"ip":"10.0.0.1","body":"red fox"}`,
	`{"tag":"a","n":51,"price":51.0,"day":"2024-01-02","flag":false,"ip":"10.0.0.2","body":"red dog"}`,
	`{"tag":"b","n":101,"price":101.0,"day":"2024-02-01","flag":true,"ip":"10.0.0.1","body":"blue fox"}`,
	`{"tag":"c","n":151,"price":151.0,"day":"2024-03-01","flag":true,"ip":"::1","body":"blue cat"}`,
	`{"tag":"a","body":"no numbers"}`,
}

// aggShards indexes docs round-robin into n shards of one mapping.
func aggShards(t testing.TB, n int, docs []string) ([]*index.Index, esdsl.Fields) {
	t.Helper()
	return aggShardsOf(t, n, aggMapping, docs)
}

// aggShardsOf is aggShards with another mapping.
func aggShardsOf(t testing.TB, n int, mapping string, docs []string) ([]*index.Index, esdsl.Fields) {
	t.Helper()
	m, err := index.ParseMapping([]byte(mapping))
	require.NoError(t, err)
	shards := make([]*index.Index, n)
	ops := make([][]index.Op, n)
	for k := range shards {
		shards[k], err = index.Create(t.TempDir(), m)
		require.NoError(t, err)
		t.Cleanup(func() { _ = shards[k].Close() })
	}
	for k, d := range docs {
		ops[k%n] = append(ops[k%n], index.Op{ID: fmt.Sprint("d", k), Source: []byte(d), SeqNo: uint64(k + 1), Version: 1, PrimaryTerm: 1})
	}
	for k := range shards {
		require.NoError(t, shards[k].Apply(context.Background(), ops[k]))
	}
	return shards, vocab.FieldTypes{m}
}

// aggSearch runs body on every shard and returns the rendered
// "aggregations", as JSON values.
func aggSearch(t *testing.T, shards []*index.Index, fields esdsl.Fields, body string) map[string]any {
	t.Helper()
	s, err := esdsl.ParseSearch([]byte(body), nil, fields)
	require.NoError(t, err, body)
	var parts []esdsl.AggPartials
	for k, sh := range shards {
		ac := s.AggCollector(fmt.Sprint("idx", k), 0)
		_, err := sh.SearchCollect(context.Background(), s.Request, ac, nil)
		require.NoError(t, err)
		// Partials cross the network as JSON.
		raw, err := json.Marshal(ac.Partials())
		require.NoError(t, err)
		var p esdsl.AggPartials
		require.NoError(t, json.Unmarshal(raw, &p))
		parts = append(parts, p)
	}
	out, err := s.RenderAggs(s.ReduceAggs(parts))
	require.NoError(t, err)
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func TestAggregationsLikeElasticsearch(t *testing.T) {
	tests := []struct {
		name string
		aggs string
		want string // the aggregation "a", as JSON
	}{
		{"avg", `{"avg":{"field":"n"}}`, `{"value":76}`},
		{"avg of nothing", `{"avg":{"field":"nope"}}`, `{"value":null}`},
		{"avg with missing", `{"avg":{"field":"n","missing":1}}`, `{"value":61}`},
		{"sum", `{"sum":{"field":"price"}}`, `{"value":304}`},
		{"min", `{"min":{"field":"n"}}`, `{"value":1}`},
		{"max of a date", `{"max":{"field":"day"}}`, `{"value":1709251200000,"value_as_string":"2024-03-01T00:00:00.000Z"}`},
		{"value_count of keywords", `{"value_count":{"field":"tag"}}`, `{"value":6}`},
		{"stats", `{"stats":{"field":"n"}}`, `{"count":4,"min":1,"max":151,"avg":76,"sum":304}`},
		{"extended_stats", `{"extended_stats":{"field":"n","sigma":1}}`, `{"count":4,"min":1,"max":151,"avg":76,"sum":304,
			"sum_of_squares":35604,"variance":3125,"variance_population":3125,"variance_sampling":4166.666666666667,
			"std_deviation":55.90169943749474,"std_deviation_population":55.90169943749474,"std_deviation_sampling":64.54972243679029,
			"std_deviation_bounds":{"upper":131.90169943749476,"lower":20.09830056250526,"upper_population":131.90169943749476,
			"lower_population":20.09830056250526,"upper_sampling":140.5497224367903,"lower_sampling":11.45027756320971}}`},
		{"cardinality", `{"cardinality":{"field":"tag"}}`, `{"value":3}`},
		{"cardinality of ips", `{"cardinality":{"field":"ip"}}`, `{"value":3}`},
		{"percentiles", `{"percentiles":{"field":"n"}}`, `{"values":{"1.0":1,"5.0":1,"25.0":26,"50.0":76,"75.0":126,"95.0":151,"99.0":151}}`},
		{"percentiles not keyed", `{"percentiles":{"field":"n","percents":[50],"keyed":false}}`, `{"values":[{"key":50,"value":76}]}`},
		{"terms", `{"terms":{"field":"tag"}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[
			{"key":"a","doc_count":3},{"key":"b","doc_count":2},{"key":"c","doc_count":1}]}`},
		{"terms by key desc, size 2", `{"terms":{"field":"tag","size":2,"order":{"_key":"desc"}}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":3,"buckets":[
			{"key":"c","doc_count":1},{"key":"b","doc_count":2}]}`},
		{"terms include, exclude", `{"terms":{"field":"tag","include":["a","b"],"exclude":["b"]}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[{"key":"a","doc_count":3}]}`},
		{"terms regex include", `{"terms":{"field":"tag","include":"[bc]"}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[{"key":"b","doc_count":2},{"key":"c","doc_count":1}]}`},
		{"terms min_doc_count", `{"terms":{"field":"tag","min_doc_count":2}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":1,"buckets":[{"key":"a","doc_count":3},{"key":"b","doc_count":2}]}`},
		{"terms missing", `{"terms":{"field":"n","missing":0,"size":1,"order":{"_key":"asc"}}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":4,"buckets":[{"key":0,"doc_count":1}]}`},
		{"terms on booleans", `{"terms":{"field":"flag"}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[
			{"key":1,"key_as_string":"true","doc_count":3},{"key":0,"key_as_string":"false","doc_count":1}]}`},
		{"terms on ips", `{"terms":{"field":"ip","size":1}}`, `{"doc_count_error_upper_bound":0,"sum_other_doc_count":2,"buckets":[{"key":"10.0.0.1","doc_count":2}]}`},
		{"terms ordered by a sub-aggregation", `{"terms":{"field":"tag","order":{"m":"desc"}},"aggs":{"m":{"max":{"field":"n"}}}}`,
			`{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[
			{"key":"c","doc_count":1,"m":{"value":151}},{"key":"b","doc_count":2,"m":{"value":101}},{"key":"a","doc_count":3,"m":{"value":51}}]}`},
		{"terms ordered through a filter", `{"terms":{"field":"tag","order":{"f>s.sum":"asc"}},"aggs":{"f":{"filter":{"match":{"body":"fox"}},"aggs":{"s":{"stats":{"field":"n"}}}}}}`,
			`{"doc_count_error_upper_bound":0,"sum_other_doc_count":0,"buckets":[
			{"key":"c","doc_count":1,"f":{"doc_count":0,"s":{"count":0,"min":null,"max":null,"avg":null,"sum":0}}},
			{"key":"a","doc_count":3,"f":{"doc_count":1,"s":{"count":1,"min":1,"max":1,"avg":1,"sum":1}}},
			{"key":"b","doc_count":2,"f":{"doc_count":2,"s":{"count":2,"min":1,"max":101,"avg":51,"sum":102}}}]}`},
		{"histogram with empty buckets", `{"histogram":{"field":"n","interval":40}}`, `{"buckets":[
			{"key":0,"doc_count":1},{"key":40,"doc_count":1},{"key":80,"doc_count":1},{"key":120,"doc_count":1}]}`},
		{"histogram offset, extended_bounds, min_doc_count 0", `{"histogram":{"field":"n","interval":100,"offset":1,"extended_bounds":{"min":-150,"max":250}}}`, `{"buckets":[
			{"key":-199,"doc_count":0},{"key":-99,"doc_count":0},{"key":1,"doc_count":2},{"key":101,"doc_count":2},{"key":201,"doc_count":0}]}`},
		{"histogram format and missing", `{"histogram":{"field":"n","interval":100,"missing":500,"min_doc_count":1,"format":"Value is ##0.0"}}`, `{"buckets":[
			{"key":0,"key_as_string":"Value is 0.0","doc_count":2},{"key":100,"key_as_string":"Value is 100.0","doc_count":2},{"key":500,"key_as_string":"Value is 500.0","doc_count":1}]}`},
		{"date_histogram by month", `{"date_histogram":{"field":"day","calendar_interval":"month","format":"yyyy-MM"}}`, `{"buckets":[
			{"key":1704067200000,"key_as_string":"2024-01","doc_count":2},{"key":1706745600000,"key_as_string":"2024-02","doc_count":1},
			{"key":1709251200000,"key_as_string":"2024-03","doc_count":1}]}`},
		{"date_histogram fixed interval with offset", `{"date_histogram":{"field":"day","fixed_interval":"30d","offset":"+1d","min_doc_count":1}}`, `{"buckets":[
			{"key":1703030400000,"key_as_string":"2023-12-20T00:00:00.000Z","doc_count":2},{"key":1705622400000,"key_as_string":"2024-01-19T00:00:00.000Z","doc_count":1},
			{"key":1708214400000,"key_as_string":"2024-02-18T00:00:00.000Z","doc_count":1}]}`},
		{"range", `{"range":{"field":"price","ranges":[{"to":50},{"from":50,"to":150},{"from":150,"key":"big"}]}}`, `{"buckets":[
			{"key":"*-50.0","to":50,"doc_count":1},{"key":"50.0-150.0","from":50,"to":150,"doc_count":2},{"key":"big","from":150,"doc_count":1}]}`},
		{"date_range keyed", `{"date_range":{"field":"day","keyed":true,"ranges":[{"key":"jan","from":"2024-01-01","to":"2024-02-01"}]}}`, `{"buckets":{"jan":{
			"from":1704067200000,"from_as_string":"2024-01-01T00:00:00.000Z","to":1706745600000,"to_as_string":"2024-02-01T00:00:00.000Z","doc_count":2}}}`},
		{"filter", `{"filter":{"term":{"tag":"a"}},"aggs":{"s":{"sum":{"field":"n"}}}}`, `{"doc_count":3,"s":{"value":52}}`},
		{"filters named, other bucket", `{"filters":{"filters":{"fox":{"match":{"body":"fox"}},"red":{"match":{"body":"red"}}},"other_bucket":true}}`,
			`{"buckets":{"fox":{"doc_count":2},"red":{"doc_count":2},"_other_":{"doc_count":2}}}`},
		{"filters anonymous", `{"filters":{"filters":[{"term":{"tag":"c"}},{"range":{"n":{"gte":100}}}]}}`, `{"buckets":[{"doc_count":1},{"doc_count":2}]}`},
		{"missing", `{"missing":{"field":"n"}}`, `{"doc_count":1}`},
		{"composite", `{"composite":{"size":3,"sources":[{"t":{"terms":{"field":"tag"}}},{"f":{"terms":{"field":"flag","order":"desc"}}}]}}`, `{"after_key":{"t":"b","f":1},"buckets":[
			{"key":{"t":"a","f":1},"doc_count":1},{"key":{"t":"a","f":0},"doc_count":1},{"key":{"t":"b","f":1},"doc_count":2}]}`},
		{"composite after", `{"composite":{"size":3,"after":{"t":"b","f":1},"sources":[{"t":{"terms":{"field":"tag"}}},{"f":{"terms":{"field":"flag","order":"desc"}}}]}}`,
			`{"after_key":{"t":"c","f":1},"buckets":[{"key":{"t":"c","f":1},"doc_count":1}]}`},
		{"composite date_histogram with missing_bucket", `{"composite":{"sources":[{"d":{"date_histogram":{"field":"day","calendar_interval":"month","format":"yyyy-MM","missing_bucket":true}}}]}}`,
			`{"after_key":{"d":"2024-03"},"buckets":[{"key":{"d":null},"doc_count":1},{"key":{"d":"2024-01"},"doc_count":2},{"key":{"d":"2024-02"},"doc_count":1},{"key":{"d":"2024-03"},"doc_count":1}]}`},
		{"top_hits by a field", `{"terms":{"field":"tag","size":1},"aggs":{"h":{"top_hits":{"size":1,"sort":[{"n":"desc"}],"_source":["n"]}}}}`,
			`{"doc_count_error_upper_bound":0,"sum_other_doc_count":3,"buckets":[{"key":"a","doc_count":3,"h":{"hits":{"total":{"value":3,"relation":"eq"},"max_score":null,"hits":[
			{"_index":"HIT","_id":"d1","_score":null,"_source":{"n":51},"sort":[51]}]}}}]}`},
	}
	for _, n := range []int{1, 3} {
		shards, fields := aggShards(t, n, aggDocs)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%d shards", tt.name, n), func(t *testing.T) {
				got := aggSearch(t, shards, fields, `{"size":0,"aggs":{"a":`+tt.aggs+`}}`)
				want := tt.want
				// d1 is the second document: on shard 0 of one, on shard 1 of three.
				want = replaceAll(want, "HIT", fmt.Sprint("idx", map[int]int{1: 0, 3: 1}[n]))
				require.JSONEq(t, want, mustMarshal(t, got["a"]))
			})
		}
	}
}

func replaceAll(s, old, repl string) string {
	out := ""
	for {
		i := indexOf(s, old)
		if i < 0 {
			return out + s
		}
		out += s[:i] + repl
		s = s[i+len(old):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

func TestAggregationsTooManyBuckets(t *testing.T) {
	shards, fields := aggShards(t, 1, aggDocs)
	s, err := esdsl.ParseSearch([]byte(`{"aggs":{"h":{"histogram":{"field":"n","interval":0.001}}}}`), nil, fields)
	require.NoError(t, err)
	ac := s.AggCollector("i", 0)
	_, err = shards[0].SearchCollect(context.Background(), s.Request, ac, nil)
	require.NoError(t, err)
	_, err = s.RenderAggs(s.ReduceAggs([]esdsl.AggPartials{ac.Partials()}))
	var e *esdsl.Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, e, esdsl.ErrInvalidRequest)
	require.Contains(t, e.Reason, "Trying to create too many buckets")
}

// FuzzAggregations checks that no aggregation request panics a shard or
// the coordinating node: it is refused with a 4xx, or collected, its
// partials survive JSON, and it reduces and renders (or is refused at
// rendering, for too many buckets, with a 4xx).
func FuzzAggregations(f *testing.F) {
	for _, s := range []string{
		`{"t":{"terms":{"field":"tag","order":[{"m.max":"desc"},{"_key":"asc"}],"missing":"z"},"aggs":{"m":{"stats":{"field":"n"}},"h":{"top_hits":{"size":1,"sort":["n"]}}}}}`,
		`{"h":{"histogram":{"field":"price","interval":7.5,"offset":1,"min_doc_count":0,"extended_bounds":{"min":-10,"max":300}},"aggs":{"c":{"cardinality":{"field":"ip"}}}}}`,
		`{"d":{"date_histogram":{"field":"day","calendar_interval":"week","time_zone":"+05:30","format":"yyyy-MM-dd"},"aggs":{"p":{"percentiles":{"field":"n","percents":[1,50]}}}}}`,
		`{"f":{"filters":{"filters":{"a":{"term":{"tag":"a"}},"b":{"match":{"body":"fox"}}},"other_bucket_key":"rest"},"aggs":{"x":{"extended_stats":{"field":"price"}}}}}`,
		`{"c":{"composite":{"size":2,"after":{"k":"a","n":1},"sources":[{"k":{"terms":{"field":"tag"}}},{"n":{"histogram":{"field":"n","interval":50,"missing_bucket":true}}}]}}}`,
		`{"r":{"date_range":{"field":"day","ranges":[{"to":"now"},{"from":"2024-01-01||/M"}]}},"m":{"missing":{"field":"n"},"aggs":{"v":{"value_count":{"field":"tag"}}}}}`,
	} {
		f.Add(s)
	}
	shards, fields := aggShards(f, 2, aggDocs)
	f.Fuzz(func(t *testing.T, aggs string) {
		s, err := esdsl.ParseSearch([]byte(`{"size":0,"aggs":`+aggs+`}`), nil, fields)
		if err != nil {
			var e *esdsl.Error
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, e, esdsl.ErrInvalidRequest, "%v", err)
			return
		}
		var parts []esdsl.AggPartials
		for k, sh := range shards {
			ac := s.AggCollector("i", k)
			var c index.Collector
			if ac != nil {
				c = ac
			}
			_, err := sh.SearchCollect(context.Background(), s.Request, c, nil)
			require.NoError(t, err, aggs)
			if ac == nil {
				return
			}
			raw, err := json.Marshal(ac.Partials())
			require.NoError(t, err, aggs)
			var p esdsl.AggPartials
			require.NoError(t, json.Unmarshal(raw, &p))
			parts = append(parts, p)
		}
		if _, err := s.RenderAggs(s.ReduceAggs(parts)); err != nil {
			var e *esdsl.Error
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, e, esdsl.ErrInvalidRequest)
		}
	})
}

// TestTermsPartitionsLikeElasticsearch: a partitioned include puts each
// term in the partition Elasticsearch does (its 20_terms.yml answers:
// "abc" and 1234 in partition 1 of 2, "bcd" and 5678 in partition 0), and
// the partitions split the terms without overlap.
func TestTermsPartitionsLikeElasticsearch(t *testing.T) {
	shards, fields := aggShards(t, 2, []string{`{"tag":"abc","n":1234,"price":1.5}`, `{"tag":"bcd","n":5678,"price":2.5}`, `{"tag":"abc","n":1234,"price":3.5}`})
	keys := func(field string, part int) []any {
		got := aggSearch(t, shards, fields, fmt.Sprintf(`{"size":0,"aggs":{"a":{"terms":{"field":%q,"include":{"partition":%d,"num_partitions":2}}}}}`, field, part))
		var out []any
		for _, b := range got["a"].(map[string]any)["buckets"].([]any) {
			out = append(out, b.(map[string]any)["key"])
		}
		return out
	}
	require.Equal(t, []any{"bcd"}, keys("tag", 0))
	require.Equal(t, []any{"abc"}, keys("tag", 1))
	require.Equal(t, []any{float64(5678)}, keys("n", 0))
	require.Equal(t, []any{float64(1234)}, keys("n", 1))
	require.ElementsMatch(t, []any{1.5, 2.5, 3.5}, append(keys("price", 0), keys("price", 1)...))

	for _, bad := range []string{
		`{"terms":{"field":"tag","include":{"partition":2,"num_partitions":2}}}`,
		`{"terms":{"field":"tag","include":{"partition":0}}}`,
		`{"terms":{"field":"tag","include":{"partition":0,"num_partitions":0}}}`,
		`{"terms":{"field":"tag","include":{"partition":0,"num_partitions":2,"seed":1}}}`,
		`{"terms":{"field":"tag","exclude":{"partition":0,"num_partitions":2}}}`,
		`{"terms":{"field":"ip","include":{"partition":0,"num_partitions":2}}}`,
	} {
		_, err := esdsl.ParseSearch([]byte(`{"aggs":{"a":`+bad+`}}`), nil, fields)
		require.Error(t, err, bad)
	}
}

// TestHistogramsOfRanges: a document falls in every bucket its range
// overlaps (Elasticsearch's 10_histogram.yml and 360_date_histogram.yml),
// clipped by hard_bounds; several ranges in one document are refused
// rather than counted wrongly; other aggregations refuse range fields.
func TestHistogramsOfRanges(t *testing.T) {
	const mapping = `{"properties":{"r":{"type":"long_range"},"d":{"type":"date_range"}}}`
	shards, fields := aggShardsOf(t, 2, mapping, []string{
		`{"r":{"lte":10},"d":{"gte":"2016-01-01","lt":"2016-01-02"}}`,
		`{"r":{"gte":15},"d":{"gte":"2016-01-02","lt":"2016-01-03"}}`,
		`{"r":{"gte":3,"lt":5},"d":{"gte":"2016-02-01","lt":"2016-03-02"}}`,
	})
	counts := func(agg string) map[string]float64 {
		got := aggSearch(t, shards, fields, `{"size":0,"aggs":{"a":`+agg+`}}`)
		out := map[string]float64{}
		for _, b := range got["a"].(map[string]any)["buckets"].([]any) {
			m := b.(map[string]any)
			k := fmt.Sprint(m["key"])
			if s, ok := m["key_as_string"]; ok {
				k = s.(string)
			}
			out[k] = m["doc_count"].(float64)
		}
		return out
	}
	h := counts(`{"histogram":{"field":"r","interval":5,"hard_bounds":{"min":0,"max":20}}}`)
	require.Equal(t, map[string]float64{"0": 2, "5": 1, "10": 1, "15": 1, "20": 1}, h)
	d := counts(`{"date_histogram":{"field":"d","calendar_interval":"month"}}`)
	require.Equal(t, map[string]float64{"2016-01-01T00:00:00.000Z": 2, "2016-02-01T00:00:00.000Z": 1, "2016-03-01T00:00:00.000Z": 1}, d)

	for _, bad := range []string{`{"terms":{"field":"r"}}`, `{"avg":{"field":"d"}}`} {
		_, err := esdsl.ParseSearch([]byte(`{"aggs":{"a":`+bad+`}}`), nil, fields)
		require.Error(t, err, bad)
	}
	multi, mfields := aggShardsOf(t, 1, mapping, []string{`{"r":[{"gte":1,"lte":2},{"gte":8,"lte":9}]}`})
	s, err := esdsl.ParseSearch([]byte(`{"aggs":{"a":{"histogram":{"field":"r","interval":1}}}}`), nil, mfields)
	require.NoError(t, err)
	_, err = multi[0].SearchCollect(context.Background(), s.Request, s.AggCollector("idx0", 0), nil)
	require.ErrorContains(t, err, "several ranges")
}

// TestTopHitsTiesInIndexingOrder: hits that tie come in the order they
// were indexed (Elasticsearch's document order), also when one batch
// indexed them all.
func TestTopHitsTiesInIndexingOrder(t *testing.T) {
	var docs, want []string
	for k := 0; k < 12; k++ {
		docs = append(docs, `{"tag":"a"}`)
		want = append(want, fmt.Sprint("d", k))
	}
	shards, fields := aggShards(t, 1, docs)
	got := aggSearch(t, shards, fields, `{"size":0,"aggs":{"a":{"top_hits":{"size":12}}}}`)
	var ids []string
	for _, h := range got["a"].(map[string]any)["hits"].(map[string]any)["hits"].([]any) {
		ids = append(ids, h.(map[string]any)["_id"].(string))
	}
	require.Equal(t, want, ids)
}
