package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/freeport"
)

// nodeProc is one node of a test cluster of real searchnode processes.
type nodeProc struct {
	name, dir                string
	http, fabric, gossip, rf string
	bin, seeds, initial      string // what it runs, and its --seeds and --initial-nodes
	p                        *proc
}

// processCluster starts n searchnode processes of bin that form one
// cluster.
func processCluster(t *testing.T, bin string, n int) []*nodeProc {
	t.Helper()
	var nodes []*nodeProc
	var seeds, names []string
	for i := range n {
		np := &nodeProc{name: fmt.Sprintf("n%d", i+1), dir: filepath.Join(t.TempDir(), "data"),
			http: freeport.Free(t, false), fabric: freeport.Free(t, false), gossip: freeport.Free(t, true), rf: freeport.Free(t, false), bin: bin}
		nodes = append(nodes, np)
		seeds = append(seeds, np.gossip)
		names = append(names, np.name)
	}
	for _, np := range nodes {
		np.seeds, np.initial = strings.Join(seeds, ","), strings.Join(names, ",")
		np.start(t)
	}
	return nodes
}

// greenCluster builds searchnode and starts three processes that form a
// cluster, once it is green; skipped with -short.
func greenCluster(t *testing.T) []*nodeProc {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs three searchnode binaries")
	}
	nodes := processCluster(t, buildBinary(t, t.TempDir()), 3)
	waitHealth(t, nodes[0], "green", 3)
	return nodes
}

// start starts (or restarts) the node's process on its data directory.
func (np *nodeProc) start(t *testing.T) {
	t.Helper()
	np.p = startProcArgs(t, np.bin, "--node-name", np.name, "--data-dir", np.dir, "--log-level", "warn",
		"--http-addr", np.http, "--fabric-addr", np.fabric, "--gossip-addr", np.gossip, "--raft-addr", np.rf,
		"--seeds", np.seeds, "--initial-nodes", np.initial, "--security=false")
}

func (np *nodeProc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, np.p.cmd.Process.Signal(syscall.SIGKILL))
	_ = np.p.cmd.Wait()
}

// stop stops the node cleanly (SIGTERM), as an operator would.
func (np *nodeProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, np.p.cmd.Process.Signal(syscall.SIGTERM))
	_ = np.p.cmd.Wait()
}

func (np *nodeProc) url() string { return "http://" + np.http }

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	status, body := httpDo(t, "GET", url, "", "")
	if v != nil && status == 200 {
		require.NoError(t, json.Unmarshal(body, v), "%s", body)
	}
	return status
}

// waitHealth waits (the node's own wait, up to 60 s) for the cluster to reach
// status with n nodes.
func waitHealth(t *testing.T, np *nodeProc, status string, n int) {
	t.Helper()
	var h struct {
		Status string `json:"status"`
		Nodes  int    `json:"number_of_nodes"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		code := getJSON(t, fmt.Sprintf("%s/_cluster/health?wait_for_status=%s&wait_for_nodes=%d&timeout=10s", np.url(), status, n), &h)
		if code == 200 {
			return
		}
		require.True(t, time.Now().Before(deadline), "cluster did not reach %s with %d nodes (last: %s, %d nodes, HTTP %d)", status, n, h.Status, h.Nodes, code)
		time.Sleep(200 * time.Millisecond)
	}
}

func raftLeader(t *testing.T, np *nodeProc) string {
	var r struct {
		LeaderName string `json:"leader_name"`
	}
	require.Equal(t, 200, getJSON(t, np.url()+"/_weft/raft", &r))
	return r.LeaderName
}

// TestProcessClusterSurvivesKills: three real searchnode processes form a
// cluster from --initial-nodes; a 6-shard index is written through one node
// and searched through another. A node killed with SIGKILL takes its
// shards with it (no replicas): searches through the others answer within
// their timeout with those shards failed, and health goes red; restarted,
// it brings them back (green), and so it does after a clean stop (SIGTERM).
// Killing the Raft leader leaves a cluster
// that still creates indexes within 15 s.
func TestProcessClusterSurvivesKills(t *testing.T) {
	nodes := greenCluster(t)

	status, body := httpDo(t, "PUT", nodes[1].url()+"/six", "application/json", `{"settings":{"number_of_shards":6,"number_of_replicas":0}}`)
	require.Equal(t, 200, status, "%s", body)
	raw, err := os.ReadFile("../../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	var b strings.Builder
	docs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &d))
		fmt.Fprintf(&b, "{\"index\":{\"_index\":\"six\",\"_id\":%q}}\n%s\n", d.ID, line)
		docs++
	}
	status, body = httpDo(t, "POST", nodes[2].url()+"/_bulk", "application/x-ndjson", b.String())
	require.Equal(t, 200, status, "%s", body)
	require.NotContains(t, string(body), `"errors":true`)
	waitHealth(t, nodes[0], "green", 3)

	type searchReply struct {
		TimedOut bool `json:"timed_out"`
		Shards   struct {
			Total, Successful, Failed int
		} `json:"_shards"`
		Hits struct {
			Total struct {
				Value int `json:"value"`
			} `json:"total"`
		} `json:"hits"`
	}
	var lastBody []byte // of the last search, for failure messages
	search := func(np *nodeProc) searchReply {
		status, body := httpDo(t, "POST", np.url()+"/six/_search", "application/json", `{"query":{"match_all":{}},"size":0,"timeout":"5s"}`)
		require.Equal(t, 200, status, "%s", body)
		var r searchReply
		require.NoError(t, json.Unmarshal(body, &r))
		lastBody = body
		return r
	}
	for _, np := range nodes {
		r := search(np)
		require.Equal(t, docs, r.Hits.Total.Value, "through %s", np.name)
		require.Equal(t, 6, r.Shards.Successful)
	}

	// Kill a node that holds shards and does not lead Raft.
	leader := raftLeader(t, nodes[0])
	var victim *nodeProc
	for _, np := range nodes {
		if np.name != leader {
			victim = np
		}
	}
	victim.kill(t)
	var survivors []*nodeProc
	for _, np := range nodes {
		if np != victim {
			survivors = append(survivors, np)
		}
	}
	for _, np := range survivors {
		start := time.Now()
		r := search(np)
		require.Less(t, time.Since(start), 10*time.Second, "a search through %s waited for the dead node", np.name)
		require.Positive(t, r.Shards.Failed, "through %s", np.name)
		require.Less(t, r.Hits.Total.Value, docs)
	}
	for _, np := range survivors {
		// Each survivor's view of the cluster state catches up on its own.
		waitHealth(t, np, "red", 2)
		var h struct {
			Status string `json:"status"`
		}
		getJSON(t, np.url()+"/_cluster/health?wait_for_nodes=2", &h)
		require.Equal(t, "red", h.Status, "through %s", np.name)
	}

	// The node comes back with its data: every shard is there again.
	victim.start(t)
	waitHealth(t, survivors[0], "green", 3)
	// Green means searchable: through every node that reports green, every
	// shard answers (each node reports health from its own view of the
	// cluster, and a search through it routes by the same view), and a
	// shard a search leaves out is counted as failed.
	everyShard := func(when string) {
		for _, np := range nodes {
			waitHealth(t, np, "green", 3)
			r := search(np)
			require.Zero(t, r.Shards.Failed, "through %s %s: %s", np.name, when, lastBody)
			require.Equal(t, docs, r.Hits.Total.Value, "through %s %s: %s", np.name, when, lastBody)
		}
	}
	everyShard("after a kill")

	// Stopped cleanly and started again, it brings its shards back too.
	victim.stop(t)
	waitHealth(t, survivors[0], "red", 2)
	victim.start(t)
	waitHealth(t, survivors[0], "green", 3)
	everyShard("after a clean restart")

	// Kill the Raft leader: a survivor still creates an index within 15 s.
	leader = raftLeader(t, nodes[0])
	var lead *nodeProc
	survivors = survivors[:0]
	for _, np := range nodes {
		if np.name == leader {
			lead = np
		} else {
			survivors = append(survivors, np)
		}
	}
	require.NotNil(t, lead, "leader %q", leader)
	lead.kill(t)
	killed := time.Now()
	for {
		status, body = httpDo(t, "PUT", survivors[0].url()+"/after-leader", "application/json", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
		if status == 200 {
			break
		}
		require.Less(t, time.Since(killed), 15*time.Second, "no index could be created after the leader died: HTTP %d %s", status, body)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("index created %v after the leader was killed", time.Since(killed).Round(time.Millisecond))
	require.NotEqual(t, leader, raftLeader(t, survivors[1]))
}
