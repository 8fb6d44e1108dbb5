package clusterbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/weftsearch/weft/benchmarks/enginebench"
	"github.com/weftsearch/weft/internal/ctl"
)

// createIndex creates index with shards, replicas and mapping (raw JSON;
// nil for none).
func createIndex(ctx context.Context, c *ctl.Client, index string, shards, replicas int, mapping json.RawMessage) error {
	body := map[string]any{"settings": map[string]any{"number_of_shards": shards, "number_of_replicas": replicas}}
	if mapping != nil {
		body["mappings"] = mapping
	}
	b, _ := json.Marshal(body) // raw JSON and ints always marshal
	if err := c.CreateIndex(ctx, index, b); err != nil {
		return fmt.Errorf("create index %s: %w", index, err)
	}
	return nil
}

// setReplicas changes the index's number_of_replicas (PUT _settings).
func setReplicas(ctx context.Context, c *ctl.Client, index string, replicas int) error {
	b, _ := json.Marshal(map[string]any{"index": map[string]any{"number_of_replicas": replicas}}) // ints always marshal
	if _, err := c.Do(ctx, http.MethodPut, "/"+url.PathEscape(index)+"/_settings", nil, b, "application/json"); err != nil {
		return fmt.Errorf("set number_of_replicas of %s to %d: %w", index, replicas, err)
	}
	return nil
}

// bulkTarget is an index bulk-loaded through one node.
type bulkTarget struct {
	c     *ctl.Client
	index string
}

// loadInterleaved indexes docs into every target in rounds of
// batch×concurrency documents, the targets taking turns within a round
// (the order rotating from round to round) so that they see the same load
// on the machine. It returns each target's summed time, its final
// _refresh included.
func loadInterleaved(ctx context.Context, docs []enginebench.Doc, batch, concurrency int, targets []bulkTarget) ([]time.Duration, error) {
	times := make([]time.Duration, len(targets))
	round := batch * concurrency
	for r, lo := 0, 0; lo < len(docs); r, lo = r+1, lo+round {
		chunk := docs[lo:min(lo+round, len(docs))]
		for k := range targets {
			i := (k + r) % len(targets)
			d, err := enginebench.BulkLoad(ctx, targets[i].c, targets[i].index, chunk, batch, concurrency)
			if err != nil {
				return nil, err
			}
			times[i] += d
		}
	}
	for i, t := range targets {
		start := time.Now()
		if err := t.c.Refresh(ctx, t.index); err != nil {
			return nil, fmt.Errorf("refresh %s: %w", t.index, err)
		}
		times[i] += time.Since(start)
	}
	return times, nil
}

// docsPerSec is n over d in seconds (0 for no time).
func docsPerSec(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
