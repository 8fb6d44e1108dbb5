package vocab

// CopyStats are one copy's counts.
type CopyStats struct {
	Docs           uint64 `json:"docs"`
	StoreSizeBytes int64  `json:"bytes"`
}
