package ctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/security/auth"
)

// startNode runs a real node on a loopback port with its data in a
// temporary directory, shut down when the test ends.
func startNode(t *testing.T) string {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NodeName = "ctl-test"
	cfg.Security.Enabled = false // plain HTTP: these tests are about the commands
	n, err := node.New(cfg, testlog.NewLevel(t, slog.LevelWarn))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.Shutdown(ctx))
	})
	return n.URL()
}

type result struct {
	code           int
	stdout, stderr string
}

func searchctl(t *testing.T, addr string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := ctl.Main(context.Background(), append([]string{"--addr", addr}, args...), ctl.IO{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" },
	})
	return result{code, stdout.String(), stderr.String()}
}

// TestAgainstRealNode drives every searchctl command against a real node
// loaded with the checked-in sample emails.
func TestAgainstRealNode(t *testing.T) {
	addr := startNode(t)
	sample := "../../testdata/sample/emails.ndjson"
	lines, err := os.ReadFile(sample)
	require.NoError(t, err)
	nDocs := bytes.Count(lines, []byte("\n"))

	r := searchctl(t, addr, "health")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Regexp(t, `^weft: (green|yellow) `, r.stdout)

	r = searchctl(t, addr, "index", "create", "emails", "--shards", "2", "--replicas", "0", "--mapping", "../../testdata/sample/emails.mapping.json")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)

	r = searchctl(t, addr, "index", "create", "emails")
	require.Equal(t, ctl.ExitFailed, r.code)
	require.Contains(t, r.stderr, "resource_already_exists_exception")

	r = searchctl(t, addr, "bulk", sample, "--index", "emails", "--batch-docs", "150", "--concurrency", "2", "-q")
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "indexed 400 documents")
	require.Contains(t, r.stdout, "3 requests), 0 failed")

	c, err := ctl.NewClient(addr, nil)
	require.NoError(t, err)
	count, err := c.Count(context.Background(), "emails", "")
	require.NoError(t, err)
	require.Equal(t, int64(nDocs), count)

	r = searchctl(t, addr, "count", "emails", "label:spam")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	spam, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	require.NoError(t, err)
	require.Equal(t, bytes.Count(lines, []byte(`"label":"spam"`)), spam)

	r = searchctl(t, addr, "index", "list", "-o", "json")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	var rows []ctl.IndexSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "emails", rows[0].Index)
	require.Equal(t, "2", rows[0].Pri)

	r = searchctl(t, addr, "index", "get", "emails")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `"date": {`)

	// Every hit of a field query really has the word in that field.
	r = searchctl(t, addr, "search", "emails", "subject:linux", "-o", "json", "--size", "50")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	var sr ctl.SearchResponse
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sr))
	require.NotEmpty(t, sr.Hits.Hits)
	for _, h := range sr.Hits.Hits {
		var src struct {
			Subject string `json:"subject"`
		}
		require.NoError(t, json.Unmarshal(h.Source, &src))
		require.Contains(t, strings.ToLower(src.Subject), "linux", "hit %s", h.ID)
	}

	r = searchctl(t, addr, "search", "emails", `label:spam AND subject:"free"`, "--fields", "label,subject")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "ID")
	require.Contains(t, r.stdout, "LABEL")

	// A document the node rejects fails alone; the good one is indexed.
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"id":"good-1","subject":"fine"}`+"\n"+`{"id":"bad-1","date":"not a date"}`+"\n"), 0o644))
	r = searchctl(t, addr, "bulk", bad, "--index", "emails", "-q")
	require.Equal(t, ctl.ExitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "indexed 1 documents")
	require.Contains(t, r.stdout, `line 2: index "bad-1": 400`)
	count, err = c.Count(context.Background(), "emails", "")
	require.NoError(t, err)
	require.Equal(t, int64(nDocs+1), count)

	r = searchctl(t, addr, "index", "delete", "emails")
	require.Equal(t, ctl.ExitOK, r.code, r.stderr)
	r = searchctl(t, addr, "index", "get", "emails")
	require.Equal(t, ctl.ExitFailed, r.code)
	require.Contains(t, r.stderr, "404 index_not_found_exception")
}

// startSecureNode runs a real node with security on (its own CA, HTTPS,
// authentication), the elastic user's password set to elasticPassword,
// and returns its URL and its data directory.
func startSecureNode(t *testing.T, elasticPassword string) (url, dataDir string) {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NodeName = "ctl-secure"
	cfg.Security.Enabled = true
	cfg.Security.ElasticPassword = auth.Secret(elasticPassword)
	n, err := node.New(cfg, testlog.NewLevel(t, slog.LevelWarn))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.Shutdown(ctx))
	})
	return n.URL(), cfg.DataDir
}

// searchctlAs runs searchctl with stdin and the environment env.
func searchctlAs(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := ctl.Main(context.Background(), args, ctl.IO{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] },
	})
	return result{code, stdout.String(), stderr.String()}
}

// TestAgainstSecureNode: against a node with security on, the elastic user
// creates a user and a role through searchctl, the new user authenticates
// and is held to its role, and refusals say what to do.
func TestAgainstSecureNode(t *testing.T) {
	const elasticPW = "elastic-pw-for-ctl"
	addr, data := startSecureNode(t, elasticPW)
	require.True(t, strings.HasPrefix(addr, "https://"), addr)
	ca := filepath.Join(data, "certs", "ca.crt")
	asElastic := []string{"--addr", addr, "--cacert", ca, "--user", "elastic", "--password", elasticPW}

	r := searchctlAs(t, nil, "", "--addr", addr, "--user", "elastic", "--password", elasticPW, "health")
	require.Equal(t, ctl.ExitUnreachable, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "pass --cacert")

	r = searchctlAs(t, nil, "", "--addr", addr, "--cacert", ca, "health")
	require.Equal(t, ctl.ExitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "401 security_exception")
	require.Contains(t, r.stderr, "the node requires authentication: pass --user")

	// The leader writes the elastic password into the Raft state once
	// elected: wait until elastic is let in.
	require.Eventually(t, func() bool {
		return searchctlAs(t, nil, "", append(asElastic, "health")...).code == ctl.ExitOK
	}, 30*time.Second, 100*time.Millisecond, "elastic never authenticated")

	r = searchctlAs(t, nil, "bob-password\n", append(asElastic, "users", "create", "bob", "--roles", "viewer", "--password-stdin")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, "created user bob (roles: viewer)\n", r.stdout)

	bob := map[string]string{"WEFT_ADDR": addr, "WEFT_CACERT": ca, "WEFT_USER": "bob", "WEFT_PASSWORD": "bob-password"}
	r = searchctlAs(t, bob, "", "health")
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Regexp(t, `^weft: (green|yellow) `, r.stdout)

	// viewer reads but cannot manage security.
	r = searchctlAs(t, bob, "", "users", "list")
	require.Equal(t, ctl.ExitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "403 security_exception")

	wrong := map[string]string{"WEFT_ADDR": addr, "WEFT_CACERT": ca, "WEFT_USER": "bob", "WEFT_PASSWORD": "not-bobs-password"}
	r = searchctlAs(t, wrong, "", "health")
	require.Equal(t, ctl.ExitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "401 security_exception")
	require.Contains(t, r.stderr, `the node refused user "bob": check --user and --password`)
	require.NotContains(t, r.stderr, "not-bobs-password")

	r = searchctlAs(t, nil, "", append(asElastic, "roles", "put", "logs_reader", "--index-privileges", "logs-*:read,view_index_metadata", "--cluster", "monitor")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, "created role logs_reader\n", r.stdout)
	r = searchctlAs(t, nil, "", append(asElastic, "roles", "get", "logs_reader")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "logs_reader  monitor  logs-*:read,view_index_metadata  false")

	r = searchctlAs(t, nil, "", append(asElastic, "users", "list")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Regexp(t, `(?m)^bob\s+viewer\s+true\s`, r.stdout)

	// A disabled user is refused; enabled again it is let in; a new
	// password replaces the old one; deleted, it is refused.
	r = searchctlAs(t, nil, "", append(asElastic, "users", "disable", "bob")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, ctl.ExitFailed, searchctlAs(t, bob, "", "health").code)
	r = searchctlAs(t, nil, "", append(asElastic, "users", "enable", "bob")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, ctl.ExitOK, searchctlAs(t, bob, "", "health").code)
	r = searchctlAs(t, nil, "bob-new-password\n", append(asElastic, "users", "password", "bob", "--password-stdin")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, ctl.ExitFailed, searchctlAs(t, bob, "", "health").code)
	bob["WEFT_PASSWORD"] = "bob-new-password"
	require.Equal(t, ctl.ExitOK, searchctlAs(t, bob, "", "health").code)
	r = searchctlAs(t, nil, "", append(asElastic, "users", "delete", "bob")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, ctl.ExitFailed, searchctlAs(t, bob, "", "health").code)
	r = searchctlAs(t, nil, "", append(asElastic, "roles", "delete", "logs_reader")...)
	require.Equal(t, ctl.ExitOK, r.code, r.stdout+r.stderr)
}
