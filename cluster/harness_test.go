package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/cluster/clustertest"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/internal/testlog"
)

// TestMain checks that Shutdown leaves no goroutine behind, but for one of
// memberlist's: its Shutdown does not wait for a probe in flight, which
// ends by itself within a probe interval.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}

// testLogger is testlog's logger at Info, or at Debug when WEFT_TEST_DEBUG
// is set: Raft and memberlist are chatty at Debug.
func testLogger(t *testing.T) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("WEFT_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return testlog.NewLevel(t, level)
}

// testNet is an in-process cluster: real memberlist and Raft on loopback
// (through clustertest's fault hooks), the fabric over a fabrictest
// network, one data directory per node.
type testNet struct {
	t      *testing.T
	fab    *fabrictest.Network
	faults *clustertest.Faults
	seeds  []string // gossip addresses of the nodes started so far

	mu    sync.Mutex
	addrs map[string]string // node ID → fabric address
	nodes []*testNode
}

type testNode struct {
	name, id, dir string
	c             *Cluster
	ln            fabric.Listener
}

func newTestNet(t *testing.T) *testNet {
	fab := fabrictest.NewNetwork()
	return &testNet{t: t, fab: fab, faults: clustertest.New(fab), addrs: map[string]string{}}
}

// caller reaches other nodes' fabric listeners from one node.
type caller struct {
	n    *testNet
	from string
}

func (c caller) Call(ctx context.Context, nodeID string, method fabric.Method, payload []byte) ([]byte, error) {
	c.n.mu.Lock()
	addr, ok := c.n.addrs[nodeID]
	c.n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("test caller: no fabric address for node %s", nodeID)
	}
	conn, err := c.n.fab.Node(c.from).Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Call(ctx, method, payload)
}

// config is a node's Config on this network; mod changes it before start.
func (n *testNet) config(name, dir string, initial []string) Config {
	return Config{
		NodeID: "id-" + name, NodeName: name, DataDir: dir,
		HTTPAddr: "http-" + name, FabricAddr: "fabric-" + name,
		GossipAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		Seeds: slices.Clone(n.seeds), InitialNodes: initial, GossipKey: []byte("0123456789abcdef"),
		Timing: LocalTiming(), Peers: caller{n: n, from: name}, Logger: testLogger(n.t).With("test_node", name),
		RaftLayer: n.faults.RaftLayer(name), GossipWrap: n.faults.GossipWrap(name),
	}
}

// start starts a node from cfg and registers it; Shutdown at cleanup.
func (n *testNet) start(cfg Config) *testNode {
	t := n.t
	c, err := New(cfg)
	require.NoError(t, err)
	mux := &fabric.Mux{}
	c.Register(mux)
	ln, err := n.fab.Node(cfg.NodeName).Listen(context.Background(), "", mux)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	tn := &testNode{name: cfg.NodeName, id: cfg.NodeID, dir: cfg.DataDir, c: c, ln: ln}
	n.mu.Lock()
	n.addrs[cfg.NodeID] = ln.Addr()
	n.nodes = append(n.nodes, tn)
	n.mu.Unlock()
	if c.ms != nil {
		n.seeds = append(n.seeds, c.ms.Addr())
	}
	t.Cleanup(func() { tn.stop(t) })
	return tn
}

// stop shuts the node down (once) and closes its fabric listener.
func (tn *testNode) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tn.c.Shutdown(ctx))
	require.NoError(t, tn.ln.Close())
}

// startInitial starts nodes named by names, each with every name as an
// initial node, and waits until they have formed a cluster.
func (n *testNet) startInitial(names ...string) []*testNode {
	// Every node gets every seed: bind the gossip ports first by starting
	// them one after the other (the seeds of the first are filled by the
	// rejoin of the later ones).
	var out []*testNode
	for _, name := range names {
		out = append(out, n.start(n.config(name, n.t.TempDir(), names)))
	}
	for _, tn := range out {
		awaitState(n.t, tn.c, 20*time.Second, func(s *state.State) bool { return s.ClusterUUID != "" && len(liveNodes(s)) == len(names) })
	}
	return out
}

func liveNodes(s *state.State) []string {
	var out []string
	for id, nd := range s.Nodes {
		if nd.Live {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// awaitState waits until ok holds on c's state, or fails the test.
func awaitState(t *testing.T, c *Cluster, timeout time.Duration, ok func(*state.State) bool) *state.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.Await(ctx, ok)
	require.NoError(t, err, "state of %s never got there; last: %s", c.cfg.NodeName, describe(s))
	return s
}

// eventually waits until cond holds, polling, or fails the test.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func describe(s *state.State) string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version %d uuid %q nodes:", s.Version, s.ClusterUUID)
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range s.Nodes {
			if !yield(id) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, " %s(live=%v)", id, s.Nodes[id].Live)
	}
	for name, ix := range s.Indices {
		fmt.Fprintf(&b, " index %s:", name)
		for k, sh := range ix.Shards {
			fmt.Fprintf(&b, " [%d term %d %v in-sync %v]", k, sh.PrimaryTerm, sh.Copies, sh.InSync)
		}
	}
	return b.String()
}

// leader returns the node that leads, waiting for one among nodes.
func leader(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var found *testNode
	eventually(t, 15*time.Second, "a leader", func() bool {
		for _, tn := range nodes {
			if tn.c.Raft().State == "Leader" {
				found = tn
				return true
			}
		}
		return false
	})
	return found
}

// startCopies plays the shard layer's reconciler on a node: it reports
// every initializing copy on the node as started. It stops at cleanup.
func startCopies(t *testing.T, tn *testNode) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	ch, unwatch := tn.c.Watch()
	go func() {
		defer close(done)
		defer unwatch()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			s := tn.c.State()
			for _, ix := range s.Indices {
				for k, sh := range ix.Shards {
					for _, cp := range sh.Copies {
						if cp.NodeID == tn.id && cp.State == state.CopyInitializing {
							pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
							_, _ = tn.c.Propose(pctx, Command{StartCopy: &StartCopy{IndexUUID: ix.UUID, Shard: k, AllocationID: cp.AllocationID}})
							pcancel()
						}
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ch:
			case <-tick.C:
			}
		}
	}()
}

func createIndex(name string, shards, replicas int) Command {
	return Command{CreateIndex: &CreateIndex{Index: state.Index{Name: name, NumberOfShards: shards, NumberOfReplicas: replicas}}}
}

// health is the worst health (state.IndexHealth) of every index of s.
func health(s *state.State) string {
	status := state.HealthGreen
	for _, ix := range s.Indices {
		switch s.IndexHealth(ix) {
		case state.HealthRed:
			return state.HealthRed
		case state.HealthYellow:
			status = state.HealthYellow
		}
	}
	return status
}
