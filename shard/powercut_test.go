package shard_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

var powerCutSeed = flag.Uint64("powercut.seed", 0, "seed of TestPowerCut (0: a new one, printed)")

// errPowerCut is the error of every file system operation of a node whose
// power was cut.
var errPowerCut = errors.New("power cut")

// ackedOp is the last acknowledged operation on a document id.
type ackedOp struct {
	deleted bool
	seq     uint64
	version int64
	term    uint64
	source  string
}

// cutCluster is a coordtest cluster whose nodes write their shard logs on
// their own strict in-memory file system (vfs.MemFS), one index with one
// shard and a replica on every other node, and the acknowledged state of
// every document written to it.
type cutCluster struct {
	tc     *coordtest.Cluster
	fs     map[string]*vfs.MemFS
	nodes  []string
	name   string
	acked  map[string]ackedOp
	nextID int
}

// newCutCluster starts nodes, creates index name with one shard, its
// primary on nodes[0]'s choice and a replica on each other node, and waits
// until every copy is in sync.
func newCutCluster(t *testing.T, name string, nodes ...string) *cutCluster {
	fss := map[string]*vfs.MemFS{}
	for _, id := range nodes {
		fss[id] = vfs.NewMem()
	}
	tc := coordtest.NewClusterWith(t, func(id string) shard.Config {
		c := coordtest.NodeConfig()
		c.LogFS = fss[id]
		return c
	}, nodes...)
	// The data directory exists, durably, before the node starts (as on a
	// real disk, where it was made long before): the log's file system holds
	// it too, so that a crash does not lose the copies' directories above it.
	for _, id := range nodes {
		durableMkdirAll(t, fss[id], filepath.Join(tc.Dirs[id], "shards"))
	}
	n := tc.Nodes[nodes[0]]
	require.NoError(t, n.CreateIndex(context.Background(), name, coord.IndexSettings{NumberOfShards: 1, NumberOfReplicas: len(nodes) - 1}, nil))
	ix, err := tc.MC.Node("x").State().Index(name)
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	for _, id := range nodes {
		if id != p.NodeID {
			tc.MC.AddReplica(t, name, 0, id)
		}
	}
	coordtest.AwaitInSync(t, tc, name, len(nodes))
	return &cutCluster{tc: tc, fs: fss, nodes: nodes, name: name, acked: map[string]ackedOp{}}
}

// durableMkdirAll creates dir on m with every directory above it, each
// entry synced.
func durableMkdirAll(t *testing.T, m *vfs.MemFS, dir string) {
	require.NoError(t, m.MkdirAll(dir))
	for d := dir; ; d = filepath.Dir(d) {
		require.NoError(t, m.SyncDir(d))
		if filepath.Dir(d) == d {
			return
		}
	}
}

// primaryNode returns the node of the shard's primary.
func (c *cutCluster) primaryNode(t *testing.T) string {
	ix, err := c.tc.MC.Node("x").State().Index(c.name)
	require.NoError(t, err)
	p, ok := ix.Shards[0].Primary()
	require.True(t, ok)
	return p.NodeID
}

// inSync returns the in-sync copies of the shard: allocation ID → node.
func (c *cutCluster) inSync(t *testing.T) map[string]string {
	ix, err := c.tc.MC.Node("x").State().Index(c.name)
	require.NoError(t, err)
	out := map[string]string{}
	for _, cp := range ix.Shards[0].Copies {
		if slices.Contains(ix.Shards[0].InSync, cp.AllocationID) {
			out[cp.AllocationID] = cp.NodeID
		}
	}
	return out
}

// writeBatch sends one bulk of n operations through node via, new
// documents, overwrites and deletes of earlier ones, and records what was
// acknowledged. Every operation must be acknowledged by every in-sync copy.
func (c *cutCluster) writeBatch(t *testing.T, rng *rand.Rand, via string, n int) {
	var ops []vocab.Op
	seen := map[string]bool{}
	for range n {
		var known []string
		for id, a := range c.acked {
			if !a.deleted && !seen[id] {
				known = append(known, id)
			}
		}
		slices.Sort(known)
		switch r := rng.IntN(10); {
		case r < 2 && len(known) > 0:
			id := known[rng.IntN(len(known))]
			seen[id] = true
			ops = append(ops, vocab.Op{Type: vocab.OpDelete, Index: c.name, ID: id})
		case r < 4 && len(known) > 0:
			id := known[rng.IntN(len(known))]
			seen[id] = true
			ops = append(ops, vocab.Op{Type: vocab.OpIndex, Index: c.name, ID: id, Source: json.RawMessage(fmt.Sprintf(`{"v":%d}`, rng.IntN(1000)))})
		default:
			id := fmt.Sprintf("d%d", c.nextID)
			c.nextID++
			seen[id] = true
			ops = append(ops, vocab.Op{Type: vocab.OpIndex, Index: c.name, ID: id, Source: json.RawMessage(fmt.Sprintf(`{"v":%d,"pad":%q}`, rng.IntN(1000), strings.Repeat("x", rng.IntN(300))))})
		}
	}
	copies := len(c.inSync(t))
	res, err := c.tc.Nodes[via].Bulk(context.Background(), ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	for k, r := range res {
		require.NoError(t, r.Err, "%s of %s", r.Result, r.ID)
		require.Equal(t, copies, r.Copies, "%s of %s: acknowledged by every in-sync copy", r.Result, r.ID)
		a := ackedOp{deleted: ops[k].Type == vocab.OpDelete, seq: r.SeqNo, version: r.Version, term: r.PrimaryTerm}
		if !a.deleted {
			a.source = string(ops[k].Source)
		}
		c.acked[r.ID] = a
	}
}

// cutPower stops the nodes ids as a power cut would, right now: their file
// systems halt (no write, fsync or closing sync mark reaches them any
// more), the nodes go down, and each file system loses what was not
// fsynced. It returns, by node, the highest sequence number that the
// node's copy had persisted in its index when the power went: the index,
// on the operating system's disk, is closed cleanly below (scorch persists
// what it applied), so from the crashed log alone each copy must hold every
// acknowledged operation above it.
func (c *cutCluster) cutPower(t *testing.T, ids []string) map[string]uint64 {
	persisted := map[string]uint64{}
	for _, id := range ids {
		c.fs[id].SetFaults(func(vfs.Op) vfs.Fault { return vfs.Fault{Err: errPowerCut, Halt: true} })
		for alloc, node := range c.inSync(t) {
			if node == id {
				sc, ok := c.tc.Nodes[id].Store.CopyOf(alloc)
				require.True(t, ok)
				persisted[id] = sc.Index().PersistedSeq()
			}
		}
	}
	for _, id := range ids {
		c.tc.Kill(id)
		c.fs[id].SetFaults(nil)
		c.fs[id].Crash()
	}
	return persisted
}

// requireLogHolds opens the log of node id's copy on its crashed file
// system and requires it to hold every acknowledged operation above
// persisted (what the copy's index had persisted when the power went).
func (c *cutCluster) requireLogHolds(t *testing.T, id string, persisted uint64, what string) {
	var alloc string
	for a, node := range c.inSync(t) {
		if node == id {
			alloc = a
		}
	}
	lg, err := shardlog.Open(c.fs[id], filepath.Join(c.tc.Dirs[id], "shards", alloc, "log"), coordtest.NodeConfig().LogSegmentBytes, testlog.New(t))
	require.NoError(t, err, "%s: the log of %s", what, id)
	defer lg.Close()
	logged := map[uint64]shardlog.Record{}
	require.NoError(t, lg.Replay(persisted, func(r *shardlog.Record) error {
		logged[r.Seq] = *r
		return nil
	}))
	var missing []string
	for docID, a := range c.acked {
		if a.seq <= persisted {
			continue
		}
		r, ok := logged[a.seq]
		if !ok || r.ID != docID || r.Delete != a.deleted || r.Term != a.term {
			missing = append(missing, fmt.Sprintf("%s (seq %d)", docID, a.seq))
		}
	}
	require.Zero(t, len(missing), "%s: the log of %s's copy lost %d acknowledged operations above seq %d (its index's persisted state): %s",
		what, id, len(missing), persisted, firstFew(missing))
}

// requireCopyHolds reads node id's copy of the shard directly (not through
// the primary) and requires it to hold every acknowledged document with
// its sequence number, version and source, none that was deleted, and
// nothing else.
func (c *cutCluster) requireCopyHolds(t *testing.T, id string, what string) {
	var alloc string
	for a, node := range c.inSync(t) {
		if node == id {
			alloc = a
		}
	}
	require.NotEmpty(t, alloc, "%s: %s holds an in-sync copy", what, id)
	idx, err := c.tc.Nodes[id].Store.Readable(alloc)
	require.NoError(t, err, "%s: %s's copy", what, id)
	var wrong []string
	live := 0
	for docID, a := range c.acked {
		d, found, err := idx.Get(docID)
		require.NoError(t, err)
		switch {
		case a.deleted && found:
			wrong = append(wrong, fmt.Sprintf("%s: deleted at seq %d, found at seq %d", docID, a.seq, d.SeqNo))
		case a.deleted:
		case !found:
			wrong = append(wrong, fmt.Sprintf("%s: missing (seq %d)", docID, a.seq))
		case d.SeqNo != a.seq || d.Version != a.version || d.PrimaryTerm != a.term:
			wrong = append(wrong, fmt.Sprintf("%s: seq/version/term %d/%d/%d, acknowledged %d/%d/%d", docID, d.SeqNo, d.Version, d.PrimaryTerm, a.seq, a.version, a.term))
		case string(d.Source) != a.source:
			wrong = append(wrong, fmt.Sprintf("%s: source %s, acknowledged %s", docID, d.Source, a.source))
		}
		if !a.deleted {
			live++
		}
	}
	require.Zero(t, len(wrong), "%s: %s's copy differs from what was acknowledged for %d documents: %s", what, id, len(wrong), firstFew(wrong))
	require.EqualValues(t, live, idx.Stats().DocCount, "%s: %s's copy holds only acknowledged documents", what, id)
}

// firstFew sorts list and returns its first few entries, to name a
// failure without printing hundreds.
func firstFew(list []string) string {
	slices.Sort(list)
	if len(list) > 8 {
		return strings.Join(list[:8], ", ") + ", …"
	}
	return strings.Join(list, ", ")
}

// TestPowerCut cuts the power under a replica, under the primary, and under
// both (with two replicas: under each set of copies), right after a bulk
// was acknowledged by every in-sync copy. The nodes' shard logs are on
// strict in-memory file systems that lose every byte and directory entry
// not fsynced. Then:
//   - each cut copy's crashed log holds every acknowledged operation above
//     what its index had persisted;
//   - each cut node, restarted, serves its in-sync copy from its own disk
//     (the shard table never heard of the cut, so nothing recovers it) with
//     every acknowledged document at its sequence number — checked before
//     the other cut nodes come back, so no resync fills a gap in;
//   - once all are back, a new bulk is acknowledged by every copy (none is
//     failed for a sequence gap) and every copy holds everything.
//
// Several rounds per cluster; the seed is printed (-powercut.seed=N
// replays it).
func TestPowerCut(t *testing.T) {
	seed := *powerCutSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./shard -run TestPowerCut -args -powercut.seed=%d)", seed, seed)
	for _, tt := range []struct {
		name  string
		nodes []string
	}{
		{"primary and replica", []string{"n1", "n2"}},
		{"primary and two replicas", []string{"n1", "n2", "n3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(tt.nodes))))
			c := newCutCluster(t, "pc", tt.nodes...)
			p := c.primaryNode(t)
			var replicas []string
			for _, id := range tt.nodes {
				if id != p {
					replicas = append(replicas, id)
				}
			}
			cuts := [][]string{{replicas[0]}, {p}, {p, replicas[0]}}
			if len(replicas) > 1 {
				cuts = append(cuts, replicas, append([]string{p}, replicas...))
			}
			for round, cut := range cuts {
				what := fmt.Sprintf("round %d (power cut under %v; primary %s)", round, cut, p)
				for range 1 + rng.IntN(3) {
					c.writeBatch(t, rng, tt.nodes[rng.IntN(len(tt.nodes))], 20+rng.IntN(60))
				}
				last := uint64(0)
				for _, a := range c.acked {
					last = max(last, a.seq)
				}
				persisted := c.cutPower(t, cut)
				for _, id := range cut {
					t.Logf("%s: %s's index had persisted up to seq %d of %d", what, id, persisted[id], last)
					c.requireLogHolds(t, id, persisted[id], what)
				}
				// Replicas come back first, each checked while the primary
				// (if it was cut) is down: nothing has resynced them.
				cut = slices.Clone(cut)
				slices.SortFunc(cut, func(a, b string) int {
					if (a == p) != (b == p) {
						if a == p {
							return 1
						}
						return -1
					}
					return strings.Compare(a, b)
				})
				for _, id := range cut {
					c.tc.Revive(id)
					c.requireCopyHolds(t, id, what+", restarted")
				}
				require.Len(t, c.inSync(t), len(tt.nodes), "%s: every copy is still in sync", what)
				c.writeBatch(t, rng, tt.nodes[rng.IntN(len(tt.nodes))], 10)
				require.Len(t, c.inSync(t), len(tt.nodes), "%s: every copy is still in sync after a write", what)
				for _, id := range tt.nodes {
					c.requireCopyHolds(t, id, what+", after a write")
				}
			}
		})
	}
}
