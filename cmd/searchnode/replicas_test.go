package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bulkLoader is several clients bulk-indexing new documents through any
// live node, remembering every document a node acknowledged.
type bulkLoader struct {
	index string
	http  *http.Client

	mu    sync.Mutex
	live  map[*nodeProc]bool
	acked []string

	sent, failed atomic.Int64 // bulk requests, and those without a reply
	stop         chan struct{}
	wg           sync.WaitGroup
}

func newBulkLoader(index string, nodes []*nodeProc) *bulkLoader {
	l := &bulkLoader{index: index, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		live: map[*nodeProc]bool{}}
	for _, np := range nodes {
		l.live[np] = true
	}
	return l
}

func (l *bulkLoader) setLive(np *nodeProc, live bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[np] = live
}

func (l *bulkLoader) pick(r *rand.Rand) *nodeProc {
	l.mu.Lock()
	defer l.mu.Unlock()
	var live []*nodeProc
	for np, ok := range l.live {
		if ok {
			live = append(live, np)
		}
	}
	return live[r.IntN(len(live))]
}

func (l *bulkLoader) ackedIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// start runs clients clients until halt; round names their documents.
func (l *bulkLoader) start(clients int, round string) {
	l.stop = make(chan struct{})
	for c := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(len(round))))
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.send(l.pick(r), fmt.Sprintf("%s-c%d-b%d", round, c, n))
			}
		}()
	}
}

func (l *bulkLoader) halt() {
	close(l.stop)
	l.wg.Wait()
}

// send indexes 20 documents in one bulk request and records those
// acknowledged (status 200 or 201, no error).
func (l *bulkLoader) send(np *nodeProc, prefix string) {
	var b strings.Builder
	for k := range 20 {
		fmt.Fprintf(&b, "{\"index\":{\"_index\":%q,\"_id\":\"%s-%d\"}}\n{\"n\":%d,\"body\":\"document %s %d\"}\n", l.index, prefix, k, k, prefix, k)
	}
	l.sent.Add(1)
	req, _ := http.NewRequest("POST", np.url()+"/_bulk", strings.NewReader(b.String()))
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := l.http.Do(req)
	if err != nil {
		l.failed.Add(1)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		l.failed.Add(1)
		return
	}
	var reply struct {
		Items []map[string]struct {
			ID     string          `json:"_id"`
			Status int             `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"items"`
	}
	if json.Unmarshal(body, &reply) != nil {
		l.failed.Add(1)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range reply.Items {
		for _, r := range it {
			if (r.Status == 200 || r.Status == 201) && len(r.Error) == 0 {
				l.acked = append(l.acked, r.ID)
			}
		}
	}
}

// missing returns the ids that a search through np does not find.
func missing(t *testing.T, np *nodeProc, index string, ids []string) []string {
	t.Helper()
	var out []string
	for from := 0; from < len(ids); from += 500 {
		chunk := ids[from:min(from+500, len(ids))]
		q, err := json.Marshal(map[string]any{"query": map[string]any{"ids": map[string]any{"values": chunk}}, "size": len(chunk), "_source": false})
		require.NoError(t, err)
		status, body := httpDo(t, "POST", np.url()+"/"+index+"/_search", "application/json", string(q))
		require.Equal(t, 200, status, "%s", body)
		var r struct {
			Shards struct{ Failed int } `json:"_shards"`
			Hits   struct {
				Hits []struct {
					ID string `json:"_id"`
				} `json:"hits"`
			} `json:"hits"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Zero(t, r.Shards.Failed, "%s", body)
		found := map[string]bool{}
		for _, h := range r.Hits.Hits {
			found[h.ID] = true
		}
		for _, id := range chunk {
			if !found[id] {
				out = append(out, id)
			}
		}
	}
	return out
}

// primariesByNode counts the started primaries of index on each node name.
func primariesByNode(t *testing.T, np *nodeProc, index string) map[string]int {
	t.Helper()
	var rows []map[string]string
	require.Equal(t, 200, getJSON(t, np.url()+"/_cat/shards/"+index+"?format=json", &rows))
	out := map[string]int{}
	for _, r := range rows {
		if r["prirep"] == "p" && r["state"] == "STARTED" {
			out[r["node"]]++
		}
	}
	return out
}

// TestProcessReplicasKeepAcknowledgedWrites is issue 10's failover test on
// three real searchnode processes and an index with one replica: while
// four clients bulk-load through every live node, kill -9 first the node
// holding the most primaries (not the Raft leader), then the Raft leader.
// Each time the cluster is yellow within 10 s of the kill, every
// acknowledged document is found through a survivor, and after the node is
// back the cluster is green and every acknowledged document is found
// through every node.
func TestProcessReplicasKeepAcknowledgedWrites(t *testing.T) {
	nodes := greenCluster(t)
	status, body := httpDo(t, "PUT", nodes[0].url()+"/acks", "application/json", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	require.Equal(t, 200, status, "%s", body)
	waitHealth(t, nodes[0], "green", 3)
	byName := map[string]*nodeProc{}
	for _, np := range nodes {
		byName[np.name] = np
	}

	load := newBulkLoader("acks", nodes)
	kills := 0
	round := func(name string, victim *nodeProc) {
		t.Helper()
		var survivors []*nodeProc
		for _, np := range nodes {
			if np != victim {
				survivors = append(survivors, np)
			}
		}
		before := len(load.ackedIDs())
		load.start(4, name)
		deadline := time.Now().Add(20 * time.Second)
		for len(load.ackedIDs()) < before+400 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		load.setLive(victim, false)
		victim.kill(t)
		killed := time.Now()
		kills++
		var h struct {
			Status   string `json:"status"`
			TimedOut bool   `json:"timed_out"`
		}
		code := getJSON(t, fmt.Sprintf("%s/_cluster/health?wait_for_status=yellow&wait_for_nodes=2&timeout=10s", survivors[0].url()), &h)
		require.Equal(t, 200, code, "%s: health through %s", name, survivors[0].name)
		require.False(t, h.TimedOut, "%s: not yellow within 10 s of the kill (%s)", name, h.Status)
		t.Logf("%s: yellow %v after the kill", name, time.Since(killed).Round(time.Millisecond))
		time.Sleep(2 * time.Second) // writes go on after the failover
		load.halt()
		acked := load.ackedIDs()
		require.Greater(t, len(acked), before, "%s: nothing was acknowledged", name)
		require.Empty(t, missing(t, survivors[0], "acks", acked), "%s: acknowledged documents lost after the failover", name)

		victim.start(t)
		load.setLive(victim, true)
		waitHealth(t, survivors[0], "green", 3)
		for _, np := range nodes {
			require.Empty(t, missing(t, np, "acks", acked), "%s: acknowledged documents missing through %s once the node is back", name, np.name)
		}
	}

	leader := raftLeader(t, nodes[0])
	var victim *nodeProc
	most := -1
	for name, n := range primariesByNode(t, nodes[0], "acks") {
		if name != leader && n > most {
			victim, most = byName[name], n
		}
	}
	if victim == nil {
		for _, np := range nodes {
			if np.name != leader {
				victim = np
			}
		}
	}
	round("primary", victim)
	round("leader", byName[raftLeader(t, nodes[0])])
	t.Logf("%d bulk requests (%d without a reply), %d documents acknowledged, %d kills, 0 acknowledged documents lost",
		load.sent.Load(), load.failed.Load(), len(load.ackedIDs()), kills)
}
