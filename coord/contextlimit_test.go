package coord_test

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// contextLimitCluster is two nodes with index "two", one shard on each:
// every point in time or scroll over it holds one context on each node.
// It returns the nodes holding shard 0 and shard 1.
func contextLimitCluster(t *testing.T) (*coordtest.Cluster, *coordtest.Node, *coordtest.Node) {
	tc := coordtest.NewCluster(t, "n1", "n2")
	tc.LoadSampleIndex(t, "two", 2)
	ix, err := tc.Nodes["n1"].Meta.State().Index("two")
	require.NoError(t, err)
	p0, _ := ix.Shards[0].Primary()
	p1, _ := ix.Shards[1].Primary()
	require.NotEqual(t, p0.NodeID, p1.NodeID, "the shards are on different nodes")
	return tc, tc.Nodes[p0.NodeID], tc.Nodes[p1.NodeID]
}

// setClusterSetting commits a cluster setting, as PUT _cluster/settings
// does.
func setClusterSetting(t *testing.T, tc *coordtest.Cluster, key string, n int) {
	require.NoError(t, tc.MC.Update(func(v *state.State) error {
		vals := maps.Clone(v.Settings.Values)
		if vals == nil {
			vals = map[string]string{}
		}
		vals[key] = strconv.Itoa(n)
		v.Settings.Values = vals
		return nil
	}))
}

// openCounts are the contexts of kind open on each node.
func openCounts(kind vocab.ContextKind, nodes ...*coordtest.Node) []int {
	var out []int
	for _, n := range nodes {
		out = append(out, n.Store.OpenContextCount(kind))
	}
	return out
}

// TestPITContextLimit: a node refuses a point in time's context beyond
// search.max_open_pit_context; an open refused on one node releases what
// it opened on the others; closing a point in time, or its expiry, frees
// its slots.
func TestPITContextLimit(t *testing.T) {
	tc, a, b := contextLimitCluster(t)
	ctx := context.Background()
	setClusterSetting(t, tc, vocab.MaxOpenPITContextSetting, 1)

	first, err := a.OpenPIT(ctx, []string{"two"}, time.Minute)
	require.NoError(t, err)
	_, err = b.OpenPIT(ctx, []string{"two"}, time.Minute)
	require.ErrorIs(t, err, vocab.ErrTooManyPITContexts)
	require.Contains(t, err.Error(), "Trying to create too many Point In Time contexts. Must be less than or equal to: [1]. "+
		"This limit can be set by changing the [search.max_open_pit_context] setting.")
	require.Equal(t, []int{1, 1}, openCounts(vocab.ContextPIT, a, b))

	// Only b is full: the open takes a's slot for shard 0, is refused on b
	// for shard 1, and gives a's slot back.
	freed, err := a.ClosePIT(ctx, first)
	require.NoError(t, err)
	require.Equal(t, 2, freed)
	ix, err := a.Meta.State().Index("two")
	require.NoError(t, err)
	p1, _ := ix.Shards[1].Primary()
	h := shard.Header{Cluster: a.Meta.State().ClusterUUID, Index: ix.UUID, Shard: 1, Alloc: p1.AllocationID}
	held, err := b.Store.OpenContext(ctx, h, time.Minute, vocab.ContextPIT)
	require.NoError(t, err)
	_, err = a.OpenPIT(ctx, []string{"two"}, time.Minute)
	require.ErrorIs(t, err, vocab.ErrTooManyPITContexts, "refused by the remote node, as its sentinel")
	require.Equal(t, []int{0, 1}, openCounts(vocab.ContextPIT, a, b), "the context opened on a was released")

	open, err := b.Store.CloseContext(ctx, h, held)
	require.NoError(t, err)
	require.True(t, open)
	short, err := a.OpenPIT(ctx, []string{"two"}, time.Millisecond)
	require.NoError(t, err, "a closed context frees its slot")
	_ = short // left to expire

	time.Sleep(5 * time.Millisecond) // past the millisecond keep-alive
	last, err := a.OpenPIT(ctx, []string{"two"}, time.Minute)
	require.NoError(t, err, "an expired context frees its slot")
	require.Equal(t, []int{1, 1}, openCounts(vocab.ContextPIT, a, b))
	_, err = a.ClosePIT(ctx, last)
	require.NoError(t, err)
}

// TestScrollContextLimit: scrolls are counted against
// search.max_open_scroll_context, apart from points in time; a refused
// scroll leaves nothing open; clearing a scroll frees its slots.
func TestScrollContextLimit(t *testing.T) {
	tc, a, b := contextLimitCluster(t)
	ctx := context.Background()
	setClusterSetting(t, tc, vocab.MaxOpenScrollContextSetting, 1)
	scroll := func() (*coord.SearchReply, error) {
		srch, err := esdsl.ParseSearch([]byte(`{"size":5}`), map[string][]string{"scroll": {"1m"}}, a.Fields([]string{"two"}))
		require.NoError(t, err)
		return a.RunSearch(ctx, coord.SearchRequest{Indices: []string{"two"}, Search: srch})
	}

	first, err := scroll()
	require.NoError(t, err)
	require.NotNil(t, first.OpenedPIT)
	_, err = scroll()
	require.ErrorIs(t, err, vocab.ErrTooManyScrollContexts)
	require.Contains(t, err.Error(), "Trying to create too many scroll contexts. Must be less than or equal to: [1]. "+
		"This limit can be set by changing the [search.max_open_scroll_context] setting.")

	pit, err := a.OpenPIT(ctx, []string{"two"}, time.Minute)
	require.NoError(t, err, "points in time are counted apart from scrolls")
	require.Equal(t, []int{1, 1}, openCounts(vocab.ContextScroll, a, b))
	require.Equal(t, []int{1, 1}, openCounts(vocab.ContextPIT, a, b))
	st := a.Stats()
	require.Equal(t, 1, st.ScrollContexts)
	require.Equal(t, 1, st.PITContexts)

	_, err = a.ClosePIT(ctx, *first.OpenedPIT)
	require.NoError(t, err)
	second, err := scroll()
	require.NoError(t, err, "a cleared scroll frees its slots")
	for _, p := range []coord.PIT{*second.OpenedPIT, pit} {
		_, err = a.ClosePIT(ctx, p)
		require.NoError(t, err)
	}
	require.Equal(t, []int{0, 0}, openCounts(vocab.ContextScroll, a, b))
	require.Equal(t, []int{0, 0}, openCounts(vocab.ContextPIT, a, b))
}
