package clusterbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/internal/ctl"
)

// setup is one side of the search comparison: an index searched through
// the first node of a cluster (the coordinator).
type setup struct {
	name   string
	cl     *cluster
	index  string
	shards int
	// shardNode names the node of each shard's primary, for telling the
	// final page's hits on other nodes from local ones.
	shardNode map[int]string
}

func (s *setup) client() *ctl.Client { return s.cl.nodes[0].c }

// locate reads where the index's primaries are (GET /_cat/shards).
func (s *setup) locate(ctx context.Context) error {
	rows, _, err := s.client().Shards(ctx, s.index)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.shardNode = map[int]string{}
	for _, r := range rows {
		n, err := strconv.Atoi(r.Shard)
		if err != nil {
			return fmt.Errorf("%s: _cat/shards row with shard %q", s.name, r.Shard)
		}
		if r.PriRep == "p" {
			s.shardNode[n] = r.Node
		}
	}
	if len(s.shardNode) != s.shards {
		return fmt.Errorf("%s: _cat/shards lists %d primaries of %s, want %d", s.name, len(s.shardNode), s.index, s.shards)
	}
	return nil
}

// page is what the benchmark reads of a search reply: the final page's
// _source bytes as the reply carries them, and those of hits whose shard's
// primary is on another node than the coordinator.
type page struct {
	hits         int
	sourceBytes  int64
	remoteSource int64
}

// search runs body and returns the time from sending it to having read
// the whole reply, and the reply's page, decoded outside that time. A reply
// with failed shards or timed out is an error: partial pages would skew
// every figure.
func (s *setup) search(ctx context.Context, body []byte) (time.Duration, page, error) {
	path := "/" + url.PathEscape(s.index) + "/_search"
	start := time.Now()
	data, err := s.client().Do(ctx, http.MethodPost, path, nil, body, "application/json")
	elapsed := time.Since(start)
	if err != nil {
		return 0, page{}, fmt.Errorf("%s: search %s: %w", s.name, body, err)
	}
	p, err := readPage(data, s.shards, s.shardNode, s.cl.nodes[0].name)
	if err != nil {
		return 0, page{}, fmt.Errorf("%s: search %s: %w", s.name, body, err)
	}
	return elapsed, p, nil
}

// readPage decodes a search reply. shardNode (shard → node of its primary)
// and local (the coordinator's name) tell remote hits; nil shardNode
// counts none remote.
func readPage(data []byte, shards int, shardNode map[int]string, local string) (page, error) {
	var r struct {
		TimedOut bool `json:"timed_out"`
		Shards   struct {
			Failed int `json:"failed"`
		} `json:"_shards"`
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return page{}, fmt.Errorf("decode the reply: %w", err)
	}
	if r.TimedOut || r.Shards.Failed > 0 {
		return page{}, fmt.Errorf("partial result (timed_out %v, %d shards failed): %.300s", r.TimedOut, r.Shards.Failed, data)
	}
	var p page
	for _, h := range r.Hits.Hits {
		p.hits++
		n := int64(len(h.Source))
		p.sourceBytes += n
		if node, ok := shardNode[coord.ShardFor(h.ID, "", shards)]; ok && node != local {
			p.remoteSource += n
		}
	}
	return p, nil
}

// oneClient times queries at one client: each setup first runs every query
// once untimed (connections, caches); then round r runs bodies[r mod n] on
// every setup in turn, the order rotating, for at most Rounds rounds or
// Duration. It returns each setup's times and summed pages.
func oneClient(ctx context.Context, cfg Config, setups []*setup, bodies [][]byte) ([][]time.Duration, []page, error) {
	for _, s := range setups {
		for _, b := range bodies {
			if _, _, err := s.search(ctx, b); err != nil {
				return nil, nil, err
			}
		}
	}
	times := make([][]time.Duration, len(setups))
	pages := make([]page, len(setups))
	end := time.Now().Add(cfg.Duration)
	for r := 0; r < cfg.Rounds && time.Now().Before(end); r++ {
		for k := range setups {
			i := (k + r) % len(setups)
			d, p, err := setups[i].search(ctx, bodies[r%len(bodies)])
			if err != nil {
				return nil, nil, err
			}
			times[i] = append(times[i], d)
			pages[i].hits += p.hits
			pages[i].sourceBytes += p.sourceBytes
			pages[i].remoteSource += p.remoteSource
		}
	}
	return times, pages, nil
}

// window runs clients concurrent clients against s for d: client w runs
// bodies[offset+w], then every clients-th body after it, back to back. It
// returns every query's time and the window's length (until the last
// client's last reply).
func window(ctx context.Context, s *setup, bodies [][]byte, clients int, d time.Duration, offset int) ([]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for i := offset + w; time.Now().Before(deadline); i += clients {
				t, _, err := s.search(ctx, bodies[i%len(bodies)])
				if err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], t)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for w := range clients {
		if errs[w] != nil {
			return nil, 0, errs[w]
		}
		all = append(all, lat[w]...)
	}
	return all, elapsed, nil
}

// heaviest runs each query once on s, reading the coordinator's fabric
// counters around it, and returns the n that moved the most bytes, most
// first.
func heaviest(ctx context.Context, s *setup, queries []Query, bodies [][]byte, n int) ([]QueryBytes, error) {
	var out []QueryBytes
	for i, q := range queries {
		before, err := readCounters(ctx, s.client())
		if err != nil {
			return nil, err
		}
		_, p, err := s.search(ctx, bodies[i])
		if err != nil {
			return nil, err
		}
		after, err := readCounters(ctx, s.client())
		if err != nil {
			return nil, err
		}
		out = append(out, QueryBytes{Query: q.Name, FabricBytes: grown(before, after, sentAndReceived), SourceBytes: p.sourceBytes})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].FabricBytes > out[b].FabricBytes })
	return out[:min(n, len(out))], nil
}
