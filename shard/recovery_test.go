package shard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// slowRecovery throttles file-based recovery so that a test can act while
// the files stream: the sample index (about 2 MB) takes seconds.
func slowRecovery() func(string) shard.Config {
	return func(string) shard.Config {
		c := coordtest.NodeConfig()
		c.RecoveryMaxBytesPerSec = 1 << 20
		return c
	}
}

// oneShardIndex creates name with one shard and no replica, loads the
// first n sample documents into it, and returns the node of its primary
// and another node.
func oneShardIndex(t *testing.T, tc *coordtest.Cluster, name string, n int) (primary, other string) {
	t.Helper()
	first := tc.Nodes["n1"]
	require.NoError(t, first.CreateIndex(context.Background(), name, coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	primary, other = p.NodeID, "n1"
	if primary == "n1" {
		other = "n2"
	}
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[primary], name, ids[:n], sources[:n])
	return primary, other
}

// recoveryOf returns node n's latest recovery of the copy alloc.
func recoveryOf(n *coordtest.Node, alloc string) (vocab.RecoveryInfo, bool) {
	for _, r := range n.Store.Recoveries() {
		if r.AllocationID == alloc {
			return r, true
		}
	}
	return vocab.RecoveryInfo{}, false
}

// leftovers lists the recovery directories (staging, snapshots) in node
// id's store.
func leftovers(t *testing.T, tc *coordtest.Cluster, id string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(tc.Dirs[id], "shards"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), shard.StagingPrefix) || strings.HasPrefix(e.Name(), shard.SnapshotPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFileRecoveryKeepsWritesMadeDuringIt: writes go on at the primary
// while a new replica copies its files; once the replica is in sync it
// holds every acknowledged write, and the same documents as the primary.
func TestFileRecoveryKeepsWritesMadeDuringIt(t *testing.T) {
	tc := coordtest.NewClusterWith(t, slowRecovery(), "n1", "n2")
	p, other := oneShardIndex(t, tc, "w", 300)
	_, sources := coordtest.SampleDocs(t)
	ctx := context.Background()

	var mu sync.Mutex
	var acked []string
	var duringFiles atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); <-done }
	t.Cleanup(halt) // before the cluster stops, should the test fail early
	alloc := tc.MC.AddReplica(t, "w", 0, other)
	go func() {
		defer close(done)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("live-%d", k)
			if k%5 == 4 {
				id = fmt.Sprintf("live-%d", k-4) // an overwrite
			}
			res, err := tc.Nodes[p].Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "w", ID: id, Source: sources[300+k%100]}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
			if err != nil || res[0].Err != nil {
				continue
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
			if r, ok := recoveryOf(tc.Nodes[other], alloc); ok && r.Stage == "index" && r.BytesDone > 0 {
				duringFiles.Add(1)
			}
		}
	}()
	coordtest.AwaitInSync(t, tc, "w", 2)
	halt()

	require.Positive(t, duringFiles.Load(), "writes were acknowledged while the files streamed")
	rec := latestRecovery(t, tc.Nodes[other])
	require.Equal(t, vocab.RecoveryFiles, rec.Mode)
	byCopy := copyDocs(t, tc, "w", 0)
	same(t, byCopy)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range acked {
		require.Contains(t, byCopy[alloc], id, "acknowledged write %s is missing on the recovered replica", id)
	}
	require.Empty(t, leftovers(t, tc, p))
	require.Empty(t, leftovers(t, tc, other))
}

// TestFileRecoveryReportsItsTotalFromTheStart: while the files stream,
// the target's progress has the whole snapshot as its total, so the
// recovered bytes stay below it until the end.
func TestFileRecoveryReportsItsTotalFromTheStart(t *testing.T) {
	tc := coordtest.NewClusterWith(t, slowRecovery(), "n1", "n2")
	_, other := oneShardIndex(t, tc, "prog", 400)
	alloc := tc.MC.AddReplica(t, "prog", 0, other)
	var mid vocab.RecoveryInfo
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(tc.Nodes[other], alloc)
		mid = r
		return ok && r.Stage == "index" && r.BytesDone > 0
	}, 30*time.Second, time.Millisecond)
	t.Logf("mid-stream: %d of %d bytes", mid.BytesDone, mid.BytesTotal)
	require.Less(t, mid.BytesDone, mid.BytesTotal)
	coordtest.AwaitInSync(t, tc, "prog", 2)
	final := latestRecovery(t, tc.Nodes[other])
	require.Equal(t, mid.BytesTotal, final.BytesTotal, "the total announced first is what was copied")
	require.Equal(t, final.BytesTotal, final.BytesDone)
}

// TestInterruptedFileRecoveryInstallsNothingAndStartsOver: the stream of a
// file-based recovery breaks midway (its connection fails); the target
// installs nothing of it and leaves no staging files, and once the fabric
// works again a new attempt copies the files from the start and the
// replica joins in sync with the primary's documents.
func TestInterruptedFileRecoveryInstallsNothingAndStartsOver(t *testing.T) {
	tc := coordtest.NewClusterWith(t, slowRecovery(), "n1", "n2")
	p, other := oneShardIndex(t, tc, "cut", 400)
	var broken atomic.Bool
	remove := tc.Net.AddFault(p, other, func(m fabrictest.Message) fabrictest.Action {
		return fabrictest.Action{Corrupt: broken.Load() && !m.Reply && m.Method == fabric.MethodStream}
	})
	defer remove()
	alloc := tc.MC.AddReplica(t, "cut", 0, other)
	target := tc.Nodes[other]
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(target, alloc)
		return ok && r.Stage == "index" && r.BytesDone > 0
	}, 30*time.Second, time.Millisecond)
	broken.Store(true)
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(target, alloc)
		return ok && r.Stage == "failed"
	}, 30*time.Second, time.Millisecond)

	_, open := target.Store.CopyOf(alloc)
	require.False(t, open, "no copy is open from a broken stream")
	_, err := os.Stat(filepath.Join(tc.Dirs[other], "shards", alloc, "index"))
	require.ErrorIs(t, err, os.ErrNotExist, "no index is installed from a broken stream")
	require.Eventually(t, func() bool { return len(leftovers(t, tc, other)) == 0 && len(leftovers(t, tc, p)) == 0 },
		30*time.Second, 10*time.Millisecond, "staging and snapshot directories are removed")

	broken.Store(false)
	coordtest.AwaitInSync(t, tc, "cut", 2)
	rec := latestRecovery(t, target)
	require.Equal(t, vocab.RecoveryFiles, rec.Mode)
	require.Equal(t, rec.BytesTotal, rec.BytesDone)
	same(t, copyDocs(t, tc, "cut", 0))
	require.Empty(t, leftovers(t, tc, other))
}

// TestConcurrentRecoveriesShareTheNodesThrottle: two copies recover from
// one node at the same time; every byte of both file streams goes through
// that node's one throttle (whose rate TestRecoveryThrottleIsSharedByTheNodesStreams holds
// across streams).
func TestConcurrentRecoveriesShareTheNodesThrottle(t *testing.T) {
	tc := coordtest.NewClusterWith(t, slowRecovery(), "n1", "n2", "n3")
	ctx := context.Background()
	// Primaries go to the least loaded node: a on n1, the pads on n2 and
	// n3, b on n1 again.
	for _, name := range []string{"a", "pad2", "pad3", "b"} {
		require.NoError(t, tc.Nodes["n1"].CreateIndex(ctx, name, coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	}
	ids, sources := coordtest.SampleDocs(t)
	for _, name := range []string{"a", "b"} {
		ix, err := tc.MC.Node("x").State().Index(name)
		require.NoError(t, err)
		p, _ := ix.Shards[0].Primary()
		require.Equal(t, "n1", p.NodeID)
		coordtest.BulkIndex(t, tc.Nodes["n1"], name, ids[:300], sources[:300])
	}
	throttle := tc.Nodes["n1"].Store
	before := throttle.ThrottleAdmitted()
	allocA, allocB := tc.MC.AddReplica(t, "a", 0, "n2"), tc.MC.AddReplica(t, "b", 0, "n2")
	target := tc.Nodes["n2"]
	coordtest.AwaitInSync(t, tc, "a", 2)
	coordtest.AwaitInSync(t, tc, "b", 2)
	ra, _ := recoveryOf(target, allocA)
	rb, _ := recoveryOf(target, allocB)
	require.Equal(t, vocab.RecoveryFiles, ra.Mode)
	require.Equal(t, vocab.RecoveryFiles, rb.Mode)
	require.True(t, ra.Started.Before(rb.Stopped) && rb.Started.Before(ra.Stopped), "the recoveries overlap: %+v %+v", ra, rb)
	files := ra.BytesTotal + rb.BytesTotal
	sent := throttle.ThrottleAdmitted() - before
	// The streams also carry the files' names and sizes.
	require.GreaterOrEqual(t, sent, files)
	require.Less(t, sent, files+64<<10, "the throttle let through %d bytes for %d bytes of files", sent, files)
}
