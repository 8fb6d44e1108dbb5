package ctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/security/auth"
)

// Credentials the secure fake accepts.
const (
	adminUser     = "admin"
	adminPassword = "s3cret-admin-pw"
	apiKeyID      = "key-id-1"
	apiKeySecret  = "key-secret-1"
)

var encodedAPIKey = base64.StdEncoding.EncodeToString([]byte(apiKeyID + ":" + apiKeySecret))

// secureFake is an https stand-in for a node with security on: it answers
// 401 in Elasticsearch's shape unless the request carries the admin's
// Basic credentials or the API key, and serves enough of /_security to
// check what the users and roles commands send.
type secureFake struct {
	mu       sync.Mutex
	auths    []string          // Authorization header of each request
	requests []string          // "METHOD /path"
	bodies   map[string][]byte // last body per "METHOD /path"
}

func (f *secureFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.requests = append(f.requests, key)
	f.bodies[key] = body
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	user, pw, basic := r.BasicAuth()
	okBasic := basic && user == adminUser && pw == adminPassword
	okKey := r.Header.Get("Authorization") == "ApiKey "+encodedAPIKey
	if !okBasic && !okKey {
		w.Header().Set("WWW-Authenticate", `Basic realm="security", charset="UTF-8"`)
		w.WriteHeader(http.StatusUnauthorized)
		reason := "missing authentication credentials for REST request [" + r.URL.Path + "]"
		if basic {
			reason = fmt.Sprintf("unable to authenticate user [%s] for REST request [%s]", user, r.URL.Path)
		}
		fmt.Fprintf(w, `{"error":{"root_cause":[{"type":"security_exception","reason":%q}],"type":"security_exception","reason":%q},"status":401}`, reason, reason)
		return
	}
	switch {
	case key == "GET /_cluster/health":
		fmt.Fprint(w, `{"cluster_name":"weft","status":"green","number_of_nodes":1}`)
	case key == "GET /_security/user":
		fmt.Fprint(w, `{"elastic":{"username":"elastic","roles":["superuser"],"full_name":null,"email":null,"metadata":{"_reserved":true},"enabled":true},`+
			`"bob":{"username":"bob","roles":["viewer","logs"],"full_name":"Bob B","email":"bob@example.org","metadata":{},"enabled":false}}`)
	case key == "GET /_security/user/bob":
		fmt.Fprint(w, `{"bob":{"username":"bob","roles":["viewer"],"full_name":null,"email":null,"metadata":{},"enabled":true}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_security/user/"):
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{}`)
	case key == "PUT /_security/user/bob":
		fmt.Fprint(w, `{"created":true}`)
	case key == "PUT /_security/user/ann":
		fmt.Fprint(w, `{"created":false}`)
	case key == "POST /_security/user/bob/_password", key == "POST /_security/user/bob/_enable", key == "POST /_security/user/bob/_disable":
		fmt.Fprint(w, `{}`)
	case key == "DELETE /_security/user/bob", key == "DELETE /_security/role/logs":
		fmt.Fprint(w, `{"found":true}`)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"found":false}`)
	case key == "GET /_security/role":
		fmt.Fprint(w, `{"viewer":{"cluster":["monitor"],"indices":[{"names":["*"],"privileges":["read","view_index_metadata","monitor"]}],"metadata":{"_reserved":true},"transient_metadata":{"enabled":true}},`+
			`"logs":{"cluster":[],"indices":[{"names":["logs-*","metrics-*"],"privileges":["read"]}],"metadata":{},"transient_metadata":{"enabled":true}}}`)
	case key == "GET /_security/role/logs":
		fmt.Fprint(w, `{"logs":{"cluster":[],"indices":[{"names":["logs-*"],"privileges":["read"]}],"metadata":{},"transient_metadata":{"enabled":true}}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_security/role/"):
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{}`)
	case key == "PUT /_security/role/logs":
		fmt.Fprint(w, `{"role":{"created":true}}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"type":"fake","reason":"no route %s"},"status":404}`, key)
	}
}

// startSecureFake starts the fake on https with httptest's self-signed
// certificate and returns it, its URL and a PEM file of that certificate.
func startSecureFake(t *testing.T) (*secureFake, string, string) {
	t.Helper()
	f := &secureFake{bodies: map[string][]byte{}}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = slog.NewLogLogger(testlog.New(t).Handler(), slog.LevelWarn) // refused handshakes go to t.Log
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	return f, srv.URL, ca
}

type ctlRun struct {
	env    map[string]string
	stdin  string
	prompt func(string) (auth.Secret, error)
}

func (r ctlRun) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, IO{
		Stdin: strings.NewReader(r.stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return r.env[k] },
		Prompt: r.prompt,
	})
	return code, stdout.String(), stderr.String()
}

func basicHeader(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

func TestResolveCredentials(t *testing.T) {
	tests := []struct {
		name         string
		flags        authFlags
		env          map[string]string
		want         Credentials
		wantCA       string
		needPassword bool
		err          string // substring of the refusal; empty: no error
	}{
		{name: "nothing sends nothing"},
		{name: "user and password flags", flags: authFlags{user: "ann", password: "pw-flag"},
			want: Credentials{Username: "ann", Password: "pw-flag"}},
		{name: "user and password from the environment", env: map[string]string{"WEFT_USER": "ann", "WEFT_PASSWORD": "pw-env"},
			want: Credentials{Username: "ann", Password: "pw-env"}},
		{name: "flags beat the environment", flags: authFlags{user: "ann", password: "pw-flag", cacert: "flag.crt"},
			env:  map[string]string{"WEFT_USER": "bob", "WEFT_PASSWORD": "pw-env", "WEFT_CACERT": "env.crt"},
			want: Credentials{Username: "ann", Password: "pw-flag"}, wantCA: "flag.crt"},
		{name: "user flag takes the password from the environment", flags: authFlags{user: "ann"}, env: map[string]string{"WEFT_PASSWORD": "pw-env"},
			want: Credentials{Username: "ann", Password: "pw-env"}},
		{name: "cacert from the environment", env: map[string]string{"WEFT_CACERT": "env.crt"}, wantCA: "env.crt"},
		{name: "api key flag", flags: authFlags{apiKey: encodedAPIKey}, want: Credentials{APIKey: auth.Secret(encodedAPIKey)}},
		{name: "api key from the environment", env: map[string]string{"WEFT_API_KEY": encodedAPIKey}, want: Credentials{APIKey: auth.Secret(encodedAPIKey)}},
		{name: "api key flag beats a user in the environment", flags: authFlags{apiKey: encodedAPIKey},
			env: map[string]string{"WEFT_USER": "ann", "WEFT_PASSWORD": "pw-env"}, want: Credentials{APIKey: auth.Secret(encodedAPIKey)}},
		{name: "user flag beats an api key in the environment", flags: authFlags{user: "ann", password: "pw-flag"},
			env: map[string]string{"WEFT_API_KEY": encodedAPIKey}, want: Credentials{Username: "ann", Password: "pw-flag"}},
		{name: "user without password asks", flags: authFlags{user: "ann"}, want: Credentials{Username: "ann"}, needPassword: true},
		{name: "user and api key flags together are refused", flags: authFlags{user: "ann", password: "pw-flag", apiKey: encodedAPIKey},
			err: "--user and --api-key are both given"},
		{name: "user and api key variables together are refused", env: map[string]string{"WEFT_USER": "ann", "WEFT_API_KEY": encodedAPIKey},
			err: "WEFT_USER and WEFT_API_KEY are both set"},
		{name: "password flag without user is refused", flags: authFlags{password: "pw-flag"}, err: "--password without a user"},
		{name: "password flag with an api key is refused", flags: authFlags{password: "pw-flag", apiKey: encodedAPIKey}, err: "--password goes with --user"},
		{name: "password variable without user is ignored", env: map[string]string{"WEFT_PASSWORD": "pw-env"}},
		{name: "api key that is not encoded is refused", flags: authFlags{apiKey: "raw-secret-part"}, err: `not the "encoded" value`},
		{name: "user with a colon is refused", flags: authFlags{user: "a:b", password: "pw-flag"}, err: "contains ':'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			creds, ca, need, err := resolveCredentials(tt.flags, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				require.ErrorIs(t, err, ErrBadCredentials)
				require.ErrorContains(t, err, tt.err)
				for _, secret := range []string{"pw-flag", "pw-env", "raw-secret-part", encodedAPIKey, apiKeySecret} {
					require.NotContains(t, err.Error(), secret)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, creds)
			require.Equal(t, tt.wantCA, ca)
			require.Equal(t, tt.needPassword, need)
		})
	}
}

// TestCredentialsNotPrinted: a Credentials value formatted by mistake
// shows no secret.
func TestCredentialsNotPrinted(t *testing.T) {
	c := Credentials{Username: "ann", Password: "pw-hidden", APIKey: "key-hidden"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		require.NotContains(t, s, "pw-hidden")
		require.NotContains(t, s, "key-hidden")
	}
}

// TestAuthorizationSent checks the exact Authorization header of each way
// to authenticate, over real TLS trusted through --cacert.
func TestAuthorizationSent(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		prompt string // the password the terminal gives; empty: no terminal
		want   string
	}{
		{name: "basic from flags", args: []string{"--user", adminUser, "--password", adminPassword}, want: basicHeader(adminUser, adminPassword)},
		{name: "basic from the environment", env: map[string]string{"WEFT_USER": adminUser, "WEFT_PASSWORD": adminPassword}, want: basicHeader(adminUser, adminPassword)},
		{name: "basic with a prompted password", args: []string{"--user", adminUser}, prompt: adminPassword, want: basicHeader(adminUser, adminPassword)},
		{name: "api key from the flag", args: []string{"--api-key", encodedAPIKey}, want: "ApiKey " + encodedAPIKey},
		{name: "api key from the environment", env: map[string]string{"WEFT_API_KEY": encodedAPIKey}, want: "ApiKey " + encodedAPIKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, url, ca := startSecureFake(t)
			env := map[string]string{"WEFT_ADDR": url, "WEFT_CACERT": ca}
			for k, v := range tt.env {
				env[k] = v
			}
			var asked []string
			r := ctlRun{env: env}
			if tt.prompt != "" {
				r.prompt = func(p string) (auth.Secret, error) { asked = append(asked, p); return auth.Secret(tt.prompt), nil }
			}
			code, stdout, stderr := r.run(t, append(tt.args, "health")...)
			require.Equal(t, ExitOK, code, stderr)
			require.Contains(t, stdout, "weft: green")
			require.Equal(t, []string{tt.want}, f.auths)
			if tt.prompt != "" {
				require.Equal(t, []string{"Password for user admin: "}, asked)
			}
		})
	}
}

// TestCACertTrust: a node whose certificate no trusted CA signed is
// refused unless --cacert names its CA; the system roots stay trusted
// beside it (checked in cmd/searchctl with SSL_CERT_FILE).
func TestCACertTrust(t *testing.T) {
	_, url, ca := startSecureFake(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644))
	plain := httptest.NewServer(newFake())
	t.Cleanup(plain.Close)
	creds := []string{"--addr", url, "--user", adminUser, "--password", adminPassword}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{name: "untrusted without cacert", code: ExitUnreachable, stderr: "pass --cacert (WEFT_CACERT) with the cluster's ca.crt"},
		{name: "trusted with the cacert flag", args: []string{"--cacert", ca}},
		{name: "trusted with WEFT_CACERT", env: map[string]string{"WEFT_CACERT": ca}},
		{name: "missing cacert file", args: []string{"--cacert", filepath.Join(t.TempDir(), "nope.crt")}, code: ExitUsage, stderr: "no such file"},
		{name: "cacert file without a certificate", args: []string{"--cacert", notPEM}, code: ExitUsage, stderr: "holds no PEM certificate"},
		{name: "http to an https node", args: []string{"--cacert", ca, "--addr", strings.Replace(url, "https://", "http://", 1)},
			code: ExitFailed, stderr: "the node serves HTTPS: use an https:// address"},
		{name: "https to an http node", args: []string{"--cacert", ca, "--addr", strings.Replace(plain.URL, "http://", "https://", 1)},
			code: ExitUnreachable, stderr: "the node does not speak TLS there: use an http:// address"},
		{name: "a certificate that does not name the host", args: []string{"--cacert", ca, "--addr", strings.Replace(url, "127.0.0.1", "localhost", 1)},
			code: ExitUnreachable, stderr: "the node's certificate does not name this host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := ctlRun{env: tt.env}.run(t, append(append(creds, tt.args...), "health")...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stderr, tt.stderr)
			if tt.code == ExitOK {
				require.Contains(t, stdout, "weft: green")
			}
			require.NotContains(t, stderr, adminPassword)
		})
	}
}

// TestAuthRefusals: what searchctl says when it cannot or may not
// authenticate, never showing a secret.
func TestAuthRefusals(t *testing.T) {
	_, url, ca := startSecureFake(t)
	base := map[string]string{"WEFT_ADDR": url, "WEFT_CACERT": ca}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr []string
	}{
		{name: "no credentials", env: base, args: []string{"health"}, code: ExitFailed,
			stderr: []string{"401 security_exception: missing authentication credentials", "pass --user with --password (or WEFT_USER and WEFT_PASSWORD), or --api-key (WEFT_API_KEY)"}},
		{name: "wrong password", env: with("WEFT_USER", adminUser, "WEFT_PASSWORD", "wrong-pw-123"), args: []string{"health"}, code: ExitFailed,
			stderr: []string{"401 security_exception: unable to authenticate user [admin]", `the node refused user "admin": check --user and --password`}},
		{name: "wrong api key", env: with("WEFT_API_KEY", base64.StdEncoding.EncodeToString([]byte("id:wrong-key-123"))), args: []string{"health"}, code: ExitFailed,
			stderr: []string{"the node refused the API key"}},
		{name: "user without password off a terminal", env: with("WEFT_USER", adminUser), args: []string{"health"}, code: ExitUsage,
			stderr: []string{`user "admin" has no password and standard input is not a terminal to ask on; set WEFT_PASSWORD`}},
		{name: "user and api key", env: base, args: []string{"--user", adminUser, "--api-key", encodedAPIKey, "health"}, code: ExitUsage,
			stderr: []string{"--user and --api-key are both given"}},
		{name: "credentials in the address", env: base, args: []string{"--addr", "https://admin:addr-pw-123@127.0.0.1:1", "health"}, code: ExitUsage,
			stderr: []string{"holds credentials; pass them with --user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := ctlRun{env: tt.env}.run(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, s := range tt.stderr {
				require.Contains(t, stderr, s)
			}
			for _, secret := range []string{adminPassword, "wrong-pw-123", "wrong-key-123", "addr-pw-123", encodedAPIKey} {
				require.NotContains(t, stdout+stderr, secret)
			}
		})
	}
}

func TestClearTextWarning(t *testing.T) {
	srv := httptest.NewServer(newFake())
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		name, addr string
		warn       bool
	}{
		{"loopback is quiet", srv.URL, false},
		{"another host is warned about", strings.Replace(srv.URL, "127.0.0.1", "localhost.invalid", 1), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, stderr := ctlRun{env: map[string]string{"WEFT_USER": "ann", "WEFT_PASSWORD": "pw-123456"}}.run(t, "--addr", tt.addr, "--timeout", "5s", "health")
			require.Equal(t, tt.warn, strings.Contains(stderr, "sending credentials in clear text"), stderr)
		})
	}
}

func TestUsersAndRolesCommands(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("from-a-file\n"), 0o600))
	roleFile := filepath.Join(t.TempDir(), "role.json")
	require.NoError(t, os.WriteFile(roleFile, []byte(`{"cluster":["monitor"],"indices":[{"names":["logs-*"],"privileges":["read"]}]}`), 0o644))
	badRole := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(badRole, []byte(`{"indices":[{"names":["logs-*"],"privileges":["reed"]}]}`), 0o644))

	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stdout   []string
		stderr   []string
		sent     string // request expected, "METHOD /path"
		sentBody string // its exact body, when set
	}{
		{name: "users list", args: []string{"users", "list"}, sent: "GET /_security/user",
			stdout: []string{"USER     ROLES        ENABLED  FULL NAME  EMAIL\nbob      viewer,logs  false    Bob B      bob@example.org\nelastic  superuser    true     -          -\n"}},
		{name: "users list json", args: []string{"users", "list", "-o", "json"}, stdout: []string{`"username": "bob"`}},
		{name: "users get", args: []string{"users", "get", "bob"}, sent: "GET /_security/user/bob", stdout: []string{"bob   viewer  true"}},
		{name: "users get missing", args: []string{"users", "get", "nobody"}, code: ExitFailed, stderr: []string{"404 Not Found: user [nobody] does not exist"}},
		{name: "users create from stdin", args: []string{"users", "create", "bob", "--roles", "viewer,logs", "--password-stdin", "--full-name", "Bob B"},
			stdin: "from-stdin-pw\n", stdout: []string{"created user bob (roles: viewer, logs)"},
			sent: "PUT /_security/user/bob", sentBody: `{"full_name":"Bob B","password":"from-stdin-pw","roles":["viewer","logs"]}`},
		{name: "users create from a file", args: []string{"users", "create", "bob", "--roles", "viewer", "--password-file", pwFile},
			sent: "PUT /_security/user/bob", sentBody: `{"password":"from-a-file","roles":["viewer"]}`},
		{name: "users create existing without password", args: []string{"users", "create", "ann", "--roles", "viewer"},
			stdout: []string{"updated user ann"}, sent: "PUT /_security/user/ann", sentBody: `{"roles":["viewer"]}`},
		{name: "users create without roles sends an empty list", args: []string{"users", "create", "ann"},
			sent: "PUT /_security/user/ann", sentBody: `{"roles":[]}`},
		{name: "users create refuses a password flag", args: []string{"users", "create", "bob", "--roles", "viewer", "--password", "on-the-command-line"},
			code: ExitUsage, stderr: []string{"--password is the password of --user, who runs the command; user bob's new password comes from --password-stdin or --password-file"}},
		{name: "users create refuses a short password", args: []string{"users", "create", "bob", "--password-stdin"}, stdin: "abc\n",
			code: ExitUsage, stderr: []string{"passwords must be at least [6] characters long"}},
		{name: "users create refuses two password sources", args: []string{"users", "create", "bob", "--password-stdin", "--password-file", pwFile},
			code: ExitUsage, stderr: []string{"--password-stdin and --password-file are both given"}},
		{name: "users password from stdin", args: []string{"users", "password", "bob", "--password-stdin"}, stdin: "new-password\r\n",
			stdout: []string{"changed the password of user bob"}, sent: "POST /_security/user/bob/_password", sentBody: `{"password":"new-password"}`},
		{name: "users password without a source off a terminal", args: []string{"users", "password", "bob"},
			code: ExitUsage, stderr: []string{"give user bob's new password with --password-stdin or --password-file"}},
		{name: "users enable", args: []string{"users", "enable", "bob"}, stdout: []string{"enabled user bob"}, sent: "POST /_security/user/bob/_enable"},
		{name: "users disable", args: []string{"users", "disable", "bob"}, stdout: []string{"disabled user bob"}, sent: "POST /_security/user/bob/_disable"},
		{name: "users delete", args: []string{"users", "delete", "bob"}, stdout: []string{"deleted user bob"}, sent: "DELETE /_security/user/bob"},
		{name: "users delete missing", args: []string{"users", "delete", "nobody"}, code: ExitFailed, stderr: []string{"user [nobody] does not exist"}},
		{name: "users without subcommand", args: []string{"users"}, code: ExitUsage},
		{name: "roles list", args: []string{"roles", "list"}, sent: "GET /_security/role",
			stdout: []string{"ROLE    CLUSTER  INDICES                             BUILT-IN\nlogs    -        logs-*,metrics-*:read               false\nviewer  monitor  *:read,view_index_metadata,monitor  true\n"}},
		{name: "roles get", args: []string{"roles", "get", "logs"}, stdout: []string{"logs  -        logs-*:read"}},
		{name: "roles get missing", args: []string{"roles", "get", "nope"}, code: ExitFailed, stderr: []string{"role [nope] does not exist"}},
		{name: "roles put from flags", args: []string{"roles", "put", "logs", "--index-privileges", "logs-*,metrics-*:read,view_index_metadata", "--index-privileges", "audit:read", "--cluster", "monitor"},
			stdout: []string{"created role logs"}, sent: "PUT /_security/role/logs",
			sentBody: `{"cluster":["monitor"],"indices":[{"names":["logs-*","metrics-*"],"privileges":["read","view_index_metadata"]},{"names":["audit"],"privileges":["read"]}]}`},
		{name: "roles put from a file", args: []string{"roles", "put", "logs", "--file", roleFile}, sent: "PUT /_security/role/logs",
			sentBody: `{"cluster":["monitor"],"indices":[{"names":["logs-*"],"privileges":["read"]}]}`},
		{name: "roles put with an unknown privilege", args: []string{"roles", "put", "logs", "--file", badRole}, code: ExitUsage, stderr: []string{"--file " + badRole, "reed"}},
		{name: "roles put with a malformed entry", args: []string{"roles", "put", "logs", "--index-privileges", "logs-*"}, code: ExitUsage, stderr: []string{"is not NAMES:PRIVILEGES"}},
		{name: "roles put with file and flags", args: []string{"roles", "put", "logs", "--file", roleFile, "--cluster", "monitor"}, code: ExitUsage, stderr: []string{"use one"}},
		{name: "roles put with nothing", args: []string{"roles", "put", "logs"}, code: ExitUsage, stderr: []string{"give --file"}},
		{name: "roles delete", args: []string{"roles", "delete", "logs"}, stdout: []string{"deleted role logs"}, sent: "DELETE /_security/role/logs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, url, ca := startSecureFake(t)
			r := ctlRun{stdin: tt.stdin, env: map[string]string{"WEFT_ADDR": url, "WEFT_CACERT": ca, "WEFT_USER": adminUser, "WEFT_PASSWORD": adminPassword}}
			code, stdout, stderr := r.run(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, s := range tt.stdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range tt.stderr {
				require.Contains(t, stderr, s)
			}
			if tt.sent != "" {
				require.Contains(t, f.requests, tt.sent)
				if tt.sentBody != "" {
					require.JSONEq(t, tt.sentBody, string(f.bodies[tt.sent]))
				}
			}
			if code == ExitUsage {
				require.Empty(t, f.requests, "a refused command sends nothing")
			}
			require.NotContains(t, stdout+stderr, adminPassword)
		})
	}
}

// TestPromptNewPassword: on a terminal, users password asks twice and
// refuses two different answers.
func TestPromptNewPassword(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answers []string
		code    int
		sent    bool
	}{
		{"same twice", []string{"prompted-pw", "prompted-pw"}, ExitOK, true},
		{"different", []string{"prompted-pw", "prompted-px"}, ExitUsage, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, url, ca := startSecureFake(t)
			answers := tt.answers
			r := ctlRun{env: map[string]string{"WEFT_ADDR": url, "WEFT_CACERT": ca, "WEFT_USER": adminUser, "WEFT_PASSWORD": adminPassword},
				prompt: func(string) (auth.Secret, error) {
					if len(answers) == 0 {
						return "", errors.New("asked too often")
					}
					a := answers[0]
					answers = answers[1:]
					return auth.Secret(a), nil
				}}
			code, _, stderr := r.run(t, "users", "password", "bob")
			require.Equal(t, tt.code, code, stderr)
			_, sent := f.bodies["POST /_security/user/bob/_password"]
			require.Equal(t, tt.sent, sent)
			if tt.sent {
				require.JSONEq(t, `{"password":"prompted-pw"}`, string(f.bodies["POST /_security/user/bob/_password"]))
			}
		})
	}
}
