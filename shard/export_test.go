package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// This file opens the data node's internals to package shard_test, whose
// tests drive nodes through a coordinator (coord/coordtest) and so cannot
// be internal tests: coord imports shard.

// CopyHandle is one open shard copy of a Store.
type CopyHandle = shardCopy

// CopyOf returns the Store's open copy alloc.
func (s *Store) CopyOf(alloc string) (*CopyHandle, bool) { return s.copy(alloc) }

// PrimaryCopy returns st's open primary copy of shard num of index name.
func PrimaryCopy(t testing.TB, st *Store, name string, num int) *CopyHandle {
	t.Helper()
	ix, err := st.meta.State().Index(name)
	require.NoError(t, err)
	p, ok := ix.Shards[num].Primary()
	require.True(t, ok)
	sc, ok := st.copy(p.AllocationID)
	require.True(t, ok, "%s/%d is not open on this node", name, num)
	return sc
}

// Index returns the copy's bleve index.
func (sc *shardCopy) Index() *index.Index { return sc.idx }

// Readable is readable.
func (sc *shardCopy) Readable() (*index.Index, error) { return sc.readable() }

// Log returns the copy's shard log.
func (sc *shardCopy) Log() *shardlog.Log { return sc.log }

// IsPrimary says whether the copy acts as its shard's primary.
func (sc *shardCopy) IsPrimary() bool { return sc.primary.Load() }

// Term returns the primary term the copy knows.
func (sc *shardCopy) Term() uint64 { return sc.term.Load() }

// AllocationID returns the copy's allocation ID.
func (sc *shardCopy) AllocationID() string { return sc.meta.AllocationID }

// Write prepares and writes items on the copy, as a primary does with a
// group it received.
func (sc *shardCopy) Write(items []Item) error {
	sc.prepare(items)
	return sc.write(items)
}

// BehindBy returns how many logged operations the copy has not indexed.
func (sc *shardCopy) BehindBy() uint64 {
	sc.leader.Lock()
	defer sc.leader.Unlock()
	return sc.lastSeq() - sc.idx.AppliedSeq()
}

// BehindBytes returns the source bytes the node's replicas logged and
// have not indexed yet.
func (s *Store) BehindBytes() int64 { return s.behindBytes.Load() }

// ThrottleAdmitted returns the bytes the node's recovery throttle let
// through.
func (s *Store) ThrottleAdmitted() int64 { return s.throttle.admitted.Load() }

// Dir returns the Store's directory.
func (s *Store) Dir() string { return s.dir }

// Prefixes of the leftover directories a Store cleans up.
const (
	StagingPrefix  = stagingPrefix
	SnapshotPrefix = snapshotPrefix
	DeletedPrefix  = deletedPrefix
)

// RoutingWait is how long a copy waits for the routing of a request.
const RoutingWait = routingWait

// Encoders of the requests other nodes send, for seeding fuzz tests.
var (
	EncodeBulk         = encodeBulk
	EncodeStatsRequest = encodeStatsRequest
	EncodeQueryRequest = encodeQueryRequest
	EncodeFetchRequest = encodeFetchRequest
)

// WireVersion is the version byte of every per-copy request.
const WireVersion = wireVersion

// MgetRequest encodes a realtime get of ids.
func MgetRequest(h Header, ids ...string) []byte {
	return request(h, 0, func(e *enc) {
		e.uvarint(uint64(len(ids)))
		for _, id := range ids {
			e.str(id)
		}
	})
}

// ContextOpenRequest encodes a request to open a reader context of kind
// for keep.
func ContextOpenRequest(h Header, keep time.Duration, kind vocab.ContextKind) []byte {
	return request(h, 0, func(e *enc) { encodeOpenContext(e, openContextArg{keep: keep, kind: kind}) })
}

// ScrollCommitRequest encodes a request storing cursor in context ctx.
func ScrollCommitRequest(h Header, ctx string, cursor []byte) []byte {
	return request(h, 0, func(e *enc) {
		e.str(ctx)
		e.bytes(cursor)
	})
}

// Owner returns the Store the copy belongs to.
func (sc *shardCopy) Owner() *Store { return sc.store }

// NextSeq returns the sequence number the copy's next operation gets.
func (sc *shardCopy) NextSeq() uint64 {
	sc.leader.Lock()
	defer sc.leader.Unlock()
	return sc.nextSeq
}

// CommitLeaderBusy says whether a group commit holds the copy's commit
// lock (a leader is inside its write and fsync).
func (sc *shardCopy) CommitLeaderBusy() bool {
	if sc.leader.TryLock() {
		sc.leader.Unlock()
		return false
	}
	return true
}

// QueueLen returns how many write groups wait for the next group commit.
func (sc *shardCopy) QueueLen() int {
	sc.qmu.Lock()
	defer sc.qmu.Unlock()
	return len(sc.queue)
}

// RecoveryRate returns the bytes per second the node's recoveries may use.
func (s *Store) RecoveryRate() int64 { return s.recoveryRate() }

// RemoveDir removes a copy's directory as the Store does.
var RemoveDir = removeDir

// FromRemote turns a fabric error back into the sentinel it carries.
var FromRemote = fromRemote

// ReplicateRequest encodes a replication message of recs from a primary of
// the given term to copy alloc.
func ReplicateRequest(cluster, indexUUID string, num int, alloc string, term, mappingVersion uint64, recs []shardlog.Record) []byte {
	return encodeReplicate(replicateMsg{Header: Header{Cluster: cluster, Index: indexUUID, Shard: num, Alloc: alloc, Term: term}, mappingVersion: mappingVersion, recs: recs})
}
