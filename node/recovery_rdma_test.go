//go:build linux && cgo && rdma

package node_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/node"
)

// Peer recovery over the node's RDMA path (the Soft-RoCE guest of
// scripts/softroce/run.sh): a replica of a one-shard index recovers
// file-based from its primary, the snapshot streamed over the fabric
// (fabric.SendStream, 1 MiB chunks) with the nodes' adaptive transport
// pinned to one path (node.Hooks.FabricPin). The test proves the bytes
// cross RDMA; the benchmark measures the rate per path.

// recoveryIndex is the one-shard index whose replica recovers. Its
// documents' large field is kept in _source only (dynamic: false), so the
// shard's files are mostly stored _source, as in clusterbench.
const recoveryIndex = "recovery"

// recoveryDocBytes is the size of one synthetic document's text.
const recoveryDocBytes = 256 << 10

// recoveryWait bounds one recovery under emulation.
const recoveryWait = 15 * time.Minute

// rdmaAddr is the address of the netdev under the guest's RDMA device; tb
// skips without one (and fails in the guest, which must have it).
func rdmaAddr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv("WEFT_RDMA_ADDR")
	if addr == "" {
		require.Empty(tb, os.Getenv("WEFT_RDMA_GUEST"), "the guest must set WEFT_RDMA_ADDR")
		tb.Skip("no RDMA device: set WEFT_RDMA_ADDR (scripts/softroce/run.sh does)")
	}
	return addr
}

// rdmaCluster starts nodes n1 and n2 of one cluster whose fabric has an
// RDMA path on addr (required) beside TCP, calls pinned by pin, recovery
// not throttled, with guestTiming.
func rdmaCluster(tb testing.TB, addr string, pin *adaptive.Pin) *nodeCluster {
	return formCluster(tb, 2, func(_ string, cfg *node.Config) {
		cfg.FabricAddr = net.JoinHostPort(addr, "0")
		cfg.FabricRDMA = node.FabricRDMAOn
		// RDMA needs security off (its payloads are not sealed yet), on
		// the guest's own veth, which the test setup created for it.
		cfg.Security.AllowInsecureNetwork = true
		cfg.RecoveryMaxBytesPerSec = 0
		cfg.Hooks = node.Hooks{ClusterTiming: guestTiming(), FabricPin: pin}
	})
}

// guestTiming is cluster.LocalTiming with the production Raft timeouts,
// LAN gossip and dead-node removal: under emulation, with bulk requests
// taking the guest's two CPUs, LocalTiming's 400 ms Raft timeouts and
// local gossip lost the leader in the middle of the load (503 on _bulk).
func guestTiming() cluster.Timing {
	t, d := cluster.LocalTiming(), cluster.DefaultTiming()
	t.RaftHeartbeat, t.RaftElection, t.RaftLeaderLease = d.RaftHeartbeat, d.RaftElection, d.RaftLeaderLease
	t.Gossip, t.DeadNodeRemoval = d.Gossip, d.DeadNodeRemoval
	return t
}

// loadRecoveryIndex creates recoveryIndex (one shard, no replica) through
// n1 and bulk-loads documents of recoveryDocBytes random base64 text, 8
// MiB per request, until total bytes of text; it returns the documents.
func loadRecoveryIndex(tb testing.TB, nc *nodeCluster, total int64) int {
	tb.Helper()
	url := nc.url("n1")
	code, res := call(tb, "PUT", url+"/"+recoveryIndex, `{"settings":{"number_of_shards":1,"number_of_replicas":0},`+
		`"mappings":{"dynamic":false,"properties":{"id":{"type":"keyword"}}}}`)
	require.Equal(tb, 200, code, "%v", res)
	nc.awaitHealth("n1", "green", 2)
	docs := int((total + recoveryDocBytes - 1) / recoveryDocBytes)
	rng := rand.NewChaCha8([32]byte{1})
	raw := make([]byte, base64.StdEncoding.DecodedLen(recoveryDocBytes))
	text := make([]byte, base64.StdEncoding.EncodedLen(len(raw)))
	const perRequest = (8 << 20) / recoveryDocBytes
	for lo := 0; lo < docs; lo += perRequest {
		var b strings.Builder
		for i := lo; i < min(lo+perRequest, docs); i++ {
			_, _ = rng.Read(raw)
			base64.StdEncoding.Encode(text, raw)
			fmt.Fprintf(&b, "{\"index\":{\"_id\":\"d%d\"}}\n{\"id\":\"d%d\",\"blob\":\"%s\"}\n", i, i, text)
		}
		code, res := callNDJSON(tb, url+"/"+recoveryIndex+"/_bulk", b.String())
		for retry := time.Now().Add(2 * time.Minute); code == 503 && time.Now().Before(retry); {
			time.Sleep(time.Second) // an election: a client retries 503s, as Elasticsearch's do
			code, res = callNDJSON(tb, url+"/"+recoveryIndex+"/_bulk", b.String())
		}
		require.Equal(tb, 200, code, "%v", res)
		require.Equal(tb, false, res["errors"], "bulk items failed: %v", res["items"])
	}
	code, res = call(tb, "POST", url+"/"+recoveryIndex+"/_refresh", "")
	require.Equal(tb, 200, code, "%v", res)
	return docs
}

// recoveryRun is one recovery of the replica: its _cat/recovery row and
// what the primary's outbound fabric connections sent on each path
// (adaptive decision table, envelopes included) while it ran.
type recoveryRun struct {
	Type, Stage string
	Bytes       int64         // bytes_total
	Took        time.Duration // the row's time: start to done
	Wall        time.Duration // the settings change to done
	PathBytes   map[string]uint64
}

// MBPerS is bytes_total over the recovery's time, as clusterbench reports it.
func (r recoveryRun) MBPerS() float64 { return float64(r.Bytes) / r.Took.Seconds() / 1e6 }

// catRecovery is a row of GET /_cat/recovery?format=json&bytes=b.
type catRecovery struct {
	Time       string `json:"time"`
	Type       string `json:"type"`
	Stage      string `json:"stage"`
	TargetNode string `json:"target_node"`
	BytesTotal string `json:"bytes_total"`
}

// catRows reads GET /_cat/{what}/recovery?format=json&bytes=b into rows
// of T.
func catRows[T any](tb testing.TB, url, what string) []T {
	tb.Helper()
	var rows []T
	getJSON(tb, url+"/_cat/"+what+"/"+recoveryIndex+"?format=json&bytes=b", &rows)
	return rows
}

// catShard is a row of GET /_cat/shards?format=json.
type catShard struct {
	PriRep string `json:"prirep"`
	State  string `json:"state"`
	Docs   string `json:"docs"`
	Node   string `json:"node"`
}

// primaryOf names the node holding recoveryIndex's primary.
func primaryOf(tb testing.TB, nc *nodeCluster) string {
	tb.Helper()
	for _, r := range catRows[catShard](tb, nc.url("n1"), "shards") {
		if r.PriRep == "p" {
			return r.Node
		}
	}
	tb.Fatalf("_cat/shards shows no primary of %s", recoveryIndex)
	return ""
}

// sentByPath sums what the node's outbound fabric connections sent, by
// path transport, from their adaptive decision tables.
func sentByPath(tb testing.TB, url string) map[string]uint64 {
	tb.Helper()
	var rep fabricdiag.ConnsReport
	getJSON(tb, url+"/_weft/fabric/conns", &rep)
	out := map[string]uint64{}
	for _, pc := range rep.Conns {
		for _, p := range pc.DecisionTable {
			out[p.Transport] += p.BytesSent
		}
	}
	return out
}

func setRecoveryReplicas(tb testing.TB, url string, n int) {
	tb.Helper()
	code, res := call(tb, "PUT", url+"/"+recoveryIndex+"/_settings", fmt.Sprintf(`{"index":{"number_of_replicas":%d}}`, n))
	require.Equal(tb, 200, code, "%v", res)
}

// recoverReplica gives recoveryIndex a replica, waits until its recovery
// is done and the index green, and returns the recovery.
func recoverReplica(tb testing.TB, nc *nodeCluster) recoveryRun {
	tb.Helper()
	url := nc.url("n1")
	primaryURL := nc.url(primaryOf(tb, nc))
	// The recoveries listed before (done: their rows no longer change)
	// tell the new one apart; a new row is not always listed first.
	before := map[catRecovery]bool{}
	for _, r := range catRows[catRecovery](tb, url, "recovery") {
		before[r] = true
	}
	sent0 := sentByPath(tb, primaryURL)
	start := time.Now()
	setRecoveryReplicas(tb, url, 1)
	var row catRecovery
	deadline := start.Add(recoveryWait)
	for {
		rows := catRows[catRecovery](tb, url, "recovery")
		i := slices.IndexFunc(rows, func(r catRecovery) bool { return !before[r] && (r.Stage == "done" || r.Stage == "failed") })
		if i >= 0 {
			row = rows[i]
			break
		}
		require.True(tb, time.Now().Before(deadline), "no recovery of %s done within %v: %+v", recoveryIndex, recoveryWait, rows)
		time.Sleep(100 * time.Millisecond)
	}
	run := recoveryRun{Type: row.Type, Stage: row.Stage, Wall: time.Since(start), PathBytes: map[string]uint64{}}
	require.Equal(tb, "done", row.Stage, "%+v", row)
	var err error
	run.Bytes, err = strconv.ParseInt(row.BytesTotal, 10, 64)
	require.NoError(tb, err)
	run.Took, err = time.ParseDuration(row.Time)
	require.NoError(tb, err)
	for path, n := range sentByPath(tb, primaryURL) {
		run.PathBytes[path] = n - sent0[path]
	}
	nc.awaitHealth("n1", "green", 2)
	return run
}

// dropReplica sets recoveryIndex back to no replica and waits until only
// the primary is left.
func dropReplica(tb testing.TB, nc *nodeCluster) {
	tb.Helper()
	setRecoveryReplicas(tb, nc.url("n1"), 0)
	require.Eventually(tb, func() bool { return len(catRows[catShard](tb, nc.url("n1"), "shards")) == 1 }, 2*time.Minute, 50*time.Millisecond,
		"the replica of %s is still listed 2 minutes after number_of_replicas went to 0", recoveryIndex)
}

// TestPeerRecoveryCrossesRDMA: with the fabric pinned to its RDMA path, a
// new replica recovers file-based, the snapshot crosses the RDMA path (the
// primary sent at least bytes_total on it, next to nothing on TCP), and
// the replica holds every document.
func TestPeerRecoveryCrossesRDMA(t *testing.T) {
	addr := rdmaAddr(t)
	var pin adaptive.Pin
	pin.Set("rdma")
	nc := rdmaCluster(t, addr, &pin)
	docs := loadRecoveryIndex(t, nc, 4<<20)
	run := recoverReplica(t, nc)
	t.Logf("recovery: %+v", run)
	require.Equal(t, "peer (files)", run.Type)
	require.GreaterOrEqual(t, run.Bytes, int64(4<<20), "the snapshot holds the documents' text")
	require.GreaterOrEqual(t, run.PathBytes["rdma"], uint64(run.Bytes), "the snapshot crossed the RDMA path")
	require.Less(t, run.PathBytes["tcp"], uint64(run.Bytes/100), "next to nothing crossed TCP")
	rows := catRows[catShard](t, nc.url("n1"), "shards")
	require.Len(t, rows, 2)
	for _, r := range rows {
		require.Equal(t, "STARTED", r.State, "%+v", rows)
		require.Equal(t, strconv.Itoa(docs), r.Docs, "every copy holds every document: %+v", rows)
	}
}

// BenchmarkPeerRecovery loads WEFT_RECOVERY_MIB MiB (default 64) of
// documents into a one-shard index once, then recovers a replica of it
// with the fabric pinned to RDMA, pinned to TCP, and unpinned (the
// adaptive choice), WEFT_RECOVERY_REPS times (default 1), each rep
// starting one path later than the one before (the first recovery after
// the load, or after another, is not always like the rest), dropping the
// replica after each. Each sub-benchmark reports MB/s
// (bytes_total over the _cat/recovery time, as clusterbench does),
// wall-MB/s (from the settings change), the bytes and the share of the
// primary's path bytes that went over RDMA. Run it with -test.benchtime 1x:
// an iteration is a whole recovery.
func BenchmarkPeerRecovery(b *testing.B) {
	addr := rdmaAddr(b)
	mib, reps := envInt(b, "WEFT_RECOVERY_MIB", 64), envInt(b, "WEFT_RECOVERY_REPS", 1)
	var pin adaptive.Pin
	nc := rdmaCluster(b, addr, &pin)
	t0 := time.Now()
	docs := loadRecoveryIndex(b, nc, int64(mib)<<20)
	// A configuration line of go test's benchmark format, read by
	// scripts/softroce/report with the results.
	took := time.Since(t0)
	fmt.Printf("recovery-load: %d documents, %d MiB of text, in %.1f s (%.1f MB/s)\n", docs, mib, took.Seconds(), float64(int64(mib)<<20)/took.Seconds()/1e6)
	paths := []struct{ name, pin string }{{"rdma", "rdma"}, {"tcp", "tcp"}, {"adaptive", ""}}
	for rep := range reps {
		for k := range paths {
			path := paths[(k+rep)%len(paths)] // each rep starts one path later
			b.Run(path.name, func(b *testing.B) {
				pin.Set(path.pin)
				defer pin.Set("")
				var bytes int64
				var took, wall time.Duration
				var onRDMA, onAll uint64
				for range b.N {
					run := recoverReplica(b, nc)
					require.Equal(b, "peer (files)", run.Type)
					bytes, took, wall = bytes+run.Bytes, took+run.Took, wall+run.Wall
					onRDMA += run.PathBytes["rdma"]
					onAll += run.PathBytes["rdma"] + run.PathBytes["tcp"]
					b.StopTimer()
					dropReplica(b, nc)
					b.StartTimer()
				}
				b.ReportMetric(float64(bytes)/took.Seconds()/1e6, "MB/s")
				b.ReportMetric(float64(bytes)/wall.Seconds()/1e6, "wall-MB/s")
				b.ReportMetric(float64(bytes)/float64(b.N), "bytes")
				b.ReportMetric(float64(onRDMA)/float64(onAll), "rdma-share")
			})
		}
	}
}

// envInt reads a positive integer from the environment, or def when unset.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(tb, err, "%s", name)
	require.Positive(tb, n, "%s", name)
	return n
}
