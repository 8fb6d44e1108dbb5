package shard_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// pressureLimit is the indexing pressure limit of the nodes of these tests:
// a group of 40 sample documents (about 1.3 KB each, charged
// vocab.OpOverhead more) is over it and over the replica stage's 1.5
// times it; a group of 2 is under both.
const pressureLimit = 16 << 10

func newPressureCluster(t *testing.T, nodes ...string) *coordtest.Cluster {
	return coordtest.NewClusterWith(t, func(string) shard.Config {
		c := coordtest.NodeConfig()
		c.IndexingPressureBytes = pressureLimit
		return c
	}, nodes...)
}

func indexOps(name string, ids []string, sources [][]byte) []vocab.Op {
	ops := make([]vocab.Op, len(ids))
	for k := range ids {
		ops[k] = vocab.Op{Type: vocab.OpIndex, Index: name, ID: ids[k], Source: sources[k]}
	}
	return ops
}

// TestPrimaryRefusesAGroupOverIndexingPressure: a group of writes sent by
// another node's coordinator that would take the primary's node past its
// indexing pressure limit is refused before it is decoded: every item
// fails with membudget.ErrRejected (429), nothing is written, and the
// primary's node counts a primary rejection. The same group coordinated by
// the primary's own node is held by that node's coordinating stage (the
// HTTP layer's), so its primary stage counts it without refusing it.
func TestPrimaryRefusesAGroupOverIndexingPressure(t *testing.T) {
	tc := newPressureCluster(t, "n1", "n2")
	n1 := tc.Nodes["n1"]
	require.NoError(t, n1.CreateIndex(context.Background(), "pp", coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	ix, err := n1.Meta.State().Index("pp")
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	other := map[string]string{"n1": "n2", "n2": "n1"}[p.NodeID]
	primary, coordinator := tc.Nodes[p.NodeID], tc.Nodes[other]
	ids, raw := coordtest.SampleDocs(t)
	sources := make([][]byte, len(raw))
	for k := range raw {
		sources[k] = raw[k]
	}
	coordtest.BulkIndex(t, coordinator, "pp", ids[:2], raw[:2])

	res, err := coordinator.Bulk(context.Background(), indexOps("pp", ids[2:42], sources[2:42]), coord.WriteOptions{})
	require.NoError(t, err)
	for _, r := range res {
		require.ErrorIs(t, r.Err, membudget.ErrRejected, r.ID)
		require.Contains(t, r.Err.Error(), "rejected execution of primary operation [")
	}
	st := primary.Stats().IndexingPressure
	require.Equal(t, int64(1), st.PrimaryRejections)
	require.Zero(t, st.Current.All, "a refused group holds nothing")
	for _, id := range ids[2:42] {
		_, err := primary.Get(context.Background(), "pp", id, "")
		require.ErrorIs(t, err, vocab.ErrDocumentNotFound, "item %s of a refused group was written", id)
	}

	res, err = primary.Bulk(context.Background(), indexOps("pp", ids[2:42], sources[2:42]), coord.WriteOptions{})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
	}
	st = primary.Stats().IndexingPressure
	require.Equal(t, int64(1), st.PrimaryRejections, "a local primary is never refused")
	require.Greater(t, st.Total.Primary, int64(pressureLimit), "a local primary is counted")
	require.Zero(t, st.Current.All)

	for _, id := range ids[:42] {
		_, err := coordinator.Get(context.Background(), "pp", id, "")
		require.NoError(t, err, "acknowledged document %s", id)
	}
}

// TestReplicaRefusalFailsTheCopyNotTheWrite: a replication message over the
// replica's stage limit (1.5 times its indexing pressure limit) is refused;
// the primary fails the replica through the cluster as for any replication
// failure and acknowledges the writes only then, so nothing acknowledged
// rests on the copy that refused it. The copy recovers to the primary's
// documents.
func TestReplicaRefusalFailsTheCopyNotTheWrite(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := newPressureCluster(t, nodes...)
	withReplicas(t, tc, "rp", 1, nodes)
	p, r := replicaOf(t, tc, "rp")
	ids, raw := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "rp", ids[:2], raw[:2])
	require.Contains(t, tc.MC.Node("x").State().Indices["rp"].Shards[0].InSync, r.AllocationID, "a small group passes the replica stage")

	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "rp", ids[2:42], raw[2:42]) // every item acknowledged
	st := tc.Nodes[r.NodeID].Stats().IndexingPressure
	require.Equal(t, int64(1), st.ReplicaRejections)
	require.NotContains(t, tc.MC.Node("x").State().Indices["rp"].Shards[0].InSync, r.AllocationID,
		"the writes were acknowledged while the replica that refused them stayed in sync")

	coordtest.AwaitInSync(t, tc, "rp", 2)
	// Only now: the copy's recovery, which starts as soon as it is failed,
	// replays through the replica stage (counted, never refused) and may
	// still hold bytes at the acknowledgement above.
	require.Zero(t, tc.Nodes[r.NodeID].Stats().IndexingPressure.Current.All, "nothing is held once the copy has recovered")
	docs := copyDocs(t, tc, "rp", 0)
	same(t, docs)
	for _, d := range docs {
		require.Len(t, d, 42)
	}
}
