package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/vocab"
)

// GET /_stats and /{index}/_stats[/{metric}]: each index's statistics,
// gathered from the copies of every node that answers (documents and bytes
// per copy) and the request counters of every node (the indexing and search
// requests it coordinated). Sections Weft has no counterpart for report
// what is true of Weft: it has no field data, query cache or request
// cache, so their sizes and hits are zero. Other metrics are refused by
// name.

// statsParams are the parameters _stats takes.
var statsParams = []string{"level", "fields", "completion_fields", "fielddata_fields", "groups", "include_segment_file_sizes", "include_unloaded_segments",
	"forbid_closed_indices", "ignore_unavailable", "allow_no_indices", "expand_wildcards"}

// statsMetrics are the metrics _stats reports.
var statsMetrics = []string{"docs", "store", "indexing", "search", "fielddata", "query_cache", "request_cache", "shard_stats"}

// statsWaitHTTP bounds how long _stats waits for other nodes.
const statsWaitHTTP = 5 * time.Second

func (s *Server) handleIndicesStats(w http.ResponseWriter, r *http.Request) error {
	metrics := statsMetrics
	if m := r.PathValue("metric"); m != "" && m != "_all" {
		metrics = nil
		for _, name := range splitComma(m) {
			if !slices.Contains(statsMetrics, name) {
				return illegalArgument("request [%s] contains unrecognized metric: [%s]; Weft reports %s", r.URL.Path, name, strings.Join(statsMetrics, ", "))
			}
			metrics = append(metrics, name)
		}
	}
	level := r.URL.Query().Get("level")
	switch level {
	case "", "indices", "cluster", "shards":
	default:
		return illegalArgument("level parameter must be one of [cluster] or [indices] or [shards] but was [%s]", level)
	}
	res, err := s.resolveReq(r.Context(), r.PathValue("index"), r.URL.Query(), coord.DefaultResolve)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), statsWaitHTTP)
	defer cancel()
	stats := s.eng.IndexStats(ctx, res.Indices)
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	var copies map[string]vocab.CopyStats
	if level == "shards" {
		copies = s.eng.CopyStats(ctx)
	}
	var all coord.IndexStats
	indices := map[string]any{}
	for _, name := range res.Indices {
		st, ok := stats[name]
		if !ok {
			continue
		}
		all.Primaries.Docs += st.Primaries.Docs
		all.Primaries.StoreSizeBytes += st.Primaries.StoreSizeBytes
		all.Total.Docs += st.Total.Docs
		all.Total.StoreSizeBytes += st.Total.StoreSizeBytes
		all.Counters.IndexTotal += st.Counters.IndexTotal
		all.Counters.IndexTimeNanos += st.Counters.IndexTimeNanos
		all.Counters.DeleteTotal += st.Counters.DeleteTotal
		all.Counters.SearchTotal += st.Counters.SearchTotal
		all.Counters.SearchNanos += st.Counters.SearchNanos
		all.Copies += st.Copies
		all.Counted += st.Counted
		all.CountedPrimaries += st.CountedPrimaries
		entry := map[string]any{"primaries": statsSection(st, true, metrics), "total": statsSection(st, false, metrics)}
		if ix, ok := v.Indices[name]; ok {
			entry["uuid"] = ix.UUID
			entry["status"] = "open"
			entry["health"] = coord.HealthOf(v, []string{name}, "cluster").Status
			if level == "shards" {
				entry["shards"] = shardLevelStats(v, ix, copies, metrics)
			}
		}
		indices[name] = entry
	}
	out := map[string]any{
		"_shards": shardsHeader{Total: all.Copies, Successful: all.Counted, Failed: all.Copies - all.Counted},
		"_all":    map[string]any{"primaries": statsSection(all, true, metrics), "total": statsSection(all, false, metrics)},
	}
	if r.URL.Query().Get("level") != "cluster" {
		out["indices"] = indices
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// shardLevelStats is an index's "shards" object of _stats?level=shards, in
// Elasticsearch's shape: by shard number, one entry per copy whose node
// answered, with its routing and its document and store counts (the
// request counters are the node's per index, so a copy reports none).
func shardLevelStats(v *state.State, ix *state.Index, copies map[string]vocab.CopyStats, metrics []string) map[string]any {
	out := map[string]any{}
	for num, sh := range ix.Shards {
		list := []any{}
		for _, cp := range sh.Copies {
			cs, ok := copies[cp.AllocationID]
			if !ok {
				continue
			}
			entry := statsSection(coord.IndexStats{Primaries: cs, Total: cs, Copies: 1, Counted: 1, CountedPrimaries: 1}, true, metrics)
			routing := "INITIALIZING"
			if v.Active(cp) {
				routing = "STARTED"
			}
			entry["routing"] = map[string]any{"state": routing, "primary": cp.Primary, "node": cp.NodeID, "relocating_node": nil}
			list = append(list, entry)
		}
		out[strconv.Itoa(num)] = list
	}
	return out
}

// statsSection is the "primaries" or "total" object of one index (or of
// all): the copy counts of primaries or of every copy; the request
// counters are the same in both, since they count requests, not copies.
func statsSection(st coord.IndexStats, primaries bool, metrics []string) map[string]any {
	cs := st.Total
	if primaries {
		cs = st.Primaries
	}
	c := st.Counters
	out := map[string]any{}
	for _, m := range metrics {
		switch m {
		case "docs":
			out[m] = map[string]any{"count": cs.Docs, "deleted": 0}
		case "store":
			out[m] = map[string]any{"size_in_bytes": cs.StoreSizeBytes, "total_data_set_size_in_bytes": cs.StoreSizeBytes, "reserved_in_bytes": 0}
		case "indexing":
			out[m] = map[string]any{"index_total": c.IndexTotal, "index_time_in_millis": c.IndexTimeNanos / 1e6, "delete_total": c.DeleteTotal,
				"is_throttled": false}
		case "search":
			out[m] = map[string]any{"query_total": c.SearchTotal, "query_time_in_millis": c.SearchNanos / 1e6}
		case "fielddata":
			out[m] = map[string]any{"memory_size_in_bytes": 0, "evictions": 0, "global_ordinals": map[string]any{"build_time_in_millis": 0}}
		case "query_cache":
			out[m] = map[string]any{"memory_size_in_bytes": 0, "total_count": 0, "hit_count": 0, "miss_count": 0, "cache_size": 0, "cache_count": 0, "evictions": 0}
		case "request_cache":
			out[m] = map[string]any{"memory_size_in_bytes": 0, "evictions": 0, "hit_count": 0, "miss_count": 0}
		case "shard_stats":
			n := st.Counted
			if primaries {
				n = st.CountedPrimaries
			}
			out[m] = map[string]any{"total_count": n}
		}
	}
	return out
}

// indexingPressureStats is a node's "indexing_pressure" in _nodes/stats,
// in Elasticsearch's shape: the bytes of writes each stage holds now and
// has ever taken, the requests each refused, and the limit of the
// coordinating and primary stages (the replica stage's is 1.5 times it).
func indexingPressureStats(st membudget.Stats) map[string]any {
	bytes := func(b membudget.StageBytes) map[string]any {
		return map[string]any{
			"combined_coordinating_and_primary_in_bytes": b.Combined,
			"coordinating_in_bytes":                      b.Coordinating,
			"primary_in_bytes":                           b.Primary,
			"replica_in_bytes":                           b.Replica,
			"all_in_bytes":                               b.All,
		}
	}
	total := bytes(st.Total)
	total["coordinating_rejections"] = st.CoordinatingRejections
	total["primary_rejections"] = st.PrimaryRejections
	total["replica_rejections"] = st.ReplicaRejections
	return map[string]any{"memory": map[string]any{"current": bytes(st.Current), "total": total, "limit_in_bytes": st.Limit}}
}

// breakerStats is a node's "breakers" in _nodes/stats, in Elasticsearch's
// shape: each breaker's limit, estimate and trips.
func (s *Server) breakerStats() map[string]any {
	out := map[string]any{}
	if s.cfg.InFlight == nil {
		return out
	}
	for _, b := range []membudget.BreakerStats{s.cfg.InFlight.Stats()} {
		out[b.Name] = map[string]any{
			"limit_size_in_bytes": b.Limit, "limit_size": membudget.HumanBytes(b.Limit),
			"estimated_size_in_bytes": b.Estimated, "estimated_size": membudget.HumanBytes(b.Estimated),
			"overhead": 1.0, "tripped": b.Tripped,
		}
	}
	return out
}
