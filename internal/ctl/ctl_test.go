package ctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fakeNode is a small stand-in for the node's HTTP API, enough to check
// what searchctl sends and how it shows the answers. Documents whose id
// starts with "bad" fail with mapper_parsing_exception.
type fakeNode struct {
	mu       sync.Mutex
	requests []string          // "METHOD /path"
	bodies   map[string][]byte // last body per "METHOD /path"
	bulkDocs [][]string        // ids per _bulk request
}

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(r.Body)
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.requests = append(f.requests, key)
	f.bodies[key] = body.Bytes()
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case key == "GET /_cluster/health":
		fmt.Fprint(w, `{"cluster_name":"weft","status":"green","number_of_nodes":1,"active_primary_shards":2,"active_shards":2,"unassigned_shards":0}`)
	case key == "GET /_cat/indices":
		fmt.Fprint(w, `[{"health":"green","status":"open","index":"mail","uuid":"u","pri":"1","rep":"0","docs.count":"400","store.size":"1mb"},{"health":"yellow","status":"open","index":"a","pri":"5","rep":"1","docs.count":"0","store.size":"0b"}]`)
	case key == "PUT /exists":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"root_cause":[],"type":"resource_already_exists_exception","reason":"index [exists] already exists"},"status":400}`)
	case r.Method == http.MethodPut, r.Method == http.MethodDelete:
		fmt.Fprint(w, `{"acknowledged":true}`)
	case key == "GET /missing":
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"type":"index_not_found_exception","reason":"no such index [missing]"},"status":404}`)
	case r.Method == http.MethodGet && !strings.Contains(r.URL.Path[1:], "/"):
		fmt.Fprint(w, `{"mail":{"mappings":{"properties":{"subject":{"type":"text"}}}}}`)
	case strings.HasSuffix(r.URL.Path, "/_bulk"):
		f.bulk(w, body.Bytes())
	case strings.HasSuffix(r.URL.Path, "/_count"):
		if r.URL.Query().Get("q") != "" {
			fmt.Fprint(w, `{"count":7}`)
			return
		}
		fmt.Fprint(w, `{"count":400}`)
	case strings.HasSuffix(r.URL.Path, "/_refresh"):
		fmt.Fprint(w, `{"_shards":{"total":1,"successful":1,"failed":0}}`)
	case strings.HasSuffix(r.URL.Path, "/_search"):
		fmt.Fprint(w, `{"took":3,"hits":{"total":{"value":2,"relation":"eq"},"hits":[`+
			`{"_index":"mail","_id":"m1","_score":1.5,"_source":{"id":"m1","subject":"Linux kernel panic","from":"ann@example.org","date":"2002-08-22T11:26:25Z","body":"a long\nbody","extra":1}},`+
			`{"_index":"mail","_id":"m2","_score":0.25,"_source":{"subject":"Re: panic","from":"bob@example.org"}}]}}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"type":"fake","reason":"no route %s"},"status":404}`, key)
	}
}

func (f *fakeNode) bulk(w http.ResponseWriter, body []byte) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	var items []string
	var ids []string
	errs := false
	for sc.Scan() {
		var action map[string]struct {
			ID string `json:"_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"type":"parse_exception","reason":%q},"status":400}`, err.Error())
			return
		}
		for name, a := range action {
			if name != "delete" {
				sc.Scan()
			}
			ids = append(ids, a.ID)
			if name == "delete" && a.ID == "missing" {
				items = append(items, `{"delete":{"_index":"mail","_id":"missing","status":404,"result":"not_found"}}`)
				continue
			}
			if strings.HasPrefix(a.ID, "bad") {
				errs = true
				items = append(items, fmt.Sprintf(`{%q:{"_index":"mail","_id":%q,"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [n] of type [long]"}}}`, name, a.ID))
			} else {
				items = append(items, fmt.Sprintf(`{%q:{"_index":"mail","_id":%q,"status":201,"result":"created"}}`, name, a.ID))
			}
		}
	}
	f.mu.Lock()
	f.bulkDocs = append(f.bulkDocs, ids)
	f.mu.Unlock()
	fmt.Fprintf(w, `{"took":1,"errors":%t,"items":[%s]}`, errs, strings.Join(items, ","))
}

// run executes searchctl against a fresh fake node and returns the exit
// code, stdout and stderr.
func runCtl(t *testing.T, f *fakeNode, stdin string, args ...string) (int, string, string) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	env := map[string]string{"WEFT_ADDR": srv.URL}
	code := Main(context.Background(), args, IO{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
	})
	return code, stdout.String(), stderr.String()
}

func newFake() *fakeNode { return &fakeNode{bodies: map[string][]byte{}} }

func TestCommands(t *testing.T) {
	mapping := filepath.Join(t.TempDir(), "mapping.json")
	require.NoError(t, os.WriteFile(mapping, []byte(`{"properties":{"subject":{"type":"text"}}}`), 0o644))
	full := filepath.Join(t.TempDir(), "full.json")
	require.NoError(t, os.WriteFile(full, []byte(`{"settings":{"number_of_shards":3,"refresh_interval":"1s"},"mappings":{"dynamic":"strict"}}`), 0o644))

	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings expected on stdout
		stderr   []string // substrings expected on stderr
		sent     string   // request expected, "METHOD /path"
		sentBody string   // its exact body, when set
	}{
		{name: "health as a line", args: []string{"health"}, stdout: []string{"weft: green (1 node(s), 2 primary shard(s)"}, sent: "GET /_cluster/health"},
		{name: "health as json", args: []string{"health", "-o", "json"}, stdout: []string{`"status": "green"`}},
		{name: "index list sorted", args: []string{"index", "list"}, stdout: []string{"INDEX  HEALTH  STATUS  PRI  REP  DOCS  SIZE\na      yellow  open    5    1    0     0b\nmail   green   open    1    0    400   1mb\n"}},
		{name: "index get", args: []string{"index", "get", "mail"}, stdout: []string{`"subject": {`}, sent: "GET /mail"},
		{name: "index get missing", args: []string{"index", "get", "missing"}, code: ExitFailed, stderr: []string{"404 index_not_found_exception: no such index [missing]"}},
		{name: "index create with defaults", args: []string{"index", "create", "mail"}, stdout: []string{"created index mail"}, sent: "PUT /mail", sentBody: ""},
		{name: "index create with shards and replicas", args: []string{"index", "create", "mail", "--shards", "5", "--replicas", "0"},
			sent: "PUT /mail", sentBody: `{"settings":{"number_of_replicas":0,"number_of_shards":5}}`},
		{name: "index create with a mapping file", args: []string{"index", "create", "mail", "--mapping", mapping},
			sent: "PUT /mail", sentBody: `{"mappings":{"properties":{"subject":{"type":"text"}}}}`},
		{name: "index create with a full body and an override", args: []string{"index", "create", "mail", "--mapping", full, "--replicas", "2"},
			sent: "PUT /mail", sentBody: `{"mappings":{"dynamic":"strict"},"settings":{"number_of_replicas":2,"number_of_shards":3,"refresh_interval":"1s"}}`},
		{name: "index create existing", args: []string{"index", "create", "exists"}, code: ExitFailed, stderr: []string{"resource_already_exists_exception"}},
		{name: "index create zero shards", args: []string{"index", "create", "x", "--shards", "0"}, code: ExitUsage, stderr: []string{"at least one shard"}},
		{name: "index delete", args: []string{"index", "delete", "mail"}, stdout: []string{"deleted index mail"}, sent: "DELETE /mail"},
		{name: "index without subcommand", args: []string{"index"}, code: ExitUsage},
		{name: "search table", args: []string{"search", "mail", "subject:panic"}, sent: "POST /mail/_search",
			sentBody: `{"query":{"query_string":{"query":"subject:panic"}},"size":10}`,
			stdout: []string{"2 hits in 3 ms\n", "ID  SCORE   SUBJECT             FROM             DATE                  BODY\n",
				"m1  1.5000  Linux kernel panic  ann@example.org  2002-08-22T11:26:25Z  a long body\n", "m2  0.2500  Re: panic           bob@example.org"}},
		{name: "search chosen fields and width", args: []string{"search", "mail", "panic", "--fields", "from,subject", "--width", "6", "--size", "2"},
			sentBody: `{"query":{"query_string":{"query":"panic"}},"size":2}`, stdout: []string{"m1  1.5000  ann@e…  Linux…"}},
		{name: "search escapes the index name once", args: []string{"search", "logs-*,a b", "x"}, sent: "POST /logs-*,a b/_search"},
		{name: "search json", args: []string{"search", "mail", "x", "-o", "json"}, stdout: []string{`"_id": "m1"`}},
		{name: "count", args: []string{"count", "mail"}, stdout: []string{"400\n"}, sent: "GET /mail/_count"},
		{name: "count with a query", args: []string{"count", "mail", "label:spam"}, stdout: []string{"7\n"}},
		{name: "count without index", args: []string{"count"}, code: ExitUsage},
		{name: "bad output format", args: []string{"health", "-o", "yaml"}, code: ExitUsage, stderr: []string{`"yaml" is not table or json`}},
		{name: "missing arguments", args: []string{"search", "mail"}, code: ExitUsage, stderr: []string{"want INDEX and QUERY"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: ExitUsage},
		{name: "bad address", args: []string{"health", "--addr", "ftp://x"}, code: ExitUsage, stderr: []string{`scheme "ftp"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			code, stdout, stderr := runCtl(t, f, "", tt.args...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, s := range tt.stdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range tt.stderr {
				require.Contains(t, stderr, s)
			}
			if tt.sent != "" {
				require.Contains(t, f.requests, tt.sent)
				if tt.sentBody != "" || tt.name == "index create with defaults" {
					require.Equal(t, tt.sentBody, string(f.bodies[tt.sent]))
				}
			}
			if tt.sentBody != "" && tt.sent == "" {
				require.Len(t, f.bodies, 1)
				for _, b := range f.bodies {
					require.Equal(t, tt.sentBody, string(b))
				}
			}
		})
	}
}

func TestUnreachableNode(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"health", "--addr", addr}, IO{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	require.Equal(t, ExitUnreachable, code)
	require.Contains(t, stderr.String(), "is searchnode running there?")
}

func jsonLines(n int, badEvery int) string {
	var b strings.Builder
	for i := range n {
		id := fmt.Sprintf("d%d", i)
		if badEvery > 0 && i%badEvery == badEvery-1 {
			id = fmt.Sprintf("bad%d", i)
		}
		fmt.Fprintf(&b, `{"id":%q,"subject":"message %d"}`+"\n", id, i)
	}
	return b.String()
}

func TestBulk(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		batches  []int  // documents per _bulk request, sorted by first id is not needed: only the total and count
		path     string // the bulk path used
		firstIDs []string
	}{
		{
			name: "json lines in batches of count", input: jsonLines(25, 0), args: []string{"--index", "mail", "--batch-docs", "10", "--concurrency", "1"},
			stdout: []string{"indexed 25 documents", "3 requests), 0 failed"}, batches: []int{10, 10, 5}, path: "POST /mail/_bulk",
			firstIDs: []string{"d0", "d1"},
		},
		{
			name: "json lines in batches of bytes", input: jsonLines(6, 0), args: []string{"--index", "mail", "--batch-bytes", "100", "--concurrency", "1"},
			batches: []int{2, 2, 2}, path: "POST /mail/_bulk",
		},
		{
			name: "generated ids", input: jsonLines(3, 0), args: []string{"--index", "mail", "--id-field", ""},
			batches: []int{3}, firstIDs: []string{"", "", ""},
		},
		{
			name:   "bulk format with delete and blank lines",
			input:  `{"index":{"_index":"mail","_id":"1"}}` + "\n" + `{"a":1}` + "\n\n" + `{"delete":{"_index":"mail","_id":"2"}}` + "\n" + `{"create":{"_index":"mail","_id":"3"}}` + "\n" + `{"a":3}`,
			stdout: []string{"indexed 3 documents"}, batches: []int{3}, path: "POST /_bulk", firstIDs: []string{"1", "2", "3"},
		},
		{
			name: "failed items shown and exit 1", input: jsonLines(12, 4), args: []string{"--index", "mail", "--concurrency", "3", "--batch-docs", "5"},
			code:   ExitFailed,
			stdout: []string{"indexed 9 documents", "3 failed", `line 4: index "bad3": 400 mapper_parsing_exception: failed to parse field [n] of type [long]`},
			stderr: []string{"some documents failed: 3 of 12"},
		},
		{
			name: "failures beyond the shown ones are counted", input: jsonLines(40, 1), args: []string{"--index", "mail"},
			code: ExitFailed, stdout: []string{"40 failed", "… and 30 more"},
		},
		{
			name:   "deleting a missing document is not a failure",
			input:  `{"delete":{"_index":"mail","_id":"missing"}}` + "\n",
			stdout: []string{"indexed 1 documents", "0 failed"},
		},
		{name: "json lines without index", input: jsonLines(2, 0), code: ExitUsage, stderr: []string{"needs --index"}},
		{name: "not json", input: `{"id":"1"}` + "\nnot json\n", args: []string{"--index", "m"}, code: ExitUsage, stderr: []string{"line 2: want one JSON object per line"}},
		{name: "missing id field", input: `{"x":1}` + "\n", args: []string{"--index", "m"}, code: ExitUsage, stderr: []string{`no "id" field`}},
		{name: "numeric id", input: `{"id":7}` + "\n", args: []string{"--index", "m"}, firstIDs: []string{"7"}},
		{name: "action without source", input: `{"index":{"_id":"1"}}` + "\n", args: []string{"--index", "m"}, code: ExitUsage, stderr: []string{"without its source line"}},
		{name: "bad action line", input: `{"index":{"_id":"1"}}` + "\n{}\n" + `{"frob":{}}` + "\n", args: []string{"--index", "m", "--format", "bulk"}, code: ExitUsage, stderr: []string{"line 3: want an action line"}},
		{name: "progress lines when not a terminal", input: jsonLines(3, 0), args: []string{"--index", "m", "--progress-interval", "0s"}, stderr: []string{"bulk: 3 docs indexed, 0 failed (100% of input)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			file := filepath.Join(t.TempDir(), "in.ndjson")
			require.NoError(t, os.WriteFile(file, []byte(tt.input), 0o644))
			code, stdout, stderr := runCtl(t, f, "", append([]string{"bulk", file}, tt.args...)...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, s := range tt.stdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range tt.stderr {
				require.Contains(t, stderr, s)
			}
			if tt.batches != nil {
				var got []int
				for _, ids := range f.bulkDocs {
					got = append(got, len(ids))
				}
				require.Equal(t, tt.batches, got)
			}
			if tt.path != "" {
				require.Contains(t, f.requests, tt.path)
			}
			if tt.firstIDs != nil {
				require.Equal(t, tt.firstIDs, f.bulkDocs[0][:len(tt.firstIDs)])
			}
			if tt.code == ExitOK && slicesContainIndexFlag(tt.args) {
				require.Contains(t, f.requests, "POST /"+indexFlag(tt.args)+"/_refresh")
			}
		})
	}
}

func TestBulkFromStdin(t *testing.T) {
	f := newFake()
	code, stdout, _ := runCtl(t, f, jsonLines(5, 0), "bulk", "-", "--index", "mail", "-q")
	require.Equal(t, ExitOK, code)
	require.Contains(t, stdout, "indexed 5 documents")
}

func slicesContainIndexFlag(args []string) bool { return indexFlag(args) != "" }

func indexFlag(args []string) string {
	for i, a := range args {
		if a == "--index" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestProgressPrinter(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		total    int64
		want     string
	}{
		{"bar on a terminal", true, 1000, "\r[███████████████···············]  50% 20 docs, 1 failed, 10 docs/s \n"},
		{"bar without a known size", true, 0, "\r[······························] 20 docs, 1 failed, 10 docs/s \n"},
		{"line otherwise", false, 1000, "bulk: 20 docs indexed, 1 failed (50% of input), 10 docs/s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &progressPrinter{w: &buf, terminal: tt.terminal, total: tt.total, interval: time.Hour}
			p.update(Progress{Docs: 20, Failed: 1, InputBytes: 500, Elapsed: 2 * time.Second})
			p.update(Progress{Docs: 21, Failed: 1, InputBytes: 600, Elapsed: 2 * time.Second}) // too soon: not drawn
			p.done()
			require.Equal(t, tt.want, buf.String())
		})
	}
}

// TestLoadLeavesNoGoroutines checks that Load waits for every goroutine it
// starts, on success and when the node fails mid-load.
func TestLoadLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable} {
		f := newFake()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if status != http.StatusOK {
				w.WriteHeader(status)
				fmt.Fprint(w, `{"error":{"type":"unavailable","reason":"try later"},"status":503}`)
				return
			}
			f.ServeHTTP(w, r)
		}))
		c, err := NewClient(srv.URL, nil)
		require.NoError(t, err)
		res, err := Load(context.Background(), c, strings.NewReader(jsonLines(50, 0)), LoadOptions{Index: "m", IDField: "id", BatchDocs: 5, Concurrency: 4})
		if status == http.StatusOK {
			require.NoError(t, err)
			require.Equal(t, int64(50), res.Docs)
		} else {
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, status, ae.Status)
		}
		c.hc.CloseIdleConnections()
		srv.Close()
	}
}
