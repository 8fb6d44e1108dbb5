package shard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShardHealth(t *testing.T) {
	v := &View{Nodes: map[string]NodeView{"a": {ID: "a", Live: true}, "b": {ID: "b", Live: true}, "gone": {ID: "gone"}}}
	primary := CopyView{AllocationID: "p", NodeID: "a", Primary: true, Started: true}
	replica := CopyView{AllocationID: "r", NodeID: "b", Started: true}
	for _, tc := range []struct {
		name     string
		replicas int
		copies   []CopyView
		want     string
	}{
		{"no copy", 0, nil, HealthRed},
		{"primary not started", 0, []CopyView{{AllocationID: "p", NodeID: "a", Primary: true}}, HealthRed},
		{"primary on a dead node", 1, []CopyView{{AllocationID: "p", NodeID: "gone", Primary: true, Started: true}, replica}, HealthRed},
		{"primary alone, none wanted", 0, []CopyView{primary}, HealthGreen},
		{"replica missing", 1, []CopyView{primary}, HealthYellow},
		{"replica recovering", 1, []CopyView{primary, {AllocationID: "r", NodeID: "b"}}, HealthYellow},
		{"move target started counts for nothing", 1, []CopyView{primary, {AllocationID: "t", NodeID: "b", Started: true, RelocatingFrom: "x"}}, HealthYellow},
		{"all active", 1, []CopyView{primary, replica}, HealthGreen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := &IndexView{Name: "i", NumberOfShards: 1, NumberOfReplicas: tc.replicas, Shards: []ShardView{{Copies: tc.copies}}}
			require.Equal(t, tc.want, v.ShardHealth(ix, 0))
			require.Equal(t, tc.want, v.IndexHealth(ix))
		})
	}
}
