package coord

import (
	"fmt"
	"time"
)

// Config tunes the coordinator.
type Config struct {
	// AutoCreateIndex: a write to a missing index creates it with default
	// settings and dynamic mapping (ES action.auto_create_index).
	AutoCreateIndex bool
	// MaxShards bounds number_of_shards at index creation.
	MaxShards int
	// SearchStatsCacheBytes bounds the term statistics the coordinator
	// keeps between searches (an estimate of their bytes), so that a
	// repeated search skips the statistics phase while no shard changes;
	// 0 keeps none.
	SearchStatsCacheBytes int64
	// RefreshTimeout bounds a refresh's wait for the copies: a copy that
	// does not answer within it (its node cut off or stalled) fails the
	// refresh rather than holding it.
	RefreshTimeout time.Duration
}

// DefaultConfig is the production configuration.
func DefaultConfig() Config {
	return Config{AutoCreateIndex: true, MaxShards: 1024, SearchStatsCacheBytes: 32 << 20, RefreshTimeout: 30 * time.Second}
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	if c.MaxShards < 1 {
		return fmt.Errorf("coord: Config.MaxShards %d must be at least 1", c.MaxShards)
	}
	if c.SearchStatsCacheBytes < 0 {
		return fmt.Errorf("coord: Config.SearchStatsCacheBytes %d must be 0 (none kept) or positive", c.SearchStatsCacheBytes)
	}
	if c.RefreshTimeout <= 0 {
		return fmt.Errorf("coord: Config.RefreshTimeout %v must be positive", c.RefreshTimeout)
	}
	return nil
}
