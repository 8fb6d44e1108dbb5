package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInfo(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	r := a.do("GET", "/", "", "X-Opaque-Id", "req-42")
	require.Equal(t, 200, r.Status)
	require.Equal(t, "Elasticsearch", r.Header.Get("X-Elastic-Product"))
	require.Equal(t, "req-42", r.Header.Get("X-Opaque-Id"))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	body := r.JSON(t)
	require.Equal(t, "node-1", body["name"])
	require.Equal(t, "test-cluster", body["cluster_name"])
	v, err := a.eng.ClusterView()
	require.NoError(t, err)
	require.NotEmpty(t, v.ClusterUUID)
	require.Equal(t, v.ClusterUUID, body["cluster_uuid"], "the cluster's UUID, set once by its first leader")
	require.Equal(t, "You Know, for Search", body["tagline"])
	require.Equal(t, "default", path(t, body, "version", "build_flavor"))
	require.True(t, strings.HasPrefix(path(t, body, "version", "number").(string), "8."))

	head := a.do("HEAD", "/", "")
	require.Equal(t, 200, head.Status)
	require.Empty(t, head.Body)
}

func TestMediaTypes(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	tests := []struct {
		name        string
		headers     []string
		body        string
		wantStatus  int
		wantType    string // reply Content-Type
		wantErrType string
	}{
		{name: "plain JSON", headers: []string{"Accept", "application/json"}, wantStatus: 200, wantType: "application/json"},
		{name: "compatible-with=8 accept", headers: []string{"Accept", "application/vnd.elasticsearch+json; compatible-with=8"}, wantStatus: 200,
			wantType: "application/vnd.elasticsearch+json;compatible-with=8"},
		{name: "compatible-with=9 content type with body", body: `{"query":{"match_all":{}}}`,
			headers:    []string{"Content-Type", "application/vnd.elasticsearch+json; compatible-with=9", "Accept", "application/vnd.elasticsearch+json; compatible-with=9"},
			wantStatus: 200, wantType: "application/vnd.elasticsearch+json;compatible-with=9"},
		{name: "compatible-with=7 is accepted, as Elasticsearch 8.19 accepts it", headers: []string{"Accept", "application/vnd.elasticsearch+json; compatible-with=7"},
			wantStatus: 200, wantType: "application/vnd.elasticsearch+json;compatible-with=7"},
		{name: "compatible-with=6 is refused", headers: []string{"Accept", "application/vnd.elasticsearch+json; compatible-with=6"}, wantStatus: 400,
			wantErrType: "media_type_header_exception"},
		{name: "form body is refused", body: "a=b", headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, wantStatus: 406,
			wantErrType: "media_type_header_exception"},
		{name: "garbled media type", headers: []string{"Content-Type", "application/json; ===="}, body: "{}", wantStatus: 400,
			wantErrType: "media_type_header_exception"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/_search", tc.body, tc.headers...)
			if tc.body == "" {
				r = a.do("GET", "/", "", tc.headers...)
			}
			require.Equal(t, tc.wantStatus, r.Status, "%s", r.Body)
			require.Equal(t, "Elasticsearch", r.Header.Get("X-Elastic-Product"))
			if tc.wantType != "" {
				require.Equal(t, tc.wantType, r.Header.Get("Content-Type"))
			}
			if tc.wantErrType != "" {
				require.Equal(t, tc.wantErrType, errorType(t, r))
			}
		})
	}
}

func TestNDJSONMediaTypesOnBulk(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	for _, ct := range []string{"application/x-ndjson", "application/vnd.elasticsearch+x-ndjson; compatible-with=8"} {
		body := a.must(200, "POST", "/nd/_bulk", "{\"index\":{}}\n{\"a\":1}\n", "Content-Type", ct)
		require.Equal(t, false, body["errors"])
	}
}

func TestIndexLifecycle(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	tests := []struct {
		name       string
		index      string
		body       string
		wantShards string
		wantReps   string
	}{
		{name: "no body", index: "plain", wantShards: "1", wantReps: "1"},
		{name: "flat settings", index: "flat", body: `{"settings":{"number_of_shards":3,"number_of_replicas":0}}`, wantShards: "3", wantReps: "0"},
		{name: "nested index settings", index: "nested", body: `{"settings":{"index":{"number_of_shards":"2"}}}`, wantShards: "2", wantReps: "1"},
		{name: "dotted settings and mappings", index: "dotted",
			body:       `{"settings":{"index.number_of_shards":4,"index.number_of_replicas":"0"},"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"long"}}}}`,
			wantShards: "4", wantReps: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			created := a.must(200, "PUT", "/"+tc.index, tc.body)
			require.Equal(t, true, created["acknowledged"])
			require.Equal(t, tc.index, created["index"])
			got := a.must(200, "GET", "/"+tc.index, "")
			require.Equal(t, tc.wantShards, path(t, got, tc.index, "settings", "index", "number_of_shards"))
			require.Equal(t, tc.wantReps, path(t, got, tc.index, "settings", "index", "number_of_replicas"))
			require.NotNil(t, path(t, got, tc.index, "mappings"))
			require.Equal(t, 200, a.do("HEAD", "/"+tc.index, "").Status)
		})
	}
	got := a.must(200, "GET", "/dotted/_mapping", "")
	require.Equal(t, "long", path(t, got, "dotted", "mappings", "properties", "n", "type"))
	all := a.must(200, "GET", "/_settings", "")
	require.Len(t, all, 4)

	errs := []struct {
		name, method, path, body string
		status                   int
		errType                  string
	}{
		{"exists", "PUT", "/plain", "", 400, "resource_already_exists_exception"},
		{"invalid name", "PUT", "/UPPER", "", 400, "invalid_index_name_exception"},
		{"unknown setting", "PUT", "/x1", `{"settings":{"number_of_shard":1}}`, 400, "illegal_argument_exception"},
		{"zero shards", "PUT", "/x2", `{"settings":{"number_of_shards":0}}`, 400, "illegal_argument_exception"},
		{"unknown body key", "PUT", "/x3", `{"setting":{}}`, 400, "x_content_parse_exception"},
		{"malformed body", "PUT", "/x4", `{"settings":`, 400, "x_content_parse_exception"},
		{"bad mapping type", "PUT", "/x5", `{"mappings":{"properties":{"a":{"type":"nope"}}}}`, 400, "mapper_parsing_exception"},
		{"alias named as an index", "PUT", "/x6", `{"aliases":{"plain":{}}}`, 400, "illegal_argument_exception"},
		{"alias filter that is no query", "PUT", "/x7", `{"aliases":{"a":{"filter":{"nope":{}}}}}`, 400, "illegal_argument_exception"},
		{"get missing", "GET", "/missing", "", 404, "index_not_found_exception"},
		{"delete missing", "DELETE", "/missing", "", 404, "index_not_found_exception"},
		{"delete wildcard", "DELETE", "/pl*", "", 400, "illegal_argument_exception"},
		{"mapping conflict", "PUT", "/dotted/_mapping", `{"properties":{"n":{"type":"keyword"}}}`, 400, "illegal_argument_exception"},
		{"shards are fixed", "PUT", "/plain/_settings", `{"index":{"number_of_shards":2}}`, 400, "illegal_argument_exception"},
		{"unknown parameter", "GET", "/plain?colour=red", "", 400, "illegal_argument_exception"},
	}
	for _, tc := range errs {
		t.Run("error "+tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			require.Equal(t, tc.errType, errorType(t, r))
		})
	}
	require.Equal(t, 404, a.do("HEAD", "/missing", "").Status)

	a.must(200, "PUT", "/dotted/_mapping", `{"properties":{"extra":{"type":"keyword"}}}`)
	got = a.must(200, "GET", "/dotted/_mapping", "")
	require.Equal(t, "keyword", path(t, got, "dotted", "mappings", "properties", "extra", "type"))

	a.must(200, "PUT", "/plain/_settings", `{"index":{"number_of_replicas":0}}`)
	got = a.must(200, "GET", "/plain/_settings", "")
	require.Equal(t, "0", path(t, got, "plain", "settings", "index", "number_of_replicas"))

	require.Equal(t, true, a.must(200, "DELETE", "/plain", "")["acknowledged"])
	require.Equal(t, 404, a.do("GET", "/plain", "").Status)
}

func TestDocuments(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/docs", `{"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"long"}}}}`)

	r := a.must(201, "PUT", "/docs/_doc/1", `{"title":"first","n":1}`)
	require.Equal(t, "created", r["result"])
	require.Equal(t, "docs", r["_index"])
	require.Equal(t, "1", r["_id"])
	require.EqualValues(t, 1, r["_version"])
	require.NotNil(t, r["_seq_no"])
	require.NotNil(t, r["_shards"])

	r = a.must(200, "POST", "/docs/_doc/1?refresh=true", `{"title":"first again","n":2}`)
	require.Equal(t, "updated", r["result"])
	require.EqualValues(t, 2, r["_version"])

	gen := a.do("POST", "/docs/_doc?refresh=wait_for", `{"title":"generated"}`)
	require.Equal(t, 201, gen.Status, "%s", gen.Body)
	genID := gen.JSON(t)["_id"].(string)
	require.NotEmpty(t, genID)
	require.Equal(t, "/docs/_doc/"+genID, gen.Header.Get("Location"))

	got := a.must(200, "GET", "/docs/_doc/1", "")
	require.Equal(t, true, got["found"])
	require.Equal(t, "first again", path(t, got, "_source", "title"))
	got = a.must(200, "GET", "/docs/_doc/1?_source=false", "")
	require.NotContains(t, got, "_source")
	require.Equal(t, 200, a.do("HEAD", "/docs/_doc/"+genID, "").Status)
	src := a.do("GET", "/docs/_source/1", "")
	require.Equal(t, 200, src.Status)
	require.JSONEq(t, `{"title":"first again","n":2}`, string(src.Body))

	missing := a.must(404, "GET", "/docs/_doc/nope", "")
	require.Equal(t, false, missing["found"])
	require.Equal(t, 404, a.do("HEAD", "/docs/_doc/nope", "").Status)
	require.Equal(t, "resource_not_found_exception", errorType(t, a.do("GET", "/docs/_source/nope", "")))

	r = a.must(200, "POST", "/docs/_update/1", `{"doc":{"n":3}}`)
	require.Equal(t, "updated", r["result"])
	got = a.must(200, "GET", "/docs/_doc/1", "")
	require.Equal(t, "first again", path(t, got, "_source", "title"))
	require.EqualValues(t, 3, path(t, got, "_source", "n"))
	r = a.must(201, "POST", "/docs/_update/up", `{"doc":{"title":"upserted"},"doc_as_upsert":true}`)
	require.Equal(t, "created", r["result"])
	a.must(201, "POST", "/docs/_update/up2", `{"doc":{"title":"x"},"upsert":{"title":"from upsert"}}`)
	got = a.must(200, "GET", "/docs/_doc/up2", "")
	require.Equal(t, "from upsert", path(t, got, "_source", "title"))

	r = a.must(200, "DELETE", "/docs/_doc/up", "")
	require.Equal(t, "deleted", r["result"])
	r = a.must(404, "DELETE", "/docs/_doc/up", "")
	require.Equal(t, "not_found", r["result"])

	errs := []struct {
		name, method, path, body string
		status                   int
		errType                  string
	}{
		{"create existing by op_type", "PUT", "/docs/_doc/1?op_type=create", `{"title":"dup"}`, 409, "version_conflict_engine_exception"},
		{"create existing by _create", "PUT", "/docs/_create/1", `{"title":"dup"}`, 409, "version_conflict_engine_exception"},
		{"bad op_type", "PUT", "/docs/_doc/9?op_type=upsert", `{}`, 400, "illegal_argument_exception"},
		{"document not JSON", "PUT", "/docs/_doc/2", `{"title":`, 400, "document_parsing_exception"},
		{"document not an object", "PUT", "/docs/_doc/2", `[1]`, 400, "document_parsing_exception"},
		{"value of the wrong type", "PUT", "/docs/_doc/2", `{"n":"not a number"}`, 400, "document_parsing_exception"},
		{"update missing document", "POST", "/docs/_update/none", `{"doc":{"n":1}}`, 404, "document_missing_exception"},
		{"scripted update", "POST", "/docs/_update/1", `{"script":"ctx._source.n++"}`, 400, "illegal_argument_exception"},
		{"update unknown key", "POST", "/docs/_update/1", `{"doc":{},"colour":1}`, 400, "x_content_parse_exception"},
		{"get from missing index", "GET", "/none/_doc/1", "", 404, "index_not_found_exception"},
		{"delete from missing index", "DELETE", "/none/_doc/1", "", 404, "index_not_found_exception"},
		{"bad refresh", "PUT", "/docs/_doc/3?refresh=soon", `{}`, 400, "illegal_argument_exception"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			require.Equal(t, tc.errType, errorType(t, r))
		})
	}
	// Writing to a missing index creates it, as Elasticsearch does.
	a.must(201, "PUT", "/auto/_doc/1", `{"a":"b"}`)
	a.must(200, "GET", "/auto", "")
}

func TestBulk(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/b", `{"mappings":{"properties":{"n":{"type":"long"}}}}`)
	body := strings.Join([]string{
		`{"index":{"_index":"b","_id":"1"}}`, `{"n":1,"t":"one"}`,
		`{"create":{"_index":"b","_id":"2"}}`, `{"n":2,"t":"two"}`,
		`{"create":{"_index":"b","_id":"1"}}`, `{"n":9}`,
		`{"index":{"_index":"b","_id":"3"}}`, `{"n":"three"}`,
		`{"index":{"_index":"b","_id":"4"}}`, `{broken`,
		`{"update":{"_index":"b","_id":"2"}}`, `{"doc":{"t":"zwei"}}`,
		`{"update":{"_index":"b","_id":"404"}}`, `{"doc":{"t":"x"}}`,
		`{"delete":{"_index":"b","_id":"1"}}`,
		`{"delete":{"_index":"b","_id":"404"}}`,
		`{"index":{"_index":"b","_id":"5","if_seq_no":1}}`, `{"n":5}`,
		`{"index":{}}`, `{"n":6}`,
	}, "\n") + "\n"
	r := a.do("POST", "/b/_bulk?refresh=true", body, "Content-Type", "application/x-ndjson")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	reply := r.JSON(t)
	require.Equal(t, true, reply["errors"])
	require.IsType(t, float64(0), reply["took"])
	want := []struct {
		action string
		status float64
		result string // "" for errors
		errTyp string
	}{
		{"index", 201, "created", ""},
		{"create", 201, "created", ""},
		{"create", 409, "", "version_conflict_engine_exception"},
		{"index", 400, "", "document_parsing_exception"},
		{"index", 400, "", "document_parsing_exception"},
		{"update", 200, "updated", ""},
		{"update", 404, "", "document_missing_exception"},
		{"delete", 200, "deleted", ""},
		{"delete", 404, "not_found", ""},
		{"index", 409, "", "version_conflict_engine_exception"}, // if_seq_no on a document that does not exist
		{"index", 201, "created", ""},
	}
	items := reply["items"].([]any)
	require.Len(t, items, len(want))
	for i, w := range want {
		item := path(t, items[i], w.action).(map[string]any)
		require.Equal(t, w.status, item["status"], "item %d: %v", i, item)
		require.Equal(t, "b", item["_index"], "item %d", i)
		if w.errTyp != "" {
			require.Equal(t, w.errTyp, path(t, item, "error", "type"), "item %d: %v", i, item)
			require.NotEmpty(t, path(t, item, "error", "reason"))
			continue
		}
		if w.result != "" {
			require.Equal(t, w.result, item["result"], "item %d: %v", i, item)
		}
	}
	got := a.must(200, "GET", "/b/_doc/2", "")
	require.Equal(t, "zwei", path(t, got, "_source", "t"))
	require.Equal(t, 404, a.do("GET", "/b/_doc/1", "").Status)
	count := a.must(200, "GET", "/b/_count", "")
	require.EqualValues(t, 2, count["count"])

	// A line that is not an action fails the whole request, like Elasticsearch.
	for name, bad := range map[string]string{
		"not JSON":       "{\"index\":{\"_index\":\"b\"}}\n{}\nnonsense\n",
		"unknown action": "{\"insert\":{\"_index\":\"b\"}}\n{}\n",
		"missing source": "{\"index\":{\"_index\":\"b\"}}\n",
		"no index":       "{\"index\":{}}\n{}\n",
		"empty":          "\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := "/_bulk"
			r := a.do("POST", path, bad, "Content-Type", "application/x-ndjson")
			require.Equal(t, 400, r.Status, "%s", r.Body)
			errorType(t, r)
		})
	}
	count = a.must(200, "GET", "/b/_count", "")
	require.EqualValues(t, 2, count["count"], "a rejected bulk must not write anything")
}

func TestLimitsAndRoutes(t *testing.T) {
	cfg := apiConfig()
	cfg.MaxBodyBytes = 2048
	a := newTestAPI(t, cfg)
	big := fmt.Sprintf(`{"index":{"_index":"l"}}`+"\n"+`{"pad":"%s"}`+"\n", strings.Repeat("x", 4096))
	r := a.do("POST", "/_bulk", big, "Content-Type", "application/x-ndjson")
	require.Equal(t, 413, r.Status)
	require.Equal(t, "content_too_long_exception", errorType(t, r))

	// A body without Content-Length (chunked) is cut off at the limit too.
	req, err := http.NewRequest("POST", a.srv.URL+"/l/_doc", struct{ *strings.Reader }{strings.NewReader(`{"pad":"` + strings.Repeat("y", 4096) + `"}`)})
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 413, resp.StatusCode)
	require.Equal(t, 404, a.do("GET", "/l", "").Status, "an oversize write must not create anything")

	r = a.do("GET", "/a/b/c/d", "")
	require.Equal(t, 400, r.Status)
	require.Equal(t, "no_handler_found", errorType(t, r))
	r = a.do("DELETE", "/_cat/indices", "")
	require.Equal(t, 405, r.Status)
	require.Equal(t, "method_not_allowed", errorType(t, r))
	require.Equal(t, 400, a.do("GET", "/debug/pprof/", "").Status, "pprof is off unless enabled")
}

func TestPprofWhenEnabled(t *testing.T) {
	cfg := apiConfig()
	cfg.EnablePprof = true
	a := newTestAPI(t, cfg)
	r := a.do("GET", "/debug/pprof/cmdline", "")
	require.Equal(t, 200, r.Status)
}

// TestConditionalWrites: if_seq_no/if_primary_term on a single-document
// write succeed against the stored document's and conflict (409) otherwise.
func TestConditionalWrites(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	r := a.do("PUT", "/c/_doc/1", `{"n":1}`, "Content-Type", "application/json")
	require.Equal(t, 201, r.Status, "%s", r.Body)
	first := r.JSON(t)
	seq, term := int(first["_seq_no"].(float64)), int(first["_primary_term"].(float64))
	r = a.do("PUT", fmt.Sprintf("/c/_doc/1?if_seq_no=%d&if_primary_term=%d", seq+1, term), `{"n":2}`, "Content-Type", "application/json")
	require.Equal(t, 409, r.Status, "%s", r.Body)
	require.Equal(t, "version_conflict_engine_exception", path(t, r.JSON(t), "error", "type"))
	r = a.do("PUT", fmt.Sprintf("/c/_doc/1?if_seq_no=%d&if_primary_term=%d", seq, term), `{"n":3}`, "Content-Type", "application/json")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = a.do("DELETE", fmt.Sprintf("/c/_doc/1?if_seq_no=%d", seq), "")
	require.Equal(t, 409, r.Status, "the document moved on: %s", r.Body)
	r = a.do("PUT", "/c/_doc/1?if_seq_no=x", `{}`, "Content-Type", "application/json")
	require.Equal(t, 400, r.Status)
}
