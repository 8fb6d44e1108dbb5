package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/clustertest"
	"github.com/weftsearch/weft/fabric/fabrictest"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/shard"

	"github.com/weftsearch/weft/internal/freeport"
	"github.com/weftsearch/weft/internal/testlog"
)

// nodeCluster is several nodes in one process: real memberlist on loopback,
// real Raft over TCP on loopback, and the fabric over an in-memory network
// (newNodeCluster; all three partitionable by name, clustertest) or on real
// transports (formCluster's configure; net and faults nil then).
type nodeCluster struct {
	t      testing.TB
	net    *fabrictest.Network
	faults *clustertest.Faults
	cfgs   map[string]node.Config
	nodes  map[string]*node.Node
}

// testReplicationTimeout is the in-process clusters' replication timeout:
// the fabric is in memory, and a write to a primary cut off by a partition
// fails within twice this.
const testReplicationTimeout = 5 * time.Second

// newNodeCluster starts nodes named n1..nN that form one cluster over an
// in-memory fabric.
func newNodeCluster(t *testing.T, n int) *nodeCluster {
	fnet := fabrictest.NewNetwork()
	faults := clustertest.New(fnet)
	nc := formCluster(t, n, func(name string, cfg *node.Config) {
		cfg.FabricAddr = name + ":1"
		cfg.Hooks = node.Hooks{ClusterTiming: cluster.LocalTiming(), Fabric: fnet.Node(name),
			RaftLayer: faults.RaftLayer(name), GossipWrap: faults.GossipWrap(name),
			Shard: func(c *shard.Config) { c.ReplicationTimeout = testReplicationTimeout }}
	})
	nc.net, nc.faults = fnet, faults
	return nc
}

// formCluster starts nodes named n1..nN that form one cluster (gossip and
// Raft on loopback), each configured by configure (its fabric and hooks),
// waits for them to be green, and stops them when the test ends.
func formCluster(t testing.TB, n int, configure func(name string, cfg *node.Config)) *nodeCluster {
	nc := &nodeCluster{t: t, cfgs: map[string]node.Config{}, nodes: map[string]*node.Node{}}
	var names, seeds []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("n%d", i))
		seeds = append(seeds, freeport.Free(t, true))
	}
	for i, name := range names {
		cfg := testConfig(t.TempDir())
		cfg.NodeName = name
		cfg.GossipAddr = seeds[i]
		cfg.RaftAddr = "127.0.0.1:0"
		cfg.Seeds = seeds
		cfg.InitialNodes = names
		configure(name, &cfg)
		nc.cfgs[name] = cfg
	}
	for _, name := range names {
		nc.start(name)
	}
	t.Cleanup(func() {
		for name := range nc.nodes {
			nc.stop(name)
		}
	})
	nc.awaitHealth("n1", "green", n)
	return nc
}

func (nc *nodeCluster) start(name string) *node.Node {
	n, err := node.New(nc.cfgs[name], testlog.New(nc.t))
	require.NoError(nc.t, err)
	require.NoError(nc.t, n.Start(context.Background()))
	nc.nodes[name] = n
	return n
}

func (nc *nodeCluster) stop(name string) {
	if n := nc.nodes[name]; n != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		delete(nc.nodes, name)
	}
}

func (nc *nodeCluster) url(name string) string { return nc.nodes[name].URL() }

// createIndex creates index name with the given shards and replicas
// through node n1 and waits for the cluster, every node up, to be green.
func (nc *nodeCluster) createIndex(name string, shards, replicas int) {
	nc.t.Helper()
	code, res := call(nc.t, "PUT", nc.url("n1")+"/"+name, fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":%d}}`, shards, replicas))
	require.Equal(nc.t, 200, code, "%v", res)
	nc.awaitHealth("n1", "green", len(nc.cfgs))
}

// awaitHealth waits for status with n nodes, as seen through node name.
func (nc *nodeCluster) awaitHealth(name, status string, n int) {
	nc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, h := call(nc.t, "GET", fmt.Sprintf("%s/_cluster/health?wait_for_status=%s&wait_for_nodes=%d&timeout=5s", nc.url(name), status, n), "")
		if code == 200 {
			return
		}
		require.True(nc.t, time.Now().Before(deadline), "no %s with %d nodes through %s: %v", status, n, name, h)
	}
}

// searchJSON runs a search and returns the decoded reply.
func searchJSON(t *testing.T, url, index, body string) map[string]any {
	t.Helper()
	code, res := call(t, "POST", url+"/"+index+"/_search", body)
	require.Equal(t, 200, code, "%s: %v", body, res)
	return res
}

type hitRow struct {
	ID    string
	Score float64
	Sort  string
}

func hitsOf(res map[string]any) (total float64, hits []hitRow) {
	h := res["hits"].(map[string]any)
	if tot, ok := h["total"].(map[string]any); ok {
		total = tot["value"].(float64)
	}
	for _, x := range h["hits"].([]any) {
		m := x.(map[string]any)
		row := hitRow{ID: m["_id"].(string)}
		if s, ok := m["_score"].(float64); ok {
			row.Score = s
		}
		if s, ok := m["sort"]; ok {
			b, _ := json.Marshal(s)
			row.Sort = string(b)
		}
		hits = append(hits, row)
	}
	return total, hits
}

// requireSameHits requires the same totals, ids in order and scores (to
// the last bits of a float); sort values too unless they hold scores.
func requireSameHits(t *testing.T, a, b map[string]any, what string) {
	t.Helper()
	ta, ha := hitsOf(a)
	tb, hb := hitsOf(b)
	require.Equal(t, ta, tb, "%s: totals", what)
	require.Len(t, hb, len(ha), what)
	for k := range ha {
		require.Equal(t, ha[k].ID, hb[k].ID, "%s: hit %d", what, k)
		x, y := ha[k].Score, hb[k].Score
		require.LessOrEqual(t, math.Abs(x-y), 1e-9*math.Max(math.Abs(x), math.Abs(y)), "%s: hit %d score", what, k)
		if ha[k].Score == 0 {
			require.Equal(t, ha[k].Sort, hb[k].Sort, "%s: hit %d sort", what, k)
		}
	}
}

// loadSample bulk-loads the sample emails into index through url.
func loadSample(t *testing.T, url, index string) int {
	t.Helper()
	raw, err := os.ReadFile("../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &d))
		fmt.Fprintf(&b, "{\"index\":{\"_index\":%q,\"_id\":%q}}\n%s\n", index, d.ID, line)
		n++
	}
	code, res := callNDJSON(t, url+"/_bulk", b.String())
	require.Equal(t, 200, code)
	require.Equal(t, false, res["errors"], "%v", res)
	return n
}

// TestClusterRanksLikeOneNode is issue 9's acceptance test: a 6-shard index
// spread over three nodes, searched through each node (each holds only two
// of its shards), ranks exactly like a 1-shard index of the same documents
// — the 26 acceptance queries, two pages, aggregations, search_after and
// scroll — over HTTP, through Raft-placed shards and the fabric.
func TestClusterRanksLikeOneNode(t *testing.T) {
	nc := newNodeCluster(t, 3)
	mapping, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(t, err)
	for name, shards := range map[string]int{"six": 6, "one": 1} {
		code, res := call(t, "PUT", nc.url("n2")+"/"+name, fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":0},"mappings":%s}`, shards, mapping))
		require.Equal(t, 200, code, "%v", res)
	}
	nc.awaitHealth("n1", "green", 3)
	docs := loadSample(t, nc.url("n3"), "six")
	require.Equal(t, docs, loadSample(t, nc.url("n1"), "one"))

	// Each node holds two of six's shards.
	code, shardsBody := callRaw(t, "GET", nc.url("n1")+"/_cat/shards/six?format=json", "")
	require.Equal(t, 200, code)
	var rows []map[string]string
	require.NoError(t, json.Unmarshal(shardsBody, &rows))
	perNode := map[string]int{}
	for _, r := range rows {
		perNode[r["node"]]++
	}
	require.Equal(t, map[string]int{"n1": 2, "n2": 2, "n3": 2}, perNode)

	raw, err := os.ReadFile("../testdata/sample/queries.json")
	require.NoError(t, err)
	var queries map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &queries))
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, name := range names {
		through := nc.url(fmt.Sprintf("n%d", 1+i%3))
		for _, page := range []string{`"from":0,"size":10`, `"from":10,"size":10`} {
			body := fmt.Sprintf(`{"query":%s,%s,"sort":["_score",{"_id":"asc"}],"_source":["subject"]}`, queries[name], page)
			requireSameHits(t, searchJSON(t, nc.url("n1"), "one", body), searchJSON(t, through, "six", body), name+" "+page)
		}
	}
	aggs := `{"size":0,"aggs":{"labels":{"terms":{"field":"label"}},"groups":{"terms":{"field":"group","size":3}},"months":{"date_histogram":{"field":"date","calendar_interval":"month","hard_bounds":{"min":"2002-01-01","max":"2003-01-01"}}}}}`
	one, six := searchJSON(t, nc.url("n2"), "one", aggs), searchJSON(t, nc.url("n3"), "six", aggs)
	require.Equal(t, one["aggregations"], six["aggregations"])

	// search_after pages through the same hits.
	after := ""
	for page := 0; page < 4; page++ {
		body := `{"query":{"match":{"body":"the"}},"size":9,"sort":[{"date":"desc"},{"_id":"asc"}]` + after + `}`
		a, b := searchJSON(t, nc.url("n1"), "one", body), searchJSON(t, nc.url("n2"), "six", body)
		requireSameHits(t, a, b, "search_after page")
		_, hits := hitsOf(a)
		after = `,"search_after":` + hits[len(hits)-1].Sort
	}
	// Scroll through another node than the one that started it.
	scroll := func(index string) []string {
		var ids []string
		code, res := call(t, "POST", nc.url("n1")+"/"+index+"/_search?scroll=1m&size=25", `{"query":{"match":{"subject":"re"}}}`)
		require.Equal(t, 200, code, "%v", res)
		for {
			_, hits := hitsOf(res)
			if len(hits) == 0 {
				return ids
			}
			for _, h := range hits {
				ids = append(ids, h.ID)
			}
			code, r := call(t, "POST", nc.url("n3")+"/_search/scroll", fmt.Sprintf(`{"scroll":"1m","scroll_id":%q}`, res["_scroll_id"]))
			require.Equal(t, 200, code, "%v", r)
			res = r
		}
	}
	require.Equal(t, scroll("one"), scroll("six"))
}

// TestPartitionedNodeCannotChangeMetadata: a node cut off from the others
// (Raft, gossip and fabric alike) cannot create an index — it answers 503
// within the request's timeout — while the majority can; once the
// partition heals it catches up with what the majority committed.
func TestPartitionedNodeCannotChangeMetadata(t *testing.T) {
	nc := newNodeCluster(t, 3)
	heal := nc.faults.Partition([]string{"n3"}, []string{"n1", "n2"})
	start := time.Now()
	code, res := call(t, "PUT", nc.url("n3")+"/minority?timeout=3s", `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)
	require.Equal(t, 503, code, "%v", res)
	require.Less(t, time.Since(start), 30*time.Second)
	code, res = call(t, "PUT", nc.url("n1")+"/majority", `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)
	require.Equal(t, 200, code, "%v", res)
	heal()
	require.Eventually(t, func() bool {
		code, _ := call(t, "GET", nc.url("n3")+"/majority", "")
		return code == 200
	}, 30*time.Second, 50*time.Millisecond, "the healed node learns of the index the majority created")
	code, _ = call(t, "GET", nc.url("n1")+"/minority", "")
	require.Equal(t, 404, code, "nothing the minority tried was committed")
}

// callRaw sends a request and returns the status and body.
func callRaw(t testing.TB, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// callNDJSON posts an NDJSON body and decodes the JSON reply.
func callNDJSON(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := client.Post(url, "application/x-ndjson", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return resp.StatusCode, v
}

// TestRestartedNodeKeepsItsOnlyCopies: a node stopped cleanly and started
// again on its data directory brings back the copies of shards that have
// no replica (the shard is red meanwhile), with all their documents.
func TestRestartedNodeKeepsItsOnlyCopies(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("solo", 6, 0)
	docs := loadSample(t, nc.url("n1"), "solo")
	nc.stop("n3")
	nc.awaitHealth("n1", "red", 2)
	nc.start("n3")
	nc.awaitHealth("n1", "green", 3)
	res := searchJSON(t, nc.url("n1"), "solo", `{"size":0,"track_total_hits":true}`)
	total, _ := hitsOf(res)
	require.EqualValues(t, docs, total, "documents of the restarted node's copies: %v", res["_shards"])
}

// TestPartitionedPrimaryAcknowledgesNothing: the node holding a primary is
// cut off from the other two (Raft, gossip and fabric). Every write sent to
// it is refused: it reaches neither its replica nor the leader that could
// fail the replica. The majority promotes the replica and takes writes.
// Healed, the old primary's copy comes back as a replica holding exactly
// the majority's documents: nothing the cut-off node applied but never
// acknowledged survives.
func TestPartitionedPrimaryAcknowledgesNothing(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("part", 1, 1)
	put := func(url, id string) int {
		code, _ := call(t, "PUT", url+"/part/_doc/"+id, `{"v":1}`)
		return code
	}
	for i := range 10 {
		require.Equal(t, 201, put(nc.url("n1"), fmt.Sprint("before-", i)))
	}
	victim := ""
	var rows []map[string]string
	code, body := callRaw(t, "GET", nc.url("n1")+"/_cat/shards/part?format=json", "")
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal(body, &rows))
	for _, r := range rows {
		if r["prirep"] == "p" {
			victim = r["node"]
		}
	}
	require.NotEmpty(t, victim)
	var others []string
	for _, n := range []string{"n1", "n2", "n3"} {
		if n != victim {
			others = append(others, n)
		}
	}

	heal := nc.faults.Partition([]string{victim}, others)
	victimURL := nc.url(victim)
	minority := make([]int, 6)
	var wg sync.WaitGroup
	for k := range minority {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/part/_doc/minority-%d", victimURL, k), strings.NewReader(`{"v":2}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
			if err != nil {
				minority[k] = -1 // no answer within a minute: a hang
				return
			}
			resp.Body.Close()
			minority[k] = resp.StatusCode
		}()
	}
	nc.awaitHealth(others[0], "yellow", 2)
	for i := range 10 {
		require.Equal(t, 201, put(nc.url(others[i%2]), fmt.Sprint("majority-", i)), "the majority side takes writes")
	}
	wg.Wait()
	t.Logf("writes to the cut-off primary answered %v", minority)
	for k, status := range minority {
		require.NotEqual(t, -1, status, "write %d to the cut-off primary hung", k)
		require.False(t, status == 200 || status == 201, "the cut-off primary acknowledged write %d (HTTP %d)", k, status)
	}
	heal()
	nc.awaitHealth(others[0], "green", 3)
	require.Eventually(t, func() bool {
		code, body := callRaw(t, "GET", nc.url(others[0])+"/_cat/shards/part?format=json", "")
		if code != 200 || json.Unmarshal(body, &rows) != nil || len(rows) != 2 {
			return false
		}
		return rows[0]["docs"] == "20" && rows[1]["docs"] == "20"
	}, 30*time.Second, 100*time.Millisecond, "both copies hold the 20 acknowledged documents and nothing else: %v", rows)
	for k := range minority {
		code, _ := callRaw(t, "GET", fmt.Sprintf("%s/part/_doc/minority-%d", nc.url(victim), k), "")
		require.Equal(t, 404, code, "a write the cut-off primary never acknowledged")
	}
}

// TestSearchesGoOnWithoutALeader: a node cut off from the others knows no
// Raft leader; it refuses writes (503 cluster_block_exception) but still
// answers searches from the copies it holds, with its last view of the
// cluster, as Elasticsearch's default no_master_block: write does.
func TestSearchesGoOnWithoutALeader(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("everywhere", 2, 2)
	docs := loadSample(t, nc.url("n1"), "everywhere")
	// A loaded machine may fail a replica during the load (it recovers):
	// every copy must serve again before the cut.
	nc.awaitHealth("n1", "green", 3)

	heal := nc.faults.Partition([]string{"n3"}, []string{"n1", "n2"})
	defer heal()
	require.Eventually(t, func() bool {
		code, res := call(t, "GET", nc.url("n3")+"/_weft/raft", "")
		return code == 200 && res["leader_id"] == ""
	}, 30*time.Second, 50*time.Millisecond, "the cut-off node still knows a leader")
	code, res := call(t, "PUT", nc.url("n3")+"/everywhere/_doc/new?timeout=1s", `{"v":1}`)
	require.Equal(t, 503, code, "%v", res)
	require.Equal(t, "cluster_block_exception", res["error"].(map[string]any)["type"])
	// Once its gossip sees the others gone, its searches stop waiting on
	// them and take its own copies.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, res := call(t, "POST", nc.url("n3")+"/everywhere/_search", `{"size":0,"track_total_hits":true,"timeout":"2s"}`)
		if code == 200 {
			if total, _ := hitsOf(res); total == float64(docs) {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "a search through the cut-off node: HTTP %d %v", code, res)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRerouteMovesAShard: POST _cluster/reroute moves a copy to another
// node (it recovers there, then the old one goes), with every document;
// dry_run and malformed commands are 400s that move nothing.
func TestRerouteMovesAShard(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("moving", 1, 0)
	docs := loadSample(t, nc.url("n1"), "moving")
	where := func() string {
		var rows []map[string]string
		code, body := callRaw(t, "GET", nc.url("n1")+"/_cat/shards/moving?format=json", "")
		require.Equal(t, 200, code)
		require.NoError(t, json.Unmarshal(body, &rows))
		if len(rows) != 1 || rows[0]["state"] != "STARTED" {
			return ""
		}
		return rows[0]["node"]
	}
	from := where()
	require.NotEmpty(t, from)
	to := "n1"
	if from == "n1" {
		to = "n2"
	}
	move := fmt.Sprintf(`{"commands":[{"move":{"index":"moving","shard":0,"from_node":%q,"to_node":%q}}]}`, from, to)

	for _, bad := range []struct{ query, body string }{
		{"?dry_run=true", move},
		{"", `{"commands":[{"allocate_replica":{"index":"moving","shard":0,"node":"n3"}}]}`},
		{"", `{"commands":[{"move":{"index":"moving","shard":0,"from_node":"n1"}}]}`},
		{"", `{"commands":[]}`},
		{"", `{"commands":[{"move":{"index":"moving","shard":0,"from_node":"` + to + `","to_node":"` + from + `"}}]}`},
	} {
		code, res := call(t, "POST", nc.url("n2")+"/_cluster/reroute"+bad.query, bad.body)
		require.Equal(t, 400, code, "%s %s: %v", bad.query, bad.body, res)
	}
	require.Equal(t, from, where(), "a refused reroute moved the shard")

	code, res := call(t, "POST", nc.url("n2")+"/_cluster/reroute", move)
	require.Equal(t, 200, code, "%v", res)
	require.Eventually(t, func() bool { return where() == to }, 60*time.Second, 100*time.Millisecond, "the shard did not move to %s", to)
	res = searchJSON(t, nc.url("n3"), "moving", `{"size":0,"track_total_hits":true}`)
	total, _ := hitsOf(res)
	require.EqualValues(t, docs, total)
}

// TestNodesStatsCountTheNodesOwnCopies: each node's _nodes/stats counts the
// documents of the copies it holds, so the nodes' counts add up to the
// index's (no replicas), none of them holding it all.
func TestNodesStatsCountTheNodesOwnCopies(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("spread", 6, 0)
	docs := loadSample(t, nc.url("n1"), "spread")
	sum := 0.0
	for _, n := range []string{"n1", "n2", "n3"} {
		code, res := call(t, "GET", nc.url(n)+"/_nodes/stats", "")
		require.Equal(t, 200, code, "%v", res)
		var count float64
		for _, node := range res["nodes"].(map[string]any) {
			count = node.(map[string]any)["indices"].(map[string]any)["docs"].(map[string]any)["count"].(float64)
		}
		require.Less(t, count, float64(docs), "%s counts documents it does not hold", n)
		sum += count
	}
	require.EqualValues(t, docs, sum)
}

// TestWriteRepliesCountTheCopies: a write's _shards header counts the
// copies that hold it: the primary and its acknowledging replicas.
func TestWriteRepliesCountTheCopies(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("copies", 1, 2)
	code, res := call(t, "PUT", nc.url("n2")+"/copies/_doc/1", `{"v":1}`)
	require.Equal(t, 201, code, "%v", res)
	require.Equal(t, map[string]any{"total": 3.0, "successful": 3.0, "failed": 0.0}, res["_shards"])
	code, res = callNDJSON(t, nc.url("n3")+"/_bulk", "{\"index\":{\"_index\":\"copies\",\"_id\":\"2\"}}\n{\"v\":2}\n")
	require.Equal(t, 200, code, "%v", res)
	item := res["items"].([]any)[0].(map[string]any)["index"].(map[string]any)
	require.Equal(t, map[string]any{"total": 3.0, "successful": 3.0, "failed": 0.0}, item["_shards"])
}
