package shard

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

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
)

// slowRecovery throttles file-based recovery so that a test can act while
// the files stream: the sample index (about 2 MB) takes seconds.
func slowRecovery() func(string) Config {
	return func(string) Config {
		c := testConfig()
		c.RecoveryMaxBytesPerSec = 1 << 20
		return c
	}
}

// oneShardIndex creates name with one shard and no replica, loads the
// first n sample documents into it, and returns the node of its primary
// and another node.
func oneShardIndex(t *testing.T, tc *testCluster, name string, n int) (primary, other string) {
	t.Helper()
	first := tc.nodes["n1"]
	require.NoError(t, first.CreateIndex(context.Background(), name, IndexSettings{NumberOfShards: 1}, sampleMapping(t)))
	ix, err := tc.mc.node("x").View().Index(name)
	require.NoError(t, err)
	p, _ := ix.Shards[0].Primary()
	primary, other = p.NodeID, "n1"
	if primary == "n1" {
		other = "n2"
	}
	ids, sources := sampleDocs(t)
	bulkIndex(t, tc.nodes[primary], name, ids[:n], sources[:n])
	return primary, other
}

// recoveryOf returns node n's latest recovery of the copy alloc.
func recoveryOf(n *testNode, alloc string) (RecoveryInfo, bool) {
	for _, r := range n.store.Recoveries() {
		if r.AllocationID == alloc {
			return r, true
		}
	}
	return RecoveryInfo{}, false
}

// leftovers lists the recovery directories (staging, snapshots) in node
// id's store.
func leftovers(t *testing.T, tc *testCluster, id string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(tc.dirs[id], "shards"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) || strings.HasPrefix(e.Name(), snapshotPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFileRecoveryKeepsWritesMadeDuringIt: writes go on at the primary
// while a new replica copies its files; once the replica is in sync it
// holds every acknowledged write, and the same documents as the primary.
func TestFileRecoveryKeepsWritesMadeDuringIt(t *testing.T) {
	tc := newTestClusterWith(t, slowRecovery(), "n1", "n2")
	p, other := oneShardIndex(t, tc, "w", 300)
	_, sources := sampleDocs(t)
	ctx := context.Background()

	var mu sync.Mutex
	var acked []string
	var duringFiles atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); <-done }
	t.Cleanup(halt) // before the cluster stops, should the test fail early
	alloc := tc.mc.addReplica(t, "w", 0, other)
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
			res, err := tc.nodes[p].Bulk(ctx, []Op{{Type: OpIndex, Index: "w", ID: id, Source: sources[300+k%100]}}, WriteOptions{Refresh: RefreshFalse})
			if err != nil || res[0].Err != nil {
				continue
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
			if r, ok := recoveryOf(tc.nodes[other], alloc); ok && r.Stage == "index" && r.BytesDone > 0 {
				duringFiles.Add(1)
			}
		}
	}()
	awaitInSync(t, tc, "w", 2)
	halt()

	require.Positive(t, duringFiles.Load(), "writes were acknowledged while the files streamed")
	rec := latestRecovery(t, tc.nodes[other])
	require.Equal(t, RecoveryFiles, rec.Mode)
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
	tc := newTestClusterWith(t, slowRecovery(), "n1", "n2")
	_, other := oneShardIndex(t, tc, "prog", 400)
	alloc := tc.mc.addReplica(t, "prog", 0, other)
	var mid RecoveryInfo
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(tc.nodes[other], alloc)
		mid = r
		return ok && r.Stage == "index" && r.BytesDone > 0
	}, 30*time.Second, time.Millisecond)
	t.Logf("mid-stream: %d of %d bytes", mid.BytesDone, mid.BytesTotal)
	require.Less(t, mid.BytesDone, mid.BytesTotal)
	awaitInSync(t, tc, "prog", 2)
	final := latestRecovery(t, tc.nodes[other])
	require.Equal(t, mid.BytesTotal, final.BytesTotal, "the total announced first is what was copied")
	require.Equal(t, final.BytesTotal, final.BytesDone)
}

// TestInterruptedFileRecoveryInstallsNothingAndStartsOver: the stream of a
// file-based recovery breaks midway (its connection fails); the target
// installs nothing of it and leaves no staging files, and once the fabric
// works again a new attempt copies the files from the start and the
// replica joins in sync with the primary's documents.
func TestInterruptedFileRecoveryInstallsNothingAndStartsOver(t *testing.T) {
	tc := newTestClusterWith(t, slowRecovery(), "n1", "n2")
	p, other := oneShardIndex(t, tc, "cut", 400)
	var broken atomic.Bool
	remove := tc.net.AddFault(p, other, func(m fabrictest.Message) fabrictest.Action {
		return fabrictest.Action{Corrupt: broken.Load() && !m.Reply && m.Method == fabric.MethodStream}
	})
	defer remove()
	alloc := tc.mc.addReplica(t, "cut", 0, other)
	target := tc.nodes[other]
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(target, alloc)
		return ok && r.Stage == "index" && r.BytesDone > 0
	}, 30*time.Second, time.Millisecond)
	broken.Store(true)
	require.Eventually(t, func() bool {
		r, ok := recoveryOf(target, alloc)
		return ok && r.Stage == "failed"
	}, 30*time.Second, time.Millisecond)

	_, open := target.store.copy(alloc)
	require.False(t, open, "no copy is open from a broken stream")
	_, err := os.Stat(filepath.Join(tc.dirs[other], "shards", alloc, "index"))
	require.ErrorIs(t, err, os.ErrNotExist, "no index is installed from a broken stream")
	require.Eventually(t, func() bool { return len(leftovers(t, tc, other)) == 0 && len(leftovers(t, tc, p)) == 0 },
		30*time.Second, 10*time.Millisecond, "staging and snapshot directories are removed")

	broken.Store(false)
	awaitInSync(t, tc, "cut", 2)
	rec := latestRecovery(t, target)
	require.Equal(t, RecoveryFiles, rec.Mode)
	require.Equal(t, rec.BytesTotal, rec.BytesDone)
	same(t, copyDocs(t, tc, "cut", 0))
	require.Empty(t, leftovers(t, tc, other))
}

// TestFileStreamRoundTrip: what fileStream reads from a directory,
// receiveFiles writes back into a recovery's staging directory, file for
// file, with the total known from the first bytes.
func TestFileStreamRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string][]byte{
		"index_meta.json":    []byte(`{"storage":"scorch"}`),
		"store/root.bolt":    randomBytes(t, 70_000),
		"store/00001.zap":    randomBytes(t, 3<<20+5),
		"store/empty.zap":    nil,
		"store/deep/x/y.bin": randomBytes(t, 10),
	}
	var total int64
	for rel, b := range files {
		p := filepath.Join(src, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		total += int64(len(b))
	}
	s := &Store{dir: t.TempDir(), expected: map[string]*recovery{}}
	rec := &recovery{}
	s.expectFiles("a@1", rec)
	fsm, err := newFileStream("a@1", src)
	require.NoError(t, err)
	defer fsm.Close()
	require.Equal(t, total, fsm.total)
	// Read in odd sizes, as fabric.SendStream's chunks cut the stream.
	r := &oddReader{r: fsm, sizes: []int{1, 7, 4096, 1 << 20, 13}}
	require.NoError(t, s.receiveFiles(context.Background(), "p", r))
	for rel, b := range files {
		got, err := os.ReadFile(filepath.Join(s.stagingDir("a@1"), "index", filepath.FromSlash(rel)))
		require.NoError(t, err, rel)
		require.Equal(t, len(b), len(got), rel)
		require.True(t, string(b) == string(got), "%s differs", rel)
	}
	require.Equal(t, total, rec.info.BytesTotal)
	require.Equal(t, total, rec.info.BytesDone)
}

// TestReceiveFilesRefusesBadStreams: a stream for no expected recovery, a
// file outside the index directory, or more bytes than announced is
// refused, and what was written of it is removed.
func TestReceiveFilesRefusesBadStreams(t *testing.T) {
	stream := func(id string, total int64, files ...streamFile) []byte {
		b := append([]byte(filesMagic), appendStr(nil, id)...)
		b = appendUint64(b, uint64(total))
		for _, f := range files {
			b = appendUint64(appendStr(b, f.rel), uint64(f.size))
			b = append(b, make([]byte, f.size)...)
		}
		return appendStr(b, "")
	}
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"an older version", []byte("WEFTREC1\x03a@1"), "not a recovery file stream"},
		{"no recovery expects it", stream("b@2", 0), "no recovery b@2"},
		{"a file outside the index", stream("a@1", 4, streamFile{"../../x", 4}), "leaves the index directory"},
		{"an absolute path", stream("a@1", 4, streamFile{"/etc/x", 4}), "leaves the index directory"},
		{"more than announced", stream("a@1", 4, streamFile{"f", 3}, streamFile{"g", 3}), "beyond the stream's total"},
		{"less than announced", stream("a@1", 9, streamFile{"f", 3}), "announced 9 bytes and carried 3"},
		{"cut short", stream("a@1", 9, streamFile{"f", 9})[:35], "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{dir: t.TempDir(), expected: map[string]*recovery{}}
			s.expectFiles("a@1", &recovery{})
			err := s.receiveFiles(context.Background(), "p", strings.NewReader(string(tc.payload)))
			require.ErrorContains(t, err, tc.want)
			_, serr := os.Stat(s.stagingDir("a@1"))
			require.ErrorIs(t, serr, os.ErrNotExist, "what was written is removed")
			entries, _ := os.ReadDir(filepath.Dir(s.dir))
			require.Len(t, entries, 1, "nothing is written beside the store")
		})
	}
}

// TestConcurrentRecoveriesShareTheNodesThrottle: two copies recover from
// one node at the same time; every byte of both file streams goes through
// that node's one throttle (whose rate TestRecoveryThrottleIsSharedByTheNodesStreams holds
// across streams).
func TestConcurrentRecoveriesShareTheNodesThrottle(t *testing.T) {
	tc := newTestClusterWith(t, slowRecovery(), "n1", "n2", "n3")
	ctx := context.Background()
	// Primaries go to the least loaded node: a on n1, the pads on n2 and
	// n3, b on n1 again.
	for _, name := range []string{"a", "pad2", "pad3", "b"} {
		require.NoError(t, tc.nodes["n1"].CreateIndex(ctx, name, IndexSettings{NumberOfShards: 1}, sampleMapping(t)))
	}
	ids, sources := sampleDocs(t)
	for _, name := range []string{"a", "b"} {
		ix, err := tc.mc.node("x").View().Index(name)
		require.NoError(t, err)
		p, _ := ix.Shards[0].Primary()
		require.Equal(t, "n1", p.NodeID)
		bulkIndex(t, tc.nodes["n1"], name, ids[:300], sources[:300])
	}
	throttle := tc.nodes["n1"].store.throttle
	before := throttle.admitted.Load()
	allocA, allocB := tc.mc.addReplica(t, "a", 0, "n2"), tc.mc.addReplica(t, "b", 0, "n2")
	target := tc.nodes["n2"]
	awaitInSync(t, tc, "a", 2)
	awaitInSync(t, tc, "b", 2)
	ra, _ := recoveryOf(target, allocA)
	rb, _ := recoveryOf(target, allocB)
	require.Equal(t, RecoveryFiles, ra.Mode)
	require.Equal(t, RecoveryFiles, rb.Mode)
	require.True(t, ra.Started.Before(rb.Stopped) && rb.Started.Before(ra.Stopped), "the recoveries overlap: %+v %+v", ra, rb)
	files := ra.BytesTotal + rb.BytesTotal
	sent := throttle.admitted.Load() - before
	// The streams also carry the files' names and sizes.
	require.GreaterOrEqual(t, sent, files)
	require.Less(t, sent, files+64<<10, "the throttle let through %d bytes for %d bytes of files", sent, files)
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

func appendUint64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// oddReader reads from r in the sizes given, in turn.
type oddReader struct {
	r     interface{ Read([]byte) (int, error) }
	sizes []int
	k     int
}

func (o *oddReader) Read(p []byte) (int, error) {
	n := min(len(p), o.sizes[o.k%len(o.sizes)])
	o.k++
	return o.r.Read(p[:n])
}

// FuzzReceiveFiles feeds arbitrary file streams to a target: it never
// panics, writes nothing outside the recovery's staging directory, keeps
// nothing of a stream it refuses, and what it accepts holds exactly the
// bytes the stream announced.
func FuzzReceiveFiles(f *testing.F) {
	stream := func(total int64, files ...streamFile) []byte {
		b := append([]byte(filesMagic), appendStr(nil, "a@1")...)
		b = appendUint64(b, uint64(total))
		for _, sf := range files {
			b = appendUint64(appendStr(b, sf.rel), uint64(sf.size))
			b = append(b, make([]byte, sf.size)...)
		}
		return appendStr(b, "")
	}
	f.Add(stream(0))
	f.Add(stream(7, streamFile{"index_meta.json", 3}, streamFile{"store/root.bolt", 4}))
	f.Add(stream(3, streamFile{"../x", 3}))
	f.Add(stream(1<<40, streamFile{"big", 5}))
	f.Fuzz(func(t *testing.T, p []byte) {
		base := t.TempDir()
		s := &Store{dir: filepath.Join(base, "shards"), expected: map[string]*recovery{}}
		require.NoError(t, os.Mkdir(s.dir, 0o755))
		s.expectFiles("a@1", &recovery{})
		err := s.receiveFiles(context.Background(), "fuzz", strings.NewReader(string(p)))
		var written int64
		require.NoError(t, filepath.WalkDir(base, func(path string, d os.DirEntry, werr error) error {
			if werr != nil || d.IsDir() {
				return werr
			}
			rel, _ := filepath.Rel(s.stagingDir("a@1"), path)
			require.True(t, filepath.IsLocal(rel), "%s was written outside the staging directory", path)
			info, ierr := d.Info()
			require.NoError(t, ierr)
			written += info.Size()
			return nil
		}))
		if err != nil {
			require.Zero(t, written, "a refused stream leaves nothing behind")
			return
		}
		require.Equal(t, s.expected["a@1"].info.BytesTotal, written)
	})
}
