// Command enginebench measures Weft's single-node engine through its HTTP
// API side by side with raw bleve in-process (in a worker process of its
// own: this executable started again), in one run: bulk docs/s, and
// p50/p99 latency of term, boolean and phrase queries, plus the cost of an
// empty HTTP round trip. It prints a table and, with -json FILE, writes the
// figures as JSON. Run it from the module root:
//
//	go run ./benchmarks/cmd/enginebench -corpus "$(scripts/sample-data.sh)" -json bench.json
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/weftsearch/weft/benchmarks/enginebench"
)

func main() {
	// Run starts this executable again as its raw worker.
	if code, ok := enginebench.RawWorkerMain(); ok {
		os.Exit(code)
	}
	cfg := enginebench.DefaultConfig()
	flag.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "JSON lines documents with an \"id\" field (the full corpus: $(scripts/sample-data.sh))")
	flag.StringVar(&cfg.MappingFile, "mapping", cfg.MappingFile, "Elasticsearch mapping JSON used by both sides")
	flag.IntVar(&cfg.Docs, "docs", cfg.Docs, "documents to index (0: the corpus once; more than the corpus repeats it with new ids)")
	flag.IntVar(&cfg.Queries, "queries", cfg.Queries, "timed queries per kind and side (after a warm-up)")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "per kind and side, stop timing queries after this long")
	flag.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "documents per bulk request and per bleve batch")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "bulk requests in flight on the HTTP side")
	flag.IntVar(&cfg.Size, "size", cfg.Size, "hits per query")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for the choice of queries")
	flag.StringVar(&cfg.Searchnode, "searchnode", "", "searchnode binary to start (default: go build ./cmd/searchnode)")
	flag.StringVar(&cfg.Addr, "addr", "", "benchmark the node at this URL instead of starting one (its index \"enginebench\" is replaced)")
	flag.StringVar(&cfg.WorkDir, "workdir", "", "scratch directory (default: a temporary one, removed afterwards)")
	kinds := flag.String("kinds", "term,boolean,phrase", "query kinds to time, comma-separated")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	verbose := flag.Bool("v", false, "log progress to standard error")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "enginebench: unexpected argument %q; every input is a flag (see -h)\n", flag.Arg(0))
		os.Exit(2)
	}

	for k := range strings.SplitSeq(*kinds, ",") {
		cfg.Kinds = append(cfg.Kinds, enginebench.QueryKind(strings.TrimSpace(k)))
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	res, err := enginebench.Run(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
	if err := enginebench.WriteTable(os.Stdout, res); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
	if *jsonOut != "" {
		if err := enginebench.WriteJSONFile(*jsonOut, res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
