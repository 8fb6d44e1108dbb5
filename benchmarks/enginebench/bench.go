// Package enginebench measures the single-node engine through its HTTP API
// against raw bleve in-process, in one run, on the same documents, mapping
// and queries: bulk indexing throughput (docs/s) and query latency (p50,
// p99) for term, boolean and phrase queries, plus the cost of an empty HTTP
// round trip measured in the same run. benchmarks/cmd/enginebench is its
// command line; docs/benchmarks-engine.md shows the latest figures.
//
// The HTTP side is a real searchnode process on a loopback port, loaded by
// searchctl's bulk loader; the raw side is a bleve scorch index built from
// index.Mapping.BleveMapping() of the same Elasticsearch mapping, loaded
// by the benchmark's process and then searched by a raw worker: the same
// executable started again (see RawWorkerMain), which calls bleve directly
// and times each search itself, so that neither side's garbage collection
// runs in the other's timed calls. The sides take turns (bulk in rounds of batches, queries one each per round, with an
// empty round trip in every query round), so load from other work on the
// machine falls on all of them alike. The
// targets (reported, never asserted): HTTP bulk ≥ 0.8× raw bleve batch
// indexing; HTTP query p50 ≤ (raw p50 + empty round trip p50) × 1.1.
package enginebench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/weftsearch/weft/benchmarks/internal/nodeproc"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/ctl"
)

// Config bounds and shapes a run. DefaultConfig gives the values of the
// command's flags.
type Config struct {
	Corpus      string        // JSON lines file (see LoadDocs)
	MappingFile string        // Elasticsearch mapping JSON for both sides
	Docs        int           // documents to index (<= 0: the whole corpus once)
	Queries     int           // timed queries per kind and side
	Duration    time.Duration // per kind and side, stop timing queries after this long even if fewer ran
	BatchSize   int           // documents per bulk request and per bleve batch
	Concurrency int           // bulk requests in flight on the HTTP side
	Size        int           // hits per query
	Seed        uint64        // query choice
	Kinds       []QueryKind   // query kinds to time; default term, boolean, phrase
	Searchnode  string        // searchnode binary; "" builds ./cmd/searchnode
	Addr        string        // use the node at this URL instead of starting one
	WorkDir     string        // scratch directory; "" makes a temporary one (removed at the end)
}

// DefaultConfig is the command's default run.
func DefaultConfig() Config {
	return Config{
		Corpus:      "testdata/sample/emails.ndjson",
		MappingFile: "testdata/sample/emails.mapping.json",
		Queries:     500,
		Duration:    20 * time.Second,
		BatchSize:   1000,
		Concurrency: 2,
		Size:        10,
		Seed:        1,
	}
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	switch {
	case c.Corpus == "":
		return fmt.Errorf("Corpus is empty; pass -corpus FILE (JSON lines)")
	case c.MappingFile == "":
		return fmt.Errorf("MappingFile is empty; pass -mapping FILE")
	case c.Queries < 1:
		return fmt.Errorf("Queries %d must be at least 1", c.Queries)
	case c.Duration <= 0:
		return fmt.Errorf("Duration %v must be positive", c.Duration)
	case c.BatchSize < 1:
		return fmt.Errorf("BatchSize %d must be at least 1", c.BatchSize)
	case c.Concurrency < 1:
		return fmt.Errorf("Concurrency %d must be at least 1", c.Concurrency)
	case c.Size < 1:
		return fmt.Errorf("Size %d must be at least 1", c.Size)
	}
	for _, k := range c.Kinds {
		if k != KindTerm && k != KindBoolean && k != KindPhrase {
			return fmt.Errorf("query kind %q is not term, boolean or phrase", k)
		}
	}
	return nil
}

// Latency summarises timed operations.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	Mean float64 `json:"mean_us"`
}

// Summarize gives the count, nearest-rank p50 and p99, and mean of ds
// (zero for none); ds is not modified.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	// Nearest-rank percentile.
	rank := func(p float64) time.Duration { return s[int(math.Ceil(p*float64(len(s))))-1] }
	return Latency{N: len(s), P50: us(rank(0.50)), P99: us(rank(0.99)), Mean: us(sum / time.Duration(len(s)))}
}

// BulkResult compares indexing throughput.
type BulkResult struct {
	RawDocsPerSec       float64 `json:"raw_docs_per_s"`        // bleve defaults: a batch returns once persisted
	RawUnsafeDocsPerSec float64 `json:"raw_unsafe_docs_per_s"` // scorch unsafe_batch, as the node's index uses
	HTTPDocsPerSec      float64 `json:"http_docs_per_s"`       // _bulk through a node, then _refresh
	Ratio               float64 `json:"ratio"`                 // HTTP / raw (defaults)
	RatioUnsafe         float64 `json:"ratio_unsafe"`          // HTTP / raw (unsafe_batch)
	TargetMet           bool    `json:"target_met"`            // Ratio >= 0.8
}

// QueryResult compares one query kind.
type QueryResult struct {
	Kind      QueryKind `json:"kind"`
	Raw       Latency   `json:"raw"`
	HTTP      Latency   `json:"http"`
	Empty     Latency   `json:"empty_round_trip"` // GET / on the node, interleaved with these queries
	BudgetUS  float64   `json:"budget_p50_us"`    // (raw p50 + Empty p50) × 1.1
	TargetMet bool      `json:"target_met"`
	// A correctness cross-check, not a timing: of Distinct distinct
	// queries, how many had the same total (below Elasticsearch's default
	// track_total_hits bound of 10,000, else counted as same), the same set
	// of top-hit ids, and the same top-hit scores (relative 1e-6) on both
	// sides. FirstMismatch describes one query that differed.
	Distinct      int    `json:"distinct"`
	SameTotals    int    `json:"same_totals"`
	SameTopIDs    int    `json:"same_top_ids"`
	SameScores    int    `json:"same_scores"`
	FirstMismatch string `json:"first_mismatch,omitempty"`
	// Garbage collections during this kind's rounds (warm-up included) in
	// the benchmark's process, which is the HTTP client, and in the raw
	// worker.
	ClientGCs uint32 `json:"client_gcs"`
	RawGCs    uint32 `json:"raw_worker_gcs"`
}

// Machine says when and on what a run ran: the Go runtime, the CPUs, and
// /proc/loadavg's 1-minute figure at the start and the end of the run
// (other work on the machine skews every timing).
type Machine struct {
	Time         time.Time `json:"time"`
	GoVersion    string    `json:"go_version"`
	NumCPU       int       `json:"num_cpu"`
	GOMAXPROCS   int       `json:"gomaxprocs"`
	LoadAvgStart float64   `json:"loadavg_start"`
	LoadAvgEnd   float64   `json:"loadavg_end"`
}

// StartMachine describes this machine now; End completes it.
func StartMachine() Machine {
	return Machine{Time: time.Now().UTC(), GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadAvgStart: LoadAvg()}
}

// End records the load average at the end of the run.
func (m *Machine) End() { m.LoadAvgEnd = LoadAvg() }

// String is the tables' line about the machine, e.g. "go1.26.8, 2 CPUs,
// GOMAXPROCS 2, load average 0.6 at start, 5.5 at end".
func (m Machine) String() string {
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS %d, load average %.1f at start, %.1f at end", m.GoVersion, m.NumCPU, m.GOMAXPROCS, m.LoadAvgStart, m.LoadAvgEnd)
}

// Result is one run's figures.
type Result struct {
	Machine
	Docs        int           `json:"docs"`
	CorpusBytes int64         `json:"corpus_bytes"`
	BatchSize   int           `json:"batch_size"`
	Concurrency int           `json:"concurrency"`
	Size        int           `json:"size"`
	Bulk        BulkResult    `json:"bulk"`
	EmptyRTT    Latency       `json:"empty_round_trip"`     // GET / on the node, all query kinds' rounds together
	BareRTT     Latency       `json:"bare_http_round_trip"` // a bare net/http handler in this process, for reference
	Queries     []QueryResult `json:"queries"`
}

// Run performs one benchmark run. It logs progress to logger and blocks
// until done or ctx ends; every process and goroutine it starts is stopped
// before it returns. It starts os.Executable() as the raw worker, so the
// calling binary must call RawWorkerMain first in main.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Getenv(RawWorkerEnv) != "" {
		return nil, fmt.Errorf("enginebench: %s is set, so this process is a raw worker; its main must call enginebench.RawWorkerMain before Run", RawWorkerEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("enginebench: find this executable to start the raw worker: %w", err)
	}
	mappingJSON, err := os.ReadFile(cfg.MappingFile)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	esMapping, err := index.ParseMapping(mappingJSON)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", cfg.MappingFile, err)
	}
	docs, err := LoadDocs(cfg.Corpus, cfg.Docs)
	if err != nil {
		return nil, err
	}
	queries, err := MakeQueries(docs, cfg.Queries, cfg.Seed)
	if err != nil {
		return nil, err
	}
	work := cfg.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "enginebench-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}

	res = &Result{Machine: StartMachine(), Docs: len(docs), BatchSize: cfg.BatchSize, Concurrency: cfg.Concurrency, Size: cfg.Size}
	for _, d := range docs {
		res.CorpusBytes += int64(len(d.Source))
	}
	logger.Info("enginebench: corpus", "docs", len(docs), "bytes", res.CorpusBytes)

	// The node.
	url := cfg.Addr
	if url == "" {
		bin := cfg.Searchnode
		if bin == "" {
			logger.Info("enginebench: building ./cmd/searchnode")
			if bin, err = nodeproc.Build(ctx, work); err != nil {
				return nil, err
			}
		}
		n, err := startNode(ctx, bin, work)
		if err != nil {
			return nil, err
		}
		defer func() {
			if serr := n.Stop(); serr != nil && err == nil {
				err = serr
			}
		}()
		url = n.url
	}
	c, err := ctl.NewClient(url, nil)
	if err != nil {
		return nil, err
	}
	h := &httpIndex{c: c, name: "enginebench"}
	if err := h.create(ctx, mappingJSON); err != nil {
		return nil, err
	}

	// Raw bleve twice (bleve's default batches, and unsafe_batch as the
	// node's index uses; that one is kept for the queries) and the node,
	// loaded in lockstep so that all three see the same machine load.
	rawSafe, err := openRaw(filepath.Join(work, "raw-default"), esMapping.BleveMapping(), false)
	if err != nil {
		return nil, err
	}
	rawDir := filepath.Join(work, "raw-unsafe")
	raw, err := openRaw(rawDir, esMapping.BleveMapping(), true)
	if err != nil {
		rawSafe.Close()
		return nil, err
	}
	bt, err := loadInterleaved(ctx, docs, cfg, rawSafe, raw, h)
	rawSafe.Close()
	if err == nil {
		// Untimed: the node's BM25 statistics for the raw side to score
		// with, and a persisted index for the worker to open from disk.
		err = raw.persist(ctx, esMapping.BleveMapping(), docs)
	}
	if cerr := raw.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("raw bleve: close %s: %w", rawDir, cerr)
	}
	if err != nil {
		return nil, err
	}
	n := float64(len(docs))
	res.Bulk.RawDocsPerSec = n / bt.rawSafe.Seconds()
	res.Bulk.RawUnsafeDocsPerSec = n / bt.rawUnsafe.Seconds()
	res.Bulk.HTTPDocsPerSec = n / bt.http.Seconds()
	res.Bulk.Ratio = res.Bulk.HTTPDocsPerSec / res.Bulk.RawDocsPerSec
	res.Bulk.RatioUnsafe = res.Bulk.HTTPDocsPerSec / res.Bulk.RawUnsafeDocsPerSec
	res.Bulk.TargetMet = res.Bulk.Ratio >= 0.8
	logger.Info("enginebench: bulk", "raw_docs_per_s", int(res.Bulk.RawDocsPerSec),
		"raw_unsafe_docs_per_s", int(res.Bulk.RawUnsafeDocsPerSec), "http_docs_per_s", int(res.Bulk.HTTPDocsPerSec))

	// The raw side's queries run in the raw worker, on the index just
	// loaded and closed.
	worker, err := startRawWorker(ctx, exe, rawDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := worker.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if worker.docs != uint64(len(docs)) {
		return nil, fmt.Errorf("raw worker opened %s with %d documents, want %d: the index lost documents when closed", rawDir, worker.docs, len(docs))
	}

	// Queries, interleaved with empty round trips (GET / on the node) so
	// that all three see the same machine; then a bare handler for reference.
	var empties []time.Duration
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = []QueryKind{KindTerm, KindBoolean, KindPhrase}
	}
	for _, kind := range kinds {
		qr, empty, err := compareQueries(ctx, cfg, worker, h, queries[kind])
		if err != nil {
			return nil, err
		}
		qr.Kind = kind
		res.Queries = append(res.Queries, qr)
		empties = append(empties, empty...)
		logger.Info("enginebench: queries", "kind", kind, "raw_p50_us", qr.Raw.P50, "http_p50_us", qr.HTTP.P50,
			"empty_p50_us", qr.Empty.P50, "same_scores", qr.SameScores, "distinct", qr.Distinct)
	}
	res.EmptyRTT = Summarize(empties)
	if res.BareRTT, err = bareRoundTrip(ctx, cfg); err != nil {
		return nil, err
	}
	res.End()
	return res, nil
}

// bulkTimes are the summed indexing times of the three sides.
type bulkTimes struct{ rawSafe, rawUnsafe, http time.Duration }

// loadInterleaved indexes docs into all three sides in rounds of
// BatchSize×Concurrency documents: each round is indexed by raw bleve with
// default batches, then raw bleve with unsafe_batch (batches of BatchSize,
// one at a time), then the node (requests of BatchSize, Concurrency in
// flight). Each side's time is the sum of its rounds; the node's includes
// the final _refresh.
func loadInterleaved(ctx context.Context, docs []Doc, cfg Config, rawSafe, rawUnsafe *rawIndex, h *httpIndex) (bulkTimes, error) {
	var t bulkTimes
	round := cfg.BatchSize * cfg.Concurrency
	for lo := 0; lo < len(docs); lo += round {
		chunk := docs[lo:min(lo+round, len(docs))]
		d, err := rawSafe.load(ctx, chunk, cfg.BatchSize)
		if err != nil {
			return t, err
		}
		t.rawSafe += d
		if d, err = rawUnsafe.load(ctx, chunk, cfg.BatchSize); err != nil {
			return t, err
		}
		t.rawUnsafe += d
		if d, err = h.bulk(ctx, chunk, cfg.BatchSize, cfg.Concurrency); err != nil {
			return t, err
		}
		t.http += d
	}
	d, err := h.refresh(ctx)
	if err != nil {
		return t, err
	}
	t.http += d
	return t, nil
}

// timeRounds runs rounds of ops, each op once per round in order, and
// returns the times each op reported: min(Queries, 50) untimed warm-up
// rounds, then up to cfg.Queries timed rounds, fewer if cfg.Duration passes.
// Interleaving the ops exposes them to the same load on the machine.
func timeRounds(ctx context.Context, cfg Config, ops ...func(round int) (time.Duration, error)) ([][]time.Duration, error) {
	for r := range min(cfg.Queries, 50) {
		for _, op := range ops {
			if _, err := op(r); err != nil {
				return nil, err
			}
		}
	}
	times := make([][]time.Duration, len(ops))
	end := time.Now().Add(cfg.Duration)
	for r := range cfg.Queries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for k, op := range ops {
			d, err := op(r)
			if err != nil {
				return nil, err
			}
			times[k] = append(times[k], d)
		}
		if time.Now().After(end) {
			break
		}
	}
	return times, nil
}

// bareRoundTrip times GET on a minimal net/http server in this process:
// the floor of an HTTP/1.1 exchange on loopback with the same client.
func bareRoundTrip(ctx context.Context, cfg Config) (Latency, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Latency{}, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	c, err := ctl.NewClient("http://"+l.Addr().String(), nil)
	if err != nil {
		return Latency{}, err
	}
	times, err := timeRounds(ctx, cfg, func(int) (time.Duration, error) {
		start := time.Now()
		_, err := c.Do(ctx, http.MethodGet, "/", nil, nil, "")
		return time.Since(start), err
	})
	if err != nil {
		return Latency{}, fmt.Errorf("bare round trip: %w", err)
	}
	return Summarize(times[0]), nil
}

// compareQueries times qs on both sides, interleaved with GET / on the
// node (each round: raw query in the worker, HTTP query, empty round
// trip), and cross-checks their answers. It also returns the empty round
// trip times.
func compareQueries(ctx context.Context, cfg Config, raw *rawWorker, h *httpIndex, qs []Query) (QueryResult, []time.Duration, error) {
	var qr QueryResult
	clientGC, rawGC, err := gcCounts(raw)
	if err != nil {
		return qr, nil, err
	}
	times, err := timeRounds(ctx, cfg,
		func(r int) (time.Duration, error) {
			d, _, err := raw.search(qs[r%len(qs)], cfg.Size)
			return d, err
		},
		func(r int) (time.Duration, error) {
			d, _, err := h.search(ctx, qs[r%len(qs)], cfg.Size)
			return d, err
		},
		func(int) (time.Duration, error) {
			d, err := h.emptyRoundTrip(ctx)
			if err != nil {
				return 0, fmt.Errorf("GET /: %w", err)
			}
			return d, nil
		})
	if err != nil {
		return qr, nil, err
	}
	clientGC2, rawGC2, err := gcCounts(raw)
	if err != nil {
		return qr, nil, err
	}
	qr.ClientGCs, qr.RawGCs = clientGC2-clientGC, rawGC2-rawGC
	qr.Raw, qr.HTTP, qr.Empty = Summarize(times[0]), Summarize(times[1]), Summarize(times[2])
	qr.BudgetUS = (qr.Raw.P50 + qr.Empty.P50) * 1.1
	qr.TargetMet = qr.HTTP.P50 <= qr.BudgetUS

	// Cross-check each distinct query once.
	seen := map[string]bool{}
	for _, q := range qs {
		key := fmt.Sprint(q.Terms)
		if seen[key] {
			continue
		}
		seen[key] = true
		qr.Distinct++
		_, ra, err := raw.search(q, cfg.Size)
		if err != nil {
			return qr, nil, err
		}
		_, ha, err := h.search(ctx, q, cfg.Size)
		if err != nil {
			return qr, nil, err
		}
		sameTotal := ra.Total == ha.Total || (ra.Total >= 10000 && ha.Total >= 10000)
		sameIDs := sameSet(ra.IDs, ha.IDs)
		sameScores := sameScores(ra.Scores, ha.Scores)
		if sameTotal {
			qr.SameTotals++
		}
		if sameIDs {
			qr.SameTopIDs++
		}
		if sameScores {
			qr.SameScores++
		}
		if !(sameTotal && sameIDs && sameScores) && qr.FirstMismatch == "" {
			qr.FirstMismatch = fmt.Sprintf("%s: raw total %d ids %q scores %.4g; HTTP total %d ids %q scores %.4g",
				esBody(q, cfg.Size), ra.Total, ra.IDs, ra.Scores, ha.Total, ha.IDs, ha.Scores)
		}
	}
	return qr, times[2], nil
}

// gcCounts returns the garbage collections completed so far in this
// process (the HTTP client) and in the raw worker.
func gcCounts(raw *rawWorker) (client, worker uint32, err error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	worker, err = raw.numGC()
	return ms.NumGC, worker, err
}

// sameScores reports whether a and b hold the same scores to a relative
// tolerance of 1e-6.
func sameScores(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6*math.Max(math.Abs(a[i]), math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// LoadAvg returns the 1-minute load average, or -1 where /proc/loadavg is
// missing (not Linux).
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var one float64
	if _, err := fmt.Sscan(string(b), &one); err != nil {
		return -1
	}
	return one
}
