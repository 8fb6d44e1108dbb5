package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// loadBooks creates two indexes with a few documents each.
func loadBooks(t *testing.T, a *testAPI) {
	t.Helper()
	a.must(200, "PUT", "/books-a", `{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"},"year":{"type":"long"},"tag":{"type":"keyword"}}}}`)
	a.must(200, "PUT", "/books-b", `{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"},"year":{"type":"long"},"tag":{"type":"keyword"}}}}`)
	var b strings.Builder
	for i := range 12 {
		idx := "books-a"
		if i%3 == 0 {
			idx = "books-b"
		}
		fmt.Fprintf(&b, "{\"index\":{\"_index\":%q,\"_id\":\"%d\"}}\n{\"title\":\"the quick fox number %d\",\"year\":%d,\"tag\":\"t%d\"}\n", idx, i, i, 2000+i, i%2)
	}
	r := a.must(200, "POST", "/_bulk?refresh=wait_for", b.String(), "Content-Type", "application/x-ndjson")
	require.Equal(t, false, r["errors"])
}

func hitIDs(t *testing.T, body map[string]any) []string {
	t.Helper()
	var ids []string
	for _, h := range path(t, body, "hits", "hits").([]any) {
		ids = append(ids, h.(map[string]any)["_id"].(string))
	}
	return ids
}

func TestSearchWithoutIndexes(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	for _, p := range []string{"/_search", "/nothing-*/_search", "/_all/_search"} {
		r := a.must(200, "POST", p, `{"query":{"match_all":{}}}`)
		require.EqualValues(t, 0, path(t, r, "hits", "total", "value"), p)
	}
	require.EqualValues(t, 0, a.must(200, "GET", "/_count", "")["count"])
	require.Empty(t, a.must(200, "GET", "/nothing-*", ""))
	require.Equal(t, 404, a.do("HEAD", "/nothing-*", "").Status)
}

func TestSearch(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	loadBooks(t, a)

	r := a.must(200, "POST", "/books-a/_search", `{"query":{"match":{"title":"fox"}},"size":100}`)
	require.EqualValues(t, 8, path(t, r, "hits", "total", "value"))
	require.Len(t, hitIDs(t, r), 8)

	// Several indexes by wildcard, and a body on GET.
	r = a.must(200, "GET", "/books-*/_search", `{"query":{"term":{"tag":"t1"}},"size":100}`)
	require.EqualValues(t, 6, path(t, r, "hits", "total", "value"))
	r = a.must(200, "GET", "/books-a,books-b/_search?q=title:fox&size=0", "")
	require.EqualValues(t, 12, path(t, r, "hits", "total", "value"))
	r = a.must(200, "POST", "/_search", `{"query":{"range":{"year":{"gte":2010}}},"sort":[{"year":"asc"}]}`)
	require.Nil(t, path(t, r, "hits", "max_score"))
	require.Equal(t, []string{"10", "11"}, hitIDs(t, r))
	require.Equal(t, "books-a", path(t, r, "hits", "hits", 0, "_index"))
	require.EqualValues(t, 2010, path(t, r, "hits", "hits", 0, "_source", "year"))

	// Highlight tags reach the client unescaped.
	hl := a.do("POST", "/books-b/_search", `{"query":{"match":{"title":"quick"}},"highlight":{"fields":{"title":{}}},"size":1}`)
	require.Equal(t, 200, hl.Status, "%s", hl.Body)
	require.Contains(t, string(hl.Body), "<em>quick</em>")

	// search_after pages through a sort.
	r = a.must(200, "POST", "/books-*/_search", `{"sort":[{"year":"desc"}],"size":5}`)
	require.Equal(t, []string{"11", "10", "9", "8", "7"}, hitIDs(t, r))
	after, err := json.Marshal(path(t, r, "hits", "hits", 4, "sort"))
	require.NoError(t, err)
	r = a.must(200, "POST", "/books-*/_search", fmt.Sprintf(`{"sort":[{"year":"desc"}],"size":5,"search_after":%s}`, after))
	require.Equal(t, []string{"6", "5", "4", "3", "2"}, hitIDs(t, r))

	// Refresh.
	ref := a.must(200, "POST", "/books-a/_refresh", "")
	require.EqualValues(t, 2, path(t, ref, "_shards", "total"))
	require.EqualValues(t, 2, path(t, ref, "_shards", "successful"))
	ref = a.must(200, "GET", "/_refresh", "")
	require.EqualValues(t, 3, path(t, ref, "_shards", "successful"))
	require.Equal(t, 404, a.do("POST", "/missing/_refresh", "").Status)

	// Count.
	c := a.must(200, "POST", "/books-a/_count", `{"query":{"term":{"tag":"t0"}}}`)
	require.EqualValues(t, 4, c["count"])
	c = a.must(200, "GET", "/_count", "")
	require.EqualValues(t, 12, c["count"])

	// The common parameters work on search endpoints too.
	for _, p := range []string{"/books-a/_search?pretty", "/books-a/_search?pretty=true&human=true&error_trace=false", "/books-a/_count?pretty"} {
		a.must(200, "GET", p, "")
	}

	errs := []struct {
		name, method, path, body string
		status                   int
	}{
		{"unknown parameter", "GET", "/books-a/_search?colour=red", "", 400},
		{"unknown count parameter", "GET", "/books-a/_count?colour=red", "", 400},
		{"unknown query", "POST", "/books-a/_search", `{"query":{"nope":{}}}`, 400},
		{"malformed body", "POST", "/books-a/_search", `{"query":`, 400},
		{"unknown top-level key", "POST", "/books-a/_search", `{"querry":{}}`, 400},
		{"missing index", "POST", "/missing/_search", `{}`, 404},
		{"count with unknown key", "POST", "/books-a/_count", `{"size":1}`, 400},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			errorType(t, r)
		})
	}
}

func TestMsearch(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	loadBooks(t, a)
	body := strings.Join([]string{
		`{"index":"books-a"}`, `{"query":{"match_all":{}},"size":0}`,
		`{}`, `{"query":{"term":{"tag":"t0"}},"size":0}`,
		`{"index":"missing"}`, `{"query":{"match_all":{}}}`,
		`{"index":"books-b"}`, `{"query":{"bogus":{}}}`,
	}, "\n") + "\n"
	r := a.must(200, "POST", "/books-b/_msearch", body, "Content-Type", "application/x-ndjson")
	resps := r["responses"].([]any)
	require.Len(t, resps, 4)
	require.EqualValues(t, 200, path(t, resps[0], "status"))
	require.EqualValues(t, 8, path(t, resps[0], "hits", "total", "value"))
	require.EqualValues(t, 2, path(t, resps[1], "hits", "total", "value"), "the URL's index applies to a header without one")
	require.EqualValues(t, 404, path(t, resps[2], "status"))
	require.Equal(t, "index_not_found_exception", path(t, resps[2], "error", "type"))
	require.EqualValues(t, 400, path(t, resps[3], "status"))
}

func TestScroll(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	loadBooks(t, a)
	r := a.must(200, "POST", "/books-*/_search?scroll=1m", `{"size":5,"sort":["_doc"]}`)
	seen := map[string]bool{}
	for _, id := range hitIDs(t, r) {
		seen[id] = true
	}
	for i := 0; i < 5; i++ {
		id, ok := r["_scroll_id"].(string)
		require.True(t, ok, "no _scroll_id in %v", r)
		if i%2 == 0 {
			r = a.must(200, "POST", "/_search/scroll", fmt.Sprintf(`{"scroll":"1m","scroll_id":%q}`, id))
		} else {
			r = a.must(200, "GET", "/_search/scroll?scroll=1m&scroll_id="+id, "")
		}
		ids := hitIDs(t, r)
		if len(ids) == 0 {
			break
		}
		for _, h := range ids {
			require.False(t, seen[h], "hit %s returned twice", h)
			seen[h] = true
		}
	}
	require.Len(t, seen, 12)

	cleared := a.must(200, "DELETE", "/_search/scroll", fmt.Sprintf(`{"scroll_id":[%q]}`, r["_scroll_id"]))
	require.Equal(t, true, cleared["succeeded"])
	require.EqualValues(t, 1, cleared["num_freed"])

	bad := a.do("POST", "/_search/scroll", `{"scroll_id":"garbage!!"}`)
	require.GreaterOrEqual(t, bad.Status, 400)
	require.Less(t, bad.Status, 500)
	errorType(t, bad)
	require.Equal(t, 404, a.do("DELETE", "/_search/scroll", `{"scroll_id":"garbage!!"}`).Status)
}

func TestClusterEndpoints(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	h := a.must(200, "GET", "/_cluster/health", "")
	require.Equal(t, "green", h["status"])
	require.Equal(t, "test-cluster", h["cluster_name"])
	loadBooks(t, a)
	a.must(200, "PUT", "/replicated", "") // default: 1 replica, never assigned on one node
	h = a.must(200, "GET", "/_cluster/health", "")
	require.Equal(t, "yellow", h["status"])
	require.EqualValues(t, 4, h["active_primary_shards"])
	require.EqualValues(t, 1, h["unassigned_shards"])
	h = a.must(200, "GET", "/_cluster/health/books-*?wait_for_status=green&timeout=1s", "")
	require.Equal(t, "green", h["status"])
	h = a.must(408, "GET", "/_cluster/health?wait_for_status=green&timeout=1s", "")
	require.Equal(t, true, h["timed_out"])
	a.must(200, "GET", "/_cluster/health?wait_for_status=yellow", "")
	require.Equal(t, 404, a.do("GET", "/_cluster/health/missing", "").Status)
	a.must(200, "GET", "/_cluster/health?wait_for_active_shards=4&wait_for_no_relocating_shards=true&wait_for_no_initializing_shards=true", "")
	h = a.must(408, "GET", "/_cluster/health?wait_for_active_shards=all&timeout=300ms", "")
	require.Equal(t, true, h["timed_out"], "a replica is never assigned on one node")
	h = a.must(408, "GET", "/_cluster/health?wait_for_active_shards=5&timeout=300ms", "")
	require.Equal(t, true, h["timed_out"])
	a.must(200, "GET", "/_cluster/health/books-*?wait_for_active_shards=all&timeout=1s", "")
	for _, bad := range []string{"wait_for_active_shards=some", "wait_for_no_relocating_shards=perhaps"} {
		r := a.do("GET", "/_cluster/health?"+bad, "")
		require.Equal(t, 400, r.Status, "%s: %s", bad, r.Body)
	}

	txt := a.do("GET", "/_cat/indices?v&s=index", "")
	require.Equal(t, 200, txt.Status)
	require.True(t, strings.HasPrefix(txt.Header.Get("Content-Type"), "text/plain"))
	lines := strings.Split(strings.TrimSpace(string(txt.Body)), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, []string{"health", "status", "index", "uuid", "pri", "rep", "docs.count", "docs.deleted", "store.size", "pri.store.size", "dataset.size"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"green", "open", "books-a", "2", "0", "8"}, pick(strings.Fields(lines[1]), 0, 1, 2, 4, 5, 6))
	require.Equal(t, []string{"yellow", "open", "replicated"}, strings.Fields(lines[3])[:3])

	var rows []map[string]string
	js := a.do("GET", "/_cat/indices/books-b?format=json&bytes=b", "")
	require.Equal(t, 200, js.Status)
	require.NoError(t, json.Unmarshal(js.Body, &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "4", rows[0]["docs.count"])
	require.Equal(t, "books-b", rows[0]["index"])

	js = a.do("GET", "/_cat/indices?format=json&health=yellow", "")
	require.NoError(t, json.Unmarshal(js.Body, &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "replicated", rows[0]["index"])

	js = a.do("GET", "/_cat/health?format=json", "")
	require.NoError(t, json.Unmarshal(js.Body, &rows))
	require.Equal(t, "yellow", rows[0]["status"])
	require.Equal(t, "test-cluster", rows[0]["cluster"])
	txt = a.do("GET", "/_cat/health?v&h=cluster,status", "")
	require.Equal(t, "cluster      status\ntest-cluster yellow\n", string(txt.Body))
	require.Equal(t, 400, a.do("GET", "/_cat/health?h=nope", "").Status)

	ns := a.must(200, "GET", "/_nodes/stats", "")
	require.EqualValues(t, 1, path(t, ns, "_nodes", "total"))
	require.EqualValues(t, 12, path(t, ns, "nodes", "n1", "indices", "docs", "count"))
	require.Equal(t, "node-1", path(t, ns, "nodes", "n1", "name"))
}

func pick(s []string, idx ...int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = s[j]
	}
	return out
}

func TestMetrics(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	loadBooks(t, a)
	a.must(200, "POST", "/books-a/_search", `{}`)
	r := a.do("GET", "/metrics", "")
	require.Equal(t, 200, r.Status)
	text := string(r.Body)
	require.Contains(t, text, `weft_http_request_duration_seconds_count{code="200",endpoint="POST /{index}/_search"} 1`)
	require.Contains(t, text, `weft_bulk_docs_total{outcome="ok"} 12`)
	require.Contains(t, text, `weft_index_docs{index="books-a"} 8`)
}

// TestSearchFailsOnlyTheIndicesItDoesNotFit: each index parses a search
// against its own mapping, as Elasticsearch's shards do; an index the
// request does not fit fails its shards and the others answer (a 400 only
// when none fits, a 503 when partial results are not allowed).
func TestSearchFailsOnlyTheIndicesItDoesNotFit(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/as_keyword", `{"settings":{"number_of_shards":2},"mappings":{"properties":{"ip":{"type":"keyword"}}}}`)
	a.must(200, "PUT", "/as_ip", `{"mappings":{"properties":{"ip":{"type":"ip"}}}}`)
	a.must(200, "POST", "/_bulk?refresh=true", `{"index":{"_index":"as_keyword"}}
{"ip":"192.168.7.1"}
{"index":{"_index":"as_ip"}}
{"ip":"127.0.0.1"}
{"index":{"_index":"as_ip"}}
{"ip":"192.168.0.1"}
`)
	body := `{"size":0,"aggs":{"t":{"terms":{"field":"ip","value_type":"ip"}}}}`
	r := a.must(200, "POST", "/as_keyword,as_ip/_search", body)
	require.EqualValues(t, 3, path(t, r, "_shards", "total"))
	require.EqualValues(t, 2, path(t, r, "_shards", "failed"))
	require.Equal(t, "as_keyword", path(t, r, "_shards", "failures", 0, "index"))
	require.Equal(t, "illegal_argument_exception", path(t, r, "_shards", "failures", 0, "reason", "type"))
	require.Len(t, path(t, r, "aggregations", "t", "buckets"), 2)
	require.Equal(t, "127.0.0.1", path(t, r, "aggregations", "t", "buckets", 0, "key"))

	require.Equal(t, 503, a.do("POST", "/as_keyword,as_ip/_search?allow_partial_search_results=false", body).Status)
	rr := a.do("POST", "/as_keyword/_search", body)
	require.Equal(t, 400, rr.Status, "%s", rr.Body)
	rr = a.do("POST", "/as_keyword,as_ip/_search", `{"query":{"nonsense":{}}}`)
	require.Equal(t, 400, rr.Status, "a request that fits no index is a 400: %s", rr.Body)
}
