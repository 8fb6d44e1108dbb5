package cluster

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
)

func TestSingleNodeBootstrapsItselfAndKeepsStateAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{NodeID: "id-solo", NodeName: "solo", DataDir: dir, HTTPAddr: "h:1", Timing: LocalTiming(), Logger: testLogger(t)}
	n := newTestNet(t)
	solo := n.start(cfg)
	s := awaitState(t, solo.c, 10*time.Second, func(s *state.State) bool { return s.ClusterUUID != "" && len(liveNodes(s)) == 1 })
	require.Equal(t, state.Node{ID: "id-solo", Name: "solo", HTTPAddr: "h:1", RaftAddr: solo.c.rn.addr, Live: true}, *s.Nodes["id-solo"])
	require.True(t, solo.c.Ready())
	require.Len(t, solo.c.Members(), 1)

	res, err := solo.c.Propose(context.Background(), createIndex("logs", 2, 1))
	require.NoError(t, err)
	s = solo.c.State()
	require.GreaterOrEqual(t, s.Version, res.Version)
	ix := s.Indices["logs"]
	require.Equal(t, res.IndexUUID, ix.UUID)
	require.EqualValues(t, DefaultDelayedTimeoutMS, ix.DelayedTimeoutMS)
	for _, sh := range ix.Shards {
		require.Equal(t, []state.Copy{{AllocationID: sh.Copies[0].AllocationID, NodeID: "id-solo", Primary: true, State: state.CopyInitializing}}, sh.Copies)
	}
	_, err = solo.c.Propose(context.Background(), createIndex("logs", 1, 0))
	require.ErrorIs(t, err, state.ErrIndexExists)
	uuid := s.ClusterUUID
	solo.stop(t)

	// Restarted on the same directory: the state is there, nothing is
	// bootstrapped again (the in-memory Raft address is new, and the
	// leader puts it into the configuration).
	again := n.start(cfg)
	require.True(t, again.c.rn.hasState)
	s = awaitState(t, again.c, 10*time.Second, func(s *state.State) bool {
		n, ok := s.Nodes["id-solo"]
		return ok && n.RaftAddr == again.c.rn.addr && s.Indices["logs"] != nil
	})
	require.Equal(t, uuid, s.ClusterUUID)
	eventually(t, 10*time.Second, "the new Raft address in the configuration", func() bool {
		f := again.c.rn.r.GetConfiguration()
		return f.Error() == nil && len(f.Configuration().Servers) == 1 && string(f.Configuration().Servers[0].Address) == again.c.rn.addr
	})
	_, err = again.c.Propose(context.Background(), Command{DeleteIndex: &DeleteIndex{Name: "logs", UUID: res.IndexUUID}})
	require.NoError(t, err)
}

func TestInitialNodesBootstrapAndALaterNodeJoinsAsNonvoter(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	info := leader(t, nodes).c.Raft()
	require.Len(t, info.Voters, 3)
	uuid := nodes[0].c.State().ClusterUUID
	for _, tn := range nodes {
		require.Equal(t, uuid, awaitState(t, tn.c, 10*time.Second, func(s *state.State) bool { return s.ClusterUUID != "" }).ClusterUUID)
	}

	n4 := n.start(n.config("n4", t.TempDir(), nil))
	awaitState(t, n4.c, 20*time.Second, func(s *state.State) bool { return len(liveNodes(s)) == 4 })
	eventually(t, 10*time.Second, "n4 a non-voter", func() bool {
		info := leader(t, nodes).c.Raft()
		return len(info.Voters) == 3 && slices.Equal(info.Nonvoters, []string{"id-n4"})
	})

	// A proposal on the new node is forwarded to the leader; FSM errors
	// come back as the same sentinels.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := n4.c.Propose(ctx, createIndex("logs", 4, 1))
	require.NoError(t, err)
	_, err = n4.c.Propose(ctx, createIndex("logs", 1, 0))
	require.ErrorIs(t, err, state.ErrIndexExists)
	_, err = n4.c.Propose(ctx, Command{PutMapping: &PutMapping{Index: "logs", UUID: res.IndexUUID, BaseVersion: 7, Mapping: json.RawMessage(`{}`)}})
	require.ErrorIs(t, err, state.ErrMappingVersion)

	for _, tn := range append(nodes, n4) {
		startCopies(t, tn)
	}
	for _, tn := range append(nodes, n4) {
		s := awaitState(t, tn.c, 20*time.Second, func(s *state.State) bool { return s.Version >= res.Version && health(s) == "green" })
		counts := map[string]int{}
		for _, sh := range s.Indices["logs"].Shards {
			for _, cp := range sh.Copies {
				counts[cp.NodeID]++
			}
		}
		require.Len(t, counts, 4, "8 copies spread over 4 nodes: %v", counts)
	}
	require.Len(t, n4.c.Members(), 4)
}

func TestLeaderKilledANewOneTakesProposals(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	old := leader(t, nodes)
	require.NoError(t, old.c.crash())
	var survivors []*testNode
	for _, tn := range nodes {
		if tn != old {
			survivors = append(survivors, tn)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := survivors[0].c.Propose(ctx, createIndex("after", 1, 0))
	require.NoError(t, err)
	s := awaitState(t, survivors[1].c, 10*time.Second, func(s *state.State) bool { return s.Version >= res.Version })
	require.Contains(t, s.Indices, "after")
	require.NotEqual(t, old.id, leader(t, survivors).id)
	awaitState(t, survivors[1].c, 15*time.Second, func(s *state.State) bool { return !s.Nodes[old.id].Live })
}

func TestPartitionedNodeCannotChangeMetadataAndCatchesUp(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	lead := leader(t, nodes)
	var cut *testNode
	var rest []string
	for _, tn := range nodes {
		if tn != lead && cut == nil {
			cut = tn
		} else {
			rest = append(rest, tn.name)
		}
	}
	heal := n.faults.Partition([]string{cut.name}, rest)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := cut.c.Propose(ctx, createIndex("minority", 1, 0))
	require.ErrorIs(t, err, ErrNoLeader)
	require.NotContains(t, lead.c.State().Indices, "minority")

	res, err := lead.c.Propose(context.Background(), createIndex("majority", 1, 0))
	require.NoError(t, err)
	require.Less(t, cut.c.State().Version, res.Version)

	heal()
	s := awaitState(t, cut.c, 20*time.Second, func(s *state.State) bool { return s.Version >= res.Version })
	require.Contains(t, s.Indices, "majority")
	require.NotContains(t, s.Indices, "minority")
}

func TestTwoClustersNeverMerge(t *testing.T) {
	n := newTestNet(t)
	a := n.startInitial("a1")[0]
	n.seeds = nil
	b := n.startInitial("b1")[0]
	require.NotEqual(t, a.c.State().ClusterUUID, b.c.State().ClusterUUID)
	for _, tn := range []*testNode{a, b} {
		// A node gossips no cluster UUID for a moment after it set one;
		// until then it is a node without a cluster, which may join any.
		eventually(t, 10*time.Second, tn.name+" to gossip its cluster UUID", func() bool {
			return tn.c.ms.clusterUUID() == tn.c.State().ClusterUUID
		})
	}

	// b1 is pointed at a1's gossip: memberlist talks, the delegates refuse.
	_, err := b.c.ms.ml.Join([]string{a.c.ms.Addr()})
	require.Error(t, err)
	eventually(t, 10*time.Second, "a1 to refuse b1", func() bool {
		a.c.ms.mu.Lock()
		defer a.c.ms.mu.Unlock()
		_, refused := a.c.ms.refused[b.id]
		return refused
	})
	for _, tn := range []*testNode{a, b} {
		for _, m := range tn.c.Members() {
			require.Equal(t, tn.id, m.ID, "%s sees a member of the other cluster", tn.name)
		}
		require.Len(t, tn.c.State().Nodes, 1)
		require.Len(t, tn.c.Raft().Voters, 1)
	}
}

func TestDeadNodeIsReplacedAndRemovedFromRaft(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	for _, tn := range nodes {
		startCopies(t, tn)
	}
	lead := leader(t, nodes)
	ix := createIndex("logs", 1, 1)
	ix.CreateIndex.Index.DelayedTimeoutMS = 500
	res, err := lead.c.Propose(context.Background(), ix)
	require.NoError(t, err)
	s := awaitState(t, lead.c, 20*time.Second, func(s *state.State) bool { return s.Version >= res.Version && health(s) == "green" })

	// Crash the node of the replica (not the leader's).
	var replica state.Copy
	for _, cp := range s.Indices["logs"].Shards[0].Copies {
		if !cp.Primary {
			replica = cp
		}
	}
	var victim *testNode
	for _, tn := range nodes {
		if tn.id == replica.NodeID {
			victim = tn
		}
	}
	if victim == lead {
		// The replica is on the leader: fail the primary's node instead,
		// which promotes the replica; the replica rule is the same.
		p, _ := s.Indices["logs"].Shards[0].Primary()
		for _, tn := range nodes {
			if tn.id == p.NodeID {
				victim = tn
			}
		}
	}
	require.NoError(t, victim.c.crash())
	s = awaitState(t, lead.c, 20*time.Second, func(s *state.State) bool {
		sh := s.Indices["logs"].Shards[0]
		return !s.Nodes[victim.id].Live && health(s) == "green" && !holds(&sh, victim.id)
	})
	require.EqualValues(t, 2, len(s.Indices["logs"].Shards[0].Copies))
	eventually(t, 20*time.Second, "the dead node out of the Raft configuration", func() bool {
		info := lead.c.Raft()
		return len(info.Voters) == 2 && !slices.Contains(info.Voters, victim.id)
	})
}

func TestASecondLiveNodeWithATakenNameIsRefused(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	lead := leader(t, nodes)
	cfg := n.config("n2", t.TempDir(), nil)
	cfg.NodeID = "id-dup"
	n.start(cfg)
	eventually(t, 10*time.Second, "the leader to see id-dup in gossip", func() bool {
		return slices.ContainsFunc(lead.c.Members(), func(m Member) bool { return m.ID == "id-dup" && m.Status == "alive" })
	})
	// The leader goes through its members in ID order: once it has
	// admitted id-n4, it has looked at id-dup too.
	n4 := n.start(n.config("n4", t.TempDir(), nil))
	s := awaitState(t, lead.c, 20*time.Second, func(s *state.State) bool { _, ok := s.Nodes[n4.id]; return ok })
	require.NotContains(t, s.Nodes, "id-dup")
	info := lead.c.Raft()
	require.NotContains(t, append(info.Voters, info.Nonvoters...), "id-dup")
}

func TestDrainAndManualMove(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	for _, tn := range nodes {
		startCopies(t, tn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := nodes[2].c.Propose(ctx, createIndex("logs", 3, 0))
	require.NoError(t, err)
	s := awaitState(t, nodes[2].c, 20*time.Second, func(s *state.State) bool { return s.Version >= res.Version && health(s) == "green" })

	// A manual move names the target node by name (as _cluster/reroute
	// does); the copy moves and the shard stays green.
	sh := s.Indices["logs"].Shards[0]
	from, _ := sh.Primary()
	var to *testNode
	for _, tn := range nodes {
		if !holds(&sh, tn.id) {
			to = tn
		}
	}
	moved, err := nodes[0].c.Propose(ctx, Command{MoveCopy: &MoveCopy{IndexUUID: res.IndexUUID, Shard: 0, AllocationID: from.AllocationID, ToNode: to.name}})
	require.NoError(t, err)
	awaitState(t, nodes[0].c, 20*time.Second, func(s *state.State) bool {
		p, ok := s.Indices["logs"].Shards[0].Primary()
		return ok && p.AllocationID == moved.AllocationID && p.NodeID == to.id && p.State == state.CopyStarted && health(s) == "green"
	})

	// Drain: cluster.routing.allocation.exclude._name moves every copy off.
	_, err = nodes[1].c.Propose(ctx, Command{SetSettings: &SetSettings{Settings: state.Settings{ExcludeNames: []string{"n1"}}}})
	require.NoError(t, err)
	awaitState(t, nodes[1].c, 20*time.Second, func(s *state.State) bool {
		for _, sh := range s.Indices["logs"].Shards {
			if holds(&sh, "id-n1") {
				return false
			}
		}
		return health(s) == "green"
	})
}

func TestConfigValidate(t *testing.T) {
	ok := Config{NodeID: "id", NodeName: "n", DataDir: "/d"}
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"minimal", func(*Config) {}, ""},
		{"no node ID", func(c *Config) { c.NodeID = "" }, "NodeID"},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"gossip without raft address", func(c *Config) { c.GossipAddr = "127.0.0.1:0" }, "RaftAddr"},
		{"gossip without peers", func(c *Config) { c.GossipAddr, c.RaftAddr = "127.0.0.1:0", "127.0.0.1:0" }, "Peers"},
		{"bad key", func(c *Config) { c.GossipKey = []byte("short") }, "GossipKey"},
		{"even voters", func(c *Config) { c.MaxVoters = 4 }, "MaxVoters"},
		{"bad seed", func(c *Config) { c.Seeds = []string{"nohost"} }, "Seeds"},
		{"metadata over 512 bytes", func(c *Config) {
			c.NodeName, c.HTTPAddr, c.FabricAddr = string(long[:100]), string(long), string(long)
		}, "512"},
		{"negative timing", func(c *Config) { c.Timing = LocalTiming(); c.Timing.ProposeTimeout = -1 }, "ProposeTimeout"},
		{"unknown gossip profile", func(c *Config) { c.Timing = LocalTiming(); c.Timing.Gossip = "wan" }, "Gossip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The largest metadata a valid config can gossip fits memberlist's limit.
func TestMetaWorstCaseFits(t *testing.T) {
	name := string(make([]byte, 60))
	addr := "[fe80::1234:5678:9abc:def0%eth0]:65535"
	cfg := Config{NodeID: "00000000-0000-0000-0000-000000000000", NodeName: name, DataDir: "/d",
		HTTPAddr: addr, FabricAddr: addr + "," + addr, RaftAddr: addr, RDMA: "rxe0/1 gid fe80:0000:0000:0000:0000:0000:0000:0001"}
	require.NoError(t, cfg.Validate())
	m := cfg.localMeta("00000000-0000-0000-0000-000000000000")
	m.Disk = state.DiskUsage{UsedBytes: math.MaxUint64, TotalBytes: math.MaxUint64}
	b := m.encode()
	require.Less(t, len(b), 512)
	got, err := decodeMeta(b)
	require.NoError(t, err)
	require.Equal(t, m, got)
}
