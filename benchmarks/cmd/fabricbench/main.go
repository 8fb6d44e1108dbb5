// Command fabricbench measures the fabric transports side by side with a
// raw TCP ping-pong and gRPC-Go unary: RTT p50/p99, bandwidth and CPU per GB
// for each payload size and calls-in-flight count.
//
//	go run ./benchmarks/cmd/fabricbench -transports raw,grpc,tcp,adaptive -sizes 64,1KiB,1MiB -duration 1s -json
//
// One caller fanning out to 8 servers of each transport, 16 calls in flight:
//
//	go run ./benchmarks/cmd/fabricbench -transports raw,tcp,adaptive -peers 8 -inflight 16
//
// Between two hosts, host A serves echo peers until interrupted and prints
// the -connect argument for host B, which measures them (see
// docs/benchmarks-fabric.md, "Two hosts"):
//
//	hostA$ fabricbench -serve -transports tcp,adaptive -tcp-addr 10.0.0.1:7400 -adaptive-paths tcp:10.0.0.1:7401
//	hostB$ fabricbench -connect 'tcp=10.0.0.1:7400;adaptive=tcp:10.0.0.1:7401' -json
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

func main() {
	if err := run(); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "fabricbench: ") {
			msg = "fabricbench: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func run() error {
	var (
		transports = flag.String("transports", "raw,grpc,tcp,adaptive", "comma list of transports to measure: "+strings.Join(fabricbench.PeerNames, ","))
		sizes      = flag.String("sizes", "64,256,1KiB,4KiB,16KiB,64KiB,1MiB,16MiB,64MiB", "comma list of payload sizes")
		inflight   = flag.String("inflight", "1,16,64", "comma list of calls in flight")
		fanOut     = flag.String("peers", "1", "comma list of how many servers of each transport the calls in flight are spread over (one caller fanning out, as a search coordinator does to its shards); e.g. -peers 8 -inflight 16")
		duration   = flag.Duration("duration", 500*time.Millisecond, "time per point")
		minCalls   = flag.Int("min-calls", 2, "calls per worker per point at least, whatever -duration says")
		reps       = flag.Int("reps", 1, "measure each point this many times, transports taking turns, and report medians")
		asJSON     = flag.Bool("json", false, "print one JSON object per point instead of a table")
		plotFile   = flag.String("plot", "", "draw latency and bandwidth against size into this PNG")
		from       = flag.String("from", "", "read results (JSON lines from -json) from this file instead of measuring; prints the table and -plot")
		serve      = flag.Bool("serve", false, "two hosts, serving side: serve echo peers for -transports at the -*-addr addresses until interrupted, and print the -connect argument for the measuring host")
		connect    = flag.String("connect", "", "two hosts, measuring side: measure the peers served by -serve on another host, as it printed them: 'tcp=HOST:PORT;adaptive=rdma:HOST:PORT,tcp:HOST:PORT;...' (-transports defaults to the names given)")
		opts       = fabricbench.DefaultOptions()
		profiles   fabricbench.Profiles
	)
	flag.StringVar(&profiles.CPU, "cpuprofile", "", "write a CPU profile of the measurements (all transports measured, both ends) to this file")
	flag.StringVar(&profiles.Mutex, "mutexprofile", "", "write a profile of contended locks during the measurements to this file")
	flag.StringVar(&profiles.Block, "blockprofile", "", "write a profile of blocking (channels, locks, select) during the measurements to this file")
	flag.StringVar(&opts.RawAddr, "raw-addr", opts.RawAddr, "where the raw peer listens")
	flag.StringVar(&opts.GRPCAddr, "grpc-addr", opts.GRPCAddr, "where the grpc peer listens")
	flag.StringVar(&opts.TCPAddr, "tcp-addr", opts.TCPAddr, "where the tcp peer listens")
	flag.StringVar(&opts.RDMAAddr, "rdma-addr", opts.RDMAAddr, "control address of the rdma peer: an IP of the RDMA device's netdev and a port (0: any free one)")
	flag.StringVar(&opts.AdaptivePaths, "adaptive-paths", opts.AdaptivePaths, "path list of the adaptive peer")
	flag.IntVar(&opts.TCPLanes, "tcp-lanes", opts.TCPLanes, "tcp.Config.Lanes for tcp and adaptive's tcp paths (-1: tcp.DefaultConfig's, which depends on GOMAXPROCS)")
	flag.IntVar(&opts.TCPBulkSockets, "tcp-bulk-sockets", opts.TCPBulkSockets, "tcp.Config.BulkSockets for tcp and adaptive's tcp paths (-1: tcp.DefaultConfig's)")
	printPaths := flag.Bool("paths", false, "after each adaptive point, print the connection's decision table (paths, per-size round trips, the chosen path) to stderr")
	flag.StringVar(&opts.RDMA.Device, "rdma-device", opts.RDMA.Device, "verbs device for rdma (e.g. mlx5_0); empty picks the first with an active port")
	flag.IntVar(&opts.RDMA.GIDIndex, "rdma-gid-index", opts.RDMA.GIDIndex, "RoCE source GID index; -1 picks the RoCE v2 IPv4 GID of the address in use")
	flag.Parse()
	if *printPaths {
		opts.PathsTo = os.Stderr
	}
	set := make(map[string]bool)
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *serve && (*connect != "" || *from != "") || *connect != "" && *from != "" {
		return fmt.Errorf("-serve, -connect and -from exclude each other; give one")
	}
	if *serve {
		return serveUntilInterrupted(strings.Split(*transports, ","), opts)
	}
	newPeer := opts.NewPeer
	if *connect != "" {
		eps, err := fabricbench.ParseEndpoints(*connect)
		if err != nil {
			return err
		}
		if !set["transports"] {
			var names []string
			for _, e := range eps {
				names = append(names, e.Transport)
			}
			*transports = strings.Join(names, ",")
		}
		newPeer = opts.Remote(eps)
	}
	sz, err := fabricbench.ParseSizes(*sizes)
	if err != nil {
		return err
	}
	infl, err := positiveInts("-inflight", *inflight)
	if err != nil {
		return err
	}
	fan, err := positiveInts("-peers", *fanOut)
	if err != nil {
		return err
	}
	if *connect != "" && slices.Max(fan) > 1 {
		return fmt.Errorf("-peers %s needs the servers in this process; with -connect each transport has one server", *fanOut)
	}
	cfg := fabricbench.Config{
		Transports: strings.Split(*transports, ","),
		Sizes:      sz,
		InFlight:   infl,
		Peers:      fan,
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
	} else {
		stopProfiles, err := profiles.Start()
		if err != nil {
			return err
		}
		results, err = fabricbench.Run(ctx, cfg, newPeer, fabricbench.Emitter(os.Stdout, *asJSON))
		if err := errors.Join(err, stopProfiles()); err != nil {
			return err
		}
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

// positiveInts reads a comma list of positive integers given to flag name.
func positiveInts(name, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want positive integers", name, list)
		}
		out = append(out, n)
	}
	return out, nil
}

// serveUntilInterrupted serves the named peers until SIGINT or SIGTERM,
// printing where they listen and the -connect argument for the other host,
// then closes them and prints the CPU time they used.
func serveUntilInterrupted(names []string, opts fabricbench.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := opts.Serve(ctx, names)
	if err != nil {
		return err
	}
	start := time.Now()
	eps := srv.Endpoints()
	fmt.Println("fabricbench: serving until interrupted (Ctrl-C or SIGTERM):")
	for _, e := range eps {
		fmt.Printf("  %-9s %s\n", e.Transport, e.Addr)
	}
	if un := fabricbench.Unspecified(eps); len(un) > 0 {
		fmt.Printf("fabricbench: %s listen on an unspecified address; replace 0.0.0.0 or :: below with an address of this host that the measuring host reaches\n",
			fabricbench.FormatEndpoints(un))
	}
	var names2 []string
	for _, e := range eps {
		names2 = append(names2, e.Transport)
	}
	fmt.Printf("on the measuring host run:\n  fabricbench -connect '%s' -transports %s -json\n", fabricbench.FormatEndpoints(eps), strings.Join(names2, ","))
	<-ctx.Done()
	cpu := srv.CPU()
	if err := srv.Close(); err != nil {
		return err
	}
	fmt.Printf("fabricbench: served for %v; this process used %.2f s of CPU (user+system)\n", time.Since(start).Round(time.Millisecond), cpu.Seconds())
	return nil
}
