package httpapi_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/internal/testlog"
)

// benchAPI loads the sample corpus into one index and returns the handler
// (served in-process, without sockets) and the engine.
func benchAPI(b *testing.B) (http.Handler, *coord.Coordinator) {
	b.Helper()
	logger := testlog.New(b)
	eng := openEngine(b, logger)
	api, err := httpapi.New(apiConfig(), eng, logger, prometheus.NewRegistry())
	require.NoError(b, err)
	mapping, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(b, err)
	serve(b, api, "PUT", "/emails", `{"settings":{"number_of_replicas":0},"mappings":`+string(mapping)+`}`, 200)
	f, err := os.Open("../testdata/sample/emails.ndjson")
	require.NoError(b, err)
	defer f.Close()
	var body strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		fmt.Fprintf(&body, "{\"index\":{\"_index\":\"emails\"}}\n%s\n", sc.Bytes())
	}
	serve(b, api, "POST", "/_bulk?refresh=true", body.String(), 200)
	return api, eng
}

func serve(b *testing.B, h http.Handler, method, path, body string, status int) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != status {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
}

const benchQuery = `{"query":{"term":{"body":"money"}},"size":10}`

// BenchmarkSearchHandler measures a search through the API's handler,
// in-process: what the API adds to the engine is the difference from
// BenchmarkSearchEngine.
func BenchmarkSearchHandler(b *testing.B) {
	api, _ := benchAPI(b)
	b.ResetTimer()
	for b.Loop() {
		serve(b, api, "POST", "/emails/_search", benchQuery, 200)
	}
}

// BenchmarkSearchEngine is the same search translated once per iteration
// and run on the engine directly.
func BenchmarkSearchEngine(b *testing.B) {
	_, eng := benchAPI(b)
	names := []string{"emails"}
	b.ResetTimer()
	for b.Loop() {
		s, err := esdsl.ParseSearch([]byte(benchQuery), nil, eng.Fields(names))
		require.NoError(b, err)
		if _, err := eng.Search(b.Context(), names, s); err != nil {
			b.Fatal(err)
		}
	}
}
