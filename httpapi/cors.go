package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// CORS is cross-origin resource sharing as Elasticsearch's static
// http.cors.* node settings configure it, so that a page served from
// another origin (a search UI in the browser) may call the API.
//
// With it on, a preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered 200 with the Access-Control-*
// headers when its origin is allowed and 403 when not, before
// authentication (browsers never send credentials on a preflight); any
// other request whose Origin is not allowed is answered 403; a request from
// an allowed origin is served as usual, with Access-Control-Allow-Origin
// (and Vary: Origin, Access-Control-Allow-Credentials,
// Access-Control-Expose-Headers) on its reply, whatever its status (a 401
// included, so that the page can read it). An origin equal to the request's
// Host, once its http:// or https:// is dropped, is always allowed, as
// Elasticsearch allows it. A request without Origin is not a cross-origin
// one and is served as if CORS were off.
type CORS struct {
	// Enabled turns CORS on (http.cors.enabled; off by default).
	Enabled bool
	// AllowOrigin is http.cors.allow-origin: "" (no origin but the
	// request's own host), "*" (every origin), a comma-separated list of
	// origins, or a regular expression between slashes (/https?:\/\/localhost(:[0-9]+)?/)
	// that the whole Origin must match (Go's RE2 syntax).
	AllowOrigin string
	// AllowMethods are the methods a preflight allows
	// (http.cors.allow-methods).
	AllowMethods []string
	// AllowHeaders are the request headers a preflight allows
	// (http.cors.allow-headers).
	AllowHeaders []string
	// ExposeHeaders are the reply headers a page may read
	// (http.cors.expose-headers).
	ExposeHeaders []string
	// AllowCredentials sends Access-Control-Allow-Credentials: true to
	// allowed origins, so that a browser sends cookies and Authorization
	// (http.cors.allow-credentials). With AllowOrigin "*" the reply names
	// the request's origin instead of "*", as the browser requires: every
	// origin may then send credentials.
	AllowCredentials bool
	// MaxAgeSeconds is how long a browser may cache a preflight's answer
	// (http.cors.max-age).
	MaxAgeSeconds int
}

// DefaultCORS is Elasticsearch 8's defaults, off.
func DefaultCORS() CORS {
	return CORS{
		AllowMethods:  []string{"OPTIONS", "HEAD", "GET", "POST", "PUT", "DELETE"},
		AllowHeaders:  []string{"X-Requested-With", "Content-Type", "Content-Length", "Authorization", "Accept", "User-Agent", "X-Elastic-Client-Meta"},
		ExposeHeaders: []string{"X-elastic-product"},
		MaxAgeSeconds: 1728000,
	}
}

// Validate reports a setting that is out of bounds, naming it. A disabled
// CORS is not checked.
func (c CORS) Validate() error {
	_, err := newCORSHandler(c)
	return err
}

// corsHandler is a compiled CORS; nil when CORS is off.
type corsHandler struct {
	anyOrigin   bool
	origins     map[string]bool
	pattern     *regexp.Regexp
	credentials bool
	methods     string
	headers     string
	expose      string
	maxAge      string
}

// httpToken matches a method or header name (RFC 9110's token).
var httpToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func newCORSHandler(c CORS) (*corsHandler, error) {
	if !c.Enabled {
		return nil, nil
	}
	h := &corsHandler{credentials: c.AllowCredentials}
	switch o := strings.TrimSpace(c.AllowOrigin); {
	case o == "*":
		h.anyOrigin = true
	case len(o) > 1 && strings.HasPrefix(o, "/") && strings.HasSuffix(o, "/"):
		re, err := regexp.Compile("^(?:" + o[1:len(o)-1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("httpapi: bad regular expression in http.cors.allow-origin [%s]: %v", o, err)
		}
		h.pattern = re
	default:
		h.origins = map[string]bool{}
		for _, s := range strings.Split(o, ",") {
			if s = strings.TrimSpace(s); s != "" {
				h.origins[s] = true
			}
		}
	}
	var err error
	methods := make([]string, len(c.AllowMethods))
	for k, m := range c.AllowMethods {
		methods[k] = strings.ToUpper(strings.TrimSpace(m))
	}
	if h.methods, err = tokenList("http.cors.allow-methods", methods); err != nil {
		return nil, err
	}
	if h.headers, err = tokenList("http.cors.allow-headers", c.AllowHeaders); err != nil {
		return nil, err
	}
	if h.expose, err = tokenList("http.cors.expose-headers", c.ExposeHeaders); err != nil {
		return nil, err
	}
	if c.MaxAgeSeconds < 0 {
		return nil, fmt.Errorf("httpapi: http.cors.max-age %d must be 0 or more seconds", c.MaxAgeSeconds)
	}
	h.maxAge = strconv.Itoa(c.MaxAgeSeconds)
	return h, nil
}

// tokenList joins names for a header, refusing one that is not an HTTP
// token (a header value must not be able to smuggle another header).
func tokenList(setting string, names []string) (string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !httpToken.MatchString(n) {
			return "", fmt.Errorf("httpapi: %s: [%s] is not a method or header name", setting, n)
		}
		out = append(out, n)
	}
	return strings.Join(out, ","), nil
}

// wrap returns next behind CORS. It runs outside authentication (a
// preflight is answered without credentials, and a 401 carries the CORS
// headers) and inside ServeHTTP (metrics, the product header).
func (c *corsHandler) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r) // not a cross-origin request
			return
		}
		allowed := c.allowed(origin, r.Host)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			c.preflight(w, r, origin, allowed)
			return
		}
		if !allowed {
			forbidCORS(w)
			return
		}
		h := w.Header()
		c.setOrigin(h, origin)
		if c.expose != "" {
			h.Set("Access-Control-Expose-Headers", c.expose)
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers a preflight request: 200 with what the origin may
// send, or 403.
func (c *corsHandler) preflight(w http.ResponseWriter, r *http.Request, origin string, allowed bool) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.pattern = "OPTIONS (CORS preflight)"
	}
	if !allowed {
		forbidCORS(w)
		return
	}
	h := w.Header()
	c.setOrigin(h, origin)
	if c.methods != "" {
		h.Set("Access-Control-Allow-Methods", c.methods)
	}
	if c.headers != "" {
		h.Set("Access-Control-Allow-Headers", c.headers)
	}
	h.Set("Access-Control-Max-Age", c.maxAge)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// forbidCORS is Elasticsearch's answer to a disallowed origin: 403 with
// no body.
func forbidCORS(w http.ResponseWriter) {
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusForbidden)
}

// allowed reports whether origin may call the API: it is configured, or
// it is the request's own host.
func (c *corsHandler) allowed(origin, host string) bool {
	switch {
	case c.anyOrigin:
		return true
	case c.pattern != nil && c.pattern.MatchString(origin):
		return true
	case c.origins[origin]:
		return true
	}
	if host == "" {
		return false
	}
	bare, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		bare, _ = strings.CutPrefix(origin, "https://")
	}
	return bare == host
}

// setOrigin sets the headers that tell the browser origin may read the
// reply: the origin itself (with Vary: Origin, since another origin gets
// another answer), or "*" when every origin may and no credentials are
// sent; with credentials, Access-Control-Allow-Credentials.
func (c *corsHandler) setOrigin(h http.Header, origin string) {
	if c.anyOrigin && !c.credentials {
		h.Set("Access-Control-Allow-Origin", "*")
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if c.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}
