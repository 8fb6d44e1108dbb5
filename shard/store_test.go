package shard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// TestShardLogTrimmedOncePersisted: log segments wholly below the seq that
// scorch has persisted are deleted by later writes; the newest stays.
func TestShardLogTrimmedOncePersisted(t *testing.T) {
	cfg := coordtest.NodeConfig()
	cfg.LogSegmentBytes = 4096
	dir := t.TempDir()
	m := coordtest.StartNodeWith(t, coordtest.NewMemCluster(t, "", "n1"), "n1", dir, nil, cfg, nil)
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "t", coord.IndexSettings{NumberOfShards: 1}, nil))
	ids, sources := coordtest.SampleDocs(t)
	for k := 0; k < 100; k += 10 {
		coordtest.BulkIndex(t, m, "t", ids[k:k+10], sources[k:k+10])
	}
	sh := shard.PrimaryCopy(t, m.Store, "t", 0)
	// Scorch persists in the background; wait for it (no timing assertion:
	// the test only proceeds once it has happened).
	deadline := time.Now().Add(time.Minute)
	for sh.Index().PersistedSeq() < sh.Index().AppliedSeq() {
		require.True(t, time.Now().Before(deadline), "scorch never persisted seq %d", sh.Index().AppliedSeq())
		runtime.Gosched()
	}
	coordtest.BulkIndex(t, m, "t", ids[100:101], sources[100:101])
	require.LessOrEqual(t, sh.Log().Segments(), 2)
	var replayed int
	require.NoError(t, sh.Log().Replay(0, func(*shardlog.Record) error { replayed++; return nil }))
	require.Less(t, replayed, 100)
}

// TestStoreKeepsOnlyAssignedCopies: on reopen the store opens the copies
// the shard table assigns to the node, deletes the copy directories it does
// not (an index deleted while the node was away) and finishes interrupted
// deletions, but leaves alone a directory that holds no copy.
func TestStoreKeepsOnlyAssignedCopies(t *testing.T) {
	dir := t.TempDir()
	m := coordtest.OpenManager(t, dir)
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "keep", coord.IndexSettings{}, nil))
	require.NoError(t, m.CreateIndex(ctx, "gone", coord.IndexSettings{NumberOfShards: 2}, nil))
	gone, err := m.Meta.State().Index("gone")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	// The index is deleted while the node is down.
	require.NoError(t, m.MC.Node("n1").DeleteIndex(ctx, "gone", gone.UUID))
	root := filepath.Join(dir, "shards")
	require.NoError(t, os.MkdirAll(filepath.Join(root, shard.DeletedPrefix+"abc", "index"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "not-a-copy"), 0o755))

	m = coordtest.OpenManager(t, dir)
	defer m.Close()
	require.Equal(t, []string{"keep"}, func() (names []string) {
		for _, i := range m.Indices() {
			names = append(names, i.Name)
		}
		return names
	}())
	require.Eventually(t, func() bool {
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		return len(entries) == 2 // keep's copy and not-a-copy
	}, 10*time.Second, 10*time.Millisecond)
	_, err = os.Stat(filepath.Join(root, "not-a-copy"))
	require.NoError(t, err)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*shard.Config)
		err  string
	}{
		{"default", func(*shard.Config) {}, ""},
		{"tiny segments", func(c *shard.Config) { c.LogSegmentBytes = 10 }, "LogSegmentBytes 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := shard.DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			_, err = shard.OpenStore(t.TempDir(), c, nil, nil, nil)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestConcurrentBulksShareFsyncs: while one bulk's fsync is in progress,
// eight more bulks to the same shard queue up; the next commit takes them
// all, so nine acknowledged bulks cost two fsyncs.
func TestConcurrentBulksShareFsyncs(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.CreateIndex(ctx, "g", coord.IndexSettings{NumberOfShards: 1}, nil))
	sh := shard.PrimaryCopy(t, m.Store, "g", 0)
	const followers = 8
	release := make(chan struct{})
	var once sync.Once
	sh.Log().SetBeforeSync(func() { once.Do(func() { <-release }) })
	before := sh.Log().Fsyncs()
	bulk := func(id string) error {
		res, err := m.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "g", ID: id, Source: json.RawMessage(`{"a":1}`)}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
		if err != nil {
			return err
		}
		return res[0].Err
	}
	errs := make(chan error, followers+1)
	go func() { errs <- bulk("leader") }()
	// Wait until the leader is inside its fsync (it holds the commit lock).
	for !sh.CommitLeaderBusy() {
		runtime.Gosched()
	}
	for k := range followers {
		go func() { errs <- bulk(fmt.Sprint("f", k)) }()
	}
	for {
		n := sh.QueueLen()
		if n == followers {
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range followers + 1 {
		require.NoError(t, <-errs)
	}
	require.Equal(t, uint64(2), sh.Log().Fsyncs()-before)
	inf, err := m.Index("g")
	require.NoError(t, err)
	require.Equal(t, uint64(followers+1), inf.DocsCount)
}

// TestOlderViewDeletesNoCopy: a view older than the one that assigned a
// copy (as a node replaying the cluster's log after a restart goes
// through, where the index does not exist yet) neither closes nor deletes
// it; a newer view without it does.
func TestOlderViewDeletesNoCopy(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1")
	n := tc.Nodes["n1"]
	require.NoError(t, n.CreateIndex(context.Background(), "keep", coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	res, err := n.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "keep", ID: "1", Source: json.RawMessage(`{"a":1}`)}}, coord.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	now := n.Meta.State()
	ix, err := now.Index("keep")
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	dir := filepath.Join(n.Store.Dir(), p.AllocationID)

	older := &state.State{Version: 1, ClusterUUID: now.ClusterUUID, Nodes: now.Nodes, Indices: map[string]*state.Index{}}
	require.NoError(t, n.Store.Reconcile(context.Background(), older))
	require.DirExists(t, dir, "a view older than the copy's assignment deleted it")
	_, open := n.Store.CopyOf(p.AllocationID)
	require.True(t, open, "a view older than the copy's assignment closed it")

	newer := &state.State{Version: now.Version + 1, ClusterUUID: now.ClusterUUID, Nodes: now.Nodes, Indices: map[string]*state.Index{}}
	require.NoError(t, n.Store.Reconcile(context.Background(), newer))
	require.NoDirExists(t, dir, "a newer view without the copy keeps it")
}

// TestRecoveryRateFollowsTheCluster: the recovery throttle is the
// cluster's indices.recovery.max_bytes_per_sec once set (0 included), and
// the node's own configuration otherwise.
func TestRecoveryRateFollowsTheCluster(t *testing.T) {
	tc := coordtest.NewCluster(t, "n1")
	st := tc.Nodes["n1"].Store
	require.Equal(t, coordtest.NodeConfig().RecoveryMaxBytesPerSec, st.RecoveryRate())
	for _, rate := range []int64{0, 5 << 20} {
		require.NoError(t, tc.MC.Update(func(v *state.State) error { v.Settings.RecoveryMaxBytesPerSec = &rate; return nil }))
		require.Equal(t, rate, st.RecoveryRate())
	}
	require.NoError(t, tc.MC.Update(func(v *state.State) error { v.Settings.RecoveryMaxBytesPerSec = nil; return nil }))
	require.Equal(t, coordtest.NodeConfig().RecoveryMaxBytesPerSec, st.RecoveryRate())
}
