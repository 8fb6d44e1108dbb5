// Package clusterbench measures Weft as a cluster of real searchnode
// processes on loopback, side by side in one run; benchmarks/cmd/clusterbench
// is its command line and docs/benchmarks-cluster.md shows the figures.
//
// Search (issue 9): the same documents and queries on one node (an index
// of 1 shard and one of Shards shards) and on three nodes (Shards shards,
// no replicas) whose fabric is plain tcp or the adaptive transport: bulk
// docs/s, query p50/p99 and QPS at each client count, and the bytes the
// coordinating node moves over the fabric per query against the _source
// bytes of the final page's hits. Replicas (issue 10): bulk docs/s into
// Shards shards with 0 and with 1 replica on three nodes. Recovery (issue
// 10): a large single-shard index gets a replica; the file-based peer
// recovery's throughput per fabric transport, against the raw TCP
// bandwidth fabricbench measures in the same run.
//
// The setups take turns (bulk in rounds of batches, queries one each per
// round at one client, timed windows in rotating order at more), so load
// from other work on the machine falls on all of them alike. Goals are
// reported, never asserted.
package clusterbench

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/weftsearch/weft/benchmarks/enginebench"
	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

// Parts of a run.
const (
	PartSearch   = "search"
	PartReplicas = "replicas"
	PartRecovery = "recovery"
)

// Fabric transports of the three-node clusters (searchnode --fabric-transport).
const (
	TransportTCP      = "tcp"
	TransportAdaptive = "adaptive"
)

// clusterNodes is the size of the clusters compared with the lone node.
const clusterNodes = 3

// ShareProcessors as Config.NodeProcessors gives each node of a cluster
// its share of the machine's CPUs (Processors).
const ShareProcessors = -1

// Processors is the --processors of each of n nodes that share this
// machine: its CPUs divided among them, at least 1 each — what
// Elasticsearch asks of several nodes on one host (node.processors), so
// that they do not each schedule work on every CPU and wake one another's
// idle threads across them.
func Processors(n int) int { return max(1, runtime.NumCPU()/n) }

// Config bounds and shapes a run. DefaultConfig gives the command's
// defaults.
type Config struct {
	Corpus      string // JSON lines documents with an "id" field
	MappingFile string // Elasticsearch mapping of the searched indexes
	Docs        int    // documents to index (<= 0: the corpus once)
	QueriesFile string // JSON object of name → Elasticsearch query
	Generated   int    // generated match queries added to QueriesFile's
	Size        int    // hits per query (with _source)
	Shards      int    // shards of the compared index on one and three nodes
	Clients     []int  // concurrent clients; 1 is timed in rounds, more in windows
	// Rounds caps the timed rounds at one client (every setup runs one
	// query per round); Duration caps them in time.
	Rounds   int
	Duration time.Duration
	// Window is one timed window of one setup at more than one client;
	// Windows is how many each setup gets per client count.
	Window  time.Duration
	Windows int
	// Bulk: documents per request and requests in flight.
	BatchSize   int
	Concurrency int
	Transports  []string // fabric transports of the three-node clusters
	Parts       []string // PartSearch, PartReplicas, PartRecovery
	// RecoveryBytes is the _source volume loaded into the recovered
	// shard, in synthetic documents of RecoveryDocBytes; the load stops
	// early when RecoveryLoadLimit passes. RecoveryReps recoveries run per
	// transport, transports alternating.
	RecoveryBytes     int64
	RecoveryDocBytes  int
	RecoveryLoadLimit time.Duration
	RecoveryReps      int
	// RecoveryThrottle is every node's --recovery-max-bytes-per-sec
	// (0: no limit, what the benchmark measures).
	RecoveryThrottle int64
	// NodeProcessors is each node's --processors in the three-node
	// clusters: ShareProcessors (the default) gives each its share of this
	// machine's CPUs (Processors), 0 leaves every node the runtime's
	// default (all the CPUs, each node alike). The lone node always has
	// every CPU.
	NodeProcessors int
	// RawDuration is how long each fabricbench point runs.
	RawDuration time.Duration
	Seed        uint64 // choice of generated queries
	Searchnode  string // binary; "" builds ./cmd/searchnode
	WorkDir     string // scratch; "" is a temporary directory removed afterwards
}

// DefaultConfig is the command's default run: the issues' shapes on the
// small checked-in corpus.
func DefaultConfig() Config {
	return Config{
		Corpus:            "testdata/sample/emails.ndjson",
		MappingFile:       "testdata/sample/emails.mapping.json",
		QueriesFile:       "testdata/sample/queries.json",
		Generated:         74,
		Size:              10,
		Shards:            6,
		Clients:           []int{1, 8, 32},
		Rounds:            300,
		Duration:          60 * time.Second,
		Window:            2 * time.Second,
		Windows:           3,
		BatchSize:         500,
		Concurrency:       2,
		Transports:        []string{TransportTCP, TransportAdaptive},
		Parts:             []string{PartSearch, PartReplicas, PartRecovery},
		RecoveryBytes:     1 << 30,
		RecoveryDocBytes:  256 << 10,
		RecoveryLoadLimit: 5 * time.Minute,
		RecoveryReps:      3,
		NodeProcessors:    ShareProcessors,
		RawDuration:       time.Second,
		Seed:              1,
	}
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	switch {
	case c.Corpus == "" || c.MappingFile == "" || c.QueriesFile == "":
		return fmt.Errorf("Corpus, MappingFile and QueriesFile must be set (-corpus, -mapping, -queries)")
	case c.Generated < 0:
		return fmt.Errorf("Generated %d must not be negative", c.Generated)
	case c.Size < 1:
		return fmt.Errorf("Size %d must be at least 1", c.Size)
	case c.Shards < 1:
		return fmt.Errorf("Shards %d must be at least 1", c.Shards)
	case c.Rounds < 1 || c.Duration <= 0:
		return fmt.Errorf("Rounds %d and Duration %v must be positive", c.Rounds, c.Duration)
	case c.Window <= 0 || c.Windows < 1:
		return fmt.Errorf("Window %v and Windows %d must be positive", c.Window, c.Windows)
	case c.BatchSize < 1 || c.Concurrency < 1:
		return fmt.Errorf("BatchSize %d and Concurrency %d must be at least 1", c.BatchSize, c.Concurrency)
	case len(c.Transports) == 0:
		return fmt.Errorf("Transports is empty; give tcp, adaptive or both")
	case c.RecoveryDocBytes < 1 || c.RecoveryBytes < 1 || c.RecoveryLoadLimit <= 0 || c.RecoveryReps < 1:
		return fmt.Errorf("RecoveryBytes %d, RecoveryDocBytes %d, RecoveryLoadLimit %v and RecoveryReps %d must be positive",
			c.RecoveryBytes, c.RecoveryDocBytes, c.RecoveryLoadLimit, c.RecoveryReps)
	case c.RecoveryThrottle < 0:
		return fmt.Errorf("RecoveryThrottle %d must be 0 (no limit) or positive", c.RecoveryThrottle)
	case c.NodeProcessors < ShareProcessors || c.NodeProcessors > runtime.NumCPU():
		return fmt.Errorf("NodeProcessors %d must be %d (each node its share of the CPUs), 0 (the runtime's default) or up to the %d CPUs", c.NodeProcessors, ShareProcessors, runtime.NumCPU())
	case c.RawDuration <= 0:
		return fmt.Errorf("RawDuration %v must be positive", c.RawDuration)
	}
	for _, n := range c.Clients {
		if n < 1 {
			return fmt.Errorf("client count %d must be at least 1", n)
		}
	}
	if !slices.Contains(c.Clients, 1) && slices.Contains(c.Parts, PartSearch) {
		return fmt.Errorf("Clients %v must include 1: the one-client rounds give the fan-out bytes and the p50 goal", c.Clients)
	}
	for i, t := range c.Transports {
		if t != TransportTCP && t != TransportAdaptive {
			return fmt.Errorf("transport %q is not tcp or adaptive", t)
		}
		if slices.Contains(c.Transports[:i], t) {
			return fmt.Errorf("transport %q is listed twice", t)
		}
	}
	if len(c.Parts) == 0 {
		return fmt.Errorf("Parts is empty; give search, replicas, recovery or several")
	}
	for _, p := range c.Parts {
		if p != PartSearch && p != PartReplicas && p != PartRecovery {
			return fmt.Errorf("part %q is not search, replicas or recovery", p)
		}
	}
	return nil
}

// Result is one run's figures.
type Result struct {
	enginebench.Machine
	Docs        int   `json:"docs"`
	CorpusBytes int64 `json:"corpus_bytes"`
	Queries     int   `json:"queries"`      // distinct queries
	FileQueries int   `json:"file_queries"` // of them, from the queries file
	Size        int   `json:"size"`
	Shards      int   `json:"shards"`
	// NodeProcessors is the --processors each node of the three-node
	// clusters ran with (0: the runtime's default, every CPU).
	NodeProcessors int `json:"node_processors"`

	Bulk     []BulkFigure    `json:"bulk,omitempty"`
	Search   []SearchFigure  `json:"search,omitempty"`
	FanOut   []FanOutFigure  `json:"fan_out,omitempty"`
	Replicas []ReplicaFigure `json:"replicas,omitempty"`
	Recovery *RecoveryResult `json:"recovery,omitempty"`
	Goals    []Goal          `json:"goals"`
}

// BulkFigure is one setup's bulk load of the corpus (its _refresh
// included).
type BulkFigure struct {
	Setup      string  `json:"setup"`
	Docs       int     `json:"docs"`
	Seconds    float64 `json:"seconds"`
	DocsPerSec float64 `json:"docs_per_s"`
}

// SearchFigure is one setup at one client count. At one client the
// queries run in rounds with the other setups and QPS is queries over
// their summed time; at more, Latency pools every window's queries and
// QPS is all of them over the windows' summed time.
type SearchFigure struct {
	Setup   string              `json:"setup"`
	Clients int                 `json:"clients"`
	Latency enginebench.Latency `json:"latency"`
	QPS     float64             `json:"qps"`
}

// FanOutFigure is what the coordinating node of a three-node setup moved
// over the fabric for the one-client queries: the growth of its outbound
// connections' bytes sent and received (GET /_weft/fabric/conns, Totals)
// over the batch, against the _source bytes of the final page's hits as
// the HTTP replies carried them (all hits, and those on shards of other
// nodes). IdleBytesPerSec is the same counters' growth with no queries,
// measured right after.
type FanOutFigure struct {
	Setup             string  `json:"setup"`
	Queries           int     `json:"queries"`
	Seconds           float64 `json:"seconds"`
	FabricBytes       uint64  `json:"fabric_bytes"`
	SourceBytes       int64   `json:"source_bytes"`
	RemoteSourceBytes int64   `json:"remote_source_bytes"`
	IdleBytesPerSec   float64 `json:"idle_bytes_per_s"`
	// Heaviest are the queries that moved the most fabric bytes when run
	// once each on their own (counters read around each), most first.
	Heaviest []QueryBytes `json:"heaviest"`
}

// QueryBytes is one query's fabric bytes against its page's _source bytes.
type QueryBytes struct {
	Query       string `json:"query"`
	FabricBytes uint64 `json:"fabric_bytes"`
	SourceBytes int64  `json:"source_bytes"`
}

// PerQuery returns fabric bytes, final-page _source bytes and those from
// other nodes' shards, per query.
func (f FanOutFigure) PerQuery() (fabric, source, remote float64) {
	if f.Queries == 0 {
		return 0, 0, 0
	}
	n := float64(f.Queries)
	return float64(f.FabricBytes) / n, float64(f.SourceBytes) / n, float64(f.RemoteSourceBytes) / n
}

// ReplicaFigure compares bulk loads of the corpus into Shards shards with
// 0 and with 1 replica on a three-node cluster, whole loads in turns (runReplicas).
type ReplicaFigure struct {
	Transport    string  `json:"transport"`
	Docs         int     `json:"docs"`
	R0DocsPerSec float64 `json:"r0_docs_per_s"`
	R1DocsPerSec float64 `json:"r1_docs_per_s"`
}

// RecoveryResult is the recovery part: the shard that was recovered, each
// recovery, and what was measured between them: fabricbench's raw TCP
// points and the disk's write rate (a file of SourceBytes, fsynced).
type RecoveryResult struct {
	Docs        int     `json:"docs"`
	DocBytes    int     `json:"doc_bytes"`
	SourceBytes int64   `json:"source_bytes"` // loaded _source volume
	LoadSeconds float64 `json:"load_seconds"`
	// LoadCut is set when RecoveryLoadLimit stopped the load before
	// RecoveryBytes.
	LoadCut    bool                 `json:"load_cut"`
	Throttle   int64                `json:"throttle_bytes_per_s"` // 0: none
	Runs       []RecoveryRun        `json:"runs"`
	Raw        []fabricbench.Result `json:"raw"`
	DiskMBPerS []float64            `json:"disk_mb_per_s"`
}

// RecoveryRun is one replica built by file-based recovery. Bytes and
// Seconds are _cat/recovery's bytes_total and time (the whole recovery:
// the primary's snapshot, the stream, the ops replay, the start);
// WallSeconds runs from the settings change to green health.
// StreamSeconds is the part of it in which the primary's outbound fabric
// bytes grew (GET /_weft/fabric/conns polled every StreamPoll), and
// StreamBytes that growth.
type RecoveryRun struct {
	Transport     string  `json:"transport"`
	Rep           int     `json:"rep"`
	Type          string  `json:"type"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	WallSeconds   float64 `json:"wall_seconds"`
	StreamBytes   uint64  `json:"stream_bytes"`
	StreamSeconds float64 `json:"stream_seconds"`
}

// MBPerS is the recovery's throughput, 10^6 bytes per second.
func (r RecoveryRun) MBPerS() float64 { return mbps(float64(r.Bytes), r.Seconds) }

// StreamMBPerS is the primary's outbound fabric rate while streaming.
func (r RecoveryRun) StreamMBPerS() float64 { return mbps(float64(r.StreamBytes), r.StreamSeconds) }

func mbps(bytes, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return bytes / seconds / 1e6
}
