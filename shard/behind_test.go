package shard_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// behindCluster starts nodes whose replicas index nothing on their own
// (ReplicaIndexDelay of an hour), with index name of one shard and one
// replica, and returns the replica's copy and node.
func behindCluster(t *testing.T, name string, nodes ...string) (*coordtest.Cluster, *shard.CopyHandle, string) {
	t.Helper()
	tc := coordtest.NewClusterWith(t, func(string) shard.Config {
		c := coordtest.NodeConfig()
		c.ReplicaIndexDelay = time.Hour
		return c
	}, nodes...)
	withReplicas(t, tc, name, 1, nodes)
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	for _, c := range ix.Shards[0].Copies {
		if !c.Primary {
			sc, ok := tc.Nodes[c.NodeID].Store.CopyOf(c.AllocationID)
			require.True(t, ok)
			return tc, sc, c.NodeID
		}
	}
	t.Fatal("the shard has no replica")
	return nil, nil, ""
}

// behindBy is how many operations sc has logged and not indexed.
func behindBy(sc *shard.CopyHandle) uint64 { return sc.BehindBy() }

// TestReplicaIndexesBehindItsAcknowledgement: a replica acknowledges what
// it has logged and indexes it later, but a search it serves and a refresh
// both find every acknowledged write.
func TestReplicaIndexesBehindItsAcknowledgement(t *testing.T) {
	tc, replica, node := behindCluster(t, "b", "n1", "n2")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes["n1"], "b", ids[:100], sources[:100])
	require.EqualValues(t, 100, behindBy(replica), "the replica indexed its writes before they were read")

	// A search coordinated by the replica's node is served by its local copy.
	r := tc.Search(t, node, []string{"b"}, `{"query":{"match_all":{}},"size":0}`)
	require.EqualValues(t, 100, r.Total)
	require.Zero(t, behindBy(replica))

	coordtest.BulkIndex(t, tc.Nodes["n1"], "b", ids[100:150], sources[100:150])
	require.EqualValues(t, 50, behindBy(replica))
	require.Positive(t, replica.Owner().BehindBytes(), "the node counts the source bytes waiting")
	require.NoError(t, tc.Nodes["n1"].Refresh(context.Background(), []string{"b"}))
	require.Zero(t, behindBy(replica), "a refresh returned before the replica indexed what it acknowledged")
	require.Zero(t, replica.Owner().BehindBytes())
	same(t, copyDocs(t, tc, "b", 0))
}

// TestPromotedReplicaIndexesWhatWasBehind: a replica promoted with
// operations logged but not yet indexed indexes them before it serves as
// primary, so realtime gets and later writes see every acknowledged write.
func TestPromotedReplicaIndexesWhatWasBehind(t *testing.T) {
	tc, replica, node := behindCluster(t, "p", "n1", "n2")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes["n1"], "p", ids[:100], sources[:100])
	require.EqualValues(t, 100, behindBy(replica))
	_, _, other := deposePrimary(t, tc, "p")
	require.Same(t, tc.Nodes[node], other)
	require.Eventually(t, replica.IsPrimary, 30*time.Second, 10*time.Millisecond, "the replica was not promoted")
	for k, id := range ids[:100] {
		d, err := other.Get(context.Background(), "p", id, "")
		require.NoError(t, err, "acknowledged write %s is missing on the promoted copy", id)
		require.JSONEq(t, string(sources[k]), string(d.Source))
	}
	coordtest.BulkIndex(t, other, "p", ids[100:110], sources[100:110])
	r := tc.Search(t, node, []string{"p"}, `{"query":{"match_all":{}},"size":0}`)
	require.EqualValues(t, 110, r.Total)
}

// TestReplicaThatCannotIndexIsFailed: a replica whose indexing of what was
// behind fails is failed through the cluster, and its primary goes on
// acknowledging writes without it.
func TestReplicaThatCannotIndexIsFailed(t *testing.T) {
	tc, replica, _ := behindCluster(t, "f", "n1", "n2")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes["n1"], "f", ids[:10], sources[:10])
	require.NoError(t, replica.Index().Close()) // every later Apply fails
	require.Error(t, tc.Nodes["n1"].Refresh(context.Background(), []string{"f"}), "the replica could not index, yet the refresh succeeded")
	require.Eventually(t, func() bool {
		ix, err := tc.MC.Node("x").State().Index("f")
		require.NoError(t, err)
		return !slices.Contains(ix.Shards[0].InSync, replica.AllocationID())
	}, 30*time.Second, 10*time.Millisecond, "the replica was not failed")
	res, err := tc.Nodes["n1"].Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "f", ID: ids[10], Source: sources[10]}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
}

// TestRefreshDoesNotWaitForACutOffCopy: a refresh reaches every copy, and
// one whose node is cut off fails it within the replication timeout
// instead of holding it.
func TestRefreshDoesNotWaitForACutOffCopy(t *testing.T) {
	tc := coordtest.NewClusterWith(t, func(string) shard.Config {
		c := coordtest.NodeConfig()
		c.ReplicationTimeout = 2 * time.Second
		return c
	}, "n1", "n2")
	withReplicas(t, tc, "c", 1, []string{"n1", "n2"})
	heal := tc.Net.Partition([]string{"n1"}, []string{"n2"})
	defer heal()
	done := make(chan error, 1)
	go func() { done <- tc.Nodes["n1"].Refresh(context.Background(), []string{"c"}) }()
	select {
	case err := <-done:
		require.Error(t, err, "a refresh succeeded without the copy on the cut-off node")
	case <-time.After(30 * time.Second):
		t.Fatal("a refresh waited on a cut-off copy for 30 s")
	}
}
