package shard

// CopyStats are one copy's counts.
type CopyStats struct {
	Docs           uint64 `json:"docs"`
	StoreSizeBytes int64  `json:"bytes"`
}

// LocalCopyStats counts the copies open on this node, by allocation ID.
func (s *Store) LocalCopyStats() map[string]CopyStats {
	out := map[string]CopyStats{}
	for _, sc := range s.openCopies() {
		st := sc.idx.Stats()
		out[sc.meta.AllocationID] = CopyStats{Docs: st.DocCount, StoreSizeBytes: st.StoreSizeBytes}
	}
	return out
}

// reportedCounters are the request counters this node reports (none until
// SetRequestCounters).
func (s *Store) reportedCounters() map[string]IndexNodeStats {
	if s.requestCounters == nil {
		return nil
	}
	return s.requestCounters()
}
