package enginebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/weftsearch/weft/benchmarks/internal/nodeproc"
	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/freeport"
)

// nodeProcess is a searchnode started by the benchmark as a child process.
type nodeProcess struct {
	*nodeproc.Proc
	url string
}

// startNode runs bin on a fresh data directory under dir and a free
// loopback port, and waits until it answers /_cluster/health. The node's
// output goes to dir/searchnode.log. The caller must call Stop.
func startNode(ctx context.Context, bin, dir string) (*nodeProcess, error) {
	addr, err := freeport.Pick(false)
	if err != nil {
		return nil, fmt.Errorf("pick a port for searchnode: %w", err)
	}
	p, err := nodeproc.Start(bin, filepath.Join(dir, "searchnode.log"), []string{"WEFT_LOG_LEVEL=warn"},
		"--data-dir", filepath.Join(dir, "node-data"), "--http-addr", addr,
		"--security=false") // plain HTTP until the benchmark measures security on and off side by side
	if err != nil {
		return nil, err
	}
	n := &nodeProcess{Proc: p, url: "http://" + addr}
	if err := p.WaitHTTP(ctx, n.url+"/_cluster/health", 60*time.Second); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return n, nil
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

// bulk sends docs through searchctl's bulk loader (see BulkLoad).
func (h *httpIndex) bulk(ctx context.Context, docs []Doc, batchSize, concurrency int) (time.Duration, error) {
	return BulkLoad(ctx, h.c, h.name, docs, batchSize, concurrency)
}

// BulkLoad indexes docs into index through c with searchctl's bulk loader
// (requests of batchSize documents, concurrency in flight, each document's
// id its Doc.ID) and returns the elapsed time. Any document the node did
// not acknowledge is an error naming the first failures.
func BulkLoad(ctx context.Context, c *ctl.Client, index string, docs []Doc, batchSize, concurrency int) (time.Duration, error) {
	var in bytes.Buffer
	for _, d := range docs {
		in.Write(d.Source)
		in.WriteByte('\n')
	}
	start := time.Now()
	res, err := ctl.Load(ctx, c, &in, ctl.LoadOptions{
		Index: index, Format: ctl.FormatLines, IDField: "id",
		BatchDocs: batchSize, BatchBytes: 1 << 30, Concurrency: concurrency,
	})
	elapsed := time.Since(start)
	if err != nil {
		for _, f := range res.Failures {
			err = fmt.Errorf("%w\n  %q: %d %s: %s", err, f.ID, f.Status, f.Type, f.Reason)
		}
		return 0, fmt.Errorf("HTTP bulk into %s: %w", index, err)
	}
	if res.Docs != int64(len(docs)) {
		return 0, fmt.Errorf("HTTP bulk into %s: the node acknowledged %d of %d documents", index, res.Docs, len(docs))
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
