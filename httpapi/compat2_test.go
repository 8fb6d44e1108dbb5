package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Elasticsearch behaviours added for issue 11 (phase 2), each checked over
// HTTP against a real engine.

func TestIndicesOptionsOnSearchAndCount(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(201, "PUT", "/logs-1/_doc/1?refresh=true", `{"m":"x"}`)
	for _, ep := range []string{"_search", "_count"} {
		t.Run(ep, func(t *testing.T) {
			r := a.do("GET", "/nope/"+ep, "")
			require.Equal(t, 404, r.Status)
			r = a.do("GET", "/nope,logs-1/"+ep+"?ignore_unavailable=true", "")
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, 404, a.do("GET", "/none-*/"+ep+"?allow_no_indices=false", "").Status)
			require.Equal(t, 200, a.do("GET", "/none-*/"+ep, "").Status)
			require.Equal(t, 400, a.do("GET", "/logs-*/"+ep+"?expand_wildcards=sideways", "").Status)
		})
	}
	count := func(q string) float64 { return a.must(200, "GET", "/logs-*/_count"+q, "")["count"].(float64) }
	require.Equal(t, 1.0, count(""))
	require.Equal(t, 1.0, count("?expand_wildcards=open"))
	require.Equal(t, 0.0, count("?expand_wildcards=none"), "wildcards expand to nothing")
	r := a.must(200, "GET", "/nope/_search?ignore_unavailable=true&rest_total_hits_as_int=true", "")
	require.Equal(t, 0.0, r["hits"].(map[string]any)["total"])
}

func TestWriteRepliesAsElasticsearch(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	r := a.must(201, "PUT", "/w/_doc/1?refresh=true", `{"n":1,"tags":["a"]}`)
	require.Equal(t, true, r["forced_refresh"])
	r = a.must(201, "PUT", "/w/_doc/2", `{"n":2}`)
	require.NotContains(t, r, "forced_refresh")
	b := a.must(200, "POST", "/_bulk?refresh=true", "{\"index\":{\"_index\":\"w\",\"_id\":\"3\"}}\n{\"n\":3}\n")
	require.Equal(t, true, b["items"].([]any)[0].(map[string]any)["index"].(map[string]any)["forced_refresh"])

	// _source on an update returns the document after it.
	r = a.must(200, "POST", "/w/_update/1?_source=true", `{"doc":{"n":10}}`)
	require.Equal(t, map[string]any{"n": 10.0, "tags": []any{"a"}}, r["get"].(map[string]any)["_source"])
	require.Equal(t, true, r["get"].(map[string]any)["found"])
	r = a.must(200, "POST", "/w/_update/1", `{"doc":{"n":11},"_source":["tags"]}`)
	require.Equal(t, map[string]any{"tags": []any{"a"}}, r["get"].(map[string]any)["_source"])
	r = a.must(200, "POST", "/w/_update/1", `{"doc":{"n":12}}`)
	require.NotContains(t, r, "get", "no _source asked, no get")
	b = a.must(200, "POST", "/_bulk", "{\"update\":{\"_index\":\"w\",\"_id\":\"1\"}}\n{\"doc\":{\"n\":1},\"_source\":true}\n")
	require.Equal(t, true, b["errors"], "bulk updates do not return sources yet, and say so")
}

func TestCatCountAndColumnAliases(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(201, "PUT", "/c1/_doc/1?refresh=true", `{"m":"x"}`)
	a.must(201, "PUT", "/c2/_doc/1?refresh=true", `{"m":"x"}`)
	a.must(201, "PUT", "/c2/_doc/2?refresh=true", `{"m":"x"}`)
	r := a.do("GET", "/_cat/count?h=count", "")
	require.Equal(t, "3\n", string(r.Body))
	r = a.do("GET", "/_cat/count/c2?v=true", "")
	lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, []string{"epoch", "timestamp", "count"}, strings.Fields(lines[0]))
	require.Equal(t, "2", strings.Fields(lines[1])[2])
	r = a.do("GET", "/_cat/indices/c1?h=i,dc,cd,cds&v=true", "")
	lines = strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	require.Equal(t, []string{"i", "dc", "cd", "cds"}, strings.Fields(lines[0]))
	cells := strings.Fields(lines[1])
	require.Equal(t, "c1", cells[0])
	require.Equal(t, "1", cells[1])
	require.Regexp(t, `^\d{13}$`, cells[2])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, cells[3])
	require.NotContains(t, string(a.do("GET", "/_cat/indices?v=true", "").Body), "creation.date", "not a default column")
	require.Contains(t, string(a.do("GET", "/_cat/count?help=true", "").Body), "count")
}

func TestAnalyzeFieldCapsValidateExplain(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/ix", `{"mappings":{"properties":{"title":{"type":"text","fields":{"raw":{"type":"keyword"}}},
		"n":{"type":"long"},"obj":{"properties":{"k":{"type":"keyword","index":false}}}}}}`)
	a.must(200, "PUT", "/iy", `{"mappings":{"properties":{"n":{"type":"double"},"title":{"type":"text"}}}}`)
	a.must(201, "PUT", "/ix/_doc/1?refresh=true", `{"title":"Quick Brown Fox","n":5}`)

	t.Run("_analyze", func(t *testing.T) {
		r := a.must(200, "POST", "/_analyze", `{"analyzer":"standard","text":"The Quick 42"}`)
		require.Equal(t, []any{
			map[string]any{"token": "the", "start_offset": 0.0, "end_offset": 3.0, "type": "<ALPHANUM>", "position": 0.0},
			map[string]any{"token": "quick", "start_offset": 4.0, "end_offset": 9.0, "type": "<ALPHANUM>", "position": 1.0},
			map[string]any{"token": "42", "start_offset": 10.0, "end_offset": 12.0, "type": "<NUM>", "position": 2.0},
		}, r["tokens"])
		r = a.must(200, "POST", "/ix/_analyze", `{"field":"title.raw","text":"Quick Brown"}`)
		require.Equal(t, "Quick Brown", r["tokens"].([]any)[0].(map[string]any)["token"])
		require.Equal(t, 400, a.do("POST", "/_analyze", `{"tokenizer":"whitespace","text":"a"}`).Status)
		require.Equal(t, 400, a.do("POST", "/_analyze", `{"analyzer":"nope","text":"a"}`).Status)
	})
	t.Run("_field_caps", func(t *testing.T) {
		r := a.must(200, "GET", "/ix,iy/_field_caps?fields=n,title*,obj*", "")
		require.Equal(t, []any{"ix", "iy"}, r["indices"])
		f := r["fields"].(map[string]any)
		require.Equal(t, map[string]any{"type": "long", "metadata_field": false, "searchable": true, "aggregatable": true, "indices": []any{"ix"}}, f["n"].(map[string]any)["long"])
		require.Equal(t, map[string]any{"type": "double", "metadata_field": false, "searchable": true, "aggregatable": true, "indices": []any{"iy"}}, f["n"].(map[string]any)["double"])
		require.Equal(t, map[string]any{"type": "text", "metadata_field": false, "searchable": true, "aggregatable": false}, f["title"].(map[string]any)["text"])
		require.Equal(t, true, f["title.raw"].(map[string]any)["keyword"].(map[string]any)["aggregatable"])
		require.Equal(t, false, f["obj.k"].(map[string]any)["keyword"].(map[string]any)["searchable"])
		require.Equal(t, "object", f["obj"].(map[string]any)["object"].(map[string]any)["type"])
		require.Equal(t, 400, a.do("GET", "/ix/_field_caps", "").Status, "fields are required")
	})
	t.Run("_validate/query", func(t *testing.T) {
		r := a.must(200, "POST", "/ix/_validate/query", `{"query":{"match":{"title":"fox"}}}`)
		require.Equal(t, true, r["valid"])
		r = a.must(200, "POST", "/ix/_validate/query", `{"query":{"nope":{}}}`)
		require.Equal(t, false, r["valid"])
		require.NotContains(t, r, "error")
		r = a.must(200, "POST", "/ix/_validate/query?explain=true", `{"query":{"nope":{}}}`)
		require.Contains(t, r["error"], "unknown query [nope]")
		r = a.must(200, "POST", "/ix/_validate/query?explain=true", `{"match_all":{}}`)
		require.Equal(t, "org.elasticsearch.common.ParsingException: request does not support [match_all]", r["error"])
		r = a.must(200, "GET", "/ix/_validate/query?explain=true", "")
		require.Equal(t, "*:*", r["explanations"].([]any)[0].(map[string]any)["explanation"])
	})
	t.Run("_explain", func(t *testing.T) {
		r := a.must(200, "POST", "/ix/_explain/1", `{"query":{"match":{"title":"fox"}}}`)
		require.Equal(t, true, r["matched"])
		require.Greater(t, r["explanation"].(map[string]any)["value"], 0.0)
		r = a.must(200, "POST", "/ix/_explain/1", `{"query":{"match":{"title":"dog"}}}`)
		require.Equal(t, false, r["matched"])
		require.Equal(t, 404, a.do("POST", "/ix/_explain/2", `{"query":{"match_all":{}}}`).Status)
		require.Equal(t, 400, a.do("POST", "/ix/_explain/1", `{"match_all":{}}`).Status)
		r = a.must(200, "POST", "/ix/_explain/1", `{"query":{"match_all":{}}}`)
		require.Equal(t, 1.0, r["explanation"].(map[string]any)["value"])
	})
}

func TestNamedQueriesAndStoredFieldsOverHTTP(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/nq", `{"settings":{"number_of_shards":3}}`)
	a.must(200, "POST", "/_bulk?refresh=true", "{\"index\":{\"_index\":\"nq\",\"_id\":\"1\"}}\n{\"f\":1}\n{\"index\":{\"_index\":\"nq\",\"_id\":\"2\"}}\n{\"f\":[1,2]}\n")
	r := a.must(200, "POST", "/nq/_search", `{"query":{"bool":{"should":[{"match":{"f":{"query":1,"_name":"one"}}},{"match":{"f":{"query":2,"_name":"two"}}}]}},"sort":["_id"]}`)
	hits := r["hits"].(map[string]any)["hits"].([]any)
	require.Equal(t, []any{"one"}, hits[0].(map[string]any)["matched_queries"])
	require.Equal(t, []any{"one", "two"}, hits[1].(map[string]any)["matched_queries"])
	require.Equal(t, 400, a.do("POST", "/nq/_search?include_named_queries_score=true", `{}`).Status)

	r = a.must(200, "POST", "/nq/_search", `{"stored_fields":["*"],"_source":true,"sort":["_id"]}`)
	h := r["hits"].(map[string]any)["hits"].([]any)[0].(map[string]any)
	require.Equal(t, "1", h["_id"])
	require.Equal(t, map[string]any{"f": 1.0}, h["_source"])
}
