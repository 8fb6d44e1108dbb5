package cluster

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
)

// fixture is a small cluster: three live nodes and index "logs" with two
// shards and one replica; shard 0 is started on n1 (primary) and n2, shard
// 1 has a new primary initializing on n2.
func fixture() *state.State {
	node := func(id string) *state.Node {
		return &state.Node{ID: id, Name: "name-" + id, RaftAddr: id + ":1", Live: true}
	}
	return &state.State{
		Version:     7,
		ClusterUUID: "cluster-1",
		Nodes:       map[string]*state.Node{"n1": node("n1"), "n2": node("n2"), "n3": node("n3")},
		Indices: map[string]*state.Index{"logs": {
			Name: "logs", UUID: "u-logs", NumberOfShards: 2, NumberOfReplicas: 1,
			DelayedTimeoutMS: 1000, Mapping: json.RawMessage(`{}`), MappingVersion: 1, SettingsVersion: 1,
			Shards: []state.Shard{
				{PrimaryTerm: 1, Started: true, InSync: []string{"a0", "b0"}, Copies: []state.Copy{
					{AllocationID: "a0", NodeID: "n1", Primary: true, State: state.CopyStarted},
					{AllocationID: "b0", NodeID: "n2", State: state.CopyStarted},
				}},
				{PrimaryTerm: 1, Copies: []state.Copy{{AllocationID: "a1", NodeID: "n2", Primary: true, State: state.CopyInitializing}}},
			},
		}},
	}
}

func intp(v int) *int       { return &v }
func boolp(v bool) *bool    { return &v }
func int64p(v int64) *int64 { return &v }

func TestApply(t *testing.T) {
	newIndex := func(name, uuid string, copies ...state.Copy) state.Index {
		return state.Index{Name: name, UUID: uuid, NumberOfShards: 1, Shards: []state.Shard{{PrimaryTerm: 1, Copies: copies}}}
	}
	tests := []struct {
		name    string
		cmd     Command
		prep    func(s *state.State) // changes the fixture first
		wantErr error
		check   func(t *testing.T, s *state.State)
	}{
		{name: "set cluster UUID once", prep: func(s *state.State) { s.ClusterUUID = "" },
			cmd:   Command{SetClusterUUID: &SetClusterUUID{UUID: "c2"}},
			check: func(t *testing.T, s *state.State) { require.Equal(t, "c2", s.ClusterUUID) }},
		{name: "set the same cluster UUID again", cmd: Command{SetClusterUUID: &SetClusterUUID{UUID: "cluster-1"}},
			check: func(t *testing.T, s *state.State) { require.Equal(t, "cluster-1", s.ClusterUUID) }},
		{name: "cluster UUID never changes", cmd: Command{SetClusterUUID: &SetClusterUUID{UUID: "other"}}, wantErr: ErrClusterMismatch},
		{name: "empty cluster UUID", cmd: Command{SetClusterUUID: &SetClusterUUID{}}, wantErr: ErrInvalidCommand},

		{name: "upsert a new node", cmd: Command{UpsertNode: &UpsertNode{Node: state.Node{ID: "n4", Name: "four"}}},
			check: func(t *testing.T, s *state.State) { require.True(t, s.Nodes["n4"].Live) }},
		{name: "upsert revives a node that left", prep: func(s *state.State) { s.Nodes["n3"].Live, s.Nodes["n3"].LeftAtMS = false, 5 },
			cmd: Command{UpsertNode: &UpsertNode{Node: state.Node{ID: "n3", Name: "name-n3", HTTPAddr: "h:9"}}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, state.Node{ID: "n3", Name: "name-n3", HTTPAddr: "h:9", Live: true}, *s.Nodes["n3"])
			}},
		{name: "a live node's name is refused to another", cmd: Command{UpsertNode: &UpsertNode{Node: state.Node{ID: "n4", Name: "name-n1"}}}, wantErr: ErrInvalidCommand},
		{name: "a dead node's name may be taken", prep: func(s *state.State) { s.Nodes["n1"].Live = false },
			cmd: Command{UpsertNode: &UpsertNode{Node: state.Node{ID: "n4", Name: "name-n1"}}}},
		{name: "node without a name", cmd: Command{UpsertNode: &UpsertNode{Node: state.Node{ID: "n4"}}}, wantErr: ErrInvalidCommand},

		{name: "node left", cmd: Command{NodeLeft: &NodeLeft{NodeID: "n3", AtMS: 100}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, state.Node{ID: "n3", Name: "name-n3", RaftAddr: "n3:1", LeftAtMS: 100}, *s.Nodes["n3"])
			}},
		{name: "node left twice keeps the first time", prep: func(s *state.State) { s.Nodes["n3"].Live, s.Nodes["n3"].LeftAtMS = false, 50 },
			cmd:   Command{NodeLeft: &NodeLeft{NodeID: "n3", AtMS: 100}},
			check: func(t *testing.T, s *state.State) { require.EqualValues(t, 50, s.Nodes["n3"].LeftAtMS) }},
		{name: "unknown node left", cmd: Command{NodeLeft: &NodeLeft{NodeID: "n9", AtMS: 1}}, wantErr: ErrInvalidCommand},

		{name: "create index", cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-new", state.Copy{AllocationID: "x", NodeID: "n3", Primary: true, State: state.CopyInitializing})}},
			check: func(t *testing.T, s *state.State) {
				ix := s.Indices["new"]
				require.EqualValues(t, 1, ix.MappingVersion)
				require.JSONEq(t, `{}`, string(ix.Mapping))
				require.Equal(t, "n3", ix.Shards[0].Copies[0].NodeID)
			}},
		{name: "create index without copies", cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-new")}}},
		{name: "create an index that exists", cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("logs", "u-2")}}, wantErr: state.ErrIndexExists},
		{name: "create index with a used UUID", cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-logs")}}, wantErr: ErrInvalidCommand},
		{name: "create index with a started copy", cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-new", state.Copy{AllocationID: "x", NodeID: "n3", Primary: true, State: state.CopyStarted})}}, wantErr: ErrInvalidCommand},
		{name: "create index on a dead node", prep: func(s *state.State) { s.Nodes["n3"].Live = false },
			cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-new", state.Copy{AllocationID: "x", NodeID: "n3", Primary: true, State: state.CopyInitializing})}}, wantErr: ErrInvalidCommand},
		{name: "create index with shard count and table apart", cmd: Command{CreateIndex: &CreateIndex{Index: state.Index{Name: "new", UUID: "u", NumberOfShards: 2, Shards: []state.Shard{{PrimaryTerm: 1}}}}}, wantErr: ErrInvalidCommand},
		{name: "create index with too many shards", cmd: Command{CreateIndex: &CreateIndex{Index: state.Index{Name: "new", UUID: "u", NumberOfShards: MaxShards + 1}}}, wantErr: ErrInvalidCommand},
		{name: "create index with a mapping that is no object", cmd: Command{CreateIndex: &CreateIndex{Index: func() state.Index {
			ix := newIndex("new", "u")
			ix.Mapping = json.RawMessage(`[1]`)
			return ix
		}()}}, wantErr: ErrInvalidCommand},

		{name: "delete index", cmd: Command{DeleteIndex: &DeleteIndex{Name: "logs", UUID: "u-logs"}},
			check: func(t *testing.T, s *state.State) { require.NotContains(t, s.Indices, "logs") }},
		{name: "delete an index by an old UUID", cmd: Command{DeleteIndex: &DeleteIndex{Name: "logs", UUID: "u-old"}}, wantErr: ErrStale},
		{name: "delete a missing index", cmd: Command{DeleteIndex: &DeleteIndex{Name: "nope", UUID: "u"}}, wantErr: state.ErrIndexNotFound},

		{name: "put mapping", cmd: Command{PutMapping: &PutMapping{Index: "logs", UUID: "u-logs", BaseVersion: 1, Mapping: json.RawMessage(`{"properties":{}}`)}},
			check: func(t *testing.T, s *state.State) {
				require.EqualValues(t, 2, s.Indices["logs"].MappingVersion)
				require.JSONEq(t, `{"properties":{}}`, string(s.Indices["logs"].Mapping))
			}},
		{name: "put mapping from an old version", cmd: Command{PutMapping: &PutMapping{Index: "logs", UUID: "u-logs", BaseVersion: 0, Mapping: json.RawMessage(`{}`)}}, wantErr: state.ErrMappingVersion},
		{name: "put mapping that is no JSON", cmd: Command{PutMapping: &PutMapping{Index: "logs", UUID: "u-logs", BaseVersion: 1, Mapping: json.RawMessage(`{`)}}, wantErr: ErrInvalidCommand},

		{name: "update settings", prep: func(s *state.State) {
			s.Indices["logs"].Settings = map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`2`)}
		},
			cmd: Command{UpdateIndexSettings: &UpdateIndexSettings{Index: "logs", UUID: "u-logs", NumberOfReplicas: intp(2), DelayedTimeoutMS: int64p(0),
				Settings: map[string]json.RawMessage{"a": json.RawMessage(`null`), "c": json.RawMessage(`"x"`)}}},
			check: func(t *testing.T, s *state.State) {
				ix := s.Indices["logs"]
				require.Equal(t, 2, ix.NumberOfReplicas)
				require.Zero(t, ix.DelayedTimeoutMS)
				require.Equal(t, map[string]json.RawMessage{"b": json.RawMessage(`2`), "c": json.RawMessage(`"x"`)}, ix.Settings)
				require.EqualValues(t, 2, ix.SettingsVersion)
			}},
		{name: "negative replicas", cmd: Command{UpdateIndexSettings: &UpdateIndexSettings{Index: "logs", UUID: "u-logs", NumberOfReplicas: intp(-1)}}, wantErr: ErrInvalidCommand},

		{name: "create index with aliases", cmd: Command{CreateIndex: &CreateIndex{Index: func() state.Index {
			ix := newIndex("new", "u-new")
			ix.Aliases = map[string]state.Alias{"all": {}, "w": {IsWriteIndex: boolp(true), Filter: json.RawMessage(`{"term":{"a":"b"}}`), IndexRouting: "r"}}
			return ix
		}()}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, []string{"new"}, s.AliasIndices("w"))
				require.Equal(t, "r", s.Indices["new"].Aliases["w"].IndexRouting)
			}},
		{name: "create index with an alias named as an index", cmd: Command{CreateIndex: &CreateIndex{Index: func() state.Index {
			ix := newIndex("new", "u-new")
			ix.Aliases = map[string]state.Alias{"logs": {}}
			return ix
		}()}}, wantErr: ErrInvalidCommand},
		{name: "create index named as an alias", prep: func(s *state.State) { s.Indices["logs"].Aliases = map[string]state.Alias{"new": {}} },
			cmd: Command{CreateIndex: &CreateIndex{Index: newIndex("new", "u-new")}}, wantErr: ErrInvalidCommand},
		{name: "create index with an alias filter that is no object", cmd: Command{CreateIndex: &CreateIndex{Index: func() state.Index {
			ix := newIndex("new", "u-new")
			ix.Aliases = map[string]state.Alias{"a": {Filter: json.RawMessage(`"x"`)}}
			return ix
		}()}}, wantErr: ErrInvalidCommand},
		{name: "create index as a second write index of an alias", prep: func(s *state.State) {
			s.Indices["logs"].Aliases = map[string]state.Alias{"w": {IsWriteIndex: boolp(true)}}
		}, cmd: Command{CreateIndex: &CreateIndex{Index: func() state.Index {
			ix := newIndex("new", "u-new")
			ix.Aliases = map[string]state.Alias{"w": {IsWriteIndex: boolp(true)}}
			return ix
		}()}}, wantErr: ErrInvalidCommand},

		{name: "update aliases: add, replace, remove", prep: func(s *state.State) { s.Indices["logs"].Aliases = map[string]state.Alias{"old": {}, "r": {}} },
			cmd: Command{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{
				{Type: state.AliasAdd, Index: "logs", UUID: "u-logs", Alias: "a"},
				{Type: state.AliasAdd, Index: "logs", UUID: "u-logs", Alias: "r", Spec: state.Alias{SearchRouting: "1"}},
				{Type: state.AliasRemove, Index: "logs", UUID: "u-logs", Alias: "old", MustExist: true},
				{Type: state.AliasRemove, Index: "logs", UUID: "u-logs", Alias: "never"},
			}}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, map[string]state.Alias{"a": {}, "r": {SearchRouting: "1"}}, s.Indices["logs"].Aliases)
			}},
		{name: "update aliases is all or nothing", cmd: Command{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{
			{Type: state.AliasAdd, Index: "logs", UUID: "u-logs", Alias: "a"},
			{Type: state.AliasRemove, Index: "logs", UUID: "u-logs", Alias: "missing", MustExist: true},
		}}}, wantErr: ErrInvalidCommand},
		{name: "update aliases: remove_index", cmd: Command{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{
			{Type: state.AliasRemoveIndex, Index: "logs", UUID: "u-logs"},
		}}}, check: func(t *testing.T, s *state.State) { require.Empty(t, s.Indices) }},
		{name: "update aliases of a stale index", cmd: Command{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{
			{Type: state.AliasAdd, Index: "logs", UUID: "u-old", Alias: "a"},
		}}}, wantErr: ErrStale},
		{name: "update aliases without actions", cmd: Command{UpdateAliases: &UpdateAliases{}}, wantErr: ErrInvalidCommand},
		{name: "update aliases: unknown action", cmd: Command{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{
			{Type: "rename", Index: "logs", UUID: "u-logs", Alias: "a"},
		}}}, wantErr: ErrInvalidCommand},

		{name: "close an index", cmd: Command{SetIndexClosed: &SetIndexClosed{Index: "logs", UUID: "u-logs", Closed: true}},
			check: func(t *testing.T, s *state.State) { require.True(t, s.Indices["logs"].Closed) }},
		{name: "open an index", prep: func(s *state.State) { s.Indices["logs"].Closed = true },
			cmd:   Command{SetIndexClosed: &SetIndexClosed{Index: "logs", UUID: "u-logs"}},
			check: func(t *testing.T, s *state.State) { require.False(t, s.Indices["logs"].Closed) }},
		{name: "close a missing index", cmd: Command{SetIndexClosed: &SetIndexClosed{Index: "nope", UUID: "u", Closed: true}}, wantErr: state.ErrIndexNotFound},

		{name: "set settings", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{ExcludeNames: []string{"a", "a"}, Values: map[string]string{"x.y": "true"}}}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, state.Settings{ExcludeNames: []string{"a"}, Values: map[string]string{"x.y": "true"}}, s.Settings)
			}},
		{name: "set a setting without a name", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{Values: map[string]string{"": "1"}}}}, wantErr: ErrInvalidCommand},

		{name: "allocate a replica", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", State: state.CopyInitializing}}},
			check: func(t *testing.T, s *state.State) { require.Len(t, s.Indices["logs"].Shards[0].Copies, 3) }},
		{name: "allocate a second copy on one node", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n2", State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},
		{name: "allocate a taken allocation ID", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "b0", NodeID: "n3", State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},
		{name: "allocate a second primary", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", Primary: true, State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},
		{name: "allocate an empty primary for a shard that held data",
			prep: func(s *state.State) { s.Indices["logs"].Shards[0] = state.Shard{PrimaryTerm: 2, Started: true} },
			cmd:  Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", Primary: true, State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},
		{name: "allocate on an excluded node", prep: func(s *state.State) { s.Settings.ExcludeNames = []string{"name-n3"} },
			cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},
		{name: "allocate in a deleted index", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-gone", Shard: 0, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", State: state.CopyInitializing}}}, wantErr: ErrStale},
		{name: "allocate in a shard out of range", cmd: Command{AllocateCopy: &AllocateCopy{IndexUUID: "u-logs", Shard: 2, Copy: state.Copy{AllocationID: "c0", NodeID: "n3", State: state.CopyInitializing}}}, wantErr: ErrInvalidCommand},

		{name: "start a new primary", cmd: Command{StartCopy: &StartCopy{IndexUUID: "u-logs", Shard: 1, AllocationID: "a1"}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[1]
				require.Equal(t, state.CopyStarted, sh.Copies[0].State)
				require.Equal(t, []string{"a1"}, sh.InSync)
				require.True(t, sh.Started)
			}},
		{name: "start a started copy again", cmd: Command{StartCopy: &StartCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "b0"}}},
		{name: "start a replica before its primary",
			prep: func(s *state.State) {
				sh := &s.Indices["logs"].Shards[1]
				sh.Copies = append(sh.Copies, state.Copy{AllocationID: "b1", NodeID: "n3", State: state.CopyInitializing})
			},
			cmd: Command{StartCopy: &StartCopy{IndexUUID: "u-logs", Shard: 1, AllocationID: "b1"}}, wantErr: ErrInvalidCommand},
		{name: "start a copy that is gone", cmd: Command{StartCopy: &StartCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "zz"}}, wantErr: ErrStale},

		{name: "fail a primary promotes the in-sync replica",
			cmd: Command{FailCopy: &FailCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", Reason: "disk"}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[0]
				require.EqualValues(t, 2, sh.PrimaryTerm)
				p, _ := sh.Primary()
				require.Equal(t, "b0", p.AllocationID)
				require.Equal(t, []string{"b0"}, sh.InSync)
				a0, _ := sh.Copy("a0")
				require.Equal(t, state.Copy{AllocationID: "a0", NodeID: "n1", State: state.CopyInitializing}, a0)
			}},
		{name: "fail a primary whose replica is on a dead node leaves no primary",
			prep: func(s *state.State) { s.Nodes["n2"].Live = false },
			cmd:  Command{FailCopy: &FailCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", Remove: true}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[0]
				_, ok := sh.Primary()
				require.False(t, ok)
				require.EqualValues(t, 1, sh.PrimaryTerm)
				require.Equal(t, []string{"b0"}, sh.InSync)
			}},
		{name: "fail the only in-sync copy keeps it the primary, to be reopened",
			prep: func(s *state.State) { s.Nodes["n2"].Live = false },
			cmd:  Command{FailCopy: &FailCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", Reason: "log failed"}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[0]
				p, ok := sh.Primary()
				require.True(t, ok)
				require.Equal(t, state.Copy{AllocationID: "a0", NodeID: "n1", Primary: true, State: state.CopyInitializing}, p)
				require.EqualValues(t, 2, sh.PrimaryTerm)
				require.Equal(t, []string{"a0", "b0"}, sh.InSync)
			}},
		{name: "fail and remove a replica", cmd: Command{FailCopy: &FailCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "b0", Remove: true}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[0]
				require.Len(t, sh.Copies, 1)
				require.Equal(t, []string{"a0"}, sh.InSync)
			}},
		{name: "fail the source of a move drops its target",
			prep: func(s *state.State) {
				sh := &s.Indices["logs"].Shards[0]
				sh.Copies[1].RelocatingTo = "t0"
				sh.Copies = append(sh.Copies, state.Copy{AllocationID: "t0", NodeID: "n3", State: state.CopyInitializing, RelocatingFrom: "b0"})
			},
			cmd: Command{FailCopy: &FailCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "b0", Remove: true}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, []state.Copy{{AllocationID: "a0", NodeID: "n1", Primary: true, State: state.CopyStarted}}, s.Indices["logs"].Shards[0].Copies)
			}},

		{name: "move a primary", cmd: Command{MoveCopy: &MoveCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", ToNode: "n3", TargetAllocationID: "t0"}},
			check: func(t *testing.T, s *state.State) {
				sh := s.Indices["logs"].Shards[0]
				a0, _ := sh.Copy("a0")
				t0, _ := sh.Copy("t0")
				require.Equal(t, "t0", a0.RelocatingTo)
				require.Equal(t, state.Copy{AllocationID: "t0", NodeID: "n3", State: state.CopyInitializing, RelocatingFrom: "a0"}, t0)
			}},
		{name: "move onto a node holding a copy", cmd: Command{MoveCopy: &MoveCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", ToNode: "n2", TargetAllocationID: "t0"}}, wantErr: ErrInvalidCommand},
		{name: "move an initializing copy", cmd: Command{MoveCopy: &MoveCopy{IndexUUID: "u-logs", Shard: 1, AllocationID: "a1", ToNode: "n3", TargetAllocationID: "t1"}}, wantErr: ErrInvalidCommand},
		{name: "move without a target ID", cmd: Command{MoveCopy: &MoveCopy{IndexUUID: "u-logs", Shard: 0, AllocationID: "a0", ToNode: "n3"}}, wantErr: ErrInvalidCommand},

		{name: "cancel a move", prep: func(s *state.State) {
			sh := &s.Indices["logs"].Shards[0]
			sh.Copies[0].RelocatingTo = "t0"
			sh.Copies = append(sh.Copies, state.Copy{AllocationID: "t0", NodeID: "n3", State: state.CopyInitializing, RelocatingFrom: "a0"})
		},
			cmd: Command{CancelMove: &CancelMove{IndexUUID: "u-logs", Shard: 0, TargetAllocationID: "t0"}},
			check: func(t *testing.T, s *state.State) {
				require.Equal(t, fixture().Indices["logs"].Shards[0].Copies, s.Indices["logs"].Shards[0].Copies)
			}},
		{name: "cancel what is no move", cmd: Command{CancelMove: &CancelMove{IndexUUID: "u-logs", Shard: 0, TargetAllocationID: "b0"}}, wantErr: ErrInvalidCommand},

		{name: "set settings", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{ExcludeNames: []string{"a", "b", "a"}}}},
			check: func(t *testing.T, s *state.State) { require.Equal(t, []string{"a", "b"}, s.Settings.ExcludeNames) }},
		{name: "set settings with an empty name", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{ExcludeNames: []string{""}}}}, wantErr: ErrInvalidCommand},
		{name: "set the recovery throttle", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{RecoveryMaxBytesPerSec: ptr(int64(0))}}},
			check: func(t *testing.T, s *state.State) { require.Equal(t, ptr(int64(0)), s.Settings.RecoveryMaxBytesPerSec) }},
		{name: "set a negative recovery throttle", cmd: Command{SetSettings: &SetSettings{Settings: state.Settings{RecoveryMaxBytesPerSec: ptr(int64(-1))}}}, wantErr: ErrInvalidCommand},

		{name: "unknown version", cmd: Command{V: 2, Type: CmdSetSettings, SetSettings: &SetSettings{}}, wantErr: ErrUnknownCommand},
		{name: "two bodies", cmd: Command{V: 1, Type: CmdSetSettings, SetSettings: &SetSettings{}, NodeLeft: &NodeLeft{}}, wantErr: ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture()
			if tc.prep != nil {
				tc.prep(s)
			}
			before, err := json.Marshal(s)
			require.NoError(t, err)
			cmd := tc.cmd
			if cmd.V == 0 {
				cmd, err = cmd.normalized()
				require.NoError(t, err)
			}
			next, err := apply(s, 8, cmd)
			after, jerr := json.Marshal(s)
			require.NoError(t, jerr)
			require.JSONEq(t, string(before), string(after), "apply modified its input state")
			require.EqualValues(t, 8, next.Version)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				s.Version = 8
				require.Equal(t, s, next, "a refused command changes nothing but the version")
				return
			}
			require.NoError(t, err)
			require.NoError(t, checkInvariants(next))
			if tc.check != nil {
				tc.check(t, next)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
