package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileAPI is a test API with index v holding document 1 ({"n":1}),
// refreshed: what every hostile request below must leave as it is.
func hostileAPI(t *testing.T) *testAPI {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/v", `{"settings":{"number_of_replicas":0}}`)
	a.must(201, "PUT", "/v/_doc/1?refresh=true", `{"n":1}`)
	return a
}

// requireIntact requires index v to hold exactly document 1 as it was
// written, and no index but v, nor any alias, to exist.
func (a *testAPI) requireIntact(t *testing.T) {
	t.Helper()
	a.must(200, "POST", "/v/_refresh", "")
	require.Equal(t, float64(1), a.must(200, "GET", "/v/_count", "")["count"])
	got := a.must(200, "GET", "/v/_doc/1", "")
	require.Equal(t, map[string]any{"n": float64(1)}, got["_source"])
	var names []string
	for _, ix := range a.eng.Indices() {
		names = append(names, ix.Name)
	}
	require.Equal(t, []string{"v"}, names)
	st, err := a.eng.ClusterView()
	require.NoError(t, err)
	require.Empty(t, st.Indices["v"].Aliases, "no alias was added")
}

// esError reads an ES error reply: error.type, error.reason and, when
// there is one, error.caused_by's type and reason.
type esError struct {
	Type, Reason             string
	CausedType, CausedReason string
}

func readError(t *testing.T, r reply) esError {
	t.Helper()
	type cause struct {
		Type     string `json:"type"`
		Reason   string `json:"reason"`
		CausedBy *cause `json:"caused_by"`
	}
	var e struct {
		Error struct {
			RootCause []cause `json:"root_cause"`
			cause
		} `json:"error"`
		Status int `json:"status"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &e), "body: %s", r.Body)
	require.Equal(t, r.Status, e.Status, "status in body: %s", r.Body)
	require.NotEmpty(t, e.Error.Type, "body: %s", r.Body)
	require.NotEmpty(t, e.Error.Reason, "body: %s", r.Body)
	out := esError{Type: e.Error.Type, Reason: e.Error.Reason}
	innermost := e.Error.cause
	if c := e.Error.CausedBy; c != nil {
		out.CausedType, out.CausedReason = c.Type, c.Reason
		innermost = *c
	}
	require.Len(t, e.Error.RootCause, 1, "body: %s", r.Body)
	require.Equal(t, innermost.Type, e.Error.RootCause[0].Type, "root_cause is the innermost cause: %s", r.Body)
	return out
}

func TestHostileIDsAndIndexNamesAre400(t *testing.T) {
	a := hostileAPI(t)
	tests := []struct {
		name, method, path, body string
		typ, reason              string
	}{
		{"index a document with NUL in its id", "PUT", "/v/_doc/a%00b", `{"n":2}`,
			"illegal_argument_exception", "id [a\x00b] must not contain control characters: U+0000 at offset 1"},
		{"index a document with a control character in its id", "POST", "/v/_doc/a%1Fb", `{"n":2}`,
			"illegal_argument_exception", "id [a\x1fb] must not contain control characters: U+001F at offset 1"},
		{"index a document with DEL in its id", "PUT", "/v/_doc/%7F", `{"n":2}`,
			"illegal_argument_exception", "id [\x7f] must not contain control characters: U+007F at offset 0"},
		{"index a document with an id not UTF-8", "PUT", "/v/_doc/a%FF", `{"n":2}`,
			"illegal_argument_exception", "id [a\ufffd] must be valid UTF-8: invalid byte 0xff at offset 1"},
		{"a bad id creates no index", "PUT", "/fresh/_doc/a%00b", `{"n":2}`,
			"illegal_argument_exception", "id [a\x00b] must not contain control characters: U+0000 at offset 1"},
		{"create a document with NUL in its id", "PUT", "/v/_create/a%00b", `{"n":2}`,
			"illegal_argument_exception", "id [a\x00b] must not contain control characters: U+0000 at offset 1"},
		{"update a document with NUL in its id", "POST", "/v/_update/1%00", `{"doc":{"n":2},"doc_as_upsert":true}`,
			"illegal_argument_exception", "id [1\x00] must not contain control characters: U+0000 at offset 1"},
		{"get a document with NUL in its id", "GET", "/v/_doc/1%00", "",
			"illegal_argument_exception", "id [1\x00] must not contain control characters: U+0000 at offset 1"},
		{"delete a document with NUL in its id", "DELETE", "/v/_doc/1%00", "",
			"illegal_argument_exception", "id [1\x00] must not contain control characters: U+0000 at offset 1"},
		{"create an index with NUL in its name", "PUT", "/a%00b", "",
			"invalid_index_name_exception", "Invalid index name [a\x00b], must not contain control characters: U+0000 at offset 1"},
		{"create an index with a name not UTF-8", "PUT", "/a%C3", "",
			"invalid_index_name_exception", "Invalid index name [a\ufffd], must be valid UTF-8: invalid byte 0xc3 at offset 1"},
		{"auto-create an index with a control character in its name", "PUT", "/a%0Ab/_doc/1", `{"n":2}`,
			"invalid_index_name_exception", "Invalid index name [a\nb], must not contain control characters: U+000A at offset 1"},
		{"get from an index with NUL in its name", "GET", "/v%00/_doc/1", "",
			"invalid_index_name_exception", "Invalid index name [v\x00], must not contain control characters: U+0000 at offset 1"},
		{"an index named '..' percent-encoded", "PUT", "/%2e%2e/_doc/1", `{"n":2}`,
			"invalid_index_name_exception", "Invalid index name [..], must not be '.' or '..'"},
		{"put an alias with NUL in its name", "PUT", "/v/_alias/a%00b", "",
			"illegal_argument_exception", "Invalid alias name [a\x00b], must not contain control characters: U+0000 at offset 1"},
		{"add an alias with a control character in its name", "POST", "/_aliases", `{"actions":[{"add":{"index":"v","alias":"a\u0007"}}]}`,
			"illegal_argument_exception", "Invalid alias name [a\x07], must not contain control characters: U+0007 at offset 1"},
		{"create an index with an alias with NUL in its name", "PUT", "/w", `{"aliases":{"a\u0000":{}}}`,
			"illegal_argument_exception", "Invalid alias name [a\x00], must not contain control characters: U+0000 at offset 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
			e := readError(t, r)
			require.Equal(t, tc.typ, e.Type, "body: %s", r.Body)
			require.Equal(t, tc.reason, e.Reason)
			a.requireIntact(t)
		})
	}
}

// bulkItems sends a _bulk and returns its items' (action, status,
// error.type) in order.
func bulkItems(t *testing.T, a *testAPI, body string) (statuses []int, types []string) {
	t.Helper()
	out := a.must(200, "POST", "/_bulk?refresh=true", body, "Content-Type", "application/x-ndjson")
	for _, it := range out["items"].([]any) {
		for _, v := range it.(map[string]any) {
			m := v.(map[string]any)
			statuses = append(statuses, int(m["status"].(float64)))
			typ := ""
			if e, ok := m["error"].(map[string]any); ok {
				typ = e["type"].(string)
				require.NotEmpty(t, e["reason"])
			}
			types = append(types, typ)
		}
	}
	return statuses, types
}

func TestHostileBulkItemsFailAlone(t *testing.T) {
	a := hostileAPI(t)
	statuses, types := bulkItems(t, a, "{\"index\":{\"_index\":\"v\",\"_id\":\"ok1\"}}\n{\"n\":2}\n"+
		"{\"index\":{\"_index\":\"v\",\"_id\":\"a\\u0000b\"}}\n{\"n\":3}\n"+
		"{\"create\":{\"_index\":\"a\\u0001b\",\"_id\":\"1\"}}\n{\"n\":4}\n"+
		"{\"delete\":{\"_index\":\"v\",\"_id\":\"1\\u001f\"}}\n"+
		"{\"index\":{\"_index\":\"v\",\"_id\":\"ok2\"}}\n{\"n\":5}\n")
	require.Equal(t, []int{201, 400, 400, 400, 201}, statuses)
	require.Equal(t, []string{"", "illegal_argument_exception", "invalid_index_name_exception", "illegal_argument_exception", ""}, types)
	a.must(200, "GET", "/v/_doc/ok1", "")
	a.must(200, "GET", "/v/_doc/ok2", "")
	require.Equal(t, float64(3), a.must(200, "GET", "/v/_count", "")["count"])
	require.Len(t, a.eng.Indices(), 1, "the refused item created no index")
}

func TestHostileMgetDocsFailAlone(t *testing.T) {
	a := hostileAPI(t)
	out := a.must(200, "POST", "/_mget", `{"docs":[{"_index":"v","_id":"1"},{"_index":"v","_id":"1\u0000"},{"_index":"v\u0000","_id":"1"}]}`)
	docs := out["docs"].([]any)
	require.Len(t, docs, 3)
	require.Equal(t, true, path(t, docs[0], "found"))
	require.Equal(t, "illegal_argument_exception", path(t, docs[1], "error", "type"))
	require.Equal(t, "invalid_index_name_exception", path(t, docs[2], "error", "type"))
}

func TestInvalidUTF8BodiesAre400(t *testing.T) {
	a := hostileAPI(t)
	tests := []struct {
		name, method, path, body string
		typ, reason              string
		causedType, causedReason string
	}{
		{name: "a document", method: "PUT", path: "/v/_doc/2", body: "{\"n\":\"\xff\"}",
			typ: "document_parsing_exception", reason: "failed to parse the document: [1:7] Invalid UTF-8 start byte 0xff",
			causedType: "x_content_parse_exception", causedReason: "[1:7] Invalid UTF-8 start byte 0xff"},
		{name: "a document with a bad continuation", method: "POST", path: "/v/_doc", body: "{\n\"n\":\"\xc3\x28\"}",
			typ: "document_parsing_exception", reason: "failed to parse the document: [2:6] Invalid UTF-8 middle byte 0x28",
			causedType: "x_content_parse_exception", causedReason: "[2:6] Invalid UTF-8 middle byte 0x28"},
		{name: "a document with an encoded surrogate", method: "PUT", path: "/v/_create/2", body: "{\"n\":\"\xed\xa0\x80\"}",
			typ: "document_parsing_exception", reason: "failed to parse the document: [1:7] Invalid UTF-8 middle byte 0xa0",
			causedType: "x_content_parse_exception", causedReason: "[1:7] Invalid UTF-8 middle byte 0xa0"},
		{name: "an update", method: "POST", path: "/v/_update/1", body: "{\"doc\":{\"n\":\"\xe2\x82\"}}",
			typ: "x_content_parse_exception", reason: "[1:14] Invalid UTF-8 middle byte 0x22"},
		{name: "a search", method: "POST", path: "/v/_search", body: "{\"query\":{\"term\":{\"n\":\"\x80\"}}}",
			typ: "x_content_parse_exception", reason: "[1:24] Invalid UTF-8 start byte 0x80"},
		{name: "a mapping", method: "PUT", path: "/v/_mapping", body: "{\"properties\":{\"\xfe\":{\"type\":\"keyword\"}}}",
			typ: "x_content_parse_exception", reason: "[1:17] Invalid UTF-8 start byte 0xfe"},
		{name: "a body that ends inside a character", method: "POST", path: "/v/_count", body: "{}\xf0\x9f",
			typ: "x_content_parse_exception", reason: "[1:3] Invalid UTF-8: the input ends inside a character (start byte 0xf0)"},
		{name: "an msearch line", method: "POST", path: "/_msearch", body: "{\"index\":\"v\"}\n{\"query\":{\"match\":{\"n\":\"\xff\"}}}\n",
			typ: "x_content_parse_exception", reason: "[2:25] Invalid UTF-8 start byte 0xff"},
		{name: "a bulk action line", method: "POST", path: "/_bulk", body: "{\"index\":{\"_index\":\"v\",\"_id\":\"2\"}}\n{\"n\":2}\n{\"index\":{\"_index\":\"v\",\"_id\":\"\xff\"}}\n{\"n\":3}\n",
			typ: "x_content_parse_exception", reason: "[3:31] Invalid UTF-8 start byte 0xff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
			e := readError(t, r)
			require.Equal(t, esError{Type: tc.typ, Reason: tc.reason, CausedType: tc.causedType, CausedReason: tc.causedReason}, e)
			a.requireIntact(t)
		})
	}
}

func TestInvalidUTF8BulkSourceFailsItsItemAlone(t *testing.T) {
	a := hostileAPI(t)
	statuses, types := bulkItems(t, a, "{\"index\":{\"_index\":\"v\",\"_id\":\"ok1\"}}\n{\"n\":2}\n"+
		"{\"index\":{\"_index\":\"v\",\"_id\":\"bad1\"}}\n{\"n\":\"\xff\"}\n"+
		"{\"update\":{\"_index\":\"v\",\"_id\":\"1\"}}\n{\"doc\":{\"n\":\"\xc0\xaf\"}}\n"+
		"{\"create\":{\"_index\":\"v\",\"_id\":\"ok2\"}}\n{\"n\":3}\n")
	require.Equal(t, []int{201, 400, 400, 201}, statuses)
	require.Equal(t, []string{"", "document_parsing_exception", "x_content_parse_exception", ""}, types)
	a.must(404, "GET", "/v/_doc/bad1", "")
	require.Equal(t, map[string]any{"n": float64(1)}, a.must(200, "GET", "/v/_doc/1", "")["_source"])
	require.Equal(t, float64(3), a.must(200, "GET", "/v/_count", "")["count"])
}

func TestMalformedPathsAre400NotRedirects(t *testing.T) {
	a := hostileAPI(t)
	tests := []struct{ name, method, path string }{
		{"a traversal out of a document", "GET", "/v/_doc/../../_cluster/health"},
		{"a traversal to an index", "DELETE", "/x/../v"},
		{"an empty segment", "GET", "//v/_doc/1"},
		{"an empty segment inside", "GET", "/v//_doc/1"},
		{"a dot segment", "GET", "/v/./_doc/1"},
		{"a trailing dot-dot", "PUT", "/v/_doc/1/.."},
		{"a dot-dot with its query", "DELETE", "/v/_doc/2/../../v?timeout=1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, "")
			require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
			require.Empty(t, r.Header.Get("Location"))
			e := readError(t, r)
			require.Equal(t, "illegal_argument_exception", e.Type)
			require.Contains(t, e.Reason, "invalid path [")
			a.requireIntact(t)
		})
	}
}
