package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/testlog"
)

func testConfig() Config {
	c := DefaultConfig()
	c.LogSegmentBytes = 64 << 10
	return c
}

// testNode is one node of a test: the coordinator over its own store, with
// metadata from a memCluster.
type testNode struct {
	*Coordinator
	mc  *memCluster
	dir string
}

// openManager opens a single-node cluster whose data and metadata live in
// dir (reopening what an earlier call left there).
func openManager(t testing.TB, dir string) *testNode {
	t.Helper()
	mc := newMemCluster(t, filepath.Join(dir, "test-meta.json"), "n1")
	return startNode(t, mc, "n1", dir, nil)
}

// startNode starts node id of mc with its store in dir and peers to reach
// the others (nil: none), and waits until it has opened every copy the
// shard table assigns to it.
func startNode(t testing.TB, mc *memCluster, id, dir string, peers Peers) *testNode {
	return startNodeWith(t, mc, id, dir, peers, testConfig(), nil)
}

// startNodeWith is startNode with a configuration, and register (when not
// nil) called before the node starts (to serve the fabric).
func startNodeWith(t testing.TB, mc *memCluster, id, dir string, peers Peers, cfg Config, register func(*Coordinator)) *testNode {
	t.Helper()
	meta := mc.node(id)
	st, err := OpenStore(filepath.Join(dir, "shards"), cfg, meta, peers, testlog.New(t))
	require.NoError(t, err)
	n := &testNode{Coordinator: NewCoordinator(st, cfg, testlog.New(t)), mc: mc, dir: dir}
	if register != nil {
		register(n.Coordinator)
	}
	n.Start()
	n.awaitOpen(t)
	return n
}

// awaitOpen waits until every copy assigned to this node is open.
func (n *testNode) awaitOpen(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		v := n.meta.View()
		for _, ix := range v.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if _, ok := n.store.copy(c.AllocationID); c.NodeID == v.LocalNode && !ok {
						return false
					}
				}
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond)
}

// primary returns this node's open primary copy of the shard.
func (n *testNode) primary(t testing.TB, name string, num int) *shardCopy {
	t.Helper()
	ix, err := n.meta.View().Index(name)
	require.NoError(t, err)
	p, ok := ix.Shards[num].Primary()
	require.True(t, ok)
	sc, ok := n.store.copy(p.AllocationID)
	require.True(t, ok, "%s/%d is not open on this node", name, num)
	return sc
}

// Searchers returns searchers of this node's open copies of the named
// indexes, one per shard.
func (n *testNode) Searchers(names []string) ([]ShardSearcher, error) {
	v := n.meta.View()
	var out []ShardSearcher
	for _, name := range names {
		ix, err := v.Index(name)
		if err != nil {
			return nil, err
		}
		for num, sh := range ix.Shards {
			p, _ := sh.Primary()
			sc, ok := n.store.copy(p.AllocationID)
			if !ok {
				return nil, fmt.Errorf("shard %s/%d is not open here", name, num)
			}
			out = append(out, &localSearcher{name: fmt.Sprintf("%s/%d", name, num), idx: sc.idx})
		}
	}
	return out, nil
}

// searchBleve runs a bleve request over this node's copies of the named
// indexes, as Search does for copies it holds.
func (n *testNode) searchBleve(ctx context.Context, names []string, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	ss, err := n.Searchers(names)
	if err != nil {
		return nil, err
	}
	return SearchShards(ctx, ss, req)
}

// sampleDocs loads testdata/sample/emails.ndjson: id and source per line.
func sampleDocs(t testing.TB) (ids []string, sources []json.RawMessage) {
	t.Helper()
	f, err := os.Open("../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d struct {
			ID string `json:"id"`
		}
		line := append([]byte(nil), sc.Bytes()...)
		require.NoError(t, json.Unmarshal(line, &d))
		ids = append(ids, d.ID)
		sources = append(sources, line)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, ids)
	return ids, sources
}

func sampleMapping(t testing.TB) *index.Mapping {
	t.Helper()
	raw, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(t, err)
	mp, err := index.ParseMapping(raw)
	require.NoError(t, err)
	return mp
}

func bulkIndex(t *testing.T, m *testNode, name string, ids []string, sources []json.RawMessage) {
	t.Helper()
	ops := make([]Op, len(ids))
	for k := range ids {
		ops[k] = Op{Type: OpIndex, Index: name, ID: ids[k], Source: sources[k]}
	}
	res, err := m.Bulk(context.Background(), ops, WriteOptions{Refresh: RefreshFalse})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
	}
}
