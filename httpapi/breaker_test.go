package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/membudget"
)

// The in_flight_requests breaker counts every request body while it is
// served: a body that would take the node's bodies in flight past the
// limit gets 429 circuit_breaking_exception in Elasticsearch's shape, with
// a declared length or without one (chunked), nothing of it is written, and
// once requests are served their bytes are given back (_nodes/stats).
func TestInFlightRequestsBreaker(t *testing.T) {
	cfg := apiConfig()
	cfg.InFlight = membudget.NewBreaker("in_flight_requests", 2000)
	a := newTestAPI(t, cfg)
	a.must(200, "PUT", "/kept", `{}`)
	a.must(201, "PUT", "/kept/_doc/1?refresh=true", `{"title":"before"}`)

	big := `{"index":{"_index":"kept","_id":"2"}}` + "\n" + `{"title":"` + strings.Repeat("x", 2500) + `"}` + "\n"
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest("POST", a.srv.URL+"/_bulk", strings.NewReader(big))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-ndjson")
		if chunked {
			req.ContentLength = -1 // sent chunked: the breaker counts bytes as they arrive
			req.Body = io.NopCloser(strings.NewReader(big))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "chunked %v: %s", chunked, body)
		var e struct {
			Error struct {
				RootCause []struct {
					Type string `json:"type"`
				} `json:"root_cause"`
				Type        string `json:"type"`
				Reason      string `json:"reason"`
				BytesWanted int64  `json:"bytes_wanted"`
				BytesLimit  int64  `json:"bytes_limit"`
				Durability  string `json:"durability"`
			} `json:"error"`
			Status int `json:"status"`
		}
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		require.Equal(t, 429, e.Status)
		require.Equal(t, "circuit_breaking_exception", e.Error.Type)
		require.Equal(t, "circuit_breaking_exception", e.Error.RootCause[0].Type)
		require.Contains(t, e.Error.Reason, "[in_flight_requests] Data too large, data for [<http_request>] would be [")
		require.Greater(t, e.Error.BytesWanted, int64(2000), "chunked %v", chunked)
		require.EqualValues(t, 2000, e.Error.BytesLimit)
		require.Equal(t, "TRANSIENT", e.Error.Durability)
	}

	a.must(200, "POST", "/kept/_refresh", "")
	r := a.must(200, "GET", "/kept/_search", `{"query":{"match_all":{}}}`)
	require.EqualValues(t, 1, path(t, r, "hits", "total", "value"), "nothing of the refused bodies was written")

	breaker := func() map[string]any {
		st := a.must(200, "GET", "/_nodes/stats", "")
		var br map[string]any
		for _, n := range path(t, st, "nodes").(map[string]any) {
			br = n.(map[string]any)["breakers"].(map[string]any)["in_flight_requests"].(map[string]any)
		}
		return br
	}
	br := breaker()
	require.EqualValues(t, 2000, br["limit_size_in_bytes"])
	require.EqualValues(t, 2, br["tripped"])
	// A served request gives its bytes back when its context ends, just
	// after its reply.
	require.Eventually(t, func() bool { return breaker()["estimated_size_in_bytes"] == float64(0) }, 10*time.Second, 10*time.Millisecond,
		"served requests gave their bytes back")
}

// A request refused before its body was read (the in_flight_requests
// breaker on its declared length) is answered once the body has been read
// to its end and dropped: a client still sending a large body sees the
// 429, not a connection reset, and the node holds none of it.
func TestRefusedLargeBodyIsAnsweredNotReset(t *testing.T) {
	cfg := apiConfig()
	cfg.MaxBodyBytes = 16 << 20
	cfg.InFlight = membudget.NewBreaker("in_flight_requests", 1<<20)
	a := newTestAPI(t, cfg)
	body := `{"index":{"_index":"big"}}` + "\n" + `{"t":"` + strings.Repeat("y", 8<<20) + `"}` + "\n"
	for range 3 {
		req, err := http.NewRequest("POST", a.srv.URL+"/_bulk", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "the client gets the refusal, not a reset")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	}
}
