package shard

import "github.com/weftsearch/weft/shardapi"

// LocalCopyStats counts the copies open on this node, by allocation ID.
func (s *Store) LocalCopyStats() map[string]shardapi.CopyStats {
	out := map[string]shardapi.CopyStats{}
	for _, sc := range s.openCopies() {
		st := sc.idx.Stats()
		out[sc.meta.AllocationID] = shardapi.CopyStats{Docs: st.DocCount, StoreSizeBytes: st.StoreSizeBytes}
	}
	return out
}

// reportedCounters are the request counters this node reports (none until
// SetRequestCounters).
func (s *Store) reportedCounters() map[string]shardapi.IndexNodeStats {
	if s.requestCounters == nil {
		return nil
	}
	return s.requestCounters()
}
