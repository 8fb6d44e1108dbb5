package clusterbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weftsearch/weft/benchmarks/enginebench"
	"github.com/weftsearch/weft/benchmarks/internal/nodeproc"
)

// Run performs one benchmark run. It logs progress to logger and blocks
// until done or ctx ends; every process it starts is stopped before it
// returns. It must run in the module root when it builds searchnode.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mapping, err := os.ReadFile(cfg.MappingFile)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	if !json.Valid(mapping) {
		return nil, fmt.Errorf("mapping %s is not JSON", cfg.MappingFile)
	}
	docs, err := enginebench.LoadDocs(cfg.Corpus, cfg.Docs)
	if err != nil {
		return nil, err
	}
	queries, err := LoadQueries(cfg.QueriesFile, docs, cfg.Generated, cfg.Seed)
	if err != nil {
		return nil, err
	}
	work := cfg.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "clusterbench-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	bin := cfg.Searchnode
	if bin == "" {
		logger.Info("clusterbench: building ./cmd/searchnode")
		if bin, err = nodeproc.Build(ctx, work); err != nil {
			return nil, err
		}
	}
	procs := cfg.NodeProcessors
	if procs == ShareProcessors {
		procs = Processors(clusterNodes)
	}
	res = &Result{Machine: enginebench.StartMachine(), Docs: len(docs), Queries: len(queries), FileQueries: len(queries) - cfg.Generated,
		Size: cfg.Size, Shards: cfg.Shards, NodeProcessors: procs}
	for _, d := range docs {
		res.CorpusBytes += int64(len(d.Source))
	}

	// The clusters: one lone node (search only) and a three-node cluster
	// per transport. Each is stopped when Run returns.
	var running []*cluster
	defer func() {
		for _, cl := range running {
			if serr := cl.stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	startCluster := func(name string, n int, transport string) (*cluster, error) {
		cl, err := newCluster(bin, filepath.Join(work, name), n, transport, cfg.RecoveryThrottle, procs)
		if err != nil {
			return nil, err
		}
		running = append(running, cl)
		logger.Info("clusterbench: starting", "cluster", cl.name())
		return cl, cl.start(ctx)
	}
	var lone *cluster
	if slices.Contains(cfg.Parts, PartSearch) {
		if lone, err = startCluster("lone", 1, ""); err != nil {
			return nil, err
		}
	}
	var three []*cluster
	for _, t := range cfg.Transports {
		cl, err := startCluster("three-"+t, clusterNodes, t)
		if err != nil {
			return nil, err
		}
		three = append(three, cl)
	}

	if lone != nil {
		if err := runSearch(ctx, cfg, logger, res, lone, three, docs, queries, mapping); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Parts, PartReplicas) {
		if err := runReplicas(ctx, cfg, logger, res, three, docs, mapping); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Parts, PartRecovery) {
		if res.Recovery, err = runRecovery(ctx, cfg, logger, three); err != nil {
			return nil, err
		}
	}
	res.End()
	res.Goals = Goals(res)
	return res, nil
}

// searchIndex is the index the search part compares.
const searchIndex = "emails"

// runSearch loads the corpus into every setup (batches interleaved), then
// times the queries at every client count and reads the coordinators'
// fabric bytes around the one-client rounds.
func runSearch(ctx context.Context, cfg Config, logger *slog.Logger, res *Result, lone *cluster, three []*cluster, docs []enginebench.Doc, queries []Query, mapping []byte) error {
	setups := []*setup{{name: "1 node, 1 shard", cl: lone, index: searchIndex + "-1", shards: 1}}
	if cfg.Shards != 1 {
		setups = append(setups, &setup{name: fmt.Sprintf("1 node, %d shards", cfg.Shards), cl: lone, index: searchIndex, shards: cfg.Shards})
	}
	for _, cl := range three {
		setups = append(setups, &setup{name: fmt.Sprintf("%s, %d shards", cl.name(), cfg.Shards), cl: cl, index: searchIndex, shards: cfg.Shards})
	}
	var targets []bulkTarget
	for _, s := range setups {
		if err := createIndex(ctx, s.client(), s.index, s.shards, 0, mapping); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if err := s.cl.waitGreen(ctx, s.index, clusterTimeout); err != nil {
			return err
		}
		targets = append(targets, bulkTarget{c: s.client(), index: s.index})
	}
	logger.Info("clusterbench: bulk loading the search indexes", "docs", len(docs), "setups", len(setups))
	times, err := loadInterleaved(ctx, docs, cfg.BatchSize, cfg.Concurrency, targets)
	if err != nil {
		return err
	}
	for i, s := range setups {
		res.Bulk = append(res.Bulk, BulkFigure{Setup: s.name, Docs: len(docs), Seconds: times[i].Seconds(), DocsPerSec: docsPerSec(len(docs), times[i])})
		if err := s.locate(ctx); err != nil {
			return err
		}
	}
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		bodies[i] = searchBody(q, cfg.Size)
	}

	// One client: rounds, with the coordinators' fabric counters around
	// them, then the same counters over as long with no queries.
	logger.Info("clusterbench: one client", "queries", len(queries), "rounds", cfg.Rounds)
	fabricSetups := setups[len(setups)-len(three):]
	before := make([]counters, len(fabricSetups))
	for i, s := range fabricSetups {
		if before[i], err = readCounters(ctx, s.client()); err != nil {
			return err
		}
	}
	start := time.Now()
	lat, pages, err := oneClient(ctx, cfg, setups, bodies)
	if err != nil {
		return err
	}
	batch := time.Since(start)
	for i, s := range setups {
		var sum time.Duration
		for _, d := range lat[i] {
			sum += d
		}
		res.Search = append(res.Search, SearchFigure{Setup: s.name, Clients: 1, Latency: enginebench.Summarize(lat[i]), QPS: docsPerSec(len(lat[i]), sum)})
	}
	off := len(setups) - len(fabricSetups)
	for i, s := range fabricSetups {
		after, err := readCounters(ctx, s.client())
		if err != nil {
			return err
		}
		p := pages[off+i]
		res.FanOut = append(res.FanOut, FanOutFigure{Setup: s.name, Queries: len(lat[off+i]), Seconds: batch.Seconds(),
			FabricBytes: grown(before[i], after, sentAndReceived), SourceBytes: p.sourceBytes, RemoteSourceBytes: p.remoteSource})
		before[i] = after
	}
	idle := min(batch, 5*time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idle):
	}
	for i, s := range fabricSetups {
		after, err := readCounters(ctx, s.client())
		if err != nil {
			return err
		}
		res.FanOut[i].IdleBytesPerSec = float64(grown(before[i], after, sentAndReceived)) / idle.Seconds()
		if res.FanOut[i].Heaviest, err = heaviest(ctx, s, queries, bodies, 5); err != nil {
			return err
		}
	}

	// More clients: timed windows, the setups taking turns.
	for _, clients := range cfg.Clients {
		if clients == 1 {
			continue
		}
		logger.Info("clusterbench: concurrent clients", "clients", clients, "windows", cfg.Windows, "window", cfg.Window)
		lats := make([][]time.Duration, len(setups))
		spent := make([]time.Duration, len(setups))
		for w := range cfg.Windows {
			for k := range setups {
				i := (k + w) % len(setups)
				l, d, err := window(ctx, setups[i], bodies, clients, cfg.Window, w*clients)
				if err != nil {
					return err
				}
				lats[i] = append(lats[i], l...)
				spent[i] += d
			}
		}
		for i, s := range setups {
			res.Search = append(res.Search, SearchFigure{Setup: s.name, Clients: clients, Latency: enginebench.Summarize(lats[i]), QPS: docsPerSec(len(lats[i]), spent[i])})
		}
	}
	return nil
}

// replicaOrder is the order of runReplicas's whole loads, by
// number_of_replicas: ABBA, so that a drift in the machine's speed over
// the run falls on both alike.
var replicaOrder = []int{0, 1, 1, 0}

// runReplicas loads the whole corpus on each three-node cluster into a
// fresh index of cfg.Shards shards, with 0 or 1 replica in replicaOrder's
// turns, each load ending with a _refresh that is counted: it returns once
// every copy has indexed what it acknowledged (a replica indexes behind its
// acknowledgements, shard/behind.go), so each load is charged its own
// indexing, none of it spilling into the next load's time. Whole loads
// rather than rounds interleaved with the other index: a replica batches
// what it indexes over up to a second, as under any sustained bulk load,
// and a refresh every round would cut that short.
func runReplicas(ctx context.Context, cfg Config, logger *slog.Logger, res *Result, three []*cluster, docs []enginebench.Doc, mapping []byte) error {
	for _, cl := range three {
		c := cl.nodes[0].c
		var times [2]time.Duration
		for turn, r := range replicaOrder {
			index := fmt.Sprintf("replicas-%d-%d", r, turn)
			if err := createIndex(ctx, c, index, cfg.Shards, r, mapping); err != nil {
				return fmt.Errorf("%s: %w", cl.name(), err)
			}
			if err := cl.waitGreen(ctx, index, clusterTimeout); err != nil {
				return err
			}
			logger.Info("clusterbench: bulk", "cluster", cl.name(), "replicas", r, "docs", len(docs))
			took, err := enginebench.BulkLoad(ctx, c, index, docs, cfg.BatchSize, cfg.Concurrency)
			if err != nil {
				return fmt.Errorf("%s: %w", cl.name(), err)
			}
			start := time.Now()
			if err := c.Refresh(ctx, index); err != nil {
				return fmt.Errorf("%s: refresh %s: %w", cl.name(), index, err)
			}
			times[r] += took + time.Since(start)
			if err := c.DeleteIndex(ctx, index); err != nil {
				return fmt.Errorf("%s: delete %s: %w", cl.name(), index, err)
			}
		}
		n := len(docs) * len(replicaOrder) / 2
		res.Replicas = append(res.Replicas, ReplicaFigure{Transport: cl.transport, Docs: len(docs),
			R0DocsPerSec: docsPerSec(n, times[0]), R1DocsPerSec: docsPerSec(n, times[1])})
	}
	return nil
}
