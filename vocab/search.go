package vocab

import (
	"fmt"
	"time"
)

// MaxKeepAlive bounds a reader context's keep-alive, as Elasticsearch's
// search.max_keep_alive default does.
const MaxKeepAlive = 24 * time.Hour

// ScrollCursor is where a scroll's last page ended: the page number and
// the raw sort keys of its last hit (nil before the first page).
type ScrollCursor struct {
	Page  int      `json:"p"`
	After [][]byte `json:"a,omitempty"`
}

// ContextKind says what a reader context is opened for; each kind has its
// own per-node limit. Its value is part of the wire format.
type ContextKind uint8

const (
	ContextPIT      ContextKind = 0 // a point in time (POST /{index}/_pit)
	ContextScroll   ContextKind = 1 // a scroll's point in time (?scroll=)
	NumContextKinds             = 2 // how many kinds there are
)

// Valid reports whether k is a known kind.
func (k ContextKind) Valid() bool { return k < NumContextKinds }

// The cluster settings (state.Settings.Values) that bound how many reader
// contexts of each kind one node holds open, counted per shard copy as
// Elasticsearch counts them, with their defaults.
const (
	MaxOpenScrollContextSetting = "search.max_open_scroll_context"
	MaxOpenPITContextSetting    = "search.max_open_pit_context"
	DefaultMaxOpenScrollContext = 500
	DefaultMaxOpenPITContext    = 300
)

// LimitSetting returns the cluster setting that bounds contexts of kind
// and its default.
func (k ContextKind) LimitSetting() (key string, def int) {
	if k == ContextScroll {
		return MaxOpenScrollContextSetting, DefaultMaxOpenScrollContext
	}
	return MaxOpenPITContextSetting, DefaultMaxOpenPITContext
}

// TooManyContexts is the error that refuses a context of kind over limit,
// in Elasticsearch's words.
func TooManyContexts(kind ContextKind, limit int) error {
	key, _ := kind.LimitSetting()
	if kind == ContextScroll {
		return fmt.Errorf("%w: Trying to create too many scroll contexts. Must be less than or equal to: [%d]. This limit can be set by changing the [%s] setting.",
			ErrTooManyScrollContexts, limit, key)
	}
	return fmt.Errorf("%w: Trying to create too many Point In Time contexts. Must be less than or equal to: [%d]. This limit can be set by changing the [%s] setting.",
		ErrTooManyPITContexts, limit, key)
}
