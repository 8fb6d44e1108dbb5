package coordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
)

// MemPeers reaches the test's other nodes over the in-memory fabric,
// dialling each once and again after its connection broke.
type MemPeers struct {
	tr    fabric.Transport
	mu    sync.Mutex
	conns map[string]fabric.Conn
	calls map[peerCall]int // calls made, by node and method
}

type peerCall struct {
	node   string
	method fabric.Method
}

// CallsTo counts the calls of method m made to node ("": to any node).
func (p *MemPeers) CallsTo(node string, m fabric.Method) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c, k := range p.calls {
		if c.method == m && (node == "" || c.node == node) {
			n += k
		}
	}
	return n
}

func (p *MemPeers) Call(ctx context.Context, id string, m fabric.Method, payload []byte) ([]byte, error) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[peerCall]int{}
	}
	p.calls[peerCall{id, m}]++
	c := p.conns[id]
	p.mu.Unlock()
	if c == nil {
		var err error
		if c, err = p.tr.Dial(ctx, id); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.conns[id] = c
		p.mu.Unlock()
	}
	reply, err := c.Call(ctx, m, payload)
	if err != nil && ctx.Err() == nil {
		p.mu.Lock()
		if p.conns[id] == c {
			delete(p.conns, id)
			_ = c.Close()
		}
		p.mu.Unlock()
	}
	return reply, err
}

// Forget drops the connection to node id, if there is one; the next call
// dials again.
func (p *MemPeers) Forget(id string) {
	p.mu.Lock()
	c := p.conns[id]
	delete(p.conns, id)
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (p *MemPeers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// Cluster is several nodes of the shard layer sharing a memCluster's
// shard table and talking over an in-memory fabric with fault hooks.
type Cluster struct {
	t     *testing.T
	Net   *fabrictest.Network
	MC    *MemCluster
	Nodes map[string]*Node
	Peers map[string]*MemPeers // each node's outbound calls
	Dirs  map[string]string
	stops map[string]func()
	Cfg   func(id string) shard.Config // each node's configuration
}

func NewCluster(t *testing.T, ids ...string) *Cluster {
	return NewClusterWith(t, func(string) shard.Config { return NodeConfig() }, ids...)
}

// NewClusterWith starts nodes ids, each with the configuration cfg
// gives it.
func NewClusterWith(t *testing.T, cfg func(id string) shard.Config, ids ...string) *Cluster {
	tc := &Cluster{t: t, Net: fabrictest.NewNetwork(), MC: NewMemCluster(t, "", ids...),
		Nodes: map[string]*Node{}, Peers: map[string]*MemPeers{}, Dirs: map[string]string{}, stops: map[string]func(){}, Cfg: cfg}
	for _, id := range ids {
		tc.Dirs[id] = t.TempDir()
		tc.Start(id)
	}
	t.Cleanup(func() {
		for id := range tc.stops {
			tc.Stop(id)
		}
	})
	return tc
}

// Start starts node id on its data directory, serving the fabric.
func (tc *Cluster) Start(id string) *Node {
	t := tc.t
	mux := &fabric.Mux{}
	streams := fabric.NewStreamReceiver(10 * time.Second)
	mux.Handle(fabric.MethodStream, streams)
	tr := tc.Net.Node(id)
	ln, err := tr.Listen(context.Background(), id, mux)
	require.NoError(t, err)
	peers := &MemPeers{tr: tr, conns: map[string]fabric.Conn{}}
	tc.Peers[id] = peers
	n := StartNodeWith(t, tc.MC, id, tc.Dirs[id], peers, tc.Cfg(id), func(st *shard.Store) { st.Register(mux, streams) })
	tc.Nodes[id] = n
	tc.stops[id] = func() {
		_ = n.Close()
		peers.Close()
		_ = ln.Close()
		_ = streams.Close()
	}
	return n
}

// Stop shuts node id down cleanly.
func (tc *Cluster) Stop(id string) {
	if stop := tc.stops[id]; stop != nil {
		stop()
		delete(tc.stops, id)
		delete(tc.Nodes, id)
	}
}

// Kill takes node id down at once: the cluster marks it not live (so it
// reaches no leader any more), its fabric connections break, and it stops.
func (tc *Cluster) Kill(id string) {
	tc.MC.SetLive(id, false)
	tc.Net.Kill(id)
	tc.Stop(id)
}

// Revive marks node id live again and starts it. The other nodes drop
// their connections to its old process first, as a node's pool does when
// it sees a departed node live again (node.peers.forgetDeparted): a call
// on one would fail.
func (tc *Cluster) Revive(id string) *Node {
	for _, p := range tc.Peers {
		p.Forget(id)
	}
	tc.MC.SetLive(id, true)
	return tc.Start(id)
}

// Search runs an ES Search body over names through node id.
func (tc *Cluster) Search(t *testing.T, id string, names []string, body string) *coord.SearchResult {
	t.Helper()
	n := tc.Nodes[id]
	srch, err := esdsl.ParseSearch([]byte(body), nil, n.Fields(names))
	require.NoError(t, err, body)
	res, err := n.Search(context.Background(), names, srch)
	require.NoError(t, err, body)
	return res
}

// QueryBodies are the acceptance queries of testdata/sample/queries.json.
func QueryBodies(t *testing.T) map[string]json.RawMessage {
	raw, err := os.ReadFile("../testdata/sample/queries.json")
	require.NoError(t, err)
	var qs map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &qs))
	require.Len(t, qs, 26)
	return qs
}

// RequireSameJSON requires two decoded JSON values to be equal: numbers
// within a relative 1e-9, except under "pct" (percentiles merged from
// several t-digests), within 0.5% of the value.
func RequireSameJSON(t *testing.T, want, got any, path string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: %v is not an object", path, got)
		require.Len(t, g, len(w), "%s: keys %v vs %v", path, keysOf(w), keysOf(g))
		for k, v := range w {
			RequireSameJSON(t, v, g[k], path+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: %v is not an array", path, got)
		require.Len(t, g, len(w), path)
		for k := range w {
			RequireSameJSON(t, w[k], g[k], fmt.Sprintf("%s.%d", path, k))
		}
	case float64:
		g, ok := got.(float64)
		require.True(t, ok, "%s: %v is not a number", path, got)
		tol := 1e-9
		if strings.Contains(path, ".pct.") {
			tol = 5e-3
		}
		require.LessOrEqual(t, math.Abs(w-g), tol*math.Max(math.Abs(w), 1), "%s: %v vs %v", path, w, g)
	default:
		require.Equal(t, want, got, path)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SameHits requires two results to rank the same hits with the same scores.
func SameHits(t *testing.T, want, got *bleve.SearchResult, what string) {
	t.Helper()
	require.Equal(t, want.Total, got.Total, what)
	require.Len(t, got.Hits, len(want.Hits), what)
	for k := range want.Hits {
		require.Equal(t, want.Hits[k].ID, got.Hits[k].ID, "%s: hit %d", what, k)
		a, b := want.Hits[k].Score, got.Hits[k].Score
		require.LessOrEqual(t, math.Abs(a-b), 1e-9*math.Max(math.Abs(a), math.Abs(b)), "%s: hit %d (%s): %v vs %v", what, k, want.Hits[k].ID, a, b)
	}
}

// SameSorted requires two results of a search sorted by fields (whose
// response shows no scores) to hold the same hits with the same sort keys.
func SameSorted(t *testing.T, want, got *bleve.SearchResult, what string) {
	t.Helper()
	require.Equal(t, want.Total, got.Total, what)
	require.Len(t, got.Hits, len(want.Hits), what)
	for k := range want.Hits {
		require.Equal(t, want.Hits[k].ID, got.Hits[k].ID, "%s: hit %d", what, k)
		require.Equal(t, want.Hits[k].Sort, got.Hits[k].Sort, "%s: hit %d", what, k)
	}
}

// LoadSampleIndex creates index name with shards shards (no replicas) and
// the sample mapping through n1, waits until every node has opened its
// copies, and loads the sample documents; it returns their ids.
func (tc *Cluster) LoadSampleIndex(t *testing.T, name string, shards int) []string {
	t.Helper()
	require.NoError(t, tc.Nodes["n1"].CreateIndex(context.Background(), name, coord.IndexSettings{NumberOfShards: shards}, SampleMapping(t)))
	for _, n := range tc.Nodes {
		n.AwaitOpen(t)
	}
	ids, sources := SampleDocs(t)
	BulkIndex(t, tc.Nodes["n1"], name, ids, sources)
	return ids
}

// DocOn is one of ids whose shard's primary is on node.
func (tc *Cluster) DocOn(t *testing.T, name, node string, ids []string) string {
	t.Helper()
	ix, err := tc.Nodes["n1"].Meta.State().Index(name)
	require.NoError(t, err)
	for _, id := range ids {
		if p, _ := ix.Shards[coord.ShardFor(id, "", len(ix.Shards))].Primary(); p.NodeID == node {
			return id
		}
	}
	t.Fatalf("no document of %s has its primary on %s", name, node)
	return ""
}

// AwaitInSync waits until every shard of name has want in-sync started copies.
func AwaitInSync(t testing.TB, tc *Cluster, name string, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		v := tc.MC.Node("x").State()
		ix, ok := v.Indices[name]
		if !ok {
			return false
		}
		for _, sh := range ix.Shards {
			started := 0
			for _, c := range sh.Copies {
				if (c.State == state.CopyStarted) && slices.Contains(sh.InSync, c.AllocationID) {
					started++
				}
			}
			if started < want {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)
}
