package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tools' requests that Elasticsearch 8 takes and Weft refused
// (issue 21): winston-elasticsearch's bulk action lines with an extra key
// and a null pipeline, the Python client's compatible-with=7, and the Perl
// client's numeric ids in _mget.
func TestLenientLikeElasticsearch8(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	bulk := "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\",\"attempts\":0,\"pipeline\":null}}\n{\"message\":\"hi\"}\n"
	send := func(ctype string) (int, http.Header, string) {
		req, err := http.NewRequest("POST", a.srv.URL+"/_bulk?refresh=true", strings.NewReader(bulk))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept", strings.ReplaceAll(ctype, "x-ndjson", "json"))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, resp.Header, b.String()
	}
	for _, ctype := range []string{"application/x-ndjson", "application/vnd.elasticsearch+x-ndjson;compatible-with=8", "application/vnd.elasticsearch+x-ndjson;compatible-with=7"} {
		status, h, body := send(ctype)
		require.Equal(t, 200, status, "%s: %s", ctype, body)
		require.NotContains(t, body, `"errors":true`, ctype)
		require.Contains(t, h.Get("Warning"), "contains an unknown parameter [attempts]", ctype)
	}
	status, _, body := send("application/vnd.elasticsearch+x-ndjson;compatible-with=9")
	require.Equal(t, 400, status, "REST API 9 refuses the unknown key: %s", body)
	require.Contains(t, body, "Action/metadata line [1] contains an unknown parameter [attempts]")

	a.must(201, "PUT", "/logs/_doc/2?refresh=true", `{"message":"two"}`)
	r := a.must(200, "POST", "/logs/_mget", `{"ids":[1,2,3]}`)
	docs := path(t, r, "docs").([]any)
	require.Len(t, docs, 3)
	require.Equal(t, true, path(t, docs[0], "found"))
	require.Equal(t, "1", path(t, docs[0], "_id"))
	require.Equal(t, true, path(t, docs[1], "found"))
	require.Equal(t, false, path(t, docs[2], "found"))
}

// The Warning headers of one reply are bounded: a bulk whose every line
// has an unknown key names a few of them, not every line.
func TestBulkWarningsAreBounded(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	var b strings.Builder
	for k := range 500 {
		fmt.Fprintf(&b, "{\"index\":{\"_index\":\"logs\",\"_id\":\"%d\",\"attempts\":0}}\n{\"n\":%d}\n", k, k)
	}
	req, err := http.NewRequest("POST", a.srv.URL+"/_bulk", strings.NewReader(b.String()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	warnings := resp.Header.Values("Warning")
	require.NotEmpty(t, warnings)
	require.LessOrEqual(t, len(warnings), 16, "at most maxWarnings")
}
