package coordtest

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
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// NodeConfig is a node's configuration for tests: the defaults with small
// shard log segments, so tests roll and trim segments.
func NodeConfig() shard.Config {
	c := shard.DefaultConfig()
	c.LogSegmentBytes = 64 << 10
	return c
}

// CoordConfig is the coordinator's configuration beside a data node's:
// the defaults, with a refresh waiting for the copies as long as a write
// does (as the node sets it).
func CoordConfig(cfg shard.Config) coord.Config {
	c := coord.DefaultConfig()
	c.RefreshTimeout = cfg.ReplicationTimeout
	return c
}

// Node is one node of a test: the coordinator over its own data node
// (Store), with metadata from a MemCluster.
type Node struct {
	*coord.Coordinator
	Store *shard.Store
	Meta  *MemMeta // the metadata as this node sees it
	MC    *MemCluster
	Dir   string
}

// OpenManager opens a single-node cluster whose data and metadata live in
// dir (reopening what an earlier call left there).
func OpenManager(t testing.TB, dir string) *Node {
	t.Helper()
	mc := NewMemCluster(t, filepath.Join(dir, "test-meta.json"), "n1")
	return StartNode(t, mc, "n1", dir, nil)
}

// StartNode starts node id of mc with its store in dir and peers to reach
// the others (nil: none), and waits until it has opened every copy the
// shard table assigns to it.
func StartNode(t testing.TB, mc *MemCluster, id, dir string, peers fabric.Caller) *Node {
	return StartNodeWith(t, mc, id, dir, peers, NodeConfig(), nil)
}

// StartNodeWith is startNode with a configuration, and register (when not
// nil) called with its data node before the node starts (to serve the
// fabric).
func StartNodeWith(t testing.TB, mc *MemCluster, id, dir string, peers fabric.Caller, cfg shard.Config, register func(*shard.Store)) *Node {
	t.Helper()
	meta := mc.Node(id)
	st, err := shard.OpenStore(filepath.Join(dir, "shards"), cfg, meta, peers, testlog.New(t))
	require.NoError(t, err)
	n := &Node{Coordinator: coord.NewCoordinator(st, CoordConfig(cfg), testlog.New(t)), Store: st, Meta: meta, MC: mc, Dir: dir}
	if register != nil {
		register(st)
	}
	n.Start()
	n.AwaitOpen(t)
	return n
}

// AwaitOpen waits until every copy assigned to this node is open.
func (n *Node) AwaitOpen(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		v := n.Meta.State()
		for _, ix := range v.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if _, err := n.Store.Readable(c.AllocationID); c.NodeID == n.Meta.LocalNode() && err != nil {
						return false
					}
				}
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond)
}

// Searchers returns searchers of this node's open copies of the named
// indexes, one per shard.
func (n *Node) Searchers(names []string) ([]coord.ShardSearcher, error) {
	v := n.Meta.State()
	var out []coord.ShardSearcher
	for _, name := range names {
		ix, err := v.Index(name)
		if err != nil {
			return nil, err
		}
		for num, sh := range ix.Shards {
			p, _ := sh.Primary()
			idx, err := n.Store.Readable(p.AllocationID)
			if err != nil {
				return nil, fmt.Errorf("shard %s/%d: %w", name, num, err)
			}
			out = append(out, coord.IndexSearcher(fmt.Sprintf("%s/%d", name, num), idx))
		}
	}
	return out, nil
}

// SearchBleve runs a bleve request over this node's copies of the named
// indexes, as Search does for copies it holds.
func (n *Node) SearchBleve(ctx context.Context, names []string, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	ss, err := n.Searchers(names)
	if err != nil {
		return nil, err
	}
	return coord.SearchShards(ctx, ss, req)
}

// SampleDocs loads testdata/sample/emails.ndjson: id and source per line.
func SampleDocs(t testing.TB) (ids []string, sources []json.RawMessage) {
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

func SampleMapping(t testing.TB) *index.Mapping {
	t.Helper()
	raw, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(t, err)
	mp, err := index.ParseMapping(raw)
	require.NoError(t, err)
	return mp
}

func BulkIndex(t *testing.T, m *Node, name string, ids []string, sources []json.RawMessage) {
	t.Helper()
	ops := make([]vocab.Op, len(ids))
	for k := range ids {
		ops[k] = vocab.Op{Type: vocab.OpIndex, Index: name, ID: ids[k], Source: sources[k]}
	}
	res, err := m.Bulk(context.Background(), ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
	}
}
