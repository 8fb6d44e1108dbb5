// Command fabricbench measures the fabric transports side by side with a
// raw TCP ping-pong and gRPC-Go unary: RTT p50/p99, bandwidth and CPU per GB
// for each payload size and calls-in-flight count.
//
//	go run ./benchmarks/cmd/fabricbench -transports raw,grpc,tcp,adaptive -sizes 64,1KiB,1MiB -duration 1s -json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fabricbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		transports = flag.String("transports", "raw,grpc,tcp,adaptive", "comma list of transports to measure: "+strings.Join(fabricbench.PeerNames, ","))
		sizes      = flag.String("sizes", "64,256,1KiB,4KiB,16KiB,64KiB,1MiB,16MiB,64MiB", "comma list of payload sizes")
		inflight   = flag.String("inflight", "1,16", "comma list of calls in flight")
		duration   = flag.Duration("duration", 500*time.Millisecond, "time per point")
		minCalls   = flag.Int("min-calls", 2, "calls per worker per point at least, whatever -duration says")
		reps       = flag.Int("reps", 1, "measure each point this many times, transports taking turns, and report medians")
		asJSON     = flag.Bool("json", false, "print one JSON object per point instead of a table")
		plotFile   = flag.String("plot", "", "draw latency and bandwidth against size into this PNG")
		from       = flag.String("from", "", "read results (JSON lines from -json) from this file instead of measuring; prints the table and -plot")
		opts       = fabricbench.DefaultOptions()
	)
	flag.StringVar(&opts.TCPAddr, "tcp-addr", opts.TCPAddr, "where the tcp peer listens")
	flag.StringVar(&opts.RDMAAddr, "rdma-addr", opts.RDMAAddr, "control address of the rdma peer: an IP of the RDMA device's netdev, port 0")
	flag.StringVar(&opts.AdaptivePaths, "adaptive-paths", opts.AdaptivePaths, "path list of the adaptive peer")
	flag.Parse()
	sz, err := fabricbench.ParseSizes(*sizes)
	if err != nil {
		return err
	}
	var infl []int
	for _, f := range strings.Split(*inflight, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-inflight %q: want positive integers", *inflight)
		}
		infl = append(infl, n)
	}
	cfg := fabricbench.Config{
		Transports: strings.Split(*transports, ","),
		Sizes:      sz,
		InFlight:   infl,
		Duration:   *duration,
		MinCalls:   *minCalls,
		Reps:       *reps,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var results []fabricbench.Result
	if *from != "" {
		f, err := os.Open(*from)
		if err != nil {
			return err
		}
		results, err = fabricbench.ReadJSON(f)
		_ = f.Close()
		if err != nil {
			return err
		}
		*asJSON = false
	} else if results, err = fabricbench.Run(ctx, cfg, opts.NewPeer, fabricbench.Emitter(os.Stdout, *asJSON)); err != nil {
		return err
	}
	if !*asJSON {
		if err := fabricbench.WriteTable(os.Stdout, results); err != nil {
			return err
		}
		fmt.Println()
		if err := fabricbench.WriteTargets(os.Stdout, results); err != nil {
			return err
		}
	}
	if *plotFile != "" {
		return fabricbench.Plot(*plotFile, results)
	}
	return nil
}
