package state_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
)

func TestShardHealth(t *testing.T) {
	v := &state.State{Nodes: map[string]*state.Node{"a": {ID: "a", Live: true}, "b": {ID: "b", Live: true}, "gone": {ID: "gone"}}}
	primary := state.Copy{AllocationID: "p", NodeID: "a", Primary: true, State: state.CopyStarted}
	replica := state.Copy{AllocationID: "r", NodeID: "b", State: state.CopyStarted}
	for _, tc := range []struct {
		name     string
		replicas int
		copies   []state.Copy
		want     string
	}{
		{"no copy", 0, nil, state.HealthRed},
		{"primary not started", 0, []state.Copy{{AllocationID: "p", NodeID: "a", Primary: true}}, state.HealthRed},
		{"primary on a dead node", 1, []state.Copy{{AllocationID: "p", NodeID: "gone", Primary: true, State: state.CopyStarted}, replica}, state.HealthRed},
		{"primary alone, none wanted", 0, []state.Copy{primary}, state.HealthGreen},
		{"replica missing", 1, []state.Copy{primary}, state.HealthYellow},
		{"replica recovering", 1, []state.Copy{primary, {AllocationID: "r", NodeID: "b"}}, state.HealthYellow},
		{"move target started counts for nothing", 1, []state.Copy{primary, {AllocationID: "t", NodeID: "b", State: state.CopyStarted, RelocatingFrom: "x"}}, state.HealthYellow},
		{"all active", 1, []state.Copy{primary, replica}, state.HealthGreen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := &state.Index{Name: "i", NumberOfShards: 1, NumberOfReplicas: tc.replicas, Shards: []state.Shard{{Copies: tc.copies}}}
			require.Equal(t, tc.want, v.ShardHealth(ix, 0))
			require.Equal(t, tc.want, v.IndexHealth(ix))
		})
	}
}
