package shard

import "github.com/weftsearch/weft/vocab"

// LocalCopyStats counts the copies open on this node, by allocation ID.
func (s *Store) LocalCopyStats() map[string]vocab.CopyStats {
	out := map[string]vocab.CopyStats{}
	for _, sc := range s.openCopies() {
		st := sc.idx.Stats()
		out[sc.meta.AllocationID] = vocab.CopyStats{Docs: st.DocCount, StoreSizeBytes: st.StoreSizeBytes}
	}
	return out
}

// reportedCounters are the request counters this node reports (none until
// SetRequestCounters).
func (s *Store) reportedCounters() map[string]vocab.IndexNodeStats {
	if s.requestCounters == nil {
		return nil
	}
	return s.requestCounters()
}
