// Command clusterbench measures Weft as a cluster of real searchnode
// processes on 127.0.0.1, side by side in one run: one node against three
// (fabric tcp and adaptive) on the same index and queries, bulk with 0 and
// 1 replica, and file-based peer recovery of a large shard against the raw
// TCP bandwidth fabricbench measures. It prints tables, and writes the
// figures as JSON (-json FILE) and a PNG (-plot FILE). Run it from the
// module root (see docs/benchmarks-cluster.md):
//
//	go run ./benchmarks/cmd/clusterbench -corpus "$(scripts/sample-data.sh)" -json cluster.json -plot cluster.png
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/weftsearch/weft/benchmarks/clusterbench"
	"github.com/weftsearch/weft/benchmarks/enginebench"
	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := clusterbench.DefaultConfig()
	flag.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "JSON lines documents with an \"id\" field (the full corpus: $(scripts/sample-data.sh))")
	flag.StringVar(&cfg.MappingFile, "mapping", cfg.MappingFile, "Elasticsearch mapping of the searched indexes")
	flag.IntVar(&cfg.Docs, "docs", cfg.Docs, "documents to index (0: the corpus once; more repeats it with new ids)")
	flag.StringVar(&cfg.QueriesFile, "queries", cfg.QueriesFile, "JSON object of name → Elasticsearch query")
	flag.IntVar(&cfg.Generated, "generated", cfg.Generated, "generated match queries added to those of -queries")
	flag.IntVar(&cfg.Size, "size", cfg.Size, "hits per query, with _source")
	flag.IntVar(&cfg.Shards, "shards", cfg.Shards, "shards of the index compared on one and three nodes")
	clients := flag.String("clients", "1,8,32", "concurrent client counts (1 is required)")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "timed rounds at one client (each setup runs one query per round)")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "stop the one-client rounds after this long")
	flag.DurationVar(&cfg.Window, "window", cfg.Window, "one timed window of one setup at more than one client")
	flag.IntVar(&cfg.Windows, "windows", cfg.Windows, "windows per setup and client count, setups taking turns")
	flag.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "documents per bulk request")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "bulk requests in flight")
	transports := flag.String("transports", strings.Join(cfg.Transports, ","), "fabric transports of the three-node clusters: tcp, adaptive")
	parts := flag.String("parts", strings.Join(cfg.Parts, ","), "what to measure: search, replicas, recovery")
	recBytes := flag.String("recovery-bytes", "1GiB", "_source volume loaded into the recovered shard")
	recDoc := flag.String("recovery-doc-bytes", "256KiB", "size of one synthetic document of the recovered shard")
	flag.DurationVar(&cfg.RecoveryLoadLimit, "recovery-load-limit", cfg.RecoveryLoadLimit, "stop loading the recovered shard after this long (its size is reported)")
	flag.IntVar(&cfg.RecoveryReps, "recovery-reps", cfg.RecoveryReps, "recoveries per transport, transports alternating")
	throttle := flag.String("recovery-throttle", "0", "every node's --recovery-max-bytes-per-sec (0: no limit)")
	flag.IntVar(&cfg.NodeProcessors, "node-processors", cfg.NodeProcessors, "each node's --processors in the three-node clusters: -1 gives each its share of this machine's CPUs (at least 1), 0 leaves every node all of them (the runtime's default)")
	flag.DurationVar(&cfg.RawDuration, "raw-duration", cfg.RawDuration, "time per fabricbench point measured between recoveries")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the generated queries and documents")
	flag.StringVar(&cfg.Searchnode, "searchnode", "", "searchnode binary to start (default: go build ./cmd/searchnode)")
	flag.StringVar(&cfg.WorkDir, "workdir", "", "scratch directory with the nodes' data and logs (default: a temporary one, removed afterwards)")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	plotOut := flag.String("plot", "", "draw latency, QPS and recovery throughput into this PNG")
	from := flag.String("from", "", "read results from this -json file instead of measuring; prints the tables and -plot")
	verbose := flag.Bool("v", false, "log progress to standard error")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; every input is a flag (see -h)", flag.Arg(0))
	}

	var res *clusterbench.Result
	var err error
	if *from != "" {
		if res, err = clusterbench.ReadJSONFile(*from); err != nil {
			return err
		}
	} else {
		if cfg.Clients, err = parseInts("-clients", *clients); err != nil {
			return err
		}
		cfg.Transports = strings.Split(*transports, ",")
		cfg.Parts = strings.Split(*parts, ",")
		for _, s := range []struct {
			flag string
			in   string
			out  *int64
		}{{"-recovery-bytes", *recBytes, &cfg.RecoveryBytes}, {"-recovery-throttle", *throttle, &cfg.RecoveryThrottle}} {
			n, err := fabricbench.ParseSize(s.in)
			if err != nil {
				return fmt.Errorf("%s: %w", s.flag, err)
			}
			*s.out = int64(n)
		}
		if cfg.RecoveryDocBytes, err = fabricbench.ParseSize(*recDoc); err != nil {
			return fmt.Errorf("-recovery-doc-bytes: %w", err)
		}
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelInfo
		}
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if res, err = clusterbench.Run(ctx, cfg, logger); err != nil {
			return err
		}
		if *jsonOut != "" {
			if err := enginebench.WriteJSONFile(*jsonOut, res); err != nil {
				return err
			}
		}
	}
	if err := clusterbench.WriteTable(os.Stdout, res); err != nil {
		return err
	}
	if *plotOut != "" {
		return clusterbench.Plot(*plotOut, res)
	}
	return nil
}

// parseInts reads a comma list of integers.
func parseInts(name, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s %q: want a comma list of integers", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}
