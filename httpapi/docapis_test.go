package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Multi-document APIs (issue 11, phase 3): _mget, _stats,
// _delete_by_query, _update_by_query, _reindex, and hit metadata and
// fields in searches.

func bulkLines(pairs ...string) string { return strings.Join(pairs, "\n") + "\n" }

func TestMget(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/m", `{"settings":{"number_of_shards":3},"mappings":{"properties":{"n":{"type":"long","store":true}}}}`)
	a.must(200, "PUT", "/m/_alias/ma", "")
	a.must(200, "PUT", "/closed", "")
	a.must(200, "POST", "/closed/_close", "")
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		a.must(201, "PUT", "/m/_doc/"+id, `{"n":`+id+`,"s":"x"}`)
	}
	r := a.must(200, "POST", "/_mget", `{"docs":[{"_index":"m","_id":"1"},{"_index":"m","_id":"9"},{"_index":"ma","_id":2,"_source":["n"]},
		{"_index":"nope","_id":"1"},{"_index":"closed","_id":"1"},{"_index":"m","_id":"3","stored_fields":["n"]}]}`)
	docs := r["docs"].([]any)
	require.Len(t, docs, 6)
	d0 := docs[0].(map[string]any)
	require.Equal(t, true, d0["found"])
	require.Equal(t, map[string]any{"n": 1.0, "s": "x"}, d0["_source"])
	require.EqualValues(t, 1, d0["_version"])
	require.Equal(t, map[string]any{"_index": "m", "_id": "9", "found": false}, docs[1])
	require.Equal(t, map[string]any{"n": 2.0}, docs[2].(map[string]any)["_source"], "per-doc _source filter, through an alias")
	require.Equal(t, "m", docs[2].(map[string]any)["_index"])
	require.Equal(t, "index_not_found_exception", path(t, docs[3], "error", "type"))
	require.Equal(t, "index_closed_exception", path(t, docs[4], "error", "type"))
	require.Equal(t, map[string]any{"n": []any{3.0}}, docs[5].(map[string]any)["fields"])
	require.NotContains(t, docs[5], "_source")

	r = a.must(200, "GET", "/m/_mget?_source=false", `{"ids":["4","5"]}`)
	for _, d := range r["docs"].([]any) {
		require.Equal(t, true, d.(map[string]any)["found"])
		require.NotContains(t, d, "_source")
	}
	require.Equal(t, 400, a.do("POST", "/_mget", `{"docs":[{"_id":"1"}]}`).Status, "no index")
	require.Equal(t, 400, a.do("POST", "/_mget", `{}`).Status)
	require.Equal(t, 400, a.do("POST", "/m/_mget", `{"ids":["1"],"colour":"red"}`).Status)
}

func TestIndicesStats(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/st", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	a.must(200, "POST", "/st/_bulk?refresh=true", bulkLines(`{"index":{"_id":"1"}}`, `{"f":1}`, `{"index":{"_id":"2"}}`, `{"f":2}`, `{"delete":{"_id":"2"}}`))
	a.must(200, "GET", "/st/_search", "")
	r := a.must(200, "GET", "/_stats", "")
	require.EqualValues(t, 2, path(t, r, "_shards", "total"))
	require.EqualValues(t, 2, path(t, r, "_shards", "successful"))
	require.EqualValues(t, 1, path(t, r, "indices", "st", "primaries", "docs", "count"))
	require.EqualValues(t, 2, path(t, r, "indices", "st", "total", "indexing", "index_total"))
	require.EqualValues(t, 1, path(t, r, "indices", "st", "total", "indexing", "delete_total"))
	require.EqualValues(t, 1, path(t, r, "indices", "st", "total", "search", "query_total"))
	require.Greater(t, path(t, r, "_all", "total", "store", "size_in_bytes"), 0.0)
	require.Equal(t, "green", path(t, r, "indices", "st", "health"))

	r = a.must(200, "GET", "/st/_stats/docs,fielddata", "")
	section := path(t, r, "indices", "st", "total").(map[string]any)
	require.Len(t, section, 2)
	require.EqualValues(t, 0, path(t, section, "fielddata", "memory_size_in_bytes"))
	r = a.must(200, "GET", "/_stats/store?level=cluster", "")
	require.NotContains(t, r, "indices")
	require.Equal(t, 400, a.do("GET", "/_stats/segments", "").Status, "a metric Weft does not report is refused")
	require.Equal(t, 404, a.do("GET", "/nope/_stats", "").Status)
}

func TestHitVersionsAndFields(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/hv", `{"settings":{"number_of_shards":2},"mappings":{"properties":{"t":{"type":"text","fields":{"k":{"type":"keyword"}}},
		"d":{"type":"date","format":"yyyy-MM-dd"},"n":{"type":"integer","store":true}}}}`)
	a.must(201, "PUT", "/hv/_doc/1", `{"t":"Hello World","d":"2024-03-05","n":"7"}`)
	a.must(200, "PUT", "/hv/_doc/1?refresh=true", `{"t":"Hello World","d":"2024-03-05","n":"7"}`)
	r := a.must(200, "POST", "/hv/_search", `{"version":true,"seq_no_primary_term":true,"fields":["t*","d"],"docvalue_fields":["n"],"stored_fields":["n"],"_source":false}`)
	h := path(t, r, "hits", "hits", 0).(map[string]any)
	got := a.must(200, "GET", "/hv/_doc/1", "")
	require.EqualValues(t, 2, h["_version"])
	require.Equal(t, got["_seq_no"], h["_seq_no"])
	require.Equal(t, got["_primary_term"], h["_primary_term"])
	require.Equal(t, map[string]any{"t": []any{"Hello World"}, "t.k": []any{"Hello World"}, "d": []any{"2024-03-05"}, "n": []any{7.0}}, h["fields"])
	require.NotContains(t, h, "_source")
	require.Equal(t, 400, a.do("POST", "/hv/_search", `{"docvalue_fields":["t"]}`).Status, "text has no doc values")
	require.Equal(t, 400, a.do("POST", "/hv/_search", `{"fields":[{"field":"d","format":"epoch_millis"}]}`).Status)
}

func TestDeleteAndUpdateByQuery(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/q", `{"settings":{"number_of_shards":3},"mappings":{"properties":{"k":{"type":"keyword"}}}}`)
	var lines []string
	for i := 0; i < 25; i++ {
		k := "keep"
		if i%2 == 0 {
			k = "drop"
		}
		lines = append(lines, `{"index":{"_id":"`+strings.Repeat("x", i%3)+string(rune('a'+i))+`"}}`, `{"k":"`+k+`"}`)
	}
	a.must(200, "POST", "/q/_bulk?refresh=true", bulkLines(lines...))

	r := a.must(200, "POST", "/q/_delete_by_query?scroll_size=4&refresh=true", `{"query":{"term":{"k":"drop"}}}`)
	require.EqualValues(t, 13, r["total"])
	require.EqualValues(t, 13, r["deleted"])
	require.EqualValues(t, 4, r["batches"], "13 documents in batches of 4")
	require.Empty(t, r["failures"])
	require.Equal(t, 12.0, a.must(200, "GET", "/q/_count", "")["count"])

	r = a.must(200, "POST", "/q/_delete_by_query?refresh=true&max_docs=5", `{"query":{"match_all":{}}}`)
	require.EqualValues(t, 5, r["deleted"])
	require.Equal(t, 7.0, a.must(200, "GET", "/q/_count", "")["count"])

	// update_by_query indexes documents again: a field mapped since is
	// searchable afterwards.
	a.must(200, "PUT", "/q/_mapping", `{"properties":{"k2":{"type":"keyword"}}}`)
	r = a.must(200, "POST", "/q/_update_by_query?refresh=true", "")
	require.EqualValues(t, 7, r["updated"])
	r = a.must(200, "GET", "/q/_doc/xh", "")
	require.EqualValues(t, 2, r["_version"])

	require.Equal(t, 400, a.do("POST", "/q/_delete_by_query", `{}`).Status, "a query is required")
	require.Equal(t, 400, a.do("POST", "/q/_update_by_query", `{"script":{"source":"ctx._source.n++"}}`).Status)
	require.Equal(t, 400, a.do("POST", "/q/_delete_by_query?wait_for_completion=false", `{"query":{"match_all":{}}}`).Status)
	require.Equal(t, 400, a.do("POST", "/q/_delete_by_query?conflicts=ignore", `{"query":{"match_all":{}}}`).Status)
	require.Equal(t, 404, a.do("POST", "/nope/_delete_by_query", `{"query":{"match_all":{}}}`).Status)
}

func TestReindex(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "POST", "/_bulk?refresh=true", bulkLines(`{"index":{"_index":"src","_id":"1"}}`, `{"a":1,"b":"x"}`,
		`{"index":{"_index":"src","_id":"2"}}`, `{"a":2,"b":"y"}`, `{"index":{"_index":"src","_id":"3"}}`, `{"a":3,"b":"y"}`))
	a.must(200, "PUT", "/src/_doc/1?version=7&version_type=external", `{"a":1,"b":"x"}`)

	r := a.must(200, "POST", "/_reindex?refresh=true", `{"source":{"index":"src","query":{"term":{"b.keyword":"y"}},"_source":["a"]},"dest":{"index":"dst"}}`)
	require.EqualValues(t, 2, r["created"])
	require.Equal(t, map[string]any{"a": 2.0}, a.must(200, "GET", "/dst/_doc/2", "")["_source"])

	r = a.must(200, "POST", "/_reindex?refresh=true", `{"source":{"index":"src"},"dest":{"index":"dst","version_type":"external"},"conflicts":"proceed"}`)
	require.EqualValues(t, 1, r["created"])
	require.EqualValues(t, 0, r["updated"], "external versions: the copies at versions as high are conflicts")
	require.EqualValues(t, 2, r["version_conflicts"])
	require.EqualValues(t, 7, a.must(200, "GET", "/dst/_doc/1", "")["_version"], "the source version is kept")

	r = a.must(200, "POST", "/_reindex", `{"source":{"index":"src"},"dest":{"index":"dst","op_type":"create"},"conflicts":"proceed"}`)
	require.EqualValues(t, 3, r["version_conflicts"])
	rr := a.do("POST", "/_reindex", `{"source":{"index":"src"},"dest":{"index":"dst","op_type":"create"}}`)
	require.Equal(t, 409, rr.Status, "conflicts abort by default")

	for _, bad := range []string{
		`{"source":{"index":"src","remote":{"host":"http://x:9200"}},"dest":{"index":"d"}}`,
		`{"source":{"index":"src"},"dest":{"index":"src"}}`,
		`{"source":{"index":"src"},"dest":{"index":"d"},"script":{"source":"x"}}`,
		`{"source":{"index":"src"},"dest":{"index":"d","op_type":"create","version_type":"external"}}`,
		`{"source":{"index":"src"}}`,
	} {
		r := a.do("POST", "/_reindex", bad)
		require.Equal(t, 400, r.Status, "%s: %s", bad, r.Body)
	}
}
