package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/internal/logadapt"
)

// Member is one node as gossip sees it.
type Member struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	HTTPAddr    string `json:"http_addr"`
	FabricAddr  string `json:"fabric_addr"`
	RaftAddr    string `json:"raft_addr"`
	GossipAddr  string `json:"gossip_addr"`
	RDMA        string `json:"rdma,omitempty"`
	ClusterUUID string `json:"cluster_uuid"`
	// Disk is the node's data directory filesystem as it last gossiped it
	// (zero when it reports none).
	Disk state.DiskUsage `json:"disk"`
	// Status is "alive", "dead" (failed) or "left" (said goodbye).
	Status string `json:"status"`
	// Since is when this node last saw the status change.
	Since time.Time `json:"since"`
}

// meta is what a node gossips about itself (memberlist's node metadata).
// Its encoding is a version byte, then each string field as a uvarint
// length and its bytes, in the order of the struct, then the disk usage as
// two uvarints (used, total bytes: at most 20 bytes); it must fit in
// memberlist.MetaMaxSize. A node of an earlier build sends no disk usage
// (unknown) and ignores it.
type meta struct {
	ID, Name, HTTPAddr, FabricAddr, RaftAddr, RDMA, ClusterUUID string
	Disk                                                        state.DiskUsage
}

const metaVersion = 1

func (m meta) encode() []byte {
	b := []byte{metaVersion}
	for _, f := range m.ptrs() {
		b = binary.AppendUvarint(b, uint64(len(*f)))
		b = append(b, *f...)
	}
	b = binary.AppendUvarint(b, m.Disk.UsedBytes)
	return binary.AppendUvarint(b, m.Disk.TotalBytes)
}

var errMeta = errors.New("cluster: bad gossip metadata")

// decodeMeta parses what encode writes. Metadata arrives from the network:
// any input gives a meta or an error, never a panic. A newer version's
// trailing fields are ignored.
func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) == 0 || b[0] != metaVersion {
		return m, fmt.Errorf("%w: not a weft node's metadata of version %d", errMeta, metaVersion)
	}
	b = b[1:]
	for _, f := range m.ptrs() {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return meta{}, fmt.Errorf("%w: truncated", errMeta)
		}
		*f = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	if len(b) > 0 {
		used, k := binary.Uvarint(b)
		if k <= 0 {
			return meta{}, fmt.Errorf("%w: truncated disk usage", errMeta)
		}
		total, j := binary.Uvarint(b[k:])
		if j <= 0 || used > total {
			return meta{}, fmt.Errorf("%w: truncated disk usage, or more used than there is", errMeta)
		}
		m.Disk = state.DiskUsage{UsedBytes: used, TotalBytes: total}
	}
	if m.ID == "" || m.Name == "" {
		return meta{}, fmt.Errorf("%w: no node ID or name", errMeta)
	}
	return m, nil
}

func (m *meta) ptrs() []*string {
	return []*string{&m.ID, &m.Name, &m.HTTPAddr, &m.FabricAddr, &m.RaftAddr, &m.RDMA, &m.ClusterUUID}
}

// membership runs memberlist for one node: it gossips the node's metadata,
// keeps a table of every member it has seen with its status, refuses
// members of another cluster, and signals changes.
type membership struct {
	log   *slog.Logger
	ml    *memberlist.Memberlist
	seeds []string
	self  string // own gossip address

	mu      sync.Mutex
	local   meta
	members map[string]*Member // by node ID
	refused map[string]string  // node ID → the cluster UUID it was refused for (logged once)
	changed broadcast          // after every change of the member table

	// down holds the node IDs gossip last saw dead or leaving, with
	// since when (this node's clock); replaced (never modified) on every
	// change of one.
	down atomic.Pointer[map[string]time.Time]
}

// startMembership starts memberlist on cfg.GossipAddr with the given
// local metadata and joins the seeds that answer (the rest are retried by
// rejoin).
func startMembership(cfg Config, local meta, log *slog.Logger) (*membership, error) {
	m := &membership{
		log: log, local: local, seeds: cfg.Seeds,
		members: make(map[string]*Member), refused: make(map[string]string),
	}
	host, portStr, _ := net.SplitHostPort(cfg.GossipAddr)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip port %q: %w", portStr, err)
	}
	mc := memberlist.DefaultLANConfig()
	if cfg.timing().Gossip == "local" {
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval = 300 * time.Millisecond
		mc.ProbeTimeout = 150 * time.Millisecond
		mc.GossipToTheDeadTime = 2 * time.Second
		mc.PushPullInterval = 2 * time.Second
	}
	mc.Name = local.ID
	mc.BindAddr, mc.BindPort = host, port
	mc.Delegate, mc.Events, mc.Alive, mc.Merge = m, m, m, m
	mc.Logger = logadapt.Std(log, "memberlist")
	mc.LogOutput = nil
	if len(cfg.GossipKey) > 0 {
		mc.SecretKey = cfg.GossipKey
	}
	// The transport is made here, not by memberlist, so that a test hook
	// can wrap it; port 0 takes the port the TCP listener got for UDP too,
	// which another process may hold: try a few.
	var nt *memberlist.NetTransport
	for try := 0; ; try++ {
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
		if err == nil || port != 0 || try == 9 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip on %s: %w", cfg.GossipAddr, err)
	}
	mc.BindPort = nt.GetAutoBindPort()
	m.self = net.JoinHostPort(host, strconv.Itoa(mc.BindPort))
	mc.Transport = nt
	if cfg.GossipWrap != nil {
		mc.Transport = cfg.GossipWrap(nt)
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = nt.Shutdown()
		return nil, fmt.Errorf("cluster: starting gossip on %s: %w", cfg.GossipAddr, err)
	}
	m.ml = ml
	m.rejoin()
	return m, nil
}

// Addr is the gossip address this node listens on.
func (m *membership) Addr() string { return m.self }

// rejoin joins the seeds that are not alive members (and not this node).
func (m *membership) rejoin() {
	alive := map[string]bool{m.self: true}
	m.mu.Lock()
	for _, mem := range m.members {
		if mem.Status == "alive" {
			alive[mem.GossipAddr] = true
		}
	}
	m.mu.Unlock()
	var join []string
	for _, s := range m.seeds {
		if !alive[s] {
			join = append(join, s)
		}
	}
	if len(join) == 0 {
		return
	}
	if _, err := m.ml.Join(join); err != nil {
		m.log.Debug("cluster: joining seeds", "seeds", join, "err", err)
	}
}

// setClusterUUID puts the cluster UUID into this node's metadata and
// gossips it (waiting a moment for the broadcast to go out: memberlist
// takes 0 as no timeout at all).
func (m *membership) setClusterUUID(uuid string) {
	m.mu.Lock()
	m.local.ClusterUUID = uuid
	m.mu.Unlock()
	if err := m.ml.UpdateNode(time.Second); err != nil {
		m.log.Warn("cluster: gossiping the cluster UUID", "err", err)
	}
}

// setDisk puts this node's disk usage into its metadata and gossips it.
func (m *membership) setDisk(u state.DiskUsage) {
	m.mu.Lock()
	m.local.Disk = u
	m.mu.Unlock()
	if err := m.ml.UpdateNode(time.Second); err != nil {
		m.log.Debug("cluster: gossiping the disk usage", "err", err)
	}
}

func (m *membership) clusterUUID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.local.ClusterUUID
}

// Members returns every member seen, by node ID order. (memberlist's own
// Members hands out nodes it keeps changing, so this is built from its
// events alone.)
func (m *membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.members))
	for _, mem := range m.members {
		out = append(out, *mem)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// leave tells the others this node is going and stops gossip.
func (m *membership) leave(timeout time.Duration) {
	if err := m.ml.Leave(timeout); err != nil {
		m.log.Debug("cluster: leaving gossip", "err", err)
	}
	m.shutdown()
}

// shutdown stops gossip without a word (the others see a failure).
func (m *membership) shutdown() {
	if err := m.ml.Shutdown(); err != nil {
		m.log.Debug("cluster: stopping gossip", "err", err)
	}
}

func (m *membership) record(n *memberlist.Node, status string) {
	md, err := decodeMeta(n.Meta)
	if err != nil {
		m.log.Warn("cluster: ignoring a gossip member", "member", n.Name, "addr", n.Address(), "err", err)
		return
	}
	m.mu.Lock()
	prev, ok := m.members[md.ID]
	mem := &Member{ID: md.ID, Name: md.Name, HTTPAddr: md.HTTPAddr, FabricAddr: md.FabricAddr, RaftAddr: md.RaftAddr,
		GossipAddr: n.Address(), RDMA: md.RDMA, ClusterUUID: md.ClusterUUID, Disk: md.Disk, Status: status, Since: time.Now()}
	if ok && prev.Status == status {
		mem.Since = prev.Since
	}
	m.members[md.ID] = mem
	if !ok || prev.Status != status {
		down := map[string]time.Time{}
		for id, x := range m.members {
			if x.Status != "alive" {
				down[id] = x.Since
			}
		}
		m.down.Store(&down)
	}
	m.mu.Unlock()
	m.changed.Signal()
}

// Down returns the node IDs gossip last saw dead or leaving, with since
// when (nil before any); the map must not be modified.
func (m *membership) Down() map[string]time.Time {
	if d := m.down.Load(); d != nil {
		return *d
	}
	return nil
}

// memberlist.Delegate: only the metadata is used.

func (m *membership) NodeMeta(limit int) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.local.encode()
	if len(b) > limit {
		// Validate keeps this from happening; gossip without metadata
		// would make this node unusable, so say it loudly.
		m.log.Error("cluster: gossip metadata over memberlist's limit", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

func (m *membership) NotifyMsg([]byte)                           {}
func (m *membership) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (m *membership) LocalState(join bool) []byte                { return nil }
func (m *membership) MergeRemoteState(buf []byte, join bool)     {}

// memberlist.EventDelegate.

func (m *membership) NotifyJoin(n *memberlist.Node)   { m.record(n, "alive") }
func (m *membership) NotifyUpdate(n *memberlist.Node) { m.record(n, "alive") }
func (m *membership) NotifyLeave(n *memberlist.Node) {
	status := "dead"
	if n.State == memberlist.StateLeft {
		status = "left"
	}
	m.record(n, status)
}

// memberlist.AliveDelegate and MergeDelegate: members of another cluster
// are refused, so two clusters never merge.

func (m *membership) NotifyAlive(n *memberlist.Node) error { return m.admit(n) }

func (m *membership) NotifyMerge(peers []*memberlist.Node) error {
	for _, n := range peers {
		if err := m.admit(n); err != nil {
			return err
		}
	}
	return nil
}

func (m *membership) admit(n *memberlist.Node) error {
	md, err := decodeMeta(n.Meta)
	if err != nil {
		return fmt.Errorf("member %s at %s: %w", n.Name, n.Address(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ours := m.local.ClusterUUID
	if md.ClusterUUID == "" || ours == "" || md.ClusterUUID == ours {
		delete(m.refused, md.ID)
		return nil
	}
	err = fmt.Errorf("%w: node %s (%s at %s) belongs to cluster %s, this node to %s; it is not admitted (a node keeps to the cluster whose Raft state it holds: wipe its data directory to move it)",
		ErrClusterMismatch, md.Name, md.ID, n.Address(), md.ClusterUUID, ours)
	if m.refused[md.ID] != md.ClusterUUID {
		m.refused[md.ID] = md.ClusterUUID
		m.log.Warn(err.Error())
	}
	return err
}

var (
	_ memberlist.Delegate      = (*membership)(nil)
	_ memberlist.EventDelegate = (*membership)(nil)
	_ memberlist.AliveDelegate = (*membership)(nil)
	_ memberlist.MergeDelegate = (*membership)(nil)
)
