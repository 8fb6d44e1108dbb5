package enginebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/weftsearch/weft/internal/ctl"
)

// nodeProcess is a searchnode started by the benchmark as a child process.
type nodeProcess struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	done    chan error // receives cmd.Wait's result once
}

// buildSearchnode compiles ./cmd/searchnode into dir (the benchmark runs
// from the module root, like `go run ./benchmarks/cmd/enginebench`).
func buildSearchnode(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "searchnode")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/searchnode")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build searchnode (run from the module root, or pass -searchnode PATH): %w\n%s", err, out)
	}
	return bin, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startNode runs bin on a fresh data directory under dir and a free
// loopback port, and waits until it answers /_cluster/health. The node's
// output goes to dir/searchnode.log. The caller must call stop.
func startNode(ctx context.Context, bin, dir string) (*nodeProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("pick a port for searchnode: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "searchnode.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "node-data"), "--http-addr", addr)
	cmd.Env = append(os.Environ(), "WEFT_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	n := &nodeProcess{cmd: cmd, url: "http://" + addr, logPath: logPath, done: make(chan error, 1)}
	go func() { n.done <- cmd.Wait() }()

	c, err := ctl.NewClient(n.url, &http.Client{Timeout: time.Second})
	if err != nil {
		n.stop()
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, err := c.Health(ctx); err == nil {
			return n, nil
		}
		select {
		case err := <-n.done:
			n.done <- err
			return nil, fmt.Errorf("searchnode exited before it became healthy (%v); its log:\n%s", err, tail(logPath))
		case <-ctx.Done():
			n.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("searchnode at %s not healthy after 60 s; its log:\n%s", n.url, tail(logPath))
		}
	}
}

// stop sends SIGTERM and waits for a clean exit (SIGKILL after 30 s).
func (n *nodeProcess) stop() error {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-n.done:
		n.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("searchnode exited with %v; its log:\n%s", err, tail(n.logPath))
		}
		return err
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		err := <-n.done
		n.done <- err
		return fmt.Errorf("searchnode did not stop within 30 s of SIGTERM; killed")
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// httpIndex is the HTTP side: one index on a node, reached through its API.
type httpIndex struct {
	c    *ctl.Client
	name string
}

// create (re)creates the index with one shard, no replicas and mapping.
func (h *httpIndex) create(ctx context.Context, mappingJSON []byte) error {
	var ae *ctl.APIError
	if err := h.c.DeleteIndex(ctx, h.name); err != nil && !(errors.As(err, &ae) && ae.Status == http.StatusNotFound) {
		return err
	}
	body, _ := json.Marshal(map[string]any{ // raw JSON and ints always marshal
		"settings": map[string]any{"number_of_shards": 1, "number_of_replicas": 0},
		"mappings": json.RawMessage(mappingJSON),
	})
	return h.c.CreateIndex(ctx, h.name, body)
}

// bulk sends docs through searchctl's bulk loader (requests of batchSize
// documents, concurrency in flight) and returns the elapsed time.
func (h *httpIndex) bulk(ctx context.Context, docs []Doc, batchSize, concurrency int) (time.Duration, error) {
	var in bytes.Buffer
	for _, d := range docs {
		in.Write(d.Source)
		in.WriteByte('\n')
	}
	start := time.Now()
	res, err := ctl.Load(ctx, h.c, &in, ctl.LoadOptions{
		Index: h.name, Format: ctl.FormatLines, IDField: "id",
		BatchDocs: batchSize, BatchBytes: 1 << 30, Concurrency: concurrency,
	})
	elapsed := time.Since(start)
	if err != nil {
		for _, f := range res.Failures {
			err = fmt.Errorf("%w\n  %q: %d %s: %s", err, f.ID, f.Status, f.Type, f.Reason)
		}
		return 0, fmt.Errorf("HTTP bulk: %w", err)
	}
	if res.Docs != int64(len(docs)) {
		return 0, fmt.Errorf("HTTP bulk: node acknowledged %d of %d documents", res.Docs, len(docs))
	}
	return elapsed, nil
}

// refresh makes everything indexed searchable and returns the time it took.
func (h *httpIndex) refresh(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if err := h.c.Refresh(ctx, h.name); err != nil {
		return 0, fmt.Errorf("HTTP refresh: %w", err)
	}
	return time.Since(start), nil
}

// search runs q and returns the time from sending the request to having
// read the whole response, and the answer, decoded outside that time.
func (h *httpIndex) search(ctx context.Context, q Query, size int) (time.Duration, answer, error) {
	body := esBody(q, size)
	start := time.Now()
	data, err := h.c.Do(ctx, http.MethodPost, "/"+h.name+"/_search", nil, body, "application/json")
	elapsed := time.Since(start)
	if err != nil {
		return 0, answer{}, fmt.Errorf("HTTP %s query %s: %w", q.Kind, body, err)
	}
	var res ctl.SearchResponse
	if err := json.Unmarshal(data, &res); err != nil {
		return 0, answer{}, fmt.Errorf("HTTP %s query: decode response: %w", q.Kind, err)
	}
	a := answer{Total: uint64(res.Hits.Total.Value)}
	for _, hit := range res.Hits.Hits {
		a.IDs = append(a.IDs, hit.ID)
		score := 0.0
		if hit.Score != nil {
			score = *hit.Score
		}
		a.Scores = append(a.Scores, score)
	}
	return elapsed, a, nil
}

// emptyRoundTrip times one GET / (the node's smallest answer: no engine
// work) through the same client and connection pool.
func (h *httpIndex) emptyRoundTrip(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	_, err := h.c.Do(ctx, http.MethodGet, "/", nil, nil, "")
	return time.Since(start), err
}
