package shardapi

import "time"

// MaxKeepAlive bounds a reader context's keep-alive, as Elasticsearch's
// search.max_keep_alive default does.
const MaxKeepAlive = 24 * time.Hour

// ScrollCursor is where a scroll's last page ended: the page number and
// the raw sort keys of its last hit (nil before the first page).
type ScrollCursor struct {
	Page  int      `json:"p"`
	After [][]byte `json:"a,omitempty"`
}
