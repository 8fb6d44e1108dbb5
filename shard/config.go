// Package shard is the data node: a node's copies of the indexes' shards,
// each a bleve index (package index) plus a write-ahead shard log
// (shard/shardlog). The Store keeps this node's copies in line with the
// cluster's shard table (creating, recovering and deleting them), runs the
// write path of a primary (version checks, sequence numbers, logging with
// group commit, replication to the in-sync copies, batch apply) and of a
// replica, serves every shard request another node sends over the fabric
// (Store.Register), and holds reader contexts. A coordinator (package
// coord) calls a node's copies through Copies: the Store in place, or
// Remote over the fabric.
//
// Refresh semantics: a primary logs a group of operations, waits for the
// fsync, and applies them to its bleve index as one batch (as its replicas
// do) before the group is acknowledged; documents are therefore searchable
// when a write returns, whatever the refresh policy, and Refresh only waits
// for writes in flight.
package shard

import (
	"fmt"
	"time"

	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/internal/vfs"
)

// Config tunes the data node (Store).
type Config struct {
	// LogSegmentBytes: a shard log starts a new segment file past this size;
	// whole segments are trimmed once scorch has persisted them.
	LogSegmentBytes int64
	// RecoveryMaxBytesPerSec limits the files this node streams to
	// recovering copies, all its recoveries together (Elasticsearch's
	// indices.recovery.max_bytes_per_sec); 0 means no limit.
	RecoveryMaxBytesPerSec int64
	// ReplicationTimeout bounds how long a primary waits for a replica to
	// answer a replication message, and then for the cluster to fail a
	// replica that did not: a write to a primary cut off from its replicas
	// and from the cluster's leader fails after at most twice this.
	ReplicationTimeout time.Duration
	// ReplicaIndexDelay bounds how long a replica's logged, acknowledged
	// operations wait to be indexed while nothing reads the copy
	// (behind.go); a read, a refresh or a promotion indexes them at once.
	ReplicaIndexDelay time.Duration
	// LogFS is the file system the shard logs are written through; nil is
	// the operating system's (tests inject faults: a full disk).
	LogFS vfs.FS
	// IndexingPressureBytes bounds the bytes of writes in flight on this
	// node at the coordinating and primary stages; the replica stage may
	// hold 1.5 times as much (membudget.IndexingPressure). A node sets it
	// to its share of --memory-limit (membudget.Split).
	IndexingPressureBytes int64
}

// DefaultIndexingPressureBytes is DefaultConfig's IndexingPressureBytes,
// for a Store built on its own (tests, tools): 10% of a 4 GiB budget. A
// node sets its own from its memory limit.
const DefaultIndexingPressureBytes = 4 << 30 / 100 * membudget.IndexingPressurePercent

// logFS is LogFS, or the operating system's file system.
func (c Config) logFS() vfs.FS {
	if c.LogFS == nil {
		return vfs.OS
	}
	return c.LogFS
}

// DefaultConfig is the production configuration.
func DefaultConfig() Config {
	return Config{LogSegmentBytes: 64 << 20, RecoveryMaxBytesPerSec: 40 << 20, ReplicationTimeout: 30 * time.Second, ReplicaIndexDelay: 5 * time.Second,
		IndexingPressureBytes: DefaultIndexingPressureBytes}
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	if c.LogSegmentBytes < 4096 {
		return fmt.Errorf("shard: Config.LogSegmentBytes %d is below the minimum 4096", c.LogSegmentBytes)
	}
	if c.ReplicationTimeout <= 0 {
		return fmt.Errorf("shard: Config.ReplicationTimeout %v must be positive", c.ReplicationTimeout)
	}
	if c.ReplicaIndexDelay <= 0 {
		return fmt.Errorf("shard: Config.ReplicaIndexDelay %v must be positive", c.ReplicaIndexDelay)
	}
	if c.IndexingPressureBytes <= 0 {
		return fmt.Errorf("shard: Config.IndexingPressureBytes %d must be positive", c.IndexingPressureBytes)
	}
	if c.RecoveryMaxBytesPerSec < 0 {
		return fmt.Errorf("shard: Config.RecoveryMaxBytesPerSec %d must be 0 (no limit) or positive", c.RecoveryMaxBytesPerSec)
	}
	return nil
}
