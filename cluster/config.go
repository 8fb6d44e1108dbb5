package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/security/auth"
)

// Config configures a Cluster. NodeID, NodeName and DataDir are required;
// the zero value of every other field is safe (a single node alone).
type Config struct {
	NodeID   string // required; a UUID the caller keeps in DataDir (node.json)
	NodeName string // required; unique among live nodes (a second live node with the same name is refused)
	DataDir  string // required; Raft's state lives in DataDir/raft
	// Advertised in gossip metadata (together under memberlist's 512-byte
	// limit: Validate refuses a config that cannot fit).
	HTTPAddr, FabricAddr, RDMA string
	// GossipAddr is where memberlist listens (TCP and UDP, host:port; port
	// 0 picks one). "" means no membership at all: a single node that is
	// alone forever.
	GossipAddr string
	// RaftAddr is where Raft listens (TCP, host:port; port 0 picks one).
	// "" means a single node: Raft over an in-memory transport, never
	// reachable from outside (so GossipAddr must be "" too).
	RaftAddr string
	// Seeds are gossip addresses to join; every node gets the same list.
	// Seeds that are not members are joined again every RejoinInterval.
	Seeds []string
	// InitialNodes are the node names that form the first Raft
	// configuration (Elasticsearch's cluster.initial_master_nodes); see
	// Start.
	InitialNodes []string
	// GossipKey is nil (no encryption) or a 16, 24 or 32 byte AES key that
	// every node shares.
	GossipKey []byte
	// MaxVoters is how many nodes vote in Raft (the rest are non-voters):
	// 0 means 3; at most 7 and odd.
	MaxVoters int
	// Timing is DefaultTiming() in production, LocalTiming() in tests; the
	// zero value means DefaultTiming().
	Timing Timing
	// Admit, when set, is asked by the leader before a gossip member that
	// is not in the Raft configuration, or not recorded live, is added to
	// either: it must prove the member is the node it claims to be (with
	// security on, node calls it over the fabric's mutual TLS, which the
	// member passes only with a certificate of the cluster's CA naming
	// it). An error keeps the member out. Nil admits every member of this
	// cluster's gossip.
	Admit func(ctx context.Context, m Member) error
	// Peers reaches other nodes' fabric, for proposals forwarded to the
	// leader; nil only when GossipAddr is "".
	Peers fabric.Caller
	// Logger receives the cluster's, Raft's and memberlist's logs; nil
	// discards them.
	Logger *slog.Logger
	// ElasticPassword is the elastic user's password for the cluster's
	// first start (WEFT_ELASTIC_PASSWORD); "" lets the first leader
	// generate one. It is used only while the password was never set: a
	// later start never changes it (see ResetElasticPassword). It must
	// pass auth.ValidatePassword.
	ElasticPassword auth.Secret
	// ElasticPasswordGenerated receives the password the first leader
	// generated for the elastic user, once, after its hash is committed;
	// the node prints it for the operator (never to a log). It runs on
	// the leader's goroutine and must return promptly. With it nil and
	// ElasticPassword "", no password is bootstrapped (a node without
	// security); the first leader that has one of them does it.
	ElasticPasswordGenerated func(password auth.Secret)
	// PasswordHasher hashes the elastic password this package sets; nil
	// means auth.BcryptHasher{} (the FSM accepts only bcrypt hashes).
	PasswordHasher auth.PasswordHasher
	// DiskUsage reads the usage of the filesystem that holds the node's
	// data (for the disk watermarks); nil reads DataDir's with statfs.
	// Tests inject usage here. It is called every Timing.DiskInterval
	// from one goroutine and must return promptly.
	DiskUsage func() (state.DiskUsage, error)
	// Test hooks, nil in production: they wrap Raft's stream layer and
	// memberlist's transport so that tests can partition nodes.
	RaftLayer  func(raft.StreamLayer) raft.StreamLayer
	GossipWrap func(memberlist.Transport) memberlist.Transport
}

// Timing holds every period and timeout of the cluster.
type Timing struct {
	// Raft's timeouts (raft.Config's fields of the same names).
	RaftHeartbeat, RaftElection, RaftLeaderLease, RaftCommit time.Duration
	// Gossip is memberlist's profile: "lan" (DefaultLANConfig) or "local"
	// (DefaultLocalConfig, probing faster still, for tests on one host).
	Gossip string
	// RejoinInterval is how often seeds that are not members are joined
	// again.
	RejoinInterval time.Duration
	// GossipSettle is how long a new leader gives gossip to mention a node
	// that the state says is live before it declares the node gone.
	GossipSettle time.Duration
	// DeadNodeRemoval is how long a dead node stays in the Raft
	// configuration before the leader removes it.
	DeadNodeRemoval time.Duration
	// AllocationInterval is the longest the leader goes without planning
	// (for time-based decisions such as delayed reallocation).
	AllocationInterval time.Duration
	// ProposeTimeout bounds Propose (and the leader's Barrier) when ctx
	// has no deadline.
	ProposeTimeout time.Duration
	// DiskInterval is how often a node reads its disk usage (and gossips
	// it when it changed), as Elasticsearch's cluster.info.update.interval.
	DiskInterval time.Duration
}

// DefaultTiming is for production: memberlist's LAN profile and Raft's
// defaults.
func DefaultTiming() Timing {
	rc := raft.DefaultConfig()
	return Timing{
		// Raft's defaults (1 s, 1 s, 500 ms lease) deposed leaders over and
		// over on a loaded two-core machine, each time blocking writes; half
		// as sensitive costs a second more to replace a dead leader, which
		// is less than gossip takes to declare its node failed anyway.
		RaftHeartbeat: 2 * rc.HeartbeatTimeout, RaftElection: 2 * rc.ElectionTimeout,
		RaftLeaderLease: 2 * rc.LeaderLeaseTimeout, RaftCommit: rc.CommitTimeout,
		Gossip:             "lan",
		RejoinInterval:     30 * time.Second,
		GossipSettle:       30 * time.Second,
		DeadNodeRemoval:    2 * time.Minute,
		AllocationInterval: 10 * time.Second,
		ProposeTimeout:     30 * time.Second,
		DiskInterval:       30 * time.Second,
	}
}

// LocalTiming is for tests on one host: every period short, but Raft's
// timeouts long enough that a loaded two-core machine running race-enabled
// tests in parallel does not keep deposing its leaders.
func LocalTiming() Timing {
	return Timing{
		RaftHeartbeat: 400 * time.Millisecond, RaftElection: 400 * time.Millisecond,
		RaftLeaderLease: 300 * time.Millisecond, RaftCommit: 10 * time.Millisecond,
		Gossip:             "local",
		RejoinInterval:     300 * time.Millisecond,
		GossipSettle:       2 * time.Second,
		DeadNodeRemoval:    3 * time.Second,
		AllocationInterval: 200 * time.Millisecond,
		ProposeTimeout:     10 * time.Second,
		DiskInterval:       200 * time.Millisecond,
	}
}

// Validate reports the first field out of bounds, naming it and the bound.
func (c Config) Validate() error {
	switch {
	case c.NodeID == "" || len(c.NodeID) > MaxNameBytes:
		return fmt.Errorf("cluster: Config.NodeID %q must have 1 to %d bytes", c.NodeID, MaxNameBytes)
	case c.NodeName == "" || len(c.NodeName) > MaxNameBytes:
		return fmt.Errorf("cluster: Config.NodeName %q must have 1 to %d bytes", c.NodeName, MaxNameBytes)
	case c.DataDir == "":
		return fmt.Errorf("cluster: Config.DataDir is required")
	case c.GossipAddr != "" && c.RaftAddr == "":
		return fmt.Errorf("cluster: Config.RaftAddr is required with GossipAddr %q (other nodes must reach this node's Raft)", c.GossipAddr)
	case c.GossipAddr != "" && c.Peers == nil:
		return fmt.Errorf("cluster: Config.Peers is required with GossipAddr %q (proposals are forwarded to the leader over it)", c.GossipAddr)
	case len(c.GossipKey) != 0 && len(c.GossipKey) != 16 && len(c.GossipKey) != 24 && len(c.GossipKey) != 32:
		return fmt.Errorf("cluster: Config.GossipKey has %d bytes; it must have 16, 24 or 32", len(c.GossipKey))
	case c.MaxVoters < 0 || c.MaxVoters > 7 || (c.MaxVoters != 0 && c.MaxVoters%2 == 0):
		return fmt.Errorf("cluster: Config.MaxVoters %d must be 0 (meaning 3) or odd in [1, 7]", c.MaxVoters)
	}
	for name, addr := range map[string]string{"GossipAddr": c.GossipAddr, "RaftAddr": c.RaftAddr} {
		if err := checkHostPort(name, addr); err != nil {
			return err
		}
	}
	for _, s := range c.Seeds {
		if err := checkHostPort("Seeds", s); err != nil {
			return err
		}
	}
	if c.ElasticPassword != "" {
		if err := auth.ValidatePassword(c.ElasticPassword.Reveal()); err != nil {
			return fmt.Errorf("cluster: Config.ElasticPassword (WEFT_ELASTIC_PASSWORD) is refused: %w", err)
		}
	}
	for _, n := range c.InitialNodes {
		if n == "" || len(n) > MaxNameBytes {
			return fmt.Errorf("cluster: Config.InitialNodes has a name %q outside 1 to %d bytes", n, MaxNameBytes)
		}
	}
	worst := c.localMeta("00000000-0000-0000-0000-000000000000")
	if host, port, _ := net.SplitHostPort(worst.RaftAddr); port == "0" {
		worst.RaftAddr = net.JoinHostPort(host, "65535") // the port it will get
	}
	worst.Disk = state.DiskUsage{UsedBytes: math.MaxUint64, TotalBytes: math.MaxUint64}
	if n := len(worst.encode()); n > memberlist.MetaMaxSize {
		return fmt.Errorf("cluster: the gossip metadata (node ID, name, HTTP, fabric, Raft and RDMA addresses, cluster UUID, disk usage) takes %d bytes, over memberlist's limit of %d; shorten the node name or addresses", n, memberlist.MetaMaxSize)
	}
	return c.timing().Validate()
}

func checkHostPort(field, addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("cluster: Config.%s %q is not host:port: %v", field, addr, err)
	}
	return nil
}

// Validate reports the first period that is not positive or a profile
// that does not exist.
func (t Timing) Validate() error {
	for name, d := range map[string]time.Duration{
		"RaftHeartbeat": t.RaftHeartbeat, "RaftElection": t.RaftElection, "RaftLeaderLease": t.RaftLeaderLease,
		"RaftCommit": t.RaftCommit, "RejoinInterval": t.RejoinInterval, "GossipSettle": t.GossipSettle,
		"DeadNodeRemoval": t.DeadNodeRemoval, "AllocationInterval": t.AllocationInterval, "ProposeTimeout": t.ProposeTimeout,
		"DiskInterval": t.DiskInterval,
	} {
		if d <= 0 {
			return fmt.Errorf("cluster: Timing.%s %v must be positive", name, d)
		}
	}
	if t.RaftLeaderLease > t.RaftHeartbeat {
		return fmt.Errorf("cluster: Timing.RaftLeaderLease %v must not exceed RaftHeartbeat %v", t.RaftLeaderLease, t.RaftHeartbeat)
	}
	if t.Gossip != "lan" && t.Gossip != "local" {
		return fmt.Errorf("cluster: Timing.Gossip %q must be \"lan\" or \"local\"", t.Gossip)
	}
	return nil
}

func (c Config) timing() Timing {
	if c.Timing == (Timing{}) {
		return DefaultTiming()
	}
	return c.Timing
}

func (c Config) hasher() auth.PasswordHasher {
	if c.PasswordHasher == nil {
		return auth.BcryptHasher{}
	}
	return c.PasswordHasher
}

func (c Config) maxVoters() int {
	if c.MaxVoters == 0 {
		return 3
	}
	return c.MaxVoters
}

func (c Config) localMeta(clusterUUID string) meta {
	return meta{ID: c.NodeID, Name: c.NodeName, HTTPAddr: c.HTTPAddr, FabricAddr: c.FabricAddr,
		RaftAddr: c.RaftAddr, RDMA: c.RDMA, ClusterUUID: clusterUUID}
}
