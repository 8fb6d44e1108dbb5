package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/shard"
)

// newPressureAPI is an API over a real single-node engine whose indexing
// pressure limit (coordinating and primary stages) is limit bytes.
func newPressureAPI(t *testing.T, limit, maxBody int64) *testAPI {
	t.Helper()
	logger := testlog.New(t)
	scfg := shard.DefaultConfig()
	scfg.IndexingPressureBytes = limit
	eng, _ := openEngineWith(t, logger, scfg)
	cfg := apiConfig()
	cfg.MaxBodyBytes = maxBody
	api, err := httpapi.New(cfg, eng, logger, prometheus.NewRegistry())
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &testAPI{t: t, srv: srv, eng: eng}
}

// tinyDeletes is a bulk body of n delete actions of ids d0..d(n-1) in
// index ix.
func tinyDeletes(ix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"delete\":{\"_index\":\"%s\",\"_id\":\"d%d\"}}\n", ix, i)
	}
	return b.String()
}

// pressureStats reads this node's indexing_pressure.memory from
// _nodes/stats.
func pressureStats(t *testing.T, a *testAPI) map[string]any {
	t.Helper()
	st := a.must(200, "GET", "/_nodes/stats", "")
	return path(t, st, "nodes", "n1", "indexing_pressure", "memory").(map[string]any)
}

// TestBulkOverIndexingPressureIsRefused: a bulk that would hold more than
// the node's indexing pressure limit is refused whole with 429
// es_rejected_execution_exception in Elasticsearch's shape, as
// Elasticsearch refuses it at the coordinating stage: none of its items is
// written, earlier documents are intact, _nodes/stats counts the
// rejection, and a bulk within the limit is served after it.
func TestBulkOverIndexingPressureIsRefused(t *testing.T) {
	const limit = 256 << 10
	a := newPressureAPI(t, limit, 1<<20)
	a.must(200, "PUT", "/v", `{"settings":{"number_of_replicas":0}}`)
	a.must(201, "PUT", "/v/_doc/1?refresh=true", `{"n":1}`)

	for _, tc := range []struct {
		name string
		body string
	}{
		// 1,000 actions of a few dozen bytes each: a body well under the
		// limit, refused as its items are parsed (each is charged
		// vocab.OpOverhead).
		{"many tiny items", func() string {
			var b strings.Builder
			for i := range 1000 {
				fmt.Fprintf(&b, "{\"index\":{\"_index\":\"v\",\"_id\":\"t%d\"}}\n{\"n\":%d}\n", i, i)
			}
			return b.String()
		}()},
		// A body larger than the limit: refused by its declared length
		// before it is read.
		{"a body over the limit", fmt.Sprintf("{\"index\":{\"_index\":\"v\",\"_id\":\"big\"}}\n{\"s\":\"%s\"}\n", strings.Repeat("x", limit))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/_bulk", tc.body, "Content-Type", "application/x-ndjson")
			require.Equal(t, http.StatusTooManyRequests, r.Status, "%s", r.Body)
			require.Equal(t, "es_rejected_execution_exception", errorType(t, r))
			e := readError(t, r)
			require.True(t, strings.HasPrefix(e.Reason, "rejected execution of coordinating operation [coordinating_and_primary_bytes="), e.Reason)
			require.Contains(t, e.Reason, fmt.Sprintf("max_coordinating_and_primary_bytes=%d]", limit))
		})
	}
	a.must(200, "POST", "/v/_refresh", "")
	require.Equal(t, float64(1), a.must(200, "GET", "/v/_count", "")["count"], "nothing of a refused bulk was written")
	require.Equal(t, map[string]any{"n": float64(1)}, a.must(200, "GET", "/v/_doc/1", "")["_source"])

	mem := pressureStats(t, a)
	require.Equal(t, float64(limit), mem["limit_in_bytes"])
	require.Equal(t, float64(2), path(t, mem, "total", "coordinating_rejections"))
	require.Equal(t, float64(0), path(t, mem, "current", "all_in_bytes"), "a refused bulk holds nothing")
	require.Equal(t, float64(0), path(t, mem, "current", "coordinating_in_bytes"))

	r := a.must(200, "POST", "/_bulk?refresh=true", bulkLines(`{"index":{"_index":"v","_id":"2"}}`, `{"n":2}`))
	require.Equal(t, false, r["errors"])
	mem = pressureStats(t, a)
	require.Greater(t, path(t, mem, "total", "coordinating_in_bytes").(float64), float64(0))
	require.Greater(t, path(t, mem, "total", "primary_in_bytes").(float64), float64(0), "the local primary is counted")
	require.Equal(t, float64(0), path(t, mem, "current", "all_in_bytes"), "a served bulk holds nothing once answered")
}

// heapPeak samples the bytes of live and not yet collected heap objects
// every millisecond while fn runs and returns how far they rose above
// what they were before it (after a collection).
func heapPeak(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// TestBulkOfTinyDeletesStaysInItsBudget is issue 18's hostile bulk scaled
// down: many tiny delete lines. Within the limit it is served, and the
// heap grows by at most three times what indexing pressure charged it (the
// live items, and the garbage of parsing them that the collector has not
// reclaimed yet: it lets the heap reach twice what was live at its last
// mark) and a fixed 8 MiB for the rest of the node; over the limit it is
// refused with 429 within the same bound of the limit. Measured on two
// cores: about 1.5 times within the limit, 2 to 2.2 times the limit when
// refused, with or without -race. Before indexing
// pressure a bulk of 100,000 tiny deletes took 3.1 KB of heap per line
// (300 MiB here); that is the shape of the 26 MB bulk that took a node to
// 3.2 GiB.
func TestBulkOfTinyDeletesStaysInItsBudget(t *testing.T) {
	const limit = 16 << 20
	const slack = 8 << 20
	a := newPressureAPI(t, limit, 8<<20)
	a.must(200, "PUT", "/v", `{"settings":{"number_of_replicas":0}}`)
	a.must(201, "PUT", "/v/_doc/1?refresh=true", `{"n":1}`)

	within := tinyDeletes("v", 10_000) // ~10.5 MiB charged
	var r reply
	grew := heapPeak(func() { r = a.do("POST", "/_bulk", within, "Content-Type", "application/x-ndjson") })
	require.Equal(t, 200, r.Status, "%s", r.Body[:min(len(r.Body), 500)])
	charged := int64(len(within)) + 10_000*1024
	t.Logf("10,000 tiny deletes: heap grew %d KiB for %d KiB charged", grew>>10, charged>>10)
	require.Less(t, grew, uint64(3*charged+slack), "a bulk within its budget took more memory than it was charged")

	over := tinyDeletes("v", 100_000)
	grew = heapPeak(func() { r = a.do("POST", "/_bulk", over, "Content-Type", "application/x-ndjson") })
	require.Equal(t, http.StatusTooManyRequests, r.Status, "%s", r.Body[:min(len(r.Body), 500)])
	require.Equal(t, "es_rejected_execution_exception", errorType(t, r))
	t.Logf("100,000 tiny deletes (refused): heap grew %d KiB for a limit of %d KiB", grew>>10, limit>>10)
	require.Less(t, grew, uint64(3*limit+slack), "a refused bulk took more memory than the limit allows")
	require.Equal(t, map[string]any{"n": float64(1)}, a.must(200, "GET", "/v/_doc/1", "")["_source"])
}
