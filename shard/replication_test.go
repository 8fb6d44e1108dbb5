package shard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// withReplicas creates index name with shards primaries placed by the
// memCluster and one replica of each on the next node, and waits until
// every replica has recovered and joined the in-sync set.
func withReplicas(t *testing.T, tc *coordtest.Cluster, name string, shards int, nodes []string) {
	t.Helper()
	n := tc.Nodes[nodes[0]]
	require.NoError(t, n.CreateIndex(context.Background(), name, coord.IndexSettings{NumberOfShards: shards, NumberOfReplicas: 1}, coordtest.SampleMapping(t)))
	ix, err := n.Meta.State().Index(name)
	require.NoError(t, err)
	for num, sh := range ix.Shards {
		p, _ := sh.Primary()
		k := slices.Index(nodes, p.NodeID)
		tc.MC.AddReplica(t, name, num, nodes[(k+1)%len(nodes)])
	}
	coordtest.AwaitInSync(t, tc, name, 2)
}

// copyDocs returns the documents of every copy of shard num of name, by
// allocation ID (only copies open on running nodes).
func copyDocs(t *testing.T, tc *coordtest.Cluster, name string, num int) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	for _, c := range ix.Shards[num].Copies {
		n := tc.Nodes[c.NodeID]
		if n == nil {
			continue
		}
		sc, ok := n.Store.CopyOf(c.AllocationID)
		if !ok {
			continue
		}
		docs := map[string]string{}
		idx, err := sc.Readable()
		require.NoError(t, err)
		res, err := idx.Search(context.Background(), func() *bleve.SearchRequest {
			r := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 10000, 0, false)
			r.Fields = []string{index.SourceField}
			return r
		}())
		require.NoError(t, err)
		for _, h := range res.Hits {
			docs[h.ID], _ = h.Fields[index.SourceField].(string)
		}
		out[c.AllocationID] = docs
	}
	return out
}

// TestReplicasHoldEveryAcknowledgedWrite: with one replica per shard, every
// write acknowledged by the primaries is logged and indexed on the
// replicas too — the same documents, versions and sequence numbers — and a
// search served by a replica finds them.
func TestReplicasHoldEveryAcknowledgedWrite(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "r", 3, nodes)
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes["n2"], "r", ids[:200], sources[:200])
	res, err := tc.Nodes["n3"].Bulk(context.Background(), []vocab.Op{
		{Type: vocab.OpUpdate, Index: "r", ID: ids[0], Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"label":"changed"}`)}},
		{Type: vocab.OpDelete, Index: "r", ID: ids[1]},
	}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.NoError(t, res[1].Err)
	total := 0
	for num := range 3 {
		byCopy := copyDocs(t, tc, "r", num)
		require.Len(t, byCopy, 2, "shard %d has a primary and a replica open", num)
		var first map[string]string
		for _, docs := range byCopy {
			if first == nil {
				first = docs
				total += len(docs)
				continue
			}
			requireSameDocs(t, first, docs, fmt.Sprintf("shard %d", num))
		}
	}
	require.Equal(t, 199, total)
	// Searches may be served by either copy; both have every document.
	for range 4 {
		r := tc.Search(t, "n1", []string{"r"}, `{"query":{"match_all":{}},"size":0}`)
		require.EqualValues(t, 199, r.Total)
	}
}

// TestFailoverLosesNoAcknowledgedWrite: clients write while the node holding
// primaries dies; the cluster promotes the in-sync replicas (next primary
// term) and writes go on. Every write that was acknowledged is found on the
// new primaries afterwards; writes refused during the failover may be
// retried by the clients, as Elasticsearch's are.
func TestFailoverLosesNoAcknowledgedWrite(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "f", 3, nodes)
	ix, _ := tc.MC.Node("x").State().Index("f")
	p0, _ := ix.Shards[0].Primary()
	victim := p0.NodeID
	var writers []string
	for _, n := range nodes {
		if n != victim {
			writers = append(writers, n)
		}
	}
	var mu sync.Mutex
	acked := map[string]string{}
	var attempts, refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := tc.Nodes[writers[w%len(writers)]]
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, k)
				src := fmt.Sprintf(`{"w":%d,"k":%d}`, w, k)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := n.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "f", ID: id, Source: json.RawMessage(src)}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
				cancel()
				attempts.Add(1)
				if err == nil && res[0].Err == nil {
					mu.Lock()
					acked[id] = src
					mu.Unlock()
					continue
				}
				refused.Add(1)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	tc.Kill(victim)
	tc.MC.FailNode(t, victim)
	time.Sleep(700 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d writes, %d acknowledged, %d refused during the failover", attempts.Load(), len(acked), refused.Load())
	require.NotEmpty(t, acked)
	v := tc.MC.Node("x").State()
	ix, _ = v.Indices["f"]
	for num, sh := range ix.Shards {
		p, ok := sh.Primary()
		require.True(t, ok, "shard %d has a primary after the failover", num)
		require.NotEqual(t, victim, p.NodeID)
	}
	require.Equal(t, uint64(2), ix.Shards[0].PrimaryTerm, "the promotion bumped the term")
	n := tc.Nodes[writers[0]]
	for id, src := range acked {
		d, err := n.Get(context.Background(), "f", id, "")
		require.NoError(t, err, "acknowledged write %s lost", id)
		require.JSONEq(t, src, string(d.Source))
	}
	// Writes keep working on the new primaries.
	res, err := n.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "f", ID: "after", Source: json.RawMessage(`{}`)}}, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
}

// TestRecoveryReusesOrReplacesTheCopy: a replica whose node restarts after
// missing writes catches up by replaying the primary's log (ops-based,
// moving only the missed operations); a replica whose files are gone gets
// a snapshot of the primary's index (file-based), then the operations.
func TestRecoveryReusesOrReplacesTheCopy(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "rec", 1, nodes)
	ix, _ := tc.MC.Node("x").State().Index("rec")
	p, _ := ix.Shards[0].Primary()
	replicaNode := nodes[(slices.Index(nodes, p.NodeID)+1)%2]
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "rec", ids[:100], sources[:100])

	// The replica's node goes away; the next writes fail it out of the
	// in-sync set; it comes back and recovers from its checkpoint.
	tc.Kill(replicaNode)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "rec", ids[100:150], sources[100:150])
	require.Len(t, tc.MC.Node("x").State().Indices["rec"].Shards[0].InSync, 1, "the replica that missed writes left the in-sync set")
	tc.Revive(replicaNode)
	coordtest.AwaitInSync(t, tc, "rec", 2)
	rec := latestRecovery(t, tc.Nodes[replicaNode])
	require.Equal(t, vocab.RecoveryOps, rec.Mode)
	require.Equal(t, int64(50), rec.OpsDone, "only the missed operations are sent")
	require.Zero(t, rec.BytesDone)
	same(t, copyDocs(t, tc, "rec", 0))

	// Wiped: the replica's files are gone; it gets the primary's snapshot.
	tc.Kill(replicaNode)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "rec", ids[150:160], sources[150:160])
	ix, _ = tc.MC.Node("x").State().Indices["rec"]
	for _, c := range ix.Shards[0].Copies {
		if c.NodeID == replicaNode {
			require.NoError(t, shard.RemoveDir(fmt.Sprintf("%s/shards/%s", tc.Dirs[replicaNode], c.AllocationID)))
		}
	}
	tc.Revive(replicaNode)
	coordtest.AwaitInSync(t, tc, "rec", 2)
	rec = latestRecovery(t, tc.Nodes[replicaNode])
	require.Equal(t, vocab.RecoveryFiles, rec.Mode)
	require.Positive(t, rec.BytesDone)
	same(t, copyDocs(t, tc, "rec", 0))
	d, err := tc.Nodes[replicaNode].Get(context.Background(), "rec", ids[155], "")
	require.NoError(t, err)
	require.JSONEq(t, string(sources[155]), string(d.Source))
}

func latestRecovery(t *testing.T, n *coordtest.Node) vocab.RecoveryInfo {
	t.Helper()
	rs := n.Store.Recoveries()
	require.NotEmpty(t, rs)
	require.Equal(t, "done", rs[0].Stage, "%+v", rs[0])
	return rs[0]
}

// same requires every copy to hold the same documents.
func same(t *testing.T, byCopy map[string]map[string]string) {
	t.Helper()
	require.Len(t, byCopy, 2)
	var docs []map[string]string
	for _, d := range byCopy {
		docs = append(docs, d)
	}
	requireSameDocs(t, docs[0], docs[1], "copies")
}

// requireSameDocs compares two copies' documents, naming the differences
// rather than printing both.
func requireSameDocs(t *testing.T, a, b map[string]string, what string) {
	t.Helper()
	var onlyA, onlyB, differ []string
	for id, src := range a {
		other, ok := b[id]
		switch {
		case !ok:
			onlyA = append(onlyA, id)
		case other != src:
			differ = append(differ, id)
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			onlyB = append(onlyB, id)
		}
	}
	require.True(t, len(onlyA)+len(onlyB)+len(differ) == 0, "%s: %d vs %d documents; only in the first %v, only in the second %v, different %v",
		what, len(a), len(b), onlyA, onlyB, differ)
}

// deposePrimary has the cluster promote the replica of index name's shard
// 0 (term 2) while the primary's node keeps its old view, as a node cut off
// from the leader would: its copy still believes it is the primary of term
// 1. It returns that node, the old primary, and the other node.
func deposePrimary(t *testing.T, tc *coordtest.Cluster, name string) (old *coordtest.Node, p state.Copy, other *coordtest.Node) {
	t.Helper()
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	p, _ = ix.Shards[0].Primary()
	tc.MC.Freeze(p.NodeID)
	require.NoError(t, tc.MC.Node("leader").CopyFailed(context.Background(), ix.UUID, 0, p.AllocationID, 0, false, "partitioned"))
	awaitTermOnOthers(t, tc, p.NodeID, name, 2)
	for id, n := range tc.Nodes {
		if id != p.NodeID {
			other = n
		}
	}
	sc, ok := tc.Nodes[p.NodeID].Store.CopyOf(p.AllocationID)
	require.True(t, ok)
	require.True(t, sc.IsPrimary(), "the old primary was meant not to have heard of its replacement")
	return tc.Nodes[p.NodeID], p, other
}

// TestDeposedPrimaryAcknowledgesNothing: a primary cut off from the
// cluster (its replica was promoted meanwhile) cannot acknowledge a write:
// the new primary refuses its term, and failing that copy through the
// cluster is refused too.
func TestDeposedPrimaryAcknowledgesNothing(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "d", 1, nodes)
	old, p, _ := deposePrimary(t, tc, "d")
	sc, _ := old.Store.CopyOf(p.AllocationID)
	items := []shard.Item{{Op: &vocab.Op{Type: vocab.OpIndex, ID: "x", Source: json.RawMessage(`{"a":1}`)}, Result: &vocab.OpResult{}}}
	require.NoError(t, sc.Write(items))
	require.Error(t, items[0].Result.Err, "a deposed primary acknowledged a write")
	require.ErrorIs(t, items[0].Result.Err, vocab.ErrUnavailable)
}

// TestDeposedPrimaryServesNoStaleRead: a primary that has not heard that
// its replica was promoted (and took a write) does not answer a realtime
// get with what it has: its replication group refuses its term.
func TestDeposedPrimaryServesNoStaleRead(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "s", 1, nodes)
	write := func(n *coordtest.Node, val int) {
		res, err := n.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "s", ID: "x", Source: json.RawMessage(fmt.Sprintf(`{"v":%d}`, val))}}, coord.WriteOptions{})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
	}
	for _, n := range tc.Nodes {
		write(n, 1)
		break
	}
	old, p, other := deposePrimary(t, tc, "s")
	write(other, 2)
	d, err := other.Get(context.Background(), "s", "x", "")
	require.NoError(t, err)
	require.JSONEq(t, `{"v":2}`, string(d.Source))

	docs, found, err := old.Store.Get(context.Background(), shard.Header{Alloc: p.AllocationID}, []string{"x"})
	require.ErrorIs(t, err, vocab.ErrStaleRouting, "the deposed primary answered a realtime get: found %v, %v", found, docs)
}

// TestDeposedPrimaryReportsNoStaleConflict: a conditional write sent to a
// primary that has not heard of its replacement gets no 409 read from its
// stale copy (the document moved on at the new primary, whose seq_no and
// term the write names); nor does a create of a document it lacks, nor a
// noop: each is a read of the state and is confirmed like a realtime get.
func TestDeposedPrimaryReportsNoStaleConflict(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "c", 1, nodes)
	var first *coordtest.Node
	for _, n := range tc.Nodes {
		first = n
		break
	}
	res, err := first.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "c", ID: "x", Source: json.RawMessage(`{"v":1}`)}}, coord.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	old, p, other := deposePrimary(t, tc, "c")
	res, err = other.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "c", ID: "x", Source: json.RawMessage(`{"v":2}`)}}, coord.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	seq, term := res[0].SeqNo, res[0].PrimaryTerm

	sc, ok := old.Store.CopyOf(p.AllocationID)
	require.True(t, ok)
	for _, op := range []*vocab.Op{
		{Type: vocab.OpIndex, ID: "x", Source: json.RawMessage(`{"v":3}`), IfSeqNo: &seq, IfPrimaryTerm: &term},
		{Type: vocab.OpUpdate, ID: "x", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"v":1}`)}},
	} {
		items := []shard.Item{{Op: op, Result: &vocab.OpResult{}}}
		require.NoError(t, sc.Write(items))
		require.ErrorIs(t, items[0].Result.Err, vocab.ErrUnavailable, "the deposed primary answered %v from its stale copy: %v %s", op.Type, items[0].Result.Err, items[0].Result.Result)
	}
}

func awaitTermOnOthers(t *testing.T, tc *coordtest.Cluster, except, name string, term uint64) {
	t.Helper()
	for id, n := range tc.Nodes {
		if id == except {
			continue
		}
		require.Eventually(t, func() bool {
			ix, _ := tc.MC.Node(id).State().Index(name)
			p, _ := ix.Shards[0].Primary()
			sc, ok := n.Store.CopyOf(p.AllocationID)
			return ok && sc.IsPrimary() && sc.Term() == term
		}, 10*time.Second, 5*time.Millisecond)
	}
}

// replicaOf returns the shard's primary and its replica.
func replicaOf(t *testing.T, tc *coordtest.Cluster, name string) (p, r state.Copy) {
	t.Helper()
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	for _, c := range ix.Shards[0].Copies {
		if c.Primary {
			p = c
		} else {
			r = c
		}
	}
	require.NotEmpty(t, p.AllocationID)
	require.NotEmpty(t, r.AllocationID)
	return p, r
}

// TestReplicaRefusesWhatWouldDiverge: a replica answers an operation of a
// stale primary term, one past a gap in its sequence numbers, and a
// corrupted one, each with its coded error, and applies none of them.
func TestReplicaRefusesWhatWouldDiverge(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "div", 1, nodes)
	p, r := replicaOf(t, tc, "div")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "div", ids[:20], sources[:20])
	before := copyDocs(t, tc, "div", 0)
	rc, ok := tc.Nodes[r.NodeID].Store.CopyOf(r.AllocationID)
	require.True(t, ok)
	next := rc.NextSeq()

	v := tc.MC.Node("x").State()
	ix, _ := v.Index("div")
	msg := func(term, seq uint64) []byte {
		rec := shardlog.Record{Term: term, Seq: seq, Version: 1, ID: "intruder", Source: []byte(`{"subject":"not replicated"}`)}
		return shard.ReplicateRequest(v.ClusterUUID, ix.UUID, 0, r.AllocationID, term, ix.MappingVersion, []shardlog.Record{rec})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := tc.Net.Node("tester").Dial(ctx, r.NodeID)
	require.NoError(t, err)
	defer conn.Close()
	send := func(payload []byte) error {
		_, err := conn.Call(ctx, shard.MethodReplicate, payload)
		return err
	}

	require.ErrorIs(t, shard.FromRemote(send(msg(0, next))), vocab.ErrStaleRouting, "an operation of an older primary term")
	require.ErrorIs(t, shard.FromRemote(send(msg(1, next+3))), shard.ErrSeqGap, "an operation past a gap")
	corrupt := msg(1, next)
	corrupt[len(corrupt)-5] ^= 0x40 // inside the record's bytes: its checksum no longer matches
	var re *fabric.RemoteError
	require.ErrorAs(t, send(corrupt), &re, "a corrupted operation")
	require.Equal(t, fabric.CodeBadRequest, re.Code, "%v", re)
	require.Equal(t, before, copyDocs(t, tc, "div", 0), "the replica applied something it refused")
}

// TestCorruptedReplicationIsRecovered: a replication message corrupted on
// the wire fails that call; the primary fails the replica out of the
// in-sync set before it acknowledges, and the replica recovers (ops-based)
// to the same documents as the primary.
func TestCorruptedReplicationIsRecovered(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "cor", 1, nodes)
	p, r := replicaOf(t, tc, "cor")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "cor", ids[:10], sources[:10])
	var corrupted atomic.Bool
	remove := tc.Net.AddFault(p.NodeID, r.NodeID, func(m fabrictest.Message) fabrictest.Action {
		if m.Method == shard.MethodReplicate && !m.Reply && corrupted.CompareAndSwap(false, true) {
			return fabrictest.Action{Corrupt: true}
		}
		return fabrictest.Action{}
	})
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "cor", ids[10:20], sources[10:20])
	remove()
	require.True(t, corrupted.Load(), "no replication message was corrupted")
	require.NotContains(t, tc.MC.Node("x").State().Indices["cor"].Shards[0].InSync, r.AllocationID,
		"the write was acknowledged while the replica that missed it stayed in sync")
	coordtest.AwaitInSync(t, tc, "cor", 2)
	require.Equal(t, vocab.RecoveryOps, latestRecovery(t, tc.Nodes[r.NodeID]).Mode)
	docs := copyDocs(t, tc, "cor", 0)
	same(t, docs)
	for _, d := range docs {
		require.Len(t, d, 20)
	}
}

// fullDisk is the operating system's file system whose file writes fail
// with ENOSPC while full is set.
type fullDisk struct {
	vfs.FS
	full *atomic.Bool
}

type fullDiskFile struct {
	vfs.File
	full *atomic.Bool
}

func (d fullDisk) Create(name string) (vfs.File, error) { return d.wrap(d.FS.Create(name)) }
func (d fullDisk) OpenRW(name string) (vfs.File, error) { return d.wrap(d.FS.OpenRW(name)) }

func (d fullDisk) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return fullDiskFile{f, d.full}, nil
}

func (f fullDiskFile) WriteAt(p []byte, off int64) (int, error) {
	if f.full.Load() {
		return 0, &os.PathError{Op: "write", Path: "shard log", Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

// TestReplicaOutOfDiskFailsTheCopyNotTheWrite: a replica whose disk is
// full cannot log a replicated write; the write is acknowledged all the
// same, after the replica left the in-sync set, and once the disk has room
// again the replica recovers to the primary's documents.
func TestReplicaOutOfDiskFailsTheCopyNotTheWrite(t *testing.T) {
	nodes := []string{"n1", "n2"}
	full := map[string]*atomic.Bool{"n1": new(atomic.Bool), "n2": new(atomic.Bool)}
	tc := coordtest.NewClusterWith(t, func(id string) shard.Config {
		c := coordtest.NodeConfig()
		c.LogFS = fullDisk{vfs.OS, full[id]}
		return c
	}, nodes...)
	withReplicas(t, tc, "disk", 1, nodes)
	p, r := replicaOf(t, tc, "disk")
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "disk", ids[:10], sources[:10])

	full[r.NodeID].Store(true)
	coordtest.BulkIndex(t, tc.Nodes[p.NodeID], "disk", ids[10:20], sources[10:20]) // every item acknowledged
	require.NotContains(t, tc.MC.Node("x").State().Indices["disk"].Shards[0].InSync, r.AllocationID,
		"the write was acknowledged while the replica that could not log it stayed in sync")

	full[r.NodeID].Store(false)
	coordtest.AwaitInSync(t, tc, "disk", 2)
	docs := copyDocs(t, tc, "disk", 0)
	same(t, docs)
	for _, d := range docs {
		require.Len(t, d, 20)
	}
}

// TestOnlyCopyOutOfDiskComesBack: the only copy of a shard (no replicas)
// whose disk fills fails its write and its log; once the disk has room
// again its node reopens it (no restart) with every acknowledged document,
// and it takes writes again.
func TestOnlyCopyOutOfDiskComesBack(t *testing.T) {
	full := new(atomic.Bool)
	tc := coordtest.NewClusterWith(t, func(string) shard.Config {
		c := coordtest.NodeConfig()
		c.LogFS = fullDisk{vfs.OS, full}
		return c
	}, "n1")
	n := tc.Nodes["n1"]
	require.NoError(t, n.CreateIndex(context.Background(), "solo", coord.IndexSettings{NumberOfShards: 1}, coordtest.SampleMapping(t)))
	ids, sources := coordtest.SampleDocs(t)
	coordtest.BulkIndex(t, n, "solo", ids[:10], sources[:10])

	full.Store(true)
	res, err := n.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "solo", ID: ids[10], Source: sources[10]}}, coord.WriteOptions{})
	require.NoError(t, err)
	require.Error(t, res[0].Err, "a write was acknowledged on a full disk")
	full.Store(false)
	require.Eventually(t, func() bool {
		res, err := n.Bulk(context.Background(), []vocab.Op{{Type: vocab.OpIndex, Index: "solo", ID: ids[11], Source: sources[11]}}, coord.WriteOptions{})
		return err == nil && res[0].Err == nil
	}, 30*time.Second, 100*time.Millisecond, "the shard never took writes again")
	for _, id := range append(ids[:10:10], ids[11]) {
		_, err := n.Get(context.Background(), "solo", id, "")
		require.NoError(t, err, "acknowledged document %s", id)
	}
}

// TestWaitForActiveShards: a write asking for every copy waits for them and
// fails with 503 when a replica stays down; the default (the primary)
// proceeds.
func TestWaitForActiveShards(t *testing.T) {
	nodes := []string{"n1", "n2"}
	tc := coordtest.NewCluster(t, nodes...)
	withReplicas(t, tc, "a", 1, nodes)
	ix, _ := tc.MC.Node("x").State().Index("a")
	p, _ := ix.Shards[0].Primary()
	n := tc.Nodes[p.NodeID]
	write := func(ctx context.Context, id string, active int) vocab.OpResult {
		res, err := n.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: "a", ID: id, Source: json.RawMessage(`{}`)}}, coord.WriteOptions{WaitForActiveShards: active})
		require.NoError(t, err)
		return res[0]
	}
	require.NoError(t, write(context.Background(), "1", coord.AllShards).Err)
	for _, id := range nodes {
		if id != p.NodeID {
			tc.Kill(id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := write(ctx, "2", coord.AllShards)
	require.ErrorIs(t, r.Err, vocab.ErrUnavailable)
	require.ErrorContains(t, r.Err, "have 1, needed 2")
	require.NoError(t, write(context.Background(), "3", 0).Err)
}
