package esyaml

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeServer answers the calls of the runner's own tests.
func fakeServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_cat/indices", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[]`)
	})
	mux.HandleFunc("PUT /{index}/_doc/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"_index":"`+r.PathValue("index")+`","_id":"`+r.PathValue("id")+`","_version":1,"result":"created","n":1.0}`)
	})
	mux.HandleFunc("GET /{index}/_doc/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.PathValue("id") == "missing" {
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":{"type":"not_found","reason":"no doc [missing]"},"status":404}`)
			return
		}
		_, _ = io.WriteString(w, `{"_id":"`+r.PathValue("id")+`","list":[1,2,{"a":"b"}],"dotted.key":true,"q":"`+r.URL.Query().Get("x")+`"}`)
	})
	mux.HandleFunc("HEAD /{index}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("index") != "there" {
			w.WriteHeader(404)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func runYAML(t *testing.T, url, text string) []Result {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "api")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, "10_t.yml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	f, err := ParseFile(p)
	require.NoError(t, err)
	r := &Runner{BaseURL: url, Version: [3]int{8, 19, 0}}
	return r.RunFile(context.Background(), f)
}

func TestRunnerPassesWhatHolds(t *testing.T) {
	srv := fakeServer(t)
	res := runYAML(t, srv.URL, `---
setup:
  - do:
      index: {index: i, id: "1", body: {a: 1}}
---
"assertions that hold":
  - do:
      get: {index: i, id: "7", x: [a, b]}
  - match: {_id: "7"}
  - match: {q: "a,b"}
  - match: {list.2.a: b}
  - match: {dotted\.key: true}
  - match: {_id: /^ 7 $/}
  - length: {list: 3}
  - is_true: dotted\.key
  - is_false: nothing
  - set: {_id: the_id}
  - match: {_id: $the_id}
  - contains: {list: {a: b}}
  - gt: {list.0: 0}
  - lte: {list.1: 2}
  - do:
      catch: missing
      get: {index: i, id: missing}
  - match: {error.type: not_found}
  - do:
      catch: /no doc \[missing\]/
      get: {index: i, id: missing}
  - do:
      indices.exists: {index: there}
  - is_true: ''
  - do:
      indices.exists: {index: gone}
  - is_false: ''
---
"numbers compare by value":
  - do:
      index: {index: i, id: "2", body: {}}
  - match: {n: 1}
  - match: {_version: 1.0}
`)
	require.Len(t, res, 2)
	for _, r := range res {
		require.Equal(t, Pass, r.Status, "%s: %s", r.Test, r.Reason)
	}
}

func TestRunnerFailsWhatDoesNotHold(t *testing.T) {
	srv := fakeServer(t)
	for name, step := range map[string]string{
		"wrong value":         `  - match: {_id: "8"}`,
		"string vs number":    `  - match: {list.0: "1"}`,
		"regex mismatch":      `  - match: {_id: /^8$/}`,
		"wrong length":        `  - length: {list: 2}`,
		"missing is true":     `  - is_true: nothing`,
		"present is false":    `  - is_false: _id`,
		"not greater":         `  - gt: {list.0: 1}`,
		"not contained":       `  - contains: {list: 9}`,
		"unexpected error":    "  - do:\n      get: {index: i, id: missing}",
		"expected an error":   "  - do:\n      catch: missing\n      get: {index: i, id: \"1\"}",
		"unknown API":         "  - do:\n      indices.shrink: {index: i}",
		"partial map match":   `  - match: {list.2: {}}`,
		"regex on catch":      "  - do:\n      catch: /other/\n      get: {index: i, id: missing}",
		"null is not a value": `  - match: {_id: null}`,
	} {
		t.Run(name, func(t *testing.T) {
			res := runYAML(t, srv.URL, "---\n\"t\":\n  - do:\n      get: {index: i, id: \"7\"}\n"+step+"\n")
			require.Len(t, res, 1)
			require.Equal(t, Fail, res[0].Status)
			require.NotEmpty(t, res[0].Reason)
		})
	}
}

func TestRunnerSkips(t *testing.T) {
	srv := fakeServer(t)
	for name, step := range map[string]string{
		"version range":           "  - skip:\n      version: \" - 8.99.99\"\n      reason: r",
		"all":                     "  - skip:\n      version: all\n      reason: r",
		"runner feature":          "  - skip:\n      features: [transform_and_set]",
		"unknown cluster feature": "  - requires:\n      cluster_features: [\"some_feature\"]\n      reason: r",
		"newer version feature":   "  - requires:\n      cluster_features: [\"gte_v9.1.0\"]\n      reason: r",
	} {
		t.Run(name, func(t *testing.T) {
			res := runYAML(t, srv.URL, "---\n\"t\":\n"+step+"\n  - do:\n      get: {index: i, id: missing}\n")
			require.Equal(t, Skip, res[0].Status, res[0].Reason)
		})
	}
	res := runYAML(t, srv.URL, "---\n\"t\":\n  - requires:\n      cluster_features: [\"gte_v8.0.0\"]\n      reason: r\n  - skip:\n      version: \" - 7.99.99\"\n      reason: r\n  - do:\n      get: {index: i, id: \"1\"}\n")
	require.Equal(t, Pass, res[0].Status, res[0].Reason)
}

// TestElasticsearchSuite runs Elasticsearch's YAML REST tests from
// WEFT_ES_YAML_DIR (default ~/.cache/weft/es-yaml, fetched as
// docs/es-yaml-tests.md says; skipped when absent) against a searchnode
// built from this tree, or against WEFT_ES_YAML_URL. It prints every test's
// outcome and the pass rate per API, writes them to WEFT_ES_YAML_REPORT when
// set, and fails when the rate is under WEFT_ES_YAML_MIN percent.
func TestElasticsearchSuite(t *testing.T) {
	dir := os.Getenv("WEFT_ES_YAML_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "weft", "es-yaml")
	}
	files, err := FindFiles(dir)
	if err != nil || len(files) == 0 {
		t.Skipf("no YAML tests under %s (see docs/es-yaml-tests.md)", dir)
	}
	url := os.Getenv("WEFT_ES_YAML_URL")
	if url == "" {
		url = startNode(t)
	}
	r := &Runner{BaseURL: url, Version: [3]int{8, 19, 0}, Timeout: 30 * time.Second}
	require.NoError(t, r.Prepare(context.Background()))
	var results []Result
	for _, p := range files {
		f, err := ParseFile(p)
		require.NoError(t, err)
		for _, res := range r.RunFile(context.Background(), f) {
			res.File, _ = filepath.Rel(dir, res.File)
			results = append(results, res)
		}
	}
	var buf bytes.Buffer
	WriteReport(&buf, results)
	t.Log("\n" + buf.String())
	if out := os.Getenv("WEFT_ES_YAML_REPORT"); out != "" {
		require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	}
	_, all := Summarize(results)
	require.NotZero(t, all.Pass+all.Fail, "no test ran")
	if v := os.Getenv("WEFT_ES_YAML_MIN"); v != "" {
		min, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, all.Rate(), min, "pass rate")
	}
}

// startNode builds searchnode from this module and runs it on a free
// loopback port with a fresh data directory; it returns the base URL.
func startNode(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "searchnode")
	build := exec.Command("go", "build", "-o", bin, "github.com/weftsearch/weft/cmd/searchnode")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building searchnode: %s", out)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--security=false")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "searchnode ready: "); ok {
				url, _, _ := strings.Cut(rest, " ")
				ready <- url
			}
		}
		close(ready)
	}()
	select {
	case url, ok := <-ready:
		require.True(t, ok, "searchnode exited before it was ready")
		return url
	case <-time.After(60 * time.Second):
		t.Fatal("searchnode did not print its ready line within 60s")
	}
	return ""
}

func TestFalsyIsElasticsearchs(t *testing.T) {
	// Elasticsearch's runner takes null, "", "false" in any case and "0"
	// (an integer 0 too) as false; everything else as true.
	for _, v := range []any{nil, false, "", "0", "FALSE", json.Number("0")} {
		require.True(t, falsy(v), "%#v", v)
	}
	for _, v := range []any{true, "x", json.Number("0.0"), json.Number("1"), map[string]any{}, []any{}} {
		require.False(t, falsy(v), "%#v", v)
	}
}

func TestMatchDollarIsJavas(t *testing.T) {
	// Java's $ (without MULTILINE) also matches before a last line break,
	// which _cat replies end with.
	re, ok := regexOf("/^(foo)$/", true)
	require.True(t, ok)
	require.True(t, re.MatchString("foo\n"))
	require.True(t, re.MatchString("foo"))
	require.False(t, re.MatchString("foo\n\n"))
	re, ok = regexOf(`/^ a \$ $/`, true)
	require.True(t, ok)
	require.True(t, re.MatchString("a$"))
}
