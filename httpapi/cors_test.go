package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/httpapi"
)

// corsConfig is apiConfig with CORS on for allowOrigin, Elasticsearch's
// defaults otherwise.
func corsConfig(allowOrigin string, credentials bool) httpapi.Config {
	cfg := apiConfig()
	cfg.CORS = httpapi.DefaultCORS()
	cfg.CORS.Enabled = true
	cfg.CORS.AllowOrigin = allowOrigin
	cfg.CORS.AllowCredentials = credentials
	return cfg
}

// preflight is what a browser sends before a cross-origin POST of JSON.
func preflight(origin string) []string {
	return []string{"Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type"}
}

func TestCORSPreflight(t *testing.T) {
	tests := []struct {
		name, allowOrigin, origin string
		credentials               bool
		// wantOrigin is the Access-Control-Allow-Origin expected; "":
		// the preflight is refused with 403.
		wantOrigin string
	}{
		{name: "listed origin", allowOrigin: "http://ui.example, https://other.example", origin: "https://other.example", wantOrigin: "https://other.example"},
		{name: "unlisted origin", allowOrigin: "http://ui.example", origin: "http://evil.example"},
		{name: "no origin configured", allowOrigin: "", origin: "http://ui.example"},
		{name: "regex origin", allowOrigin: `/https?:\/\/localhost(:[0-9]+)?/`, origin: "http://localhost:3000", wantOrigin: "http://localhost:3000"},
		{name: "regex matches the whole origin", allowOrigin: `/https?:\/\/localhost(:[0-9]+)?/`, origin: "http://localhost.evil.example"},
		{name: "any origin", allowOrigin: "*", origin: "http://anywhere.example", wantOrigin: "*"},
		{name: "any origin with credentials names it", allowOrigin: "*", origin: "http://anywhere.example", credentials: true, wantOrigin: "http://anywhere.example"},
		{name: "listed origin with credentials", allowOrigin: "http://ui.example", origin: "http://ui.example", credentials: true, wantOrigin: "http://ui.example"},
		{name: "unlisted origin with credentials", allowOrigin: "http://ui.example", origin: "http://evil.example", credentials: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, corsConfig(tc.allowOrigin, tc.credentials))
			r := a.do("OPTIONS", "/movies/_search", "", preflight(tc.origin)...)
			require.Empty(t, r.Body)
			if tc.wantOrigin == "" {
				require.Equal(t, 403, r.Status)
				require.Empty(t, r.Header.Values("Access-Control-Allow-Origin"))
				require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
				require.Empty(t, r.Header.Values("Access-Control-Allow-Methods"))
				return
			}
			require.Equal(t, 200, r.Status)
			require.Equal(t, []string{tc.wantOrigin}, r.Header.Values("Access-Control-Allow-Origin"))
			require.Equal(t, "OPTIONS,HEAD,GET,POST,PUT,DELETE", r.Header.Get("Access-Control-Allow-Methods"))
			require.Equal(t, "X-Requested-With,Content-Type,Content-Length,Authorization,Accept,User-Agent,X-Elastic-Client-Meta", r.Header.Get("Access-Control-Allow-Headers"))
			require.Equal(t, "1728000", r.Header.Get("Access-Control-Max-Age"))
			if tc.wantOrigin != "*" {
				require.Contains(t, r.Header.Values("Vary"), "Origin", "a reply that names the origin varies by it")
			}
			if tc.credentials {
				require.Equal(t, []string{"true"}, r.Header.Values("Access-Control-Allow-Credentials"))
			} else {
				require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
			}
		})
	}
}

// TestCORSOwnHostIsAllowed: an Origin naming the host the request was sent
// to is the page's own origin, allowed whatever allow-origin says, as in
// Elasticsearch.
func TestCORSOwnHostIsAllowed(t *testing.T) {
	a := newTestAPI(t, corsConfig("http://ui.example", false))
	own := a.srv.URL // http://127.0.0.1:port, the Host of the request
	r := a.do("OPTIONS", "/movies/_search", "", preflight(own)...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, own, r.Header.Get("Access-Control-Allow-Origin"))
	r = a.do("GET", "/", "", "Origin", own)
	require.Equal(t, 200, r.Status, "body: %s", r.Body)
	require.Equal(t, own, r.Header.Get("Access-Control-Allow-Origin"))
}

func TestCORSActualRequests(t *testing.T) {
	a := newTestAPI(t, corsConfig("http://ui.example", true))
	a.must(200, "PUT", "/movies", `{"settings":{"number_of_replicas":0}}`)
	a.must(201, "PUT", "/movies/_doc/1?refresh=true", `{"title":"Heat"}`)

	t.Run("allowed origin", func(t *testing.T) {
		r := a.do("POST", "/movies/_search", `{"query":{"match_all":{}}}`, "Origin", "http://ui.example")
		require.Equal(t, 200, r.Status, "body: %s", r.Body)
		require.Equal(t, "http://ui.example", r.Header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, r.Header.Values("Vary"), "Origin")
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.Equal(t, "X-elastic-product", r.Header.Get("Access-Control-Expose-Headers"))
		require.Empty(t, r.Header.Values("Access-Control-Allow-Methods"), "methods are a preflight's answer only")
		require.EqualValues(t, 1, hitsTotal(t, r.JSON(t)))
	})
	t.Run("an error reply carries the headers too", func(t *testing.T) {
		r := a.do("GET", "/nothing-here/_search", "", "Origin", "http://ui.example")
		require.Equal(t, 404, r.Status)
		require.Equal(t, "http://ui.example", r.Header.Get("Access-Control-Allow-Origin"))
	})
	t.Run("disallowed origin is refused", func(t *testing.T) {
		r := a.do("POST", "/movies/_search", `{}`, "Origin", "http://evil.example")
		require.Equal(t, 403, r.Status)
		require.Empty(t, r.Body, "Elasticsearch answers a disallowed origin with an empty 403")
		require.Empty(t, r.Header.Values("Access-Control-Allow-Origin"))
		require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
	})
	t.Run("no origin is no CORS", func(t *testing.T) {
		r := a.do("POST", "/movies/_search", `{}`)
		require.Equal(t, 200, r.Status)
		require.Empty(t, r.Header.Values("Access-Control-Allow-Origin"))
		require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
	})
}

// hitsTotal reads hits.total.value of a search reply.
func hitsTotal(t *testing.T, out map[string]any) float64 {
	t.Helper()
	hits, ok := out["hits"].(map[string]any)
	require.True(t, ok, "reply: %v", out)
	total, ok := hits["total"].(map[string]any)
	require.True(t, ok, "reply: %v", out)
	return total["value"].(float64)
}

// TestCORSOffChangesNothing: with CORS off (the default) a preflight is an
// OPTIONS request like any other and no reply carries CORS headers.
func TestCORSOffChangesNothing(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	plain := a.do("OPTIONS", "/movies/_search", "")
	r := a.do("OPTIONS", "/movies/_search", "", preflight("http://ui.example")...)
	require.Equal(t, 405, r.Status, "body: %s", r.Body)
	require.Equal(t, plain.Status, r.Status)
	require.Equal(t, plain.Body, r.Body)
	require.Empty(t, r.Header.Values("Access-Control-Allow-Origin"))
	r = a.do("GET", "/", "", "Origin", "http://evil.example")
	require.Equal(t, 200, r.Status, "an origin is not judged with CORS off")
	require.Empty(t, r.Header.Values("Access-Control-Allow-Origin"))
}

// TestCORSWithSecurity: a preflight is answered without credentials
// (browsers never send them on one), and nothing else is: the request
// that follows still needs them, and its 401 carries the CORS headers so
// that the page can read it.
func TestCORSWithSecurity(t *testing.T) {
	a := newSecureAPI(t, corsConfig("http://ui.example", true))
	t.Run("preflight needs no credentials", func(t *testing.T) {
		r := a.do("OPTIONS", "/logs-a/_search", "", preflight("http://ui.example")...)
		require.Equal(t, 200, r.Status, "body: %s", r.Body)
		require.Equal(t, "http://ui.example", r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
	})
	t.Run("preflight of a disallowed origin is refused", func(t *testing.T) {
		r := a.do("OPTIONS", "/logs-a/_search", "", preflight("http://evil.example")...)
		require.Equal(t, 403, r.Status)
		require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
	})
	t.Run("request without credentials is 401 with CORS headers", func(t *testing.T) {
		r := a.do("POST", "/logs-a/_search", `{}`, "Origin", "http://ui.example")
		require.Equal(t, 401, r.Status, "body: %s", r.Body)
		require.Equal(t, "security_exception", errorType(t, r))
		require.Equal(t, "http://ui.example", r.Header.Get("Access-Control-Allow-Origin"))
	})
	t.Run("OPTIONS that is not a preflight needs credentials", func(t *testing.T) {
		r := a.do("OPTIONS", "/logs-a/_search", "", "Origin", "http://ui.example")
		require.Equal(t, 401, r.Status, "body: %s", r.Body)
		r = a.do("OPTIONS", "/logs-a/_search", "", "Access-Control-Request-Method", "POST")
		require.Equal(t, 401, r.Status, "body: %s", r.Body)
	})
	t.Run("request with credentials is served", func(t *testing.T) {
		r := a.do("POST", "/logs-a/_search", `{}`, append(as("reader"), "Origin", "http://ui.example")...)
		require.Equal(t, 200, r.Status, "body: %s", r.Body)
		require.Equal(t, "http://ui.example", r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.EqualValues(t, 1, hitsTotal(t, r.JSON(t)))
	})
	t.Run("credentials from a disallowed origin are refused", func(t *testing.T) {
		r := a.do("POST", "/logs-a/_search", `{}`, append(as("reader"), "Origin", "http://evil.example")...)
		require.Equal(t, 403, r.Status)
		require.Empty(t, r.Body)
		require.Empty(t, r.Header.Values("Access-Control-Allow-Credentials"))
	})
}

func TestCORSConfigIsValidated(t *testing.T) {
	tests := []struct {
		name    string
		set     func(*httpapi.CORS)
		wantErr string
	}{
		{name: "bad regex", set: func(c *httpapi.CORS) { c.AllowOrigin = "/(/" }, wantErr: "http.cors.allow-origin"},
		{name: "header with a newline", set: func(c *httpapi.CORS) { c.AllowHeaders = []string{"X-A\r\nSet-Cookie: x"} }, wantErr: "http.cors.allow-headers"},
		{name: "method with a space", set: func(c *httpapi.CORS) { c.AllowMethods = []string{"GET POST"} }, wantErr: "http.cors.allow-methods"},
		{name: "negative max age", set: func(c *httpapi.CORS) { c.MaxAgeSeconds = -1 }, wantErr: "http.cors.max-age"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := httpapi.DefaultCORS()
			c.Enabled = true
			tc.set(&c)
			require.ErrorContains(t, c.Validate(), tc.wantErr)
			c.Enabled = false
			require.NoError(t, c.Validate(), "settings of CORS that is off are not read")
		})
	}
}
