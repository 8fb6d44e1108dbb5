package authhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/security/auth"
)

const bobPassword = "bob-password-42"

// lockedBuffer is an audit sink the test reads while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	srv      *httptest.Server
	mw       *Middleware
	audit    *lockedBuffer
	calls    atomic.Int64
	key      auth.CreatedAPIKey
	lastSeen atomic.Value // auth.Principal
}

// newHarness serves a handler behind the middleware on 127.0.0.1:0. The
// handler records the principal and authorizes a search on ?index=.
func newHarness(t *testing.T) *harness {
	t.Helper()
	hash, err := auth.BcryptHasher{Cost: bcrypt.MinCost}.Hash(bobPassword)
	require.NoError(t, err)
	store := auth.MapStore{
		Users:   map[string]auth.User{"bob": {Username: "bob", PasswordHash: hash, Roles: []string{"logs_reader"}, Enabled: true}},
		Roles:   map[string]auth.Role{"logs_reader": {Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read"}}}}},
		APIKeys: map[string]auth.APIKey{},
	}
	cfg := auth.DefaultConfig()
	cfg.Hasher = auth.BcryptHasher{Cost: bcrypt.MinCost}
	a, err := auth.NewAuthenticator(store, cfg)
	require.NoError(t, err)
	bob, err := a.Authenticate(context.Background(), auth.BasicCredentials("bob", bobPassword))
	require.NoError(t, err)
	k, created, err := auth.NewAPIKey(auth.CreateAPIKeyRequest{Name: "ci"}, bob, a.RoleDescriptors(bob.Roles), time.Now())
	require.NoError(t, err)
	store.APIKeys[k.ID] = k

	h := &harness{audit: &lockedBuffer{}, key: created}
	h.mw, err = New(Config{Authenticator: a, Audit: audit.New(h.audit, audit.Options{IncludeGranted: true}), Logger: testlog.New(t)})
	require.NoError(t, err)
	h.srv = httptest.NewServer(h.mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		h.lastSeen.Store(p)
		indices := []string{r.URL.Query().Get("index")}
		err := auth.CheckIndices(p, auth.ActionSearch, indices)
		h.mw.Audit(r, p, auth.ActionSearch, indices, err)
		if resp, ok := auth.ResponseFor(err, r.URL.RequestURI(), auth.Credentials{}); ok {
			WriteResponse(w, r, resp)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"user":%q}`, p.Username)
	})))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *harness) do(t *testing.T, method, path string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := h.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func basic(user, pw string) http.Header {
	return http.Header{"Authorization": {auth.BasicCredentials(user, pw).Header()}}
}

var wwwAuthenticate = []string{`Basic realm="security", charset="UTF-8"`, "ApiKey"}

func TestUnauthenticatedRequestsGet401(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		path   string
		reason string
		user   string
	}{
		{name: "no credentials", path: "/", reason: "missing authentication credentials for REST request [/]"},
		{name: "no credentials keeps the query in the reason", path: "/_search?pretty", reason: "missing authentication credentials for REST request [/_search?pretty]"},
		{name: "wrong password", header: basic("bob", "wrong-password"), path: "/_search", reason: "unable to authenticate user [bob] for REST request [/_search]", user: "bob"},
		{name: "unknown user", header: basic("mallory", bobPassword), path: "/_search", reason: "unable to authenticate user [mallory] for REST request [/_search]", user: "mallory"},
		{name: "bad api key", header: http.Header{"Authorization": {auth.APIKeyCredentials("nope", "secret-secret").Header()}}, path: "/",
			reason: "unable to authenticate with provided credentials and anonymous access is not allowed for this request"},
		{name: "malformed", header: http.Header{"Authorization": {"Basic %%%"}}, path: "/", reason: "invalid basic authentication header encoding"},
		{name: "unsupported scheme", header: http.Header{"Authorization": {"Bearer abc"}}, path: "/", reason: "unsupported authentication scheme [Bearer]; send Basic or ApiKey credentials"},
		{name: "two headers", header: http.Header{"Authorization": {auth.BasicCredentials("bob", bobPassword).Header(), auth.BasicCredentials("bob", bobPassword).Header()}}, path: "/",
			reason: "more than one Authorization header; send exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			resp, body := h.do(t, http.MethodGet, tc.path, tc.header, "")
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, wwwAuthenticate, resp.Header.Values("WWW-Authenticate"))
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			want, err := json.Marshal(auth.UnauthorizedResponse(tc.reason))
			require.NoError(t, err)
			require.JSONEq(t, string(want), body)
			require.Zero(t, h.calls.Load(), "the handler must not run")

			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(h.audit.String()), &line), h.audit.String())
			require.Equal(t, "authentication_failed", line["event.action"])
			require.Equal(t, strings.SplitN(tc.path, "?", 2)[0], line["url.path"])
			require.NotEmpty(t, line["request.id"])
			require.Contains(t, line["origin.address"], "127.0.0.1:")
			if tc.user != "" {
				require.Equal(t, tc.user, line["user.name"])
			}
		})
	}
}

func TestAuthenticatedRequestsReachTheHandler(t *testing.T) {
	h := newHarness(t)
	resp, body := h.do(t, http.MethodGet, "/_search?index=logs-1", basic("bob", bobPassword), "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"user":"bob"}`, body)
	p := h.lastSeen.Load().(auth.Principal)
	require.Equal(t, auth.RealmNative, p.Realm)

	resp, body = h.do(t, http.MethodGet, "/_search?index=logs-1", http.Header{"Authorization": {"ApiKey " + h.key.Encoded}}, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	p = h.lastSeen.Load().(auth.Principal)
	require.Equal(t, h.key.ID, p.APIKeyID)
	require.Equal(t, auth.RealmAPIKey, p.Realm)
	require.EqualValues(t, 2, h.calls.Load())
}

func TestForbiddenIsAudited(t *testing.T) {
	h := newHarness(t)
	resp, body := h.do(t, http.MethodGet, "/_search?index=secret", http.Header{"Authorization": basic("bob", bobPassword)["Authorization"], "X-Opaque-Id": {"req-7"}}, "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	reason := "action [indices:data/read/search] is unauthorized for user [bob] with effective roles [logs_reader] on indices [secret], this action is granted by the index privileges [read,all]"
	want, err := json.Marshal(auth.ForbiddenResponse(reason))
	require.NoError(t, err)
	require.JSONEq(t, string(want), body)
	require.Empty(t, resp.Header.Values("WWW-Authenticate"), "a 403 asks for no credentials")

	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(h.audit.String()), &line))
	require.Equal(t, map[string]any{
		"@timestamp": line["@timestamp"], "event.type": "rest", "event.action": "access_denied", "user.name": "bob", "user.realm": "native",
		"action": "indices:data/read/search", "indices": []any{"secret"}, "origin.address": line["origin.address"], "request.id": "req-7",
		"request.method": "GET", "url.path": "/_search", "reason": reason,
	}, line)
}

// TestAuditNeverHoldsSecrets sends wrong and right passwords and an API
// key, and checks that no secret, nor the header that carries it, reaches
// the audit log.
func TestAuditNeverHoldsSecrets(t *testing.T) {
	h := newHarness(t)
	wrong := "wrong-but-secret-pw"
	for _, hdr := range []http.Header{
		basic("bob", wrong), basic("bob", bobPassword), basic(wrong, wrong),
		{"Authorization": {"ApiKey " + h.key.Encoded}}, {"Authorization": {auth.APIKeyCredentials(h.key.ID, wrong).Header()}},
	} {
		for _, path := range []string{"/_search?index=logs-1", "/_search?index=secret"} {
			h.do(t, http.MethodGet, path, hdr, "")
		}
	}
	log := h.audit.String()
	require.Equal(t, 10, strings.Count(log, "\n"), log)
	for _, secret := range []string{bobPassword, h.key.APIKey, h.key.Encoded, basic("bob", bobPassword).Get("Authorization")[len("Basic "):]} {
		require.NotContains(t, log, secret)
	}
	require.Equal(t, 2, strings.Count(log, wrong), "only the claimed user name [%s] of the third header (sent twice) shows, as ES logs it", wrong)
}

// TestBodyIsNotReadBeforeAuthentication sends only the headers of a request
// announcing a 1000-byte body over a real socket: the 401 must come back
// without the body, and the server must close the connection rather than
// drain it (net/http closes on its own only above 256 KiB unread).
func TestBodyIsNotReadBeforeAuthentication(t *testing.T) {
	h := newHarness(t)
	conn, err := net.DialTimeout("tcp", h.srv.Listener.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\nAuthorization: %s\r\n\r\n",
		1000, auth.BasicCredentials("bob", "wrong-pw").Header())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.True(t, resp.Close, "the server must close instead of draining the body")
	require.Zero(t, h.calls.Load())
}

func TestBodyUntouchedOnRefusal(t *testing.T) {
	h := newHarness(t)
	var read atomic.Bool
	req := httptest.NewRequest(http.MethodPost, "/_bulk", readerFunc(func(p []byte) (int, error) { read.Store(true); return 0, io.EOF }))
	req.Header.Set("Authorization", auth.BasicCredentials("bob", "wrong-pw").Header())
	rec := httptest.NewRecorder()
	h.mw.Wrap(http.NotFoundHandler()).ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.False(t, read.Load(), "the body was read before authentication")
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestHeadGetsNoBody(t *testing.T) {
	h := newHarness(t)
	resp, body := h.do(t, http.MethodHead, "/", nil, "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, body)
	require.Equal(t, wwwAuthenticate, resp.Header.Values("WWW-Authenticate"))
}

func TestNewNeedsAnAuthenticator(t *testing.T) {
	_, err := New(Config{})
	require.ErrorContains(t, err, "Authenticator is required")
}
