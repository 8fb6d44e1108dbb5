package node_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// The history check of issue 10: clients do versioned writes
// (if_seq_no/if_primary_term) and realtime gets of a few documents through
// any node while nodes crash and are partitioned away; the history of every
// document must be linearizable. A write whose outcome the client could not
// learn (an error, a timeout) may or may not have happened, at any time
// after it was sent; a read that failed tells nothing and is left out.

// docState is one document as the model sees it.
type docState struct {
	exists    bool
	val       int
	seq, term uint64
	known     bool // seq and term are known (an unknown write may have set them)
}

type histInput struct {
	key       string
	write     bool
	val       int
	cond      bool // if_seq_no/if_primary_term given
	seq, term uint64
}

type histOutput struct {
	unknown   bool // a write that got no answer
	conflict  bool // a write refused by its condition (409)
	found     bool // a read that found the document
	val       int
	seq, term uint64
}

var docModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(histInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{docState{known: true}} },
	Step: func(st, in, out any) []any {
		s, i, o := st.(docState), in.(histInput), out.(histOutput)
		holds := func() bool { return !i.cond || (s.exists && (!s.known || (s.seq == i.seq && s.term == i.term))) }
		if !i.write {
			if o.found != s.exists || (o.found && o.val != s.val) {
				return nil
			}
			if o.found && s.known && (o.seq != s.seq || o.term != s.term) {
				return nil
			}
			if o.found {
				s.seq, s.term, s.known = o.seq, o.term, true
			}
			return []any{s}
		}
		applied := docState{exists: true, val: i.val, seq: o.seq, term: o.term, known: true}
		switch {
		case o.unknown:
			out := []any{s}
			if holds() {
				applied.known = false
				out = append(out, applied)
			}
			return out
		case o.conflict:
			if i.cond && (!s.exists || !s.known || s.seq != i.seq || s.term != i.term) {
				return []any{s}
			}
			return nil
		default:
			if !holds() || (s.known && s.exists && o.seq <= s.seq) {
				return nil
			}
			return []any{applied}
		}
	},
	Equal: func(a, b any) bool { return a.(docState) == b.(docState) },
	DescribeOperation: func(in, out any) string {
		i, o := in.(histInput), out.(histOutput)
		if i.write {
			return fmt.Sprintf("put(%s=%d if %v %d/%d) -> %+v", i.key, i.val, i.cond, i.seq, i.term, o)
		}
		return fmt.Sprintf("get(%s) -> %+v", i.key, o)
	},
}

// historyClient records what one client does.
type historyClient struct {
	id   int
	http *http.Client
	ops  []porcupine.Operation
	last map[string]histOutput // the last read of each key
	next int
	// Writes without an answer, by why: no HTTP reply (a stopped node, the
	// client's timeout), or an error status (503, 429, 500).
	noReply, errStatus int
}

func (c *historyClient) do(url string, in histInput) {
	start := time.Now().UnixNano()
	var out histOutput
	keep := true
	if in.write {
		q := ""
		if in.cond {
			q = fmt.Sprintf("?if_seq_no=%d&if_primary_term=%d", in.seq, in.term)
		}
		req, _ := http.NewRequest("PUT", url+"/h/_doc/"+in.key+q, strings.NewReader(fmt.Sprintf(`{"v":%d}`, in.val)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		switch {
		case err != nil:
			out.unknown = true
			c.noReply++
		case resp.StatusCode == 409:
			out.conflict = true
		case resp.StatusCode == 200 || resp.StatusCode == 201:
			var r struct {
				Seq  uint64 `json:"_seq_no"`
				Term uint64 `json:"_primary_term"`
			}
			if json.NewDecoder(resp.Body).Decode(&r) != nil {
				out.unknown = true
			}
			out.seq, out.term = r.Seq, r.Term
		default:
			out.unknown = true
			c.errStatus++
		}
		if resp != nil {
			resp.Body.Close()
		}
	} else {
		resp, err := c.http.Get(url + "/h/_doc/" + in.key)
		switch {
		case err != nil:
			keep = false
		case resp.StatusCode == 404:
		case resp.StatusCode == 200:
			var r struct {
				Seq    uint64 `json:"_seq_no"`
				Term   uint64 `json:"_primary_term"`
				Source struct {
					V int `json:"v"`
				} `json:"_source"`
			}
			if json.NewDecoder(resp.Body).Decode(&r) != nil {
				keep = false
			}
			out.found, out.val, out.seq, out.term = true, r.Source.V, r.Seq, r.Term
			c.last[in.key] = out
		default:
			keep = false
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	end := time.Now().UnixNano()
	if out.unknown {
		end = math.MaxInt64 // it may take effect at any later time
	}
	if keep {
		c.ops = append(c.ops, porcupine.Operation{ClientId: c.id, Input: in, Call: start, Output: out, Return: end})
	}
}

// TestVersionedWritesAndReadsAreLinearizable runs clients against three
// nodes (an index with one replica) while, in turn, the node holding a
// primary is partitioned away and healed, and a node crashes (cut off,
// then stopped) and restarts; porcupine checks each document's history.
func TestVersionedWritesAndReadsAreLinearizable(t *testing.T) {
	nc := newNodeCluster(t, 3)
	nc.createIndex("h", 2, 1)
	keys := []string{"a", "b", "c"}

	var mu sync.Mutex
	up := map[string]bool{"n1": true, "n2": true, "n3": true}
	urls := map[string]string{}
	for n := range up {
		urls[n] = nc.url(n)
	}
	pick := func(r *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		var live []string
		for n, ok := range up {
			if ok {
				live = append(live, n)
			}
		}
		return urls[live[r.IntN(len(live))]]
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	clients := make([]*historyClient, 6)
	for i := range clients {
		c := &historyClient{id: i, http: &http.Client{Timeout: 4 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, last: map[string]histOutput{}}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := keys[r.IntN(len(keys))]
				in := histInput{key: key}
				if r.IntN(2) == 0 {
					in.write = true
					c.next++
					in.val = c.id*1_000_000 + c.next
					if l, ok := c.last[key]; ok && l.found && r.IntN(4) > 0 {
						in.cond, in.seq, in.term = true, l.seq, l.term
					}
				}
				c.do(pick(r), in)
				// Paced, so the history stays small enough to check
				// exhaustively (every unanswered write can take effect at
				// any later point).
				time.Sleep(time.Duration(10+r.IntN(20)) * time.Millisecond)
			}
		}()
	}

	// The faults, one after another.
	primaryNode := func() string {
		code, body := callRaw(t, "GET", nc.url("n1")+"/_cat/shards/h?format=json", "")
		require.Equal(t, 200, code)
		var rows []map[string]string
		require.NoError(t, json.Unmarshal(body, &rows))
		for _, r := range rows {
			if r["prirep"] == "p" && r["state"] == "STARTED" {
				return r["node"]
			}
		}
		return "n1"
	}
	setUp := func(n string, ok bool) {
		mu.Lock()
		up[n] = ok
		mu.Unlock()
	}
	others := func(n string) []string {
		var out []string
		for _, o := range []string{"n1", "n2", "n3"} {
			if o != n {
				out = append(out, o)
			}
		}
		return out
	}
	faults := 0
	time.Sleep(1500 * time.Millisecond)
	victim := primaryNode()
	heal := nc.faults.Partition([]string{victim}, others(victim))
	faults++
	time.Sleep(4 * time.Second)
	heal()
	nc.awaitHealth(others(victim)[0], "green", 3)
	victim = primaryNode()
	heal = nc.faults.Partition([]string{victim}, others(victim)) // cut off, then stopped: a crash
	setUp(victim, false)
	nc.stop(victim)
	heal()
	faults++
	time.Sleep(2 * time.Second)
	nc.start(victim)
	mu.Lock()
	urls[victim] = nc.url(victim) // a new port; the clients read urls under mu
	mu.Unlock()
	setUp(victim, true)
	nc.awaitHealth(victim, "green", 3)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	var history []porcupine.Operation
	writes, acked, unknown, noReply, errStatus := 0, 0, 0, 0, 0
	for _, c := range clients {
		history = append(history, c.ops...)
		noReply, errStatus = noReply+c.noReply, errStatus+c.errStatus
		for _, op := range c.ops {
			in, out := op.Input.(histInput), op.Output.(histOutput)
			if in.write {
				writes++
				switch {
				case out.unknown:
					unknown++
				case !out.conflict:
					acked++
				}
			}
		}
	}
	t.Logf("%d operations (%d writes: %d acknowledged, %d without an answer: %d no reply, %d an error status), %d faults (a partition, a crash)",
		len(history), writes, acked, unknown, noReply, errStatus, faults)
	require.Positive(t, acked)
	result, info := porcupine.CheckOperationsVerbose(docModel.ToModel(), history, 60*time.Second)
	if result != porcupine.Ok {
		explainHistory(t, history)
		file := t.TempDir() + "/history.html"
		_ = porcupine.VisualizePath(docModel.ToModel(), info, file)
		if dir := os.Getenv("WEFT_HISTORY_DIR"); dir != "" {
			file = dir + "/history.html"
			_ = porcupine.VisualizePath(docModel.ToModel(), info, file)
		}
		t.Logf("the history is drawn in %s", file)
	}
	require.Equal(t, porcupine.Ok, result, "the history of the documents is not linearizable")
}

// explainHistory logs, for the first document whose history does not
// check, its operations around where the longest linearization stops.
func explainHistory(t *testing.T, history []porcupine.Operation) {
	for _, part := range docModel.Partition(history) {
		res, info := porcupine.CheckOperationsVerbose(docModel.ToModel(), part, 30*time.Second)
		if res == porcupine.Ok {
			continue
		}
		longest := []porcupine.Operation{}
		for _, lin := range info.PartialLinearizationsOperations() {
			for _, seq := range lin {
				if len(seq) > len(longest) {
					longest = seq
				}
			}
		}
		base := part[0].Call
		describe := func(op porcupine.Operation) string {
			ret := "never"
			if op.Return != math.MaxInt64 {
				ret = fmt.Sprint((op.Return - base) / 1e6)
			}
			return fmt.Sprintf("[%d..%s ms] c%d %s", (op.Call-base)/1e6, ret, op.ClientId, docModel.DescribeOperation(op.Input, op.Output))
		}
		t.Logf("document %s: %v; %d operations, the longest linearization covers %d; its last ones:", part[0].Input.(histInput).key, res, len(part), len(longest))
		from := max(0, len(longest)-8)
		for _, op := range longest[from:] {
			t.Logf("  %s", describe(op))
		}
		if len(longest) > 0 {
			last := longest[len(longest)-1].Call
			t.Logf("operations called around the end of it:")
			n := 0
			for _, op := range part {
				if op.Call >= last-200e6 && n < 30 {
					t.Logf("  %s", describe(op))
					n++
				}
			}
		}
		return
	}
}
