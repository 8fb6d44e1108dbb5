package coord

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// statsWait bounds how long index descriptions (_cat/indices, GET /{index})
// wait for other nodes' document counts; a node that does not answer in
// time counts nothing.
const statsWait = 2 * time.Second

// CopyStats counts the documents and bytes of every copy whose node
// answers before ctx ends, by allocation ID.
func (c *Coordinator) CopyStats(ctx context.Context) map[string]vocab.CopyStats {
	v, err := c.readView()
	if err != nil {
		return map[string]vocab.CopyStats{}
	}
	return c.gatherCopyStats(ctx, v)
}

// gatherCopyStats counts the copies of every live node that holds some, in
// parallel, until ctx ends.
func (c *Coordinator) gatherCopyStats(ctx context.Context, v *state.State) map[string]vocab.CopyStats {
	out := c.store.LocalCopyStats()
	for _, rep := range c.askHolders(ctx, v) {
		for k, st := range rep.Copies {
			out[k] = st
		}
	}
	return out
}

// Recoveries lists the recoveries of copies on every live node that
// answers before ctx ends (this node's too), newest first.
func (c *Coordinator) Recoveries(ctx context.Context) []vocab.RecoveryInfo {
	v, err := c.readView()
	if err != nil {
		return nil
	}
	out := c.store.Recoveries()
	for _, rep := range c.askHolders(ctx, v) {
		out = append(out, rep.Recoveries...)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Started.After(out[b].Started) })
	return out
}

// IndexStats are an index's statistics (_stats): its copies' counts, from
// the nodes that answered, and the requests for it that the nodes
// coordinated, summed over the nodes.
type IndexStats struct {
	Primaries, Total vocab.CopyStats
	Counters         vocab.IndexNodeStats
	// Copies are the copies assigned; Counted those whose node answered,
	// CountedPrimaries the primaries among them.
	Copies, Counted, CountedPrimaries int
}

// IndexStats gathers the statistics of the named indices from every node
// that answers before ctx ends.
func (c *Coordinator) IndexStats(ctx context.Context, names []string) map[string]IndexStats {
	v, err := c.readView()
	if err != nil {
		return map[string]IndexStats{}
	}
	copies := c.store.LocalCopyStats()
	counters := []map[string]vocab.IndexNodeStats{c.counterStats()}
	for _, rep := range c.askHolders(ctx, v) {
		for k, st := range rep.Copies {
			copies[k] = st
		}
		counters = append(counters, rep.Counters)
	}
	out := make(map[string]IndexStats, len(names))
	for _, name := range names {
		ix, ok := v.Indices[name]
		if !ok {
			continue
		}
		var st IndexStats
		for k := range ix.Shards {
			for _, cp := range ix.Shards[k].Copies {
				st.Copies++
				cs, ok := copies[cp.AllocationID]
				if !ok {
					continue
				}
				st.Counted++
				st.Total.Docs += cs.Docs
				st.Total.StoreSizeBytes += cs.StoreSizeBytes
				if cp.Primary {
					st.CountedPrimaries++
					st.Primaries.Docs += cs.Docs
					st.Primaries.StoreSizeBytes += cs.StoreSizeBytes
				}
			}
		}
		for _, m := range counters {
			n := m[name]
			st.Counters.IndexTotal += n.IndexTotal
			st.Counters.IndexTimeNanos += n.IndexTimeNanos
			st.Counters.DeleteTotal += n.DeleteTotal
			st.Counters.SearchTotal += n.SearchTotal
			st.Counters.SearchNanos += n.SearchNanos
		}
		out[name] = st
	}
	return out
}

// askHolders asks every other live node that holds copies for its report.
func (c *Coordinator) askHolders(ctx context.Context, v *state.State) []shard.NodeReport {
	if c.peers == nil {
		return nil
	}
	holders := map[string]bool{}
	for _, ix := range v.Indices {
		for k := range ix.Shards {
			for _, cp := range ix.Shards[k].Copies {
				if cp.NodeID != c.meta.LocalNode() && v.NodeLive(cp.NodeID) {
					holders[cp.NodeID] = true
				}
			}
		}
	}
	var mu sync.Mutex
	var out []shard.NodeReport
	var wg sync.WaitGroup
	for id := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := shard.NewRemote(c.peers, id).Report(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			out = append(out, rep)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
