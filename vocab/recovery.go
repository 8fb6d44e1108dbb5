package vocab

import "time"

// Recovery modes.
const (
	RecoveryOps   = "ops"   // operation-based: replay of the primary's log
	RecoveryFiles = "files" // file-based: a snapshot of the primary's index, then its log
)

// RecoveryInfo describes one recovery of a copy on this node.
type RecoveryInfo struct {
	Index        string    `json:"index"`
	Shard        int       `json:"shard"`
	AllocationID string    `json:"allocation_id"`
	Mode         string    `json:"mode"`  // ops or files ("" before the primary chose)
	Stage        string    `json:"stage"` // init, index, translog, finalize, done, failed
	SourceNode   string    `json:"source_node"`
	TargetNode   string    `json:"target_node"`
	BytesTotal   int64     `json:"bytes_total"`
	BytesDone    int64     `json:"bytes_recovered"`
	OpsDone      int64     `json:"ops_recovered"`
	StartSeq     uint64    `json:"start_seq"`
	Started      time.Time `json:"start_time"`
	Stopped      time.Time `json:"stop_time,omitzero"`
	Error        string    `json:"error,omitempty"`
}
