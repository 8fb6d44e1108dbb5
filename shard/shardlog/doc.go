// Package shardlog is the write-ahead log of one shard copy: operations with
// increasing sequence numbers, each durable once Append returns (concurrent
// appenders share one fsync). Replay gives them back in order after a
// restart; Open cuts a torn, unsynced tail and refuses a log whose fsynced
// data is damaged.
package shardlog
