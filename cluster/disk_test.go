package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
)

// used is a disk of 100 bytes, pct of them used.
func used(pct uint64) state.DiskUsage { return state.DiskUsage{UsedBytes: pct, TotalBytes: 100} }

func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("new%d", n) }
}

// started is a shard with one started primary on node.
func started(id, node string) state.Shard {
	return state.Shard{PrimaryTerm: 1, Started: true, InSync: []string{id}, Copies: []state.Copy{
		{AllocationID: id, NodeID: node, Primary: true, State: state.CopyStarted}}}
}

// diskFixture: three live nodes; "logs" has one shard with its primary
// started on n1 and one replica to allocate.
func diskFixture() *state.State {
	s := fixture()
	s.Indices = map[string]*state.Index{"logs": {Name: "logs", UUID: "u-logs", NumberOfShards: 1, NumberOfReplicas: 1,
		Mapping: json.RawMessage(`{}`), Shards: []state.Shard{started("a0", "n1")}}}
	return s
}

func allocations(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		switch {
		case c.AllocateCopy != nil:
			out = append(out, "allocate "+c.AllocateCopy.Copy.NodeID)
		case c.MoveCopy != nil:
			out = append(out, "move "+c.MoveCopy.AllocationID+" to "+c.MoveCopy.ToNode)
		default:
			out = append(out, string(c.Type))
		}
	}
	return out
}

func TestPlanLowWatermarkKeepsNewCopiesOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disk     map[string]state.DiskUsage
		disabled bool
		want     []string
	}{
		{name: "no usage known", want: []string{"allocate n2"}},
		{name: "n2 past low", disk: map[string]state.DiskUsage{"n2": used(86), "n3": used(50)}, want: []string{"allocate n3"}},
		{name: "both past low", disk: map[string]state.DiskUsage{"n2": used(86), "n3": used(87)}},
		{name: "at low is not past", disk: map[string]state.DiskUsage{"n2": used(85)}, want: []string{"allocate n2"}},
		{name: "threshold disabled", disk: map[string]state.DiskUsage{"n2": used(99), "n3": used(99)}, disabled: true, want: []string{"allocate n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := diskFixture()
			if tc.disabled {
				s.Settings.Values = map[string]string{state.DiskThresholdEnabledSetting: "false"}
			}
			require.Equal(t, tc.want, allocations(Plan(s, tc.disk, 0, seqIDs())))
		})
	}
}

// As Elasticsearch: the low watermark does not keep a new index's first
// primaries off (a new index would be red for want of a node merely fuller
// than the others); the high one does.
func TestPlanNewPrimaryIgnoresLowButNotHigh(t *testing.T) {
	for _, tc := range []struct {
		name string
		disk map[string]state.DiskUsage
		want []string
	}{
		{name: "all past low", disk: map[string]state.DiskUsage{"n1": used(86), "n2": used(86), "n3": used(86)}, want: []string{"allocate n1"}},
		{name: "n1 past high", disk: map[string]state.DiskUsage{"n1": used(91), "n2": used(86), "n3": used(86)}, want: []string{"allocate n2"}},
		{name: "all past high", disk: map[string]state.DiskUsage{"n1": used(91), "n2": used(91), "n3": used(91)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := diskFixture()
			s.Indices["logs"].NumberOfReplicas = 0
			s.Indices["logs"].Shards = []state.Shard{{PrimaryTerm: 1}}
			require.Equal(t, tc.want, allocations(Plan(s, tc.disk, 0, seqIDs())))
		})
	}
}

// balancedFixture: two started shards on each of n1, n2 and n3, no
// replicas: nothing to do without disk pressure.
func balancedFixture() *state.State {
	s := fixture()
	s.Indices = map[string]*state.Index{}
	for _, node := range []string{"n1", "n2", "n3"} {
		name := "ix-" + node
		s.Indices[name] = &state.Index{Name: name, UUID: "u-" + name, NumberOfShards: 2, Mapping: json.RawMessage(`{}`),
			Shards: []state.Shard{started(node+"-0", node), started(node+"-1", node)}}
	}
	return s
}

func TestPlanHighWatermarkMovesOneCopyOffAtATime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disk     map[string]state.DiskUsage
		disabled bool
		want     []string
	}{
		{name: "no pressure"},
		{name: "n1 past low only", disk: map[string]state.DiskUsage{"n1": used(88)}},
		{name: "n1 past high", disk: map[string]state.DiskUsage{"n1": used(91)}, want: []string{"move n1-0 to n2"}},
		{name: "n1 past high, n2 past low", disk: map[string]state.DiskUsage{"n1": used(91), "n2": used(86)}, want: []string{"move n1-0 to n3"}},
		{name: "nowhere to go", disk: map[string]state.DiskUsage{"n1": used(91), "n2": used(86), "n3": used(86)}},
		{name: "threshold disabled", disk: map[string]state.DiskUsage{"n1": used(99)}, disabled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := balancedFixture()
			if tc.disabled {
				s.Settings.Values = map[string]string{state.DiskThresholdEnabledSetting: "false"}
			}
			require.Equal(t, tc.want, allocations(Plan(s, tc.disk, 0, seqIDs())))
		})
	}
	t.Run("the next move waits for the first", func(t *testing.T) {
		s := balancedFixture()
		disk := map[string]state.DiskUsage{"n1": used(91)}
		cmds := Plan(s, disk, 0, seqIDs())
		require.Len(t, cmds, 1)
		next, err := apply(s, s.Version+1, cmds[0])
		require.NoError(t, err)
		require.Empty(t, Plan(next, disk, 0, seqIDs()), "n1 still reads past high, but a copy is moving off it")
	})
}

// A node past the high watermark never receives a copy from rebalancing,
// however few copies it has.
func TestPlanRebalanceSkipsNodesPastLow(t *testing.T) {
	s := balancedFixture()
	s.Indices["ix-n3"].Shards = nil
	s.Indices["ix-n3"].NumberOfShards = 0
	s.Indices["ix-n1"].Shards = append(s.Indices["ix-n1"].Shards, started("n1-2", "n1"), started("n1-3", "n1"))
	s.Indices["ix-n1"].NumberOfShards = 4
	require.Equal(t, []string{"move n1-0 to n3"}, allocations(Plan(s, nil, 0, seqIDs())), "without pressure n3, the emptiest, takes one")
	require.Equal(t, []string{"move n1-0 to n2"}, allocations(Plan(s, map[string]state.DiskUsage{"n3": used(86)}, 0, seqIDs())))
}

func TestFloodStageBlocks(t *testing.T) {
	const block, release = `"true"`, `null`
	for _, tc := range []struct {
		name     string
		disk     map[string]state.DiskUsage
		blocked  bool
		disabled bool
		want     string // the setting's new value, "" for no command
	}{
		{name: "a node past flood stage blocks", disk: map[string]state.DiskUsage{"n2": used(96)}, want: block},
		{name: "already blocked", disk: map[string]state.DiskUsage{"n2": used(96)}, blocked: true},
		{name: "past high but not flood does not block", disk: map[string]state.DiskUsage{"n2": used(94)}},
		{name: "kept while past high", disk: map[string]state.DiskUsage{"n2": used(91)}, blocked: true},
		{name: "released below high", disk: map[string]state.DiskUsage{"n1": used(50), "n2": used(89)}, blocked: true, want: release},
		{name: "a node not holding the index does not count", disk: map[string]state.DiskUsage{"n3": used(99)}},
		{name: "threshold disabled", disk: map[string]state.DiskUsage{"n2": used(99)}, disabled: true},
		{name: "threshold disabled keeps a block", disk: map[string]state.DiskUsage{"n2": used(10)}, blocked: true, disabled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture() // logs: copies on n1 and n2
			if tc.blocked {
				s.Indices["logs"].Settings = map[string]json.RawMessage{state.ReadOnlyAllowDeleteSetting: json.RawMessage(block)}
			}
			if tc.disabled {
				s.Settings.Values = map[string]string{state.DiskThresholdEnabledSetting: "false"}
			}
			cmds := FloodStageBlocks(s, tc.disk)
			if tc.want == "" {
				require.Empty(t, cmds)
				return
			}
			require.Len(t, cmds, 1)
			require.Equal(t, tc.want, string(cmds[0].UpdateIndexSettings.Settings[state.ReadOnlyAllowDeleteSetting]))
			next, err := apply(s, s.Version+1, cmds[0])
			require.NoError(t, err)
			require.Equal(t, tc.want == block, next.Indices["logs"].ReadOnlyAllowDelete())
			require.Empty(t, FloodStageBlocks(next, tc.disk), "a fixed point")
		})
	}
}

func TestDiskMoved(t *testing.T) {
	tb := state.DiskUsage{UsedBytes: 500_000, TotalBytes: 1_000_000}
	require.False(t, diskMoved(tb, state.DiskUsage{UsedBytes: 500_900, TotalBytes: 1_000_000}))
	require.True(t, diskMoved(tb, state.DiskUsage{UsedBytes: 501_001, TotalBytes: 1_000_000}))
	require.True(t, diskMoved(tb, state.DiskUsage{UsedBytes: 498_999, TotalBytes: 1_000_000}))
	require.True(t, diskMoved(tb, state.DiskUsage{UsedBytes: 500_000, TotalBytes: 2_000_000}))
	require.True(t, diskMoved(state.DiskUsage{}, tb))
}

// fakeDisk is a node's injected disk: 100 bytes, pct of them used.
type fakeDisk struct{ pct atomic.Uint64 }

func (d *fakeDisk) read() (state.DiskUsage, error) { return used(d.pct.Load()), nil }

// Through gossip and the leader: a node past the flood stage gets the
// indices it holds blocked and its copies moved off (high watermark); once
// it is back below high the block goes.
func TestDiskWatermarksThroughGossip(t *testing.T) {
	n := newTestNet(t)
	names := []string{"n1", "n2", "n3"}
	disks := map[string]*fakeDisk{}
	var nodes []*testNode
	for _, name := range names {
		d := &fakeDisk{}
		d.pct.Store(50)
		disks["id-"+name] = d
		cfg := n.config(name, t.TempDir(), names)
		cfg.DiskUsage = d.read
		nodes = append(nodes, n.start(cfg))
	}
	for _, tn := range nodes {
		awaitState(t, tn.c, 20*time.Second, func(s *state.State) bool { return s.ClusterUUID != "" && len(liveNodes(s)) == 3 })
		startCopies(t, tn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := nodes[0].c.Propose(ctx, createIndex("logs", 3, 0))
	require.NoError(t, err)
	s := awaitState(t, nodes[0].c, 20*time.Second, func(s *state.State) bool { return s.Version >= res.Version && health(s) == "green" })
	p, _ := s.Indices["logs"].Shards[0].Primary()
	full := p.NodeID
	eventually(t, 10*time.Second, "every node sees every disk through gossip", func() bool {
		for _, tn := range nodes {
			if len(tn.c.DiskUsage()) != 3 {
				return false
			}
		}
		return true
	})

	// others sets the other nodes' disks and waits until every node has
	// heard (so the leader never plans from a mix of old and new figures).
	others := func(pct uint64) {
		for id, d := range disks {
			if id != full {
				d.pct.Store(pct)
			}
		}
		eventually(t, 10*time.Second, "every node sees the others' new usage", func() bool {
			for _, tn := range nodes {
				for id, u := range tn.c.DiskUsage() {
					if id != full && u != used(pct) {
						return false
					}
				}
			}
			return true
		})
	}
	onFull := func(s *state.State) bool {
		for _, sh := range s.Indices["logs"].Shards {
			if holds(&sh, full) {
				return true
			}
		}
		return false
	}

	// Flood stage with nowhere to move to: the index is blocked.
	others(86)
	disks[full].pct.Store(96)
	awaitState(t, nodes[1].c, 20*time.Second, func(s *state.State) bool { return s.Indices["logs"].ReadOnlyAllowDelete() && onFull(s) })

	// Below high again: the block goes by itself.
	disks[full].pct.Store(50)
	awaitState(t, nodes[2].c, 20*time.Second, func(s *state.State) bool { return !s.Indices["logs"].ReadOnlyAllowDelete() })

	// Past high with room elsewhere: the copies move off, one at a time.
	others(50)
	disks[full].pct.Store(92)
	s = awaitState(t, nodes[0].c, 20*time.Second, func(s *state.State) bool { return !onFull(s) && health(s) == "green" })
	require.False(t, s.Indices["logs"].ReadOnlyAllowDelete())
}
