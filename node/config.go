package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/shard"
)

// Config is everything a node needs to start. Flags and WEFT_* environment
// variables (cmd/searchnode) map onto it; DefaultConfig gives the values a
// node started with no flags uses.
type Config struct {
	// DataDir holds every index of this node. Created if missing.
	DataDir string
	// HTTPAddr is the host:port the REST API listens on; port 0 picks a free
	// port, reported by Node.HTTPAddr once started.
	HTTPAddr string
	// NodeName names this node in API responses. Default: the host name.
	NodeName string
	// ClusterName names the cluster in API responses.
	ClusterName string
	// MaxBodyBytes is the largest request body accepted (larger: 413), like
	// Elasticsearch's http.max_content_length.
	MaxBodyBytes int64
	// HTTPMaxConnections bounds the HTTP connections open at once (TLS
	// handshakes included); over it a new connection is refused at once
	// (closed with a reset), so that its client can try another node.
	HTTPMaxConnections int
	// HTTPHeaderTimeout bounds the TLS handshake of a new connection, and
	// then the headers of each request (http.Server's ReadHeaderTimeout,
	// which net/http also applies to the handshake).
	HTTPHeaderTimeout time.Duration
	// HTTPIdleTimeout closes a keep-alive connection that has waited this
	// long for its next request.
	HTTPIdleTimeout time.Duration
	// HTTPBodyTimeout and HTTPBodyMinRate pace request bodies: a body may
	// not stall for HTTPBodyTimeout, and must average HTTPBodyMinRate bytes
	// a second after a head start of HTTPBodyTimeout (0: no rate rule). A
	// body that falls behind gets 408 and its connection is closed.
	HTTPBodyTimeout time.Duration
	HTTPBodyMinRate int64
	// EnablePprof serves net/http/pprof under /debug/pprof/.
	EnablePprof bool
	// CORS is the REST API's cross-origin resource sharing
	// (Elasticsearch's http.cors.* settings); DefaultConfig sets
	// Elasticsearch's defaults, off.
	CORS httpapi.CORS
	// ShutdownTimeout bounds how long Run waits for in-flight requests and
	// for the shards to flush when its context ends.
	ShutdownTimeout time.Duration
	// FabricAddr is the host:port where the node serves the node-to-node
	// fabric (TCP path; an RDMA path, when on, listens on the same host with
	// a port the kernel picks). "" (the default) leaves the fabric off.
	FabricAddr string
	// FabricRDMA is FabricRDMAAuto (the default), FabricRDMAOn or
	// FabricRDMAOff; it matters only when FabricAddr is set.
	FabricRDMA string
	// FabricTransport is FabricAdaptive (the default: the adaptive
	// transport over the TCP path and, when on, the RDMA path) or
	// FabricTCP (plain TCP, no adaptive layer; for comparisons).
	FabricTransport string

	// GossipAddr is the host:port where the node gossips membership
	// (memberlist, TCP and UDP). "" (the default, with RaftAddr "") makes
	// the node a single-node cluster of itself that nothing can join.
	GossipAddr string
	// RaftAddr is the host:port of the node's Raft transport (TCP).
	RaftAddr string
	// Seeds are the gossip addresses of the nodes to join (every node gets
	// the same list; its own address may be in it).
	Seeds []string
	// InitialNodes are the names of the nodes that form the cluster's first
	// Raft configuration once they see each other (Elasticsearch's
	// cluster.initial_master_nodes). A node with Raft state ignores it.
	InitialNodes []string
	// GossipKey, when set, encrypts gossip (16, 24 or 32 bytes; every node
	// the same).
	GossipKey []byte

	// Processors is how many processors the node's Go runtime runs on at
	// once (GOMAXPROCS), as Elasticsearch's node.processors: set it when
	// several nodes share one host, so that together they do not ask for
	// more than its CPUs (e.g. 1 each for three nodes on two CPUs). 0 (the
	// default) keeps the runtime's own choice: every CPU the process may
	// use. It is process-wide, so only Run applies it (before building the
	// node, whose fabric sizes its sockets by it); New, which tests call
	// for several nodes in one process, leaves GOMAXPROCS alone.
	Processors int

	// MemoryLimit is the node's one memory budget in bytes: Go's soft
	// memory limit (applied by Run, as it is process-wide) and the figure
	// split among the node's bounded parts (membudget.Split: indexing
	// pressure takes 10%). 0 (the default) is membudget.DefaultPercent
	// (50%) of the memory available to the process: its cgroup's limit if
	// it has one, else the machine's physical memory.
	MemoryLimit int64

	// RecoveryMaxBytesPerSec throttles the index files this node streams
	// to a recovering copy as its primary (Elasticsearch's
	// indices.recovery.max_bytes_per_sec); 0 is no limit. DefaultConfig
	// sets DefaultRecoveryMaxBytesPerSec.
	RecoveryMaxBytesPerSec int64

	// Security is the node's transport security: TLS on every port, the
	// cluster's certificates and the gossip key. DefaultConfig turns it on.
	Security SecurityConfig

	// Hooks are for tests: zero in production.
	Hooks Hooks
}

// Hooks let tests run several nodes in one process with fault injection.
type Hooks struct {
	// ClusterTiming replaces the cluster's production timings (e.g.
	// cluster.LocalTiming()) when its Gossip field is set.
	ClusterTiming cluster.Timing
	// Fabric, when set, is the transport the node serves and dials its
	// fabric with instead of TCP (e.g. a fabrictest in-memory network node).
	Fabric fabric.Transport
	// FabricPin, when set, is the adaptive transport's Config.Pin: it pins
	// the fabric's calls to one path (benchmarks measuring a path through
	// the node, e.g. peer recovery over RDMA alone; see adaptive.Pin).
	FabricPin *adaptive.Pin
	// RaftLayer and GossipWrap wrap the cluster's Raft stream layer and
	// gossip transport (partitions).
	RaftLayer  func(raft.StreamLayer) raft.StreamLayer
	GossipWrap func(memberlist.Transport) memberlist.Transport
	// Shard, when set, adjusts the shard layer's configuration (e.g. a
	// shorter replication timeout).
	Shard func(*shard.Config)
}

// Values of Config.FabricTransport.
const (
	FabricAdaptive = "adaptive"
	FabricTCP      = "tcp"
)

// Clustered reports whether the node gossips with others (cluster flags
// set), rather than being a single-node cluster of itself.
func (c Config) Clustered() bool { return c.GossipAddr != "" || c.RaftAddr != "" }

// Defaults shared by DefaultConfig and the searchnode flags.
const (
	DefaultDataDir         = "./data"
	DefaultHTTPAddr        = "127.0.0.1:9200"
	DefaultClusterName     = "weft"
	DefaultMaxBodyBytes    = 100 << 20
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultHTTPMaxConnections leaves most of a typical open-file limit
	// (Go raises the soft limit to the hard one, often 2^19 or more, but
	// 4096 must fit even a 8192 one) to the shards, fabric and Raft.
	DefaultHTTPMaxConnections = 4096
	DefaultHTTPHeaderTimeout  = 10 * time.Second
	DefaultHTTPIdleTimeout    = 2 * time.Minute
	DefaultHTTPBodyTimeout    = 30 * time.Second
	// DefaultHTTPBodyMinRate, 16 KiB/s, lets a client on a 128 kbit/s
	// link send any body, while a client must spend 64 MiB/s (512 Mbit/s)
	// of upload to hold the default 4096 connections with bodies.
	DefaultHTTPBodyMinRate = 16 << 10
	// MinMemoryLimit is the least --memory-limit a node takes.
	MinMemoryLimit = 64 << 20
	// DefaultRecoveryMaxBytesPerSec is Elasticsearch's default for
	// indices.recovery.max_bytes_per_sec, 40mb.
	DefaultRecoveryMaxBytesPerSec = 40 << 20
)

// DefaultConfig is the configuration of a node started with no flags: a
// single-node cluster with its data in ./data, serving 127.0.0.1:9200.
func DefaultConfig() Config {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "weft-node"
	}
	return Config{
		DataDir:         DefaultDataDir,
		HTTPAddr:        DefaultHTTPAddr,
		NodeName:        name,
		ClusterName:     DefaultClusterName,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		ShutdownTimeout: DefaultShutdownTimeout,

		HTTPMaxConnections: DefaultHTTPMaxConnections,
		HTTPHeaderTimeout:  DefaultHTTPHeaderTimeout,
		HTTPIdleTimeout:    DefaultHTTPIdleTimeout,
		HTTPBodyTimeout:    DefaultHTTPBodyTimeout,
		HTTPBodyMinRate:    DefaultHTTPBodyMinRate,
		CORS:               httpapi.DefaultCORS(),

		FabricRDMA:      FabricRDMAAuto,
		FabricTransport: FabricAdaptive,

		RecoveryMaxBytesPerSec: DefaultRecoveryMaxBytesPerSec,
		Security:               SecurityConfig{Enabled: true},
	}
}

// Validate reports every field that is out of bounds, naming it and the bound.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("node: DataDir is empty; set --data-dir (WEFT_DATA_DIR) to the directory holding this node's indexes"))
	}
	if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("node: HTTPAddr %q is not host:port (e.g. 127.0.0.1:9200, :9200, 127.0.0.1:0): %v", c.HTTPAddr, err))
	} else if port == "" {
		errs = append(errs, fmt.Errorf("node: HTTPAddr %q has no port; use port 0 to pick a free one", c.HTTPAddr))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("node: NodeName is empty; set --node-name (WEFT_NODE_NAME)"))
	}
	if c.ClusterName == "" {
		errs = append(errs, errors.New("node: ClusterName is empty; set --cluster-name (WEFT_CLUSTER_NAME)"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("node: MaxBodyBytes %d is below the minimum of 1024 bytes; set --max-body-bytes (WEFT_MAX_BODY_BYTES)", c.MaxBodyBytes))
	}
	errs = append(errs, c.validateHTTPLimits()...)
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("node: ShutdownTimeout %v must be positive", c.ShutdownTimeout))
	}
	if cpus := runtime.NumCPU(); c.Processors < 0 || c.Processors > cpus {
		errs = append(errs, fmt.Errorf("node: Processors %d is out of range: use 0 (every CPU the process may use) up to the %d this machine lets the process use; set --processors (WEFT_PROCESSORS)", c.Processors, cpus))
	}
	if c.MemoryLimit != 0 && c.MemoryLimit < MinMemoryLimit {
		errs = append(errs, fmt.Errorf("node: MemoryLimit %d is below the minimum of %d bytes (64mb); set --memory-limit (WEFT_MEMORY_LIMIT), or 0 for %d%% of the memory available", c.MemoryLimit, MinMemoryLimit, membudget.DefaultPercent))
	}
	if c.RecoveryMaxBytesPerSec < 0 {
		errs = append(errs, fmt.Errorf("node: RecoveryMaxBytesPerSec %d must be 0 (no limit) or positive; set --recovery-max-bytes-per-sec (WEFT_RECOVERY_MAX_BYTES_PER_SEC)", c.RecoveryMaxBytesPerSec))
	}
	if c.FabricAddr != "" {
		if _, port, err := net.SplitHostPort(c.FabricAddr); err != nil {
			errs = append(errs, fmt.Errorf("node: FabricAddr %q is not host:port (e.g. 127.0.0.1:9300, or port 0 to pick one): %v; set --fabric-addr (WEFT_FABRIC_ADDR)", c.FabricAddr, err))
		} else if port == "" {
			errs = append(errs, fmt.Errorf("node: FabricAddr %q has no port; use port 0 to pick a free one", c.FabricAddr))
		}
	}
	switch c.FabricRDMA {
	case FabricRDMAAuto, FabricRDMAOn, FabricRDMAOff:
	default:
		errs = append(errs, fmt.Errorf("node: FabricRDMA %q is not auto, on or off; set --fabric-rdma (WEFT_FABRIC_RDMA)", c.FabricRDMA))
	}
	switch c.FabricTransport {
	case FabricAdaptive, FabricTCP:
	default:
		errs = append(errs, fmt.Errorf("node: FabricTransport %q is not adaptive or tcp; set --fabric-transport (WEFT_FABRIC_TRANSPORT)", c.FabricTransport))
	}
	if c.Clustered() {
		for _, f := range []struct{ name, flag, val string }{
			{"GossipAddr", "--gossip-addr (WEFT_GOSSIP_ADDR)", c.GossipAddr},
			{"RaftAddr", "--raft-addr (WEFT_RAFT_ADDR)", c.RaftAddr},
			{"FabricAddr", "--fabric-addr (WEFT_FABRIC_ADDR)", c.FabricAddr},
		} {
			if f.val == "" {
				errs = append(errs, fmt.Errorf("node: a node of a cluster needs %s too; set %s", f.name, f.flag))
			} else if _, _, err := net.SplitHostPort(f.val); err != nil {
				errs = append(errs, fmt.Errorf("node: %s %q is not host:port: %v; set %s", f.name, f.val, err, f.flag))
			}
		}
		if len(c.Seeds) == 0 && len(c.InitialNodes) == 0 {
			errs = append(errs, errors.New("node: a node of a cluster needs --seeds (WEFT_SEEDS) to find the others, or --initial-nodes (WEFT_INITIAL_NODES) to form a new cluster"))
		}
	} else if len(c.Seeds) > 0 || len(c.InitialNodes) > 0 {
		errs = append(errs, errors.New("node: --seeds and --initial-nodes need --gossip-addr and --raft-addr (and --fabric-addr) too"))
	}
	if n := len(c.GossipKey); n != 0 && n != 16 && n != 24 && n != 32 {
		errs = append(errs, fmt.Errorf("node: the gossip key is %d bytes; it must be 16, 24 or 32 (base64 in --gossip-key, WEFT_GOSSIP_KEY)", n))
	}
	errs = append(errs, c.validateSecurity()...)
	return errors.Join(errs...)
}

// MemoryBudget is the node's memory limit and its split: MemoryLimit, or
// membudget.DefaultPercent of the memory available to the process. source
// says where the figure came from.
func (c Config) MemoryBudget() (split membudget.Split, source string, err error) {
	if c.MemoryLimit > 0 {
		return membudget.SplitLimit(c.MemoryLimit), "--memory-limit", nil
	}
	avail, from, err := membudget.Available(os.DirFS("/"))
	if err != nil {
		return membudget.Split{}, "", fmt.Errorf("node: %w", err)
	}
	return membudget.SplitLimit(avail / 100 * membudget.DefaultPercent), fmt.Sprintf("%d%% of /%s", membudget.DefaultPercent, from), nil
}

// validateHTTPLimits checks the HTTP connection limits: every one is on,
// since each guards the node against clients that hold connections.
func (c Config) validateHTTPLimits() []error {
	var errs []error
	if c.HTTPMaxConnections < 1 {
		errs = append(errs, fmt.Errorf("node: HTTPMaxConnections %d must be at least 1; set --http-max-connections (WEFT_HTTP_MAX_CONNECTIONS)", c.HTTPMaxConnections))
	}
	for _, d := range []struct {
		name, flag string
		v          time.Duration
	}{
		{"HTTPHeaderTimeout", "--http-header-timeout (WEFT_HTTP_HEADER_TIMEOUT)", c.HTTPHeaderTimeout},
		{"HTTPIdleTimeout", "--http-idle-timeout (WEFT_HTTP_IDLE_TIMEOUT)", c.HTTPIdleTimeout},
		{"HTTPBodyTimeout", "--http-body-timeout (WEFT_HTTP_BODY_TIMEOUT)", c.HTTPBodyTimeout},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("node: %s %v must be positive; set %s", d.name, d.v, d.flag))
		}
	}
	if c.HTTPBodyMinRate < 0 {
		errs = append(errs, fmt.Errorf("node: HTTPBodyMinRate %d must be 0 (no rate rule) or positive; set --http-body-min-rate (WEFT_HTTP_BODY_MIN_RATE)", c.HTTPBodyMinRate))
	}
	if err := c.CORS.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("node: %w; set the --http-cors-* flags (WEFT_HTTP_CORS_*)", err))
	}
	return errs
}
