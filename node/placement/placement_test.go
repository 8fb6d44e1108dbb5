package placement

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
)

// The gossip overlay marks a node this node's gossip sees down as not live
// until the committed state takes the node in again after gossip saw it
// go: a restarted node that the leader's gossip saw come back is routed to
// even while this node's gossip still holds it dead, so a search through
// this node does not leave out its shards once health is green.
func TestGossipOverlayYieldsToALaterAdmission(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	withNode := func(version uint64, n *state.Node) *state.State {
		return &state.State{Version: version, Nodes: map[string]*state.Node{"x": {ID: "x", Live: true}, "y": n}}
	}
	live := func(st *state.State, down map[string]time.Time, admitted map[string]time.Time) bool {
		return withUnreachable(st, stillDown(down, admitted), "x").Nodes["y"].Live
	}
	admitted := map[string]time.Time{}
	s0 := withNode(1, &state.Node{ID: "y", Live: true})

	// Gossip sees y dead at t0+1s before the leader commits it: not live.
	down := map[string]time.Time{"y": t0.Add(time.Second)}
	require.False(t, live(s0, down, admitted), "a node gossip sees dead is not routed to")

	// The leader commits it gone, then takes it in again when it restarts
	// (t0+5s); this node's gossip still holds it dead.
	s1 := withNode(2, &state.Node{ID: "y", Live: false, LeftAtMS: 1})
	noteAdmitted(admitted, s0, s1, t0.Add(2*time.Second))
	require.False(t, live(s1, down, admitted))
	s2 := withNode(3, &state.Node{ID: "y", Live: true})
	noteAdmitted(admitted, s1, s2, t0.Add(5*time.Second))
	require.True(t, live(s2, down, admitted), "the state took y in after gossip saw it go: it is routed to")

	// A state change that leaves y's record alone admits nothing.
	s3 := withNode(4, s2.Nodes["y"])
	noteAdmitted(admitted, s2, s3, t0.Add(6*time.Second))
	require.Equal(t, t0.Add(5*time.Second), admitted["y"])

	// Gossip sees y go again after that admission: not live again.
	down = map[string]time.Time{"y": t0.Add(7 * time.Second)}
	require.False(t, live(s3, down, admitted), "a failure after the admission counts")

	// This node itself is never marked down.
	require.True(t, withUnreachable(s3, map[string]bool{"x": true}, "x").Nodes["x"].Live)
}
