package esyaml

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Status is the outcome of one test.
type Status string

// Outcomes.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of one test; Reason says why it failed or was
// skipped (the first failing step).
type Result struct {
	API, File, Test string
	Status          Status
	Reason          string
}

// Runner runs test files against one server. Version is the server version
// that skip and requires sections compare with.
type Runner struct {
	BaseURL string
	Client  *http.Client
	Version [3]int
	// Timeout bounds each request.
	Timeout time.Duration
}

// features the runner implements (skip.features / requires.test_runner_features).
var features = map[string]bool{
	"headers": true, "warnings": true, "allowed_warnings": true, "warnings_regex": true,
	"allowed_warnings_regex": true, "contains": true, "close_to": true, "stash_in_path": true,
	"stash_in_key": true, "embedded_stash_key": true, "default_shards": true, "node_selector": true,
	"arbitrary_key": false, "yaml": false, "transform_and_set": false, "spi_on_classpath": false,
	"stash_path_replace": true,
}

// testClusterSettings are the cluster settings Elasticsearch's own test
// clusters run its YAML tests with (its test framework's default settings
// provider): the tests that delete indices by wildcard rely on them.
var testClusterSettings = map[string]any{"action.destructive_requires_name": false}

// Prepare gives the server the cluster settings Elasticsearch's test
// clusters have; call it once before running files.
func (r *Runner) Prepare(ctx context.Context) error {
	st := &state{r: r, ctx: ctx, stash: map[string]any{}}
	body, err := json.Marshal(map[string]any{"persistent": testClusterSettings})
	if err != nil {
		return err
	}
	resp, err := st.send(http.MethodPut, "/_cluster/settings", nil, bytes.NewReader(body), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return err
	}
	if resp.status != http.StatusOK {
		return fmt.Errorf("setting the test cluster settings: status %d: %s", resp.status, clip(resp.raw))
	}
	return nil
}

// RunFile runs every test of f, each preceded by the setup and followed by
// the teardown section and a clean-up that deletes every index.
func (r *Runner) RunFile(ctx context.Context, f *File) []Result {
	out := make([]Result, 0, len(f.Tests))
	for _, t := range f.Tests {
		res := Result{API: f.API, File: f.Path, Test: t.Name}
		st := &state{r: r, ctx: ctx, stash: map[string]any{}}
		status, reason := st.section(f.Setup, "setup")
		if status == Pass {
			status, reason = st.section(t.Steps, "test")
		}
		if status != Skip {
			// Teardown runs even after a failure, as in Elasticsearch.
			if ts, tr := st.section(f.Teardown, "teardown"); ts == Fail && status == Pass {
				status, reason = ts, tr
			}
		}
		if err := r.cleanUp(ctx); err != nil && status == Pass {
			status, reason = Fail, "clean-up: "+err.Error()
		}
		res.Status, res.Reason = status, reason
		out = append(out, res)
	}
	return out
}

// cleanUp deletes every index, one by one (a wildcard delete is refused by
// servers that require names, as Weft does).
func (r *Runner) cleanUp(ctx context.Context) error {
	st := &state{r: r, ctx: ctx, stash: map[string]any{}}
	resp, err := st.send(http.MethodGet, "/_cat/indices", url.Values{"format": {"json"}, "h": {"index"}}, nil, nil)
	if err != nil {
		return err
	}
	rows, ok := resp.body.([]any)
	if !ok || resp.status != http.StatusOK {
		return fmt.Errorf("listing indices: status %d", resp.status)
	}
	for _, row := range rows {
		m, _ := row.(map[string]any)
		name, _ := m["index"].(string)
		if name == "" {
			continue
		}
		if _, err := st.send(http.MethodDelete, "/"+url.PathEscape(name), nil, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// state is one test's run: its stash and last response.
type state struct {
	r     *Runner
	ctx   context.Context
	stash map[string]any
	last  *response
}

type response struct {
	status int
	header http.Header
	raw    []byte
	body   any // decoded JSON, the text of a non-JSON reply, or a bool for HEAD
}

// stepError fails a test; skipError skips it.
type stepError struct{ msg string }

func (e stepError) Error() string { return e.msg }

type skipError struct{ msg string }

func (e skipError) Error() string { return e.msg }

func failf(format string, args ...any) error { return stepError{fmt.Sprintf(format, args...)} }

func (st *state) section(steps []Step, name string) (Status, string) {
	for i, s := range steps {
		if err := st.step(s); err != nil {
			if se, ok := err.(skipError); ok {
				return Skip, se.msg
			}
			return Fail, fmt.Sprintf("%s step %d (%s): %v", name, i+1, s.Kind, err)
		}
	}
	return Pass, ""
}

func (st *state) step(s Step) error {
	switch s.Kind {
	case "skip":
		return st.skip(s.Arg)
	case "requires":
		return st.requires(s.Arg)
	case "do":
		return st.do(s.Arg)
	case "set":
		return st.set(s.Arg)
	case "match", "length", "gt", "gte", "lt", "lte", "contains", "close_to":
		return st.compare(s.Kind, s.Arg)
	case "is_true", "is_false":
		return st.truth(s.Kind, s.Arg)
	}
	return skipError{"step kind [" + s.Kind + "] is not supported by the runner"}
}

func (st *state) skip(arg any) error {
	m, _ := arg.(map[string]any)
	if v, ok := m["version"].(string); ok && inRange(st.r.Version, v) {
		return skipError{"version " + v}
	}
	if m["known_issues"] != nil || m["awaits_fix"] != nil {
		return skipError{"known issue / awaits fix"}
	}
	for _, f := range asStrings(m["features"]) {
		if !features[f] {
			return skipError{"runner feature " + f}
		}
	}
	for _, f := range asStrings(m["cluster_features"]) {
		if hasFeature(st.r.Version, f) {
			return skipError{"cluster feature " + f}
		}
	}
	return nil
}

func (st *state) requires(arg any) error {
	m, _ := arg.(map[string]any)
	for _, f := range asStrings(m["test_runner_features"]) {
		if !features[f] {
			return skipError{"runner feature " + f}
		}
	}
	for _, f := range asStrings(m["cluster_features"]) {
		if !hasFeature(st.r.Version, f) {
			return skipError{"cluster feature " + f}
		}
	}
	return nil
}

// hasFeature answers the historical features (gte_vX.Y.Z) from the
// version; the server is assumed to have no other named feature.
func hasFeature(v [3]int, f string) bool {
	rest, ok := strings.CutPrefix(f, "gte_v")
	if !ok {
		return false
	}
	want, ok := parseVersion(rest)
	return ok && !less(v, want)
}

// inRange reports whether v is in a skip range: "all", " - 7.99.99",
// "8.0.0 - ", "7.0.0 - 7.9.9", or several joined by commas.
func inRange(v [3]int, spec string) bool {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "all" {
			return true
		}
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			continue
		}
		lo, hi = strings.TrimSpace(lo), strings.TrimSpace(hi)
		low, hiV := [3]int{}, [3]int{1 << 30}
		if lo != "" {
			low, _ = parseVersion(lo)
		}
		if hi != "" {
			hiV, _ = parseVersion(hi)
		}
		if !less(v, low) && !less(hiV, v) {
			return true
		}
	}
	return false
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s, _, _ = strings.Cut(s, "-") // 8.0.0-SNAPSHOT
	for i, p := range strings.SplitN(s, ".", 3) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	case nil:
		return nil
	}
	return []string{fmt.Sprint(v)}
}

// catches maps catch names to the status they expect.
var catches = map[string]int{
	"bad_request": 400, "unauthorized": 401, "forbidden": 403, "missing": 404,
	"request_timeout": 408, "conflict": 409, "unavailable": 503,
}

// do sends one API call: {"do": {"catch": .., "headers": .., "<api>": {params}}}.
func (st *state) do(arg any) error {
	m, ok := arg.(map[string]any)
	if !ok {
		return failf("do must be a map")
	}
	var api string
	var params map[string]any
	var catch string
	headers := http.Header{}
	for k, v := range m {
		switch k {
		case "catch":
			catch = fmt.Sprint(v)
		case "headers":
			hm, _ := v.(map[string]any)
			for hk, hv := range hm {
				headers.Set(hk, fmt.Sprint(st.resolve(hv)))
			}
		case "warnings", "allowed_warnings", "warnings_regex", "allowed_warnings_regex", "node_selector":
		default:
			if api != "" {
				return failf("do names two APIs: %s and %s", api, k)
			}
			api = k
			params, _ = v.(map[string]any)
		}
	}
	if api == "" {
		return failf("do names no API")
	}
	if catch == "param" {
		return skipError{"catch: param (client-side parameter validation) is not supported by the runner"}
	}
	resp, err := st.call(api, params, headers)
	if err != nil {
		return err
	}
	st.last = resp
	if catch == "" {
		ignored := false
		for _, s := range asStrings(params["ignore"]) {
			if s == strconv.Itoa(resp.status) {
				ignored = true
			}
		}
		if resp.status >= 400 && !ignored && !(resp.status == 404 && isHead(api)) {
			return failf("%s answered %d: %s", api, resp.status, clip(resp.raw))
		}
		return nil
	}
	if want, ok := catches[catch]; ok {
		if resp.status != want {
			return failf("%s: want status %d (%s), got %d: %s", api, want, catch, resp.status, clip(resp.raw))
		}
		return nil
	}
	if resp.status < 400 {
		return failf("%s: want an error (%s), got %d", api, catch, resp.status)
	}
	if catch == "request" {
		return nil
	}
	if re, ok := regexOf(catch, false); ok {
		if !re.Match(resp.raw) {
			return failf("%s: error %s does not match %s", api, clip(resp.raw), catch)
		}
		return nil
	}
	return failf("unknown catch [%s]", catch)
}

func isHead(api string) bool {
	for _, r := range apis[api] {
		return r.methods[0] == http.MethodHead
	}
	return false
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// call maps an API call onto a route and sends it.
func (st *state) call(api string, params map[string]any, headers http.Header) (*response, error) {
	routes, ok := apis[api]
	if !ok {
		return nil, failf("API [%s] is not in the runner's table (the server has no such endpoint in Weft's list)", api)
	}
	params = st.resolve(params).(map[string]any)
	var chosen *route
	for i, r := range routes {
		all := true
		for _, p := range r.parts() {
			if _, ok := params[p]; !ok {
				all = false
			}
		}
		if all {
			chosen = &routes[i]
			break
		}
	}
	if chosen == nil {
		return nil, failf("API [%s]: no route for parameters %v", api, keys(params))
	}
	path := chosen.path
	inPath := map[string]bool{}
	for _, p := range chosen.parts() {
		path = strings.Replace(path, "{"+p+"}", url.PathEscape(paramString(params[p])), 1)
		inPath[p] = true
	}
	q := url.Values{}
	var body []byte
	hasBody := false
	ndjson := api == "bulk" || api == "msearch"
	for k, v := range params {
		switch {
		case inPath[k] || k == "ignore":
		case k == "body":
			hasBody = true
			var err error
			if body, err = encodeBody(v, ndjson); err != nil {
				return nil, err
			}
		default:
			q.Set(k, paramString(v))
		}
	}
	method := chosen.methods[0]
	if hasBody && len(chosen.methods) > 1 {
		method = chosen.methods[1]
	}
	if hasBody && headers.Get("Content-Type") == "" {
		if ndjson {
			headers.Set("Content-Type", "application/x-ndjson")
		} else {
			headers.Set("Content-Type", "application/json")
		}
	}
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	return st.send(method, path, q, rd, headers)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// paramString renders a parameter value: lists joined by commas.
func paramString(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = paramString(e)
		}
		return strings.Join(parts, ",")
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// encodeBody renders a body: a string as it is; for NDJSON APIs a list as
// one line per element; anything else as JSON.
func encodeBody(v any, ndjson bool) ([]byte, error) {
	if s, ok := v.(string); ok {
		return []byte(s), nil
	}
	if list, ok := v.([]any); ok && ndjson {
		var b bytes.Buffer
		for _, e := range list {
			if s, ok := e.(string); ok {
				b.WriteString(s)
			} else {
				line, err := json.Marshal(e)
				if err != nil {
					return nil, err
				}
				b.Write(line)
			}
			b.WriteByte('\n')
		}
		return b.Bytes(), nil
	}
	return json.Marshal(v)
}

func (st *state) send(method, path string, q url.Values, body io.Reader, headers http.Header) (*response, error) {
	u := strings.TrimRight(st.r.BaseURL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithTimeout(st.ctx, st.r.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	resp, err := st.r.client().Do(req)
	if err != nil {
		return nil, failf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, failf("%s %s: reading the reply: %v", method, path, err)
	}
	out := &response{status: resp.StatusCode, header: resp.Header, raw: raw}
	switch {
	case method == http.MethodHead:
		out.body = resp.StatusCode < 300
	case strings.Contains(resp.Header.Get("Content-Type"), "json") && len(bytes.TrimSpace(raw)) > 0:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&out.body); err != nil {
			return nil, failf("%s %s: reply is not JSON: %v", method, path, err)
		}
	default:
		out.body = string(raw)
	}
	return out, nil
}

func (r *Runner) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return http.DefaultClient
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 30 * time.Second
}
