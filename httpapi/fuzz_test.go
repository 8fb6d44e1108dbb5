package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/httpapi"
)

// FuzzAPI sends arbitrary requests to the API over a real engine: none may
// panic or be answered with a 5xx, and every error reply has
// Elasticsearch's error shape.
func FuzzAPI(f *testing.F) {
	seeds := []struct{ method, path, body string }{
		{"PUT", "/f", `{"settings":{"number_of_shards":2},"mappings":{"properties":{"t":{"type":"text"},"n":{"type":"long"},"d":{"type":"date"}}}}`},
		{"POST", "/_bulk", "{\"index\":{\"_index\":\"f\",\"_id\":\"1\"}}\n{\"t\":\"hello world\",\"n\":1,\"d\":\"2024-01-01\"}\n"},
		{"POST", "/f/_bulk?refresh=true", "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{\"n\":2}}\n{\"delete\":{\"_id\":\"2\"}}\n"},
		{"PUT", "/f/_doc/2?refresh=wait_for", `{"t":"second","n":"x"}`},
		{"POST", "/f/_update/1", `{"doc":{"t":{"nested":true}}}`},
		{"GET", "/f/_doc/1", ""},
		{"GET", "/f/_source/1", ""},
		{"POST", "/f/_search", `{"query":{"bool":{"must":[{"match":{"t":"hello"}}],"filter":[{"range":{"n":{"gte":1}}}]}},"aggs":{"n":{"terms":{"field":"n"}}}}`},
		{"POST", "/f/_search?scroll=1m", `{"size":1,"sort":["_doc"]}`},
		{"POST", "/_search/scroll", `{"scroll_id":"AAAA"}`},
		{"POST", "/f/_count", `{"query":{"term":{"n":1}}}`},
		{"POST", "/_msearch", "{\"index\":\"f\"}\n{\"query\":{\"match_all\":{}}}\n"},
		{"PUT", "/f/_mapping", `{"properties":{"x":{"type":"keyword"}}}`},
		{"PUT", "/f/_settings", `{"number_of_replicas":"2"}`},
		{"GET", "/_cat/indices?v&s=index:desc&h=index,docs.count", ""},
		{"GET", "/_cluster/health/f?wait_for_status=green&timeout=10ms", ""},
		{"DELETE", "/f", ""},
		{"GET", "/_nodes/stats", ""},
		{"PUT", "/_cluster/settings", `{"persistent":{"search.default_allow_partial_results":false,"indices.recovery.max_bytes_per_sec":"10mb"},"transient":{"action":{"destructive_requires_name":null}}}`},
		{"PUT", "/g", `{"mappings":{"properties":{"n":{"type":"keyword"},"r":{"type":"long_range"}}},"aliases":{"ga":{"filter":{"term":{"n":"1"}}}}}`},
		{"POST", "/f,g/_search", `{"aggs":{"n":{"terms":{"field":"n","value_type":"long","include":{"partition":0,"num_partitions":2}}},"h":{"histogram":{"field":"r","interval":5}}}}`},
		{"POST", "/_aliases", `{"actions":[{"add":{"index":"f","alias":"fa","is_write_index":true}},{"remove":{"index":"g","alias":"ga"}}]}`},
		{"POST", "/_mget", `{"docs":[{"_index":"f","_id":"1","_source":["t"]},{"_index":"nope","_id":"2"}]}`},
		{"POST", "/f/_delete_by_query?conflicts=proceed", `{"query":{"query_string":{"query":"hello world","minimum_should_match":2}},"max_docs":1}`},
		{"POST", "/_reindex", `{"source":{"index":"f","query":{"match_all":{}}},"dest":{"index":"h","version_type":"external"}}`},
		{"POST", "/f/_pit?keep_alive=1m", ""},
		{"PUT", "/f/_doc/3?version=5&version_type=external_gte", `{"n":3}`},
		{"POST", "/f/_close", ""},
		// Hostile input: NUL and other control characters in ids and index
		// names, bodies that are not UTF-8, paths that are not canonical.
		{"PUT", "/f/_doc/a%00b", `{"n":1}`},
		{"PUT", "/f%01/_doc/1", `{"n":1}`},
		{"POST", "/_bulk", "{\"index\":{\"_index\":\"f\",\"_id\":\"a\\u0000\"}}\n{}\n{\"index\":{\"_index\":\"f\"}}\n{\"t\":\"\xff\"}\n"},
		{"POST", "/_mget", `{"docs":[{"_index":"f\u0007","_id":"1"},{"_index":"f","_id":"\u001f"}]}`},
		{"POST", "/_aliases", `{"actions":[{"add":{"index":"f","alias":"a\u0000"}}]}`},
		{"PUT", "/f/_doc/4", "{\"t\":\"\xc3\x28\xed\xa0\x80\"}"},
		{"POST", "/f/_search", "{\"query\":{\"match\":{\"t\":\"\xf0\x9f\"}}}"},
		{"GET", "/f/_doc/../../_cluster/health", ""},
		{"DELETE", "//f", ""},
		{"GET", "/f/./_doc/1", ""},
		{"PUT", "/%2e%2e/_doc/1", `{}`},
		{"GET", "/f%2F..%2F_doc/1", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body)
	}
	// The fuzz target may not log through f; failures carry the reply instead.
	logger := slog.New(slog.DiscardHandler)
	eng := openEngine(f, logger)
	api, err := httpapi.New(apiConfigWithCluster(f), eng, logger, prometheus.NewRegistry())
	require.NoError(f, err)

	methods := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		u, err := url.ParseRequestURI(path)
		if err != nil || !methods[method] || u.Host != "" || !strings.HasPrefix(path, "/") {
			return
		}
		if strings.Contains(u.RawQuery, "wait_for") && !strings.Contains(u.RawQuery, "refresh=wait_for") {
			// wait_for_status and the like wait, as they should, up to their
			// timeout (30 s by default), past the fuzzer's hang limit; their
			// parsing is TestClusterEndpoints'.
			return
		}
		req := &http.Request{Method: method, URL: u, RequestURI: path, Header: http.Header{}, Body: http.NoBody, Host: "localhost", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		if body != "" {
			req.Body = httpBody(body)
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		require.Less(t, rec.Code, 500, "%s %s %q: %d %s", method, path, body, rec.Code, rec.Body)
		require.Equal(t, "Elasticsearch", rec.Header().Get("X-Elastic-Product"))
		if rec.Code < 400 || method == "HEAD" || strings.HasPrefix(rec.Header().Get("Content-Type"), "text/") {
			return
		}
		var e map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "%s", rec.Body)
		if _, ok := e["error"]; !ok {
			// 404 replies that are results, not errors: a missing document
			// (found:false, result:not_found), a cleared scroll, a health wait.
			_, found := e["found"]
			_, result := e["result"]
			_, freed := e["num_freed"]
			_, timedOut := e["timed_out"]
			require.True(t, found || result || freed || timedOut, "%d reply without an error: %s", rec.Code, rec.Body)
		}
	})
}

type bodyReader struct{ *strings.Reader }

func (bodyReader) Close() error { return nil }

func httpBody(s string) bodyReader { return bodyReader{strings.NewReader(s)} }
