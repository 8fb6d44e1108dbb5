package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/security/auth"
)

// testClock is a settable clock for API key expiry.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// secureAPI is a testAPI with security on over an in-memory store.
type secureAPI struct {
	*testAPI
	store *memSecurity
	clock *testClock
	audit *bytes.Buffer
	auMu  *sync.Mutex
}

// lockedBuffer serializes the audit logger's writes with the test's reads.
type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (b lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// testUsers are the users of newSecureAPI, each with password name+"-pw".
var testUsers = map[string][]string{
	"elastic": {"superuser"},
	"reader":  {"logs_read"},
	"reader2": {"logs_read"},
	"writer":  {"logs_write"},
	"creator": {"logs_write", "logs_create"},
	"nopriv":  nil,
	"monitor": {"mon"},
	"secadm":  {"sec_admin"},
	"keyuser": {"logs_read", "own_keys"},
}

var testRoles = map[string]auth.Role{
	"logs_read":   {Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read", "view_index_metadata", "monitor"}}}},
	"logs_write":  {Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"write"}}}},
	"logs_create": {Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"create_index"}}}},
	"mon":         {Cluster: []string{"monitor"}},
	"sec_admin":   {Cluster: []string{"manage_security"}},
	"own_keys":    {Cluster: []string{"manage_own_api_key"}},
}

// newSecureAPI serves the API with security on; any request served 2xx
// without an authorization decision fails the test. It creates the
// indices logs-a and secret with one document each.
func newSecureAPI(t *testing.T, cfg httpapi.Config) *secureAPI {
	t.Helper()
	logger := testlog.New(t)
	eng := openEngine(t, logger)
	store := newMemSecurity()
	hasher := auth.BcryptHasher{Cost: bcrypt.MinCost}
	for name, roles := range testUsers {
		h, err := hasher.Hash(name + "-pw")
		require.NoError(t, err)
		store.users[name] = auth.User{Username: name, PasswordHash: h, Roles: roles, Enabled: true}
	}
	for name, r := range testRoles {
		store.roles[name] = r
	}
	clock := &testClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	authn, err := auth.NewAuthenticator(store, auth.Config{Hasher: hasher, CacheSize: 100, CacheTTL: time.Minute, Now: clock.Now})
	require.NoError(t, err)
	var mu sync.Mutex
	buf := &bytes.Buffer{}
	cfg.Security = &httpapi.Security{Authenticator: authn, Admin: store, Hasher: hasher, Now: clock.Now,
		Audit: audit.New(lockedBuffer{mu: &mu, buf: buf}, audit.Options{})}
	api, err := httpapi.New(cfg, eng, logger, prometheus.NewRegistry())
	require.NoError(t, err)
	httpapi.SetUndecidedHook(api, func(pattern string) { t.Errorf("%s served 2xx without an authorization decision", pattern) })
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	a := &secureAPI{testAPI: &testAPI{t: t, srv: srv, eng: eng}, store: store, clock: clock, audit: buf, auMu: &mu}
	a.must(200, "PUT", "/logs-a", `{"settings":{"number_of_replicas":0}}`, as("elastic")...)
	a.must(200, "PUT", "/secret", `{"settings":{"number_of_replicas":0}}`, as("elastic")...)
	a.must(201, "PUT", "/logs-a/_doc/1?refresh=true", `{"msg":"public"}`, as("elastic")...)
	a.must(201, "PUT", "/secret/_doc/1?refresh=true", `{"msg":"classified"}`, as("elastic")...)
	return a
}

// as returns the Basic Authorization header of a test user.
func as(user string) []string {
	return []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+user+"-pw"))}
}

// withKey returns the ApiKey Authorization header of an encoded key.
func withKey(encoded string) []string { return []string{"Authorization", "ApiKey " + encoded} }

func (a *secureAPI) auditLog() string {
	a.auMu.Lock()
	defer a.auMu.Unlock()
	return a.audit.String()
}

// requireForbidden requires a 403 security_exception naming action and
// user.
func requireForbidden(t *testing.T, r reply, action auth.Action, user string) {
	t.Helper()
	require.Equal(t, 403, r.Status, "body: %s", r.Body)
	require.Equal(t, "security_exception", errorType(t, r))
	require.Contains(t, string(r.Body), "action ["+string(action)+"]")
	require.Contains(t, string(r.Body), "["+user+"]")
}

func TestSecurityUnauthenticatedIs401(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	tests := []struct {
		name, method, path, body string
		headers                  []string
	}{
		{name: "root", method: "GET", path: "/"},
		{name: "search", method: "POST", path: "/logs-a/_search", body: `{}`},
		{name: "index a document", method: "PUT", path: "/logs-a/_doc/2", body: `{"a":1}`},
		{name: "bulk", method: "POST", path: "/_bulk", body: "{\"index\":{\"_index\":\"logs-a\"}}\n{}\n"},
		{name: "cluster health", method: "GET", path: "/_cluster/health"},
		{name: "cluster state", method: "GET", path: "/_cluster/state"},
		{name: "weft raft", method: "GET", path: "/_weft/raft"},
		{name: "metrics", method: "GET", path: "/metrics"},
		{name: "authenticate", method: "GET", path: "/_security/_authenticate"},
		{name: "put user", method: "PUT", path: "/_security/user/x", body: `{"password":"secret-pw"}`},
		{name: "unknown path", method: "GET", path: "/_nowhere/at/all"},
		// Authentication comes before the path's form is judged: a client
		// without credentials learns nothing, not even that.
		{name: "malformed path", method: "GET", path: "/logs-a/_doc/../../_cluster/health"},
		{name: "invalid UTF-8 body", method: "POST", path: "/logs-a/_search", body: "{\"query\":\"\xff\"}"},
		{name: "wrong password", method: "GET", path: "/", headers: []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("reader:wrong"))}},
		{name: "unknown user", method: "GET", path: "/", headers: []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("ghost:ghost-pw"))}},
		{name: "malformed header", method: "GET", path: "/", headers: []string{"Authorization", "Basic !!!"}},
		{name: "unknown API key", method: "GET", path: "/", headers: withKey(base64.StdEncoding.EncodeToString([]byte("nokey:nosecret")))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(tc.method, tc.path, tc.body, tc.headers...)
			require.Equal(t, 401, r.Status, "body: %s", r.Body)
			require.Equal(t, auth.WWWAuthenticate(), r.Header.Values("WWW-Authenticate"))
			require.Equal(t, "security_exception", errorType(t, r))
		})
	}
	require.Contains(t, a.auditLog(), `"event.action":"authentication_failed"`)
}

func TestSecurityForbiddenWithoutPrivilegeGrantedWithIt(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	tests := []struct {
		name, method, path, body string
		action                   auth.Action
		denied, granted          string
		grantedStatus            int
	}{
		{name: "root", method: "GET", path: "/", action: auth.ActionMain, denied: "nopriv", granted: "monitor", grantedStatus: 200},
		{name: "cluster health", method: "GET", path: "/_cluster/health", action: auth.ActionClusterHealth, denied: "reader", granted: "monitor", grantedStatus: 200},
		{name: "cluster settings", method: "PUT", path: "/_cluster/settings", body: `{"persistent":{}}`, action: auth.ActionClusterUpdateSettings, denied: "monitor", granted: "elastic", grantedStatus: 404},
		{name: "weft raft", method: "GET", path: "/_weft/raft", action: auth.ActionWeftMonitor, denied: "reader", granted: "monitor", grantedStatus: 404},
		{name: "metrics", method: "GET", path: "/metrics", action: auth.ActionWeftMetrics, denied: "reader", granted: "monitor", grantedStatus: 200},
		{name: "search an explicit index", method: "POST", path: "/secret/_search", body: `{}`, action: auth.ActionSearch, denied: "reader", granted: "elastic", grantedStatus: 200},
		{name: "search a missing explicit index", method: "POST", path: "/secret-2/_search", body: `{}`, action: auth.ActionSearch, denied: "reader", granted: "elastic", grantedStatus: 404},
		{name: "get a document", method: "GET", path: "/secret/_doc/1", action: auth.ActionGet, denied: "reader", granted: "elastic", grantedStatus: 200},
		{name: "index a document", method: "PUT", path: "/logs-a/_doc/2", body: `{"a":1}`, action: auth.ActionIndexDoc, denied: "reader", granted: "writer", grantedStatus: 201},
		{name: "delete a document", method: "DELETE", path: "/secret/_doc/1", action: auth.ActionDeleteDoc, denied: "writer", granted: "elastic", grantedStatus: 200},
		{name: "auto-create an index", method: "PUT", path: "/logs-new/_doc/1", body: `{"a":1}`, action: auth.ActionAutoCreateIndex, denied: "writer", granted: "creator", grantedStatus: 201},
		{name: "create an index", method: "PUT", path: "/logs-b", body: `{}`, action: auth.ActionCreateIndex, denied: "writer", granted: "creator", grantedStatus: 200},
		{name: "mapping", method: "GET", path: "/secret/_mapping", action: auth.ActionGetMapping, denied: "reader", granted: "elastic", grantedStatus: 200},
		{name: "count", method: "GET", path: "/logs-a/_count", action: auth.ActionCount, denied: "writer", granted: "reader", grantedStatus: 200},
		{name: "put user", method: "PUT", path: "/_security/user/newbie", body: `{"password":"newbie-pw","roles":[]}`, action: auth.ActionPutUser, denied: "monitor", granted: "secadm", grantedStatus: 200},
		{name: "get roles", method: "GET", path: "/_security/role", action: auth.ActionGetRole, denied: "reader", granted: "secadm", grantedStatus: 200},
		{name: "create API key", method: "POST", path: "/_security/api_key", body: `{"name":"k"}`, action: auth.ActionCreateAPIKey, denied: "reader", granted: "keyuser", grantedStatus: 200},
		{name: "delete an index", method: "DELETE", path: "/secret", action: auth.ActionDeleteIndex, denied: "reader", granted: "elastic", grantedStatus: 200},
		{name: "change another's password", method: "POST", path: "/_security/user/reader/_password", body: `{"password":"another-pw"}`, action: auth.ActionChangePassword, denied: "writer", granted: "secadm", grantedStatus: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireForbidden(t, a.do(tc.method, tc.path, tc.body, as(tc.denied)...), tc.action, tc.denied)
			r := a.do(tc.method, tc.path, tc.body, as(tc.granted)...)
			require.Equal(t, tc.grantedStatus, r.Status, "body: %s", r.Body)
		})
	}
	require.Contains(t, a.auditLog(), `"event.action":"access_denied"`)
}

// searchIndices returns the _index of every hit of a search.
func searchIndices(t *testing.T, a *secureAPI, path, user string) []string {
	t.Helper()
	out := a.must(200, "POST", path, `{"query":{"match_all":{}}}`, as(user)...)
	var got []string
	for _, h := range path2slice(t, out) {
		got = append(got, h.(map[string]any)["_index"].(string))
	}
	return got
}

func path2slice(t *testing.T, out map[string]any) []any {
	t.Helper()
	hits, ok := path(t, out, "hits", "hits").([]any)
	require.True(t, ok)
	return hits
}

func TestSecurityWildcardsExpandToVisibleIndicesOnly(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	for _, p := range []string{"/*/_search", "/_all/_search", "/_search", "/l*,s*/_search"} {
		t.Run(p, func(t *testing.T) {
			require.Equal(t, []string{"logs-a"}, searchIndices(t, a, p, "reader"))
			require.ElementsMatch(t, []string{"logs-a", "secret"}, searchIndices(t, a, p, "elastic"))
		})
	}
	t.Run("metrics name the route behind authentication", func(t *testing.T) {
		r := a.do("GET", "/metrics", "", as("monitor")...)
		require.Equal(t, 200, r.Status)
		require.Contains(t, string(r.Body), `endpoint="POST /{index}/_search"`)
	})
	t.Run("cat indices", func(t *testing.T) {
		r := a.do("GET", "/_cat/indices?h=index", "", as("reader")...)
		require.Equal(t, 200, r.Status, "body: %s", r.Body)
		require.Equal(t, "logs-a", strings.TrimSpace(string(r.Body)))
	})
	t.Run("a wildcard matching only invisible indices is empty", func(t *testing.T) {
		require.Empty(t, searchIndices(t, a, "/sec*/_search", "reader"))
	})
	t.Run("an explicit name is refused by name", func(t *testing.T) {
		requireForbidden(t, a.do("POST", "/logs-a,secret/_search", `{}`, as("reader")...), auth.ActionSearch, "reader")
	})
	t.Run("a principal without read anywhere is refused", func(t *testing.T) {
		requireForbidden(t, a.do("POST", "/*/_search", `{}`, as("writer")...), auth.ActionSearch, "writer")
	})
}

func TestSecurityBulkRefusesItemsAlone(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	body := "{\"index\":{\"_index\":\"logs-a\",\"_id\":\"b1\"}}\n{\"x\":1}\n" +
		"{\"index\":{\"_index\":\"secret\",\"_id\":\"b2\"}}\n{\"x\":2}\n" +
		"{\"delete\":{\"_index\":\"logs-a\",\"_id\":\"1\"}}\n" +
		"{\"create\":{\"_index\":\"logs-new\",\"_id\":\"b3\"}}\n{\"x\":3}\n"
	out := a.must(200, "POST", "/_bulk?refresh=true", body, as("writer")...)
	require.Equal(t, true, out["errors"])
	require.EqualValues(t, 201, path(t, out, "items", 0, "index", "status"))
	require.EqualValues(t, 403, path(t, out, "items", 1, "index", "status"))
	require.Equal(t, "security_exception", path(t, out, "items", 1, "index", "error", "type"))
	require.Contains(t, path(t, out, "items", 1, "index", "error", "reason"), "action [indices:data/write/index] is unauthorized for user [writer]")
	require.EqualValues(t, 200, path(t, out, "items", 2, "delete", "status"))
	require.EqualValues(t, 403, path(t, out, "items", 3, "create", "status"), "auto-creating logs-new needs create_index")
	a.must(404, "GET", "/secret/_doc/b2", "", as("elastic")...)
	a.must(200, "GET", "/logs-a/_doc/b1", "", as("elastic")...)
}

func TestSecurityMgetAndMsearchRefuseEntriesAlone(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	out := a.must(200, "POST", "/_mget", `{"docs":[{"_index":"logs-a","_id":"1"},{"_index":"secret","_id":"1"}]}`, as("reader")...)
	require.Equal(t, true, path(t, out, "docs", 0, "found"))
	require.Equal(t, "security_exception", path(t, out, "docs", 1, "error", "type"))
	body := "{\"index\":\"logs-a\"}\n{}\n{\"index\":\"secret\"}\n{}\n"
	out = a.must(200, "POST", "/_msearch", body, append(as("reader"), "Content-Type", "application/x-ndjson")...)
	require.EqualValues(t, 200, path(t, out, "responses", 0, "status"))
	require.EqualValues(t, 403, path(t, out, "responses", 1, "status"))
	require.Equal(t, "security_exception", path(t, out, "responses", 1, "error", "type"))
}

// createKey creates an API key as user with body and returns its reply.
func createKey(t *testing.T, a *secureAPI, user, body string) map[string]any {
	t.Helper()
	out := a.must(200, "POST", "/_security/api_key", body, as(user)...)
	for _, k := range []string{"id", "name", "api_key", "encoded"} {
		require.NotEmpty(t, out[k], k)
	}
	return out
}

func TestSecurityAPIKeyIsNarrowedBelowItsOwner(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	narrow := createKey(t, a, "elastic", `{"name":"ro","role_descriptors":{"r":{"indices":[{"names":["logs-*"],"privileges":["read"]}]}}}`)
	key := withKey(narrow["encoded"].(string))
	a.must(200, "POST", "/logs-a/_search", `{}`, key...)
	r := a.do("PUT", "/logs-a/_doc/9", `{"a":1}`, key...)
	require.Equal(t, 403, r.Status, "body: %s", r.Body)
	require.Contains(t, string(r.Body), "API key id ["+narrow["id"].(string)+"] of user [elastic]")
	require.Equal(t, 403, a.do("POST", "/secret/_search", `{}`, key...).Status)
	require.Equal(t, 403, a.do("GET", "/_cluster/health", "", key...).Status)

	// A key asking for more than its owner has gets only the owner's.
	broad := createKey(t, a, "keyuser", `{"name":"wide","role_descriptors":{"all":{"cluster":["all"],"indices":[{"names":["*"],"privileges":["all"]}]}}}`)
	key = withKey(broad["encoded"].(string))
	a.must(200, "POST", "/logs-a/_search", `{}`, key...)
	require.Equal(t, 403, a.do("POST", "/secret/_search", `{}`, key...).Status)
	require.Equal(t, 403, a.do("PUT", "/logs-a/_doc/9", `{"a":1}`, key...).Status)
	require.Equal(t, 403, a.do("GET", "/_cluster/health", "", key...).Status)

	info := a.must(200, "GET", "/_security/_authenticate", "", key...)
	require.Equal(t, "keyuser", info["username"])
	require.Equal(t, "api_key", info["authentication_type"])
}

func TestSecurityExpiredAndInvalidatedKeysAreRefused(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	short := createKey(t, a, "keyuser", `{"name":"short","expiration":"1h"}`)
	require.NotNil(t, short["expiration"])
	kept := createKey(t, a, "keyuser", `{"name":"kept"}`)
	a.must(200, "GET", "/_security/_authenticate", "", withKey(short["encoded"].(string))...)

	a.clock.Advance(time.Hour)
	r := a.do("GET", "/_security/_authenticate", "", withKey(short["encoded"].(string))...)
	require.Equal(t, 401, r.Status, "an expired key: %s", r.Body)

	a.must(200, "GET", "/_security/_authenticate", "", withKey(kept["encoded"].(string))...)
	out := a.must(200, "DELETE", "/_security/api_key", `{"ids":["`+kept["id"].(string)+`"]}`, as("keyuser")...)
	require.Equal(t, []any{kept["id"]}, out["invalidated_api_keys"])
	r = a.do("GET", "/_security/_authenticate", "", withKey(kept["encoded"].(string))...)
	require.Equal(t, 401, r.Status, "an invalidated key: %s", r.Body)

	out = a.must(200, "DELETE", "/_security/api_key", `{"ids":["`+kept["id"].(string)+`"]}`, as("keyuser")...)
	require.Equal(t, []any{kept["id"]}, out["previously_invalidated_api_keys"])
}

func TestSecurityAPIKeysOwnAndAll(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	mine := createKey(t, a, "keyuser", `{"name":"mine"}`)
	theirs := createKey(t, a, "elastic", `{"name":"theirs"}`)

	out := a.must(200, "GET", "/_security/api_key", "", as("keyuser")...)
	keys := out["api_keys"].([]any)
	require.Len(t, keys, 1, "manage_own_api_key sees its own keys only")
	require.Equal(t, mine["id"], keys[0].(map[string]any)["id"])

	out = a.must(200, "GET", "/_security/api_key", "", as("elastic")...)
	require.Len(t, out["api_keys"].([]any), 2)

	requireForbidden(t, a.do("DELETE", "/_security/api_key", `{"ids":["`+theirs["id"].(string)+`"]}`, as("keyuser")...), auth.ActionInvalidateAPIKey, "keyuser")
	requireForbidden(t, a.do("GET", "/_security/api_key?id="+theirs["id"].(string), "", as("keyuser")...), auth.ActionGetAPIKey, "keyuser")
}

func TestSecurityScrollBelongsToItsOwner(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	out := a.must(200, "POST", "/logs-a/_search?scroll=1m", `{"size":1}`, as("reader")...)
	id := out["_scroll_id"].(string)
	r := a.do("POST", "/_search/scroll", `{"scroll":"1m","scroll_id":"`+id+`"}`, as("reader2")...)
	require.Equal(t, 404, r.Status, "another user's scroll: %s", r.Body)
	require.Equal(t, "search_context_missing_exception", errorType(t, r))
	r = a.do("DELETE", "/_search/scroll", `{"scroll_id":"`+id+`"}`, as("reader2")...)
	require.Equal(t, 404, r.Status, "another user's scroll is not cleared: %s", r.Body)
	a.must(200, "POST", "/_search/scroll", `{"scroll":"1m","scroll_id":"`+id+`"}`, as("reader")...)
	a.must(200, "DELETE", "/_search/scroll", `{"scroll_id":"`+id+`"}`, as("reader")...)

	pit := a.must(200, "POST", "/logs-a/_pit?keep_alive=1m", "", as("reader")...)["id"].(string)
	body := `{"pit":{"id":"` + pit + `"}}`
	require.Equal(t, 404, a.do("POST", "/_search", body, as("reader2")...).Status)
	require.Equal(t, 404, a.do("DELETE", "/_pit", `{"id":"`+pit+`"}`, as("reader2")...).Status)
	a.must(200, "POST", "/_search", body, as("reader")...)
	a.must(200, "DELETE", "/_pit", `{"id":"`+pit+`"}`, as("reader")...)
}

func TestSecurityUserAndRoleAPIs(t *testing.T) {
	a := newSecureAPI(t, apiConfig())
	adm := as("secadm")
	out := a.must(200, "PUT", "/_security/user/jane", `{"password":"jane-pw-1","roles":["logs_read"],"full_name":"Jane"}`, adm...)
	require.Equal(t, true, out["created"])
	out = a.must(200, "PUT", "/_security/user/jane", `{"roles":["logs_read"],"email":"j@example.com"}`, adm...)
	require.Equal(t, false, out["created"], "an update keeps the password")
	jane := []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("jane:jane-pw-1"))}
	a.must(200, "POST", "/logs-a/_search", `{}`, jane...)

	out = a.must(200, "GET", "/_security/user/jane", "", adm...)
	require.Equal(t, "j@example.com", path(t, out, "jane", "email"))
	require.NotContains(t, string(mustJSON(t, out)), "password")
	a.must(404, "GET", "/_security/user/nobody", "", adm...)

	// A user changes its own password without manage_security.
	a.must(200, "POST", "/_security/user/_password", `{"password":"jane-pw-2"}`, jane...)
	require.Equal(t, 401, a.do("GET", "/_security/_authenticate", "", jane...).Status)
	jane = []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("jane:jane-pw-2"))}
	a.must(200, "GET", "/_security/_authenticate", "", jane...)

	a.must(200, "PUT", "/_security/user/jane/_disable", "", adm...)
	require.Equal(t, 401, a.do("GET", "/_security/_authenticate", "", jane...).Status)
	a.must(200, "PUT", "/_security/user/jane/_enable", "", adm...)
	a.must(200, "GET", "/_security/_authenticate", "", jane...)

	r := a.do("PUT", "/_security/user/short", `{"password":"abc"}`, adm...)
	require.Equal(t, 400, r.Status)
	require.Contains(t, string(r.Body), "passwords must be at least [6] characters long")
	require.Equal(t, 400, a.do("PUT", "/_security/user/elastic", `{"password":"elastic-pw2"}`, adm...).Status, "reserved")
	require.Equal(t, 400, a.do("PUT", "/_security/user/nopw", `{"roles":[]}`, adm...).Status, "a new user needs a password")

	out = a.must(200, "PUT", "/_security/role/team", `{"indices":[{"names":["team-*"],"privileges":["read"]}]}`, adm...)
	require.Equal(t, true, path(t, out, "role", "created"))
	out = a.must(200, "GET", "/_security/role/team", "", adm...)
	require.Equal(t, []any{"team-*"}, path(t, out, "team", "indices", 0, "names"))
	out = a.must(200, "GET", "/_security/role", "", adm...)
	require.Contains(t, out, "superuser")
	require.Equal(t, 400, a.do("PUT", "/_security/role/bad", `{"indices":[{"names":["x"],"privileges":["nope"]}]}`, adm...).Status)
	require.Equal(t, 400, a.do("PUT", "/_security/role/superuser", `{}`, adm...).Status)
	a.must(200, "DELETE", "/_security/role/team", "", adm...)
	a.must(404, "DELETE", "/_security/role/team", "", adm...)
	a.must(200, "DELETE", "/_security/user/jane", "", adm...)
	a.must(404, "DELETE", "/_security/user/jane", "", adm...)

	info := a.must(200, "GET", "/_security/_authenticate", "", as("elastic")...)
	require.Equal(t, "reserved", path(t, info, "authentication_realm", "type"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestSecurityEveryRouteIsGuarded sends every route, with its path
// parameters filled in, without credentials (401), as a user with no
// privileges (never 2xx) and as the superuser (never 2xx without a
// decision, which the hook of newSecureAPI checks).
func TestSecurityEveryRouteIsGuarded(t *testing.T) {
	a := newSecureAPI(t, httpapi.Config{ClusterName: "test-cluster", NodeName: "node-1", NodeID: "n1", MaxBodyBytes: 1 << 20, EnablePprof: true})
	fill := strings.NewReplacer("{index}", "logs-a", "{id}", "1", "{name}", "nobody", "{scroll_id}", "abc", "{metric}", "docs",
		"{node_id}", "n1", "{$}", "")
	// What a principal with no privileges may still do: who it is, its
	// own password (the empty body is a 400).
	open := map[string]bool{"GET /_security/_authenticate": true}
	for _, pattern := range httpapi.RoutePatterns() {
		method, p, _ := strings.Cut(pattern, " ")
		p = fill.Replace(p)
		if strings.HasPrefix(p, "/debug/pprof/") && (strings.HasSuffix(p, "profile") || strings.HasSuffix(p, "trace")) {
			p += "?seconds=1"
		}
		t.Run(pattern, func(t *testing.T) {
			r := a.do(method, p, "{}")
			require.Equal(t, 401, r.Status, "without credentials: %s", r.Body)
			r = a.do(method, p, "{}", as("nopriv")...)
			if !open[pattern] {
				require.True(t, r.Status >= 400, "a principal without privileges got %d: %s", r.Status, r.Body)
			}
			a.do(method, p, "{}", as("elastic")...)
		})
	}
}
