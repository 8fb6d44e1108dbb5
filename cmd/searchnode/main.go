// Command searchnode runs one Weft node: it reads flags (each with a WEFT_*
// environment variable; a flag wins over the environment, which wins over
// the default), then hands the configuration to node.Run and stops cleanly
// on SIGINT or SIGTERM. Started with no flags it is a single-node cluster
// with its data in ./data, serving http://127.0.0.1:9200.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/weftsearch/weft/internal/bytesize"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/security/auth"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// options is everything the command line sets.
type options struct {
	node      node.Config
	logLevel  slog.Level
	logFormat string
}

// run is main without the process exit, for tests.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := parseOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "searchnode: %v\n", err)
		return 2
	}
	logger := newLogger(stderr, opts.logLevel, opts.logFormat)
	opts.node.Security.Announce = stdout
	opts.node.Security.ElasticPassword = auth.Secret(getenv("WEFT_ELASTIC_PASSWORD"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = node.Run(ctx, opts.node, logger, func(url string) {
		fmt.Fprintf(stdout, "searchnode ready: %s (cluster %q, node %q, data in %s)\n", url, opts.node.ClusterName, opts.node.NodeName, opts.node.DataDir)
	})
	if err != nil {
		logger.Error("searchnode failed", "err", err)
		return 1
	}
	return 0
}

// parseOptions maps flags and WEFT_* variables onto the node configuration.
func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	cfg := node.DefaultConfig()
	opts := options{logLevel: slog.LevelInfo, logFormat: "text"}
	fs := flag.NewFlagSet("searchnode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: searchnode [flags]\n\nRuns one Weft search node. Every flag can also be set with the environment\nvariable shown; a flag wins over the environment.\n\n")
		fs.PrintDefaults()
	}
	maxBody := byteSize(cfg.MaxBodyBytes)
	recoveryRate := byteSize(cfg.RecoveryMaxBytesPerSec)
	memLimit := byteSize(cfg.MemoryLimit)
	bodyRate := byteSize(cfg.HTTPBodyMinRate)
	level := levelFlag{&opts.logLevel}
	format := formatFlag{&opts.logFormat}
	vars := []struct {
		name, env string
		set       func()
	}{
		{"data-dir", "WEFT_DATA_DIR", func() {
			fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory holding this node's indexes (WEFT_DATA_DIR)")
		}},
		{"http-addr", "WEFT_HTTP_ADDR", func() {
			fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "host:port of the REST API; port 0 picks a free port (WEFT_HTTP_ADDR)")
		}},
		{"node-name", "WEFT_NODE_NAME", func() { fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "name of this node (WEFT_NODE_NAME)") }},
		{"cluster-name", "WEFT_CLUSTER_NAME", func() {
			fs.StringVar(&cfg.ClusterName, "cluster-name", cfg.ClusterName, "name of the cluster (WEFT_CLUSTER_NAME)")
		}},
		{"max-body-bytes", "WEFT_MAX_BODY_BYTES", func() {
			fs.Var(&maxBody, "max-body-bytes", "largest request body accepted, in bytes or with a unit (kb, mb, gb); larger bodies get 413 (WEFT_MAX_BODY_BYTES)")
		}},
		{"http-max-connections", "WEFT_HTTP_MAX_CONNECTIONS", func() {
			fs.IntVar(&cfg.HTTPMaxConnections, "http-max-connections", cfg.HTTPMaxConnections, "most HTTP connections open at once; over it a new connection is refused at once (reset), so its client can try another node (WEFT_HTTP_MAX_CONNECTIONS)")
		}},
		{"http-header-timeout", "WEFT_HTTP_HEADER_TIMEOUT", func() {
			fs.DurationVar(&cfg.HTTPHeaderTimeout, "http-header-timeout", cfg.HTTPHeaderTimeout, "time a new connection has to finish its TLS handshake, and each request to send its headers; then the connection is closed (WEFT_HTTP_HEADER_TIMEOUT)")
		}},
		{"http-idle-timeout", "WEFT_HTTP_IDLE_TIMEOUT", func() {
			fs.DurationVar(&cfg.HTTPIdleTimeout, "http-idle-timeout", cfg.HTTPIdleTimeout, "a keep-alive connection that waits this long for its next request is closed (WEFT_HTTP_IDLE_TIMEOUT)")
		}},
		{"http-body-timeout", "WEFT_HTTP_BODY_TIMEOUT", func() {
			fs.DurationVar(&cfg.HTTPBodyTimeout, "http-body-timeout", cfg.HTTPBodyTimeout, "a request body may not stall this long, and gets this head start before --http-body-min-rate applies; a body that falls behind gets 408 and its connection is closed (WEFT_HTTP_BODY_TIMEOUT)")
		}},
		{"http-body-min-rate", "WEFT_HTTP_BODY_MIN_RATE", func() {
			fs.Var(&bodyRate, "http-body-min-rate", "average rate a request body must keep after the --http-body-timeout head start, in bytes per second or with a unit (kb, mb, gb); 0: only the stall rule (WEFT_HTTP_BODY_MIN_RATE)")
		}},
		{"http-cors-enabled", "WEFT_HTTP_CORS_ENABLED", func() {
			fs.BoolVar(&cfg.CORS.Enabled, "http-cors-enabled", cfg.CORS.Enabled, "answer browsers' cross-origin requests (CORS preflights before authentication), like Elasticsearch's http.cors.enabled; off by default (WEFT_HTTP_CORS_ENABLED)")
		}},
		{"http-cors-allow-origin", "WEFT_HTTP_CORS_ALLOW_ORIGIN", func() {
			fs.StringVar(&cfg.CORS.AllowOrigin, "http-cors-allow-origin", cfg.CORS.AllowOrigin, "origins a page may call the API from: * (any), comma-separated origins, or a /regular expression/ the whole Origin must match; empty (the default): only the node's own host (WEFT_HTTP_CORS_ALLOW_ORIGIN)")
		}},
		{"http-cors-allow-methods", "WEFT_HTTP_CORS_ALLOW_METHODS", func() {
			fs.Var(listFlag{&cfg.CORS.AllowMethods}, "http-cors-allow-methods", "comma-separated methods a CORS preflight allows (WEFT_HTTP_CORS_ALLOW_METHODS)")
		}},
		{"http-cors-allow-headers", "WEFT_HTTP_CORS_ALLOW_HEADERS", func() {
			fs.Var(listFlag{&cfg.CORS.AllowHeaders}, "http-cors-allow-headers", "comma-separated request headers a CORS preflight allows (WEFT_HTTP_CORS_ALLOW_HEADERS)")
		}},
		{"http-cors-expose-headers", "WEFT_HTTP_CORS_EXPOSE_HEADERS", func() {
			fs.Var(listFlag{&cfg.CORS.ExposeHeaders}, "http-cors-expose-headers", "comma-separated reply headers a cross-origin page may read (WEFT_HTTP_CORS_EXPOSE_HEADERS)")
		}},
		{"http-cors-allow-credentials", "WEFT_HTTP_CORS_ALLOW_CREDENTIALS", func() {
			fs.BoolVar(&cfg.CORS.AllowCredentials, "http-cors-allow-credentials", cfg.CORS.AllowCredentials, "send Access-Control-Allow-Credentials: true to allowed origins, so that browsers send Authorization and cookies cross-origin (WEFT_HTTP_CORS_ALLOW_CREDENTIALS)")
		}},
		{"http-cors-max-age", "WEFT_HTTP_CORS_MAX_AGE", func() {
			fs.IntVar(&cfg.CORS.MaxAgeSeconds, "http-cors-max-age", cfg.CORS.MaxAgeSeconds, "seconds a browser may cache a CORS preflight's answer (WEFT_HTTP_CORS_MAX_AGE)")
		}},
		{"pprof", "WEFT_PPROF", func() {
			fs.BoolVar(&cfg.EnablePprof, "pprof", cfg.EnablePprof, "serve Go profiling under /debug/pprof/ (WEFT_PPROF)")
		}},
		{"shutdown-timeout", "WEFT_SHUTDOWN_TIMEOUT", func() {
			fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a stopping node waits for in-flight requests and the flush (WEFT_SHUTDOWN_TIMEOUT)")
		}},
		{"fabric-addr", "WEFT_FABRIC_ADDR", func() {
			fs.StringVar(&cfg.FabricAddr, "fabric-addr", cfg.FabricAddr, "host:port where the node serves the node-to-node fabric, e.g. 127.0.0.1:9300; empty (the default) leaves it off (WEFT_FABRIC_ADDR)")
		}},
		{"fabric-rdma", "WEFT_FABRIC_RDMA", func() {
			fs.Var(choiceFlag{&cfg.FabricRDMA, "fabric RDMA mode", []string{node.FabricRDMAAuto, node.FabricRDMAOn, node.FabricRDMAOff}}, "fabric-rdma", "auto (the default: add an RDMA path when the build and an ACTIVE device allow), on (fail start-up without one) or off (TCP only) (WEFT_FABRIC_RDMA)")
		}},
		{"fabric-transport", "WEFT_FABRIC_TRANSPORT", func() {
			fs.Var(choiceFlag{&cfg.FabricTransport, "fabric transport", []string{node.FabricAdaptive, node.FabricTCP}}, "fabric-transport", "adaptive (the default: per-message path choice over TCP and RDMA) or tcp (plain TCP, for comparisons) (WEFT_FABRIC_TRANSPORT)")
		}},
		{"gossip-addr", "WEFT_GOSSIP_ADDR", func() {
			fs.StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "host:port where the node gossips membership (TCP and UDP); with --raft-addr and --fabric-addr it makes the node part of a cluster; empty (the default): a single-node cluster (WEFT_GOSSIP_ADDR)")
		}},
		{"raft-addr", "WEFT_RAFT_ADDR", func() {
			fs.StringVar(&cfg.RaftAddr, "raft-addr", cfg.RaftAddr, "host:port of the node's Raft transport (cluster metadata) (WEFT_RAFT_ADDR)")
		}},
		{"seeds", "WEFT_SEEDS", func() {
			fs.Var(listFlag{&cfg.Seeds}, "seeds", "comma-separated gossip addresses of the nodes to join; give every node the same list (WEFT_SEEDS)")
		}},
		{"initial-nodes", "WEFT_INITIAL_NODES", func() {
			fs.Var(listFlag{&cfg.InitialNodes}, "initial-nodes", "comma-separated names of the nodes that form a new cluster once they see each other (like Elasticsearch's cluster.initial_master_nodes); ignored by a node that already belongs to a cluster (WEFT_INITIAL_NODES)")
		}},
		{"gossip-key", "WEFT_GOSSIP_KEY", func() {
			fs.Var(keyFlag{&cfg.GossipKey}, "gossip-key", "base64 of a 16, 24 or 32 byte key that encrypts gossip; every node the same; with security on the key comes from --certs DIR/gossip.key instead (WEFT_GOSSIP_KEY)")
		}},
		{"processors", "WEFT_PROCESSORS", func() {
			fs.IntVar(&cfg.Processors, "processors", cfg.Processors, "how many processors this node runs on at once (GOMAXPROCS), like Elasticsearch's node.processors; set it when several nodes share one host, e.g. 1 each for three nodes on two CPUs; 0 (the default): every CPU the process may use (WEFT_PROCESSORS)")
		}},
		{"memory-limit", "WEFT_MEMORY_LIMIT", func() {
			fs.Var(&memLimit, "memory-limit", "the node's memory budget, in bytes or with a unit (kb, mb, gb): Go's soft memory limit, of which 10% bounds the bytes of writes in flight (indexing pressure; over it writes get 429); 0 (the default): 50% of the cgroup's memory limit, or of the machine's memory without one (WEFT_MEMORY_LIMIT)")
		}},
		{"recovery-max-bytes-per-sec", "WEFT_RECOVERY_MAX_BYTES_PER_SEC", func() {
			fs.Var(&recoveryRate, "recovery-max-bytes-per-sec", "limit on the index files this node streams to recovering copies, all its recoveries together, in bytes per second or with a unit (kb, mb, gb); 0 is no limit (WEFT_RECOVERY_MAX_BYTES_PER_SEC)")
		}},
		{"security", "WEFT_SECURITY", func() {
			fs.BoolVar(&cfg.Security.Enabled, "security", cfg.Security.Enabled, "TLS on every port with the cluster's certificates, and encrypted gossip (the default); --security=false turns it off, which is logged as a warning at every start and allowed only on loopback addresses unless --allow-insecure-network is given (WEFT_SECURITY)")
		}},
		{"allow-insecure-network", "WEFT_ALLOW_INSECURE_NETWORK", func() {
			fs.BoolVar(&cfg.Security.AllowInsecureNetwork, "allow-insecure-network", cfg.Security.AllowInsecureNetwork, "with --security=false, acknowledge serving on addresses other than loopback, where anyone who reaches them can read and change everything (WEFT_ALLOW_INSECURE_NETWORK)")
		}},
		{"certs", "WEFT_CERTS", func() {
			fs.StringVar(&cfg.Security.CertsDir, "certs", cfg.Security.CertsDir, "`DIR` holding the cluster's certificates, as written by searchctl certs create (ca.crt, NODE.crt, NODE.key, gossip.key); required for a node of a cluster; without it a lone node makes its own CA in DATA-DIR/certs (WEFT_CERTS)")
		}},
		{"http-cert", "WEFT_HTTP_CERT", func() {
			fs.StringVar(&cfg.Security.HTTPCert, "http-cert", cfg.Security.HTTPCert, "PEM certificate (chain) the HTTP API serves instead of the node's cluster certificate, e.g. a public one; needs --http-key (WEFT_HTTP_CERT)")
		}},
		{"http-key", "WEFT_HTTP_KEY", func() {
			fs.StringVar(&cfg.Security.HTTPKey, "http-key", cfg.Security.HTTPKey, "PEM private key of --http-cert; mode 0600 or stricter (WEFT_HTTP_KEY)")
		}},
		{"audit-log", "WEFT_AUDIT_LOG", func() {
			fs.StringVar(&cfg.Security.AuditLog, "audit-log", cfg.Security.AuditLog, "file that gets one JSON line per authentication failure and denied request (WEFT_AUDIT_LOG)")
		}},
		{"audit-log-granted", "WEFT_AUDIT_LOG_GRANTED", func() {
			fs.BoolVar(&cfg.Security.AuditGranted, "audit-log-granted", cfg.Security.AuditGranted, "also write granted requests to --audit-log (WEFT_AUDIT_LOG_GRANTED)")
		}},
		{"reset-elastic-password", "WEFT_RESET_ELASTIC_PASSWORD", func() {
			fs.BoolVar(&cfg.Security.ResetElasticPassword, "reset-elastic-password", cfg.Security.ResetElasticPassword, "once the node serves, set the elastic user's password anew: to WEFT_ELASTIC_PASSWORD, or to a generated one printed once (WEFT_RESET_ELASTIC_PASSWORD)")
		}},
		{"log-level", "WEFT_LOG_LEVEL", func() { fs.Var(level, "log-level", "debug, info (the default), warn or error (WEFT_LOG_LEVEL)") }},
		{"log-format", "WEFT_LOG_FORMAT", func() { fs.Var(format, "log-format", "text (the default) or json (WEFT_LOG_FORMAT)") }},
	}
	for _, v := range vars {
		v.set()
	}
	for _, v := range vars {
		if val := getenv(v.env); val != "" {
			if err := fs.Set(v.name, val); err != nil {
				return opts, fmt.Errorf("environment variable %s=%q: %v", v.env, val, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments %q; searchnode takes only flags (see -h)", fs.Args())
	}
	cfg.MaxBodyBytes = int64(maxBody)
	cfg.RecoveryMaxBytesPerSec = int64(recoveryRate)
	cfg.MemoryLimit = int64(memLimit)
	cfg.HTTPBodyMinRate = int64(bodyRate)
	if err := cfg.Validate(); err != nil {
		return opts, err
	}
	opts.node = cfg
	return opts, nil
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// byteSize is a flag value of bytes: a plain number or one with a unit
// (package bytesize).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := bytesize.Parse(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

type levelFlag struct{ l *slog.Level }

func (f levelFlag) String() string {
	if f.l == nil {
		return "info"
	}
	return strings.ToLower(f.l.String())
}

func (f levelFlag) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("unknown log level %q; use debug, info, warn or error", s)
	}
	*f.l = l
	return nil
}

type formatFlag struct{ f *string }

func (f formatFlag) String() string {
	if f.f == nil {
		return "text"
	}
	return *f.f
}

func (f formatFlag) Set(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("unknown log format %q; use text or json", s)
	}
	*f.f = s
	return nil
}

// choiceFlag is a string flag that takes one of a few values; what names
// the setting in errors.
type choiceFlag struct {
	v       *string
	what    string
	choices []string
}

func (f choiceFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f choiceFlag) Set(s string) error {
	if slices.Contains(f.choices, s) {
		*f.v = s
		return nil
	}
	return fmt.Errorf("unknown %s %q; use %s", f.what, s, strings.Join(f.choices, ", "))
}

// listFlag is a comma-separated list; empty items are dropped.
type listFlag struct{ v *[]string }

func (f listFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strings.Join(*f.v, ",")
}

func (f listFlag) Set(s string) error {
	*f.v = nil
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*f.v = append(*f.v, item)
		}
	}
	return nil
}

// keyFlag is a key given in base64.
type keyFlag struct{ v *[]byte }

func (f keyFlag) String() string {
	if f.v == nil || len(*f.v) == 0 {
		return ""
	}
	return "(set)"
}

func (f keyFlag) Set(s string) error {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("the gossip key is not base64: %v; make one with: head -c 32 /dev/urandom | base64", err)
	}
	*f.v = b
	return nil
}
