package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a searchnode process started by a test.
type proc struct {
	cmd       *exec.Cmd
	url       string
	passwords chan string // the elastic password the process printed
}

var readyLine = regexp.MustCompile(`^searchnode ready: (https?://\S+) `)

// startProc runs the binary on a free loopback port over dataDir and waits
// for its ready line, which carries the URL.
func startProc(t *testing.T, bin, dataDir string) *proc {
	t.Helper()
	return startProcArgs(t, bin, "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--node-name", "crash-test", "--log-level", "warn", "--security=false")
}

// buildBinary builds searchnode into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "searchnode")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startProcArgs runs the binary with args and waits for its ready line.
func startProcArgs(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = testWriter{t}
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, passwords: make(chan string, 1)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		passwordNext := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case readyLine.MatchString(line):
				lines <- readyLine.FindStringSubmatch(line)[1]
			case line == "The password of the elastic user is:":
				passwordNext = true
			case passwordNext && line != "":
				passwordNext = false
				select {
				case p.passwords <- line:
				default:
				}
			}
		}
		close(lines)
	}()
	select {
	case url, ok := <-lines:
		require.True(t, ok, "searchnode exited before it was ready")
		p.url = url
	case <-time.After(60 * time.Second):
		t.Fatal("searchnode printed no ready line within 60s")
	}
	return p
}

// elasticPassword waits (up to 30 s) for the elastic user's password the
// process printed once at its cluster's first start.
func (p *proc) elasticPassword(t *testing.T) string {
	t.Helper()
	select {
	case pw := <-p.passwords:
		return pw
	case <-time.After(30 * time.Second):
		t.Fatal("searchnode printed no elastic password within 30s")
		return ""
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}

func httpDo(t *testing.T, method, url, ctype, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestKillAfterAcknowledgedBulk is the durability acceptance test: a real
// searchnode process acknowledges a _bulk with refresh=false, is killed
// with SIGKILL at once, and after a restart on the same data directory every
// acknowledged document is there, by GET and by search.
func TestKillAfterAcknowledgedBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the searchnode binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	data := filepath.Join(dir, "data")

	p := startProc(t, bin, data)
	status, body := httpDo(t, "PUT", p.url+"/durable", "application/json", `{"settings":{"number_of_shards":3,"number_of_replicas":0}}`)
	require.Equal(t, 200, status, "%s", body)

	const docs = 500
	var ids []string
	for batch := 0; batch < 5; batch++ {
		var b strings.Builder
		for i := 0; i < docs/5; i++ {
			id := fmt.Sprintf("doc-%d-%d", batch, i)
			ids = append(ids, id)
			fmt.Fprintf(&b, "{\"index\":{\"_index\":\"durable\",\"_id\":%q}}\n{\"n\":%d,\"text\":\"acknowledged document %s\"}\n", id, batch*1000+i, id)
		}
		status, body = httpDo(t, "POST", p.url+"/_bulk?refresh=false", "application/x-ndjson", b.String())
		require.Equal(t, 200, status, "%s", body)
		var reply struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				Status int `json:"status"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(body, &reply))
		require.False(t, reply.Errors, "%s", body)
		require.Len(t, reply.Items, docs/5)
	}
	// Kill immediately after the last acknowledgement: no flush, no close.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	_ = p.cmd.Wait()

	p = startProc(t, bin, data)
	for _, id := range ids {
		status, body := httpDo(t, "GET", p.url+"/durable/_doc/"+id, "", "")
		require.Equal(t, 200, status, "acknowledged document %s lost: %s", id, body)
	}
	status, body = httpDo(t, "POST", p.url+"/durable/_search", "application/json", `{"query":{"match":{"text":"acknowledged"}},"size":0}`)
	require.Equal(t, 200, status, "%s", body)
	var res struct {
		Hits struct {
			Total struct {
				Value int `json:"value"`
			} `json:"total"`
		} `json:"hits"`
	}
	require.NoError(t, json.Unmarshal(body, &res))
	require.Equal(t, docs, res.Hits.Total.Value)

	// A graceful stop (SIGTERM) exits 0.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.cmd.Wait())
}
