package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// Replication, as Elasticsearch does it (reduced):
//
//   - The primary assigns every operation its (primary term, sequence
//     number), logs and indexes it, and sends each group it commits — the
//     log records themselves — to every copy of its replication group: the
//     in-sync replicas of the shard table, and copies recovering from it.
//   - It acknowledges the group only once every in-sync copy has the
//     operations in its log on disk, or after the cluster has committed
//     that copy's removal from the in-sync set (FailCopy through Raft). A
//     primary that cannot get such a removal committed (partitioned from
//     the Raft majority) acknowledges nothing.
//   - A replica refuses operations of an older primary term (it has learnt
//     of a newer primary: the sender was deposed) and gaps in sequence
//     numbers; both answers are coded, and the primary treats them as
//     failures of that copy, so no copy silently diverges.
//   - Every message carries the global checkpoint: the highest sequence
//     number that every in-sync copy has acknowledged. Operations above a
//     copy's global checkpoint that came from an older primary term may be
//     missing on the new primary; such a copy recovers from files, never
//     by replaying on top of them (recovery.go).

// replicaTarget is one copy a primary replicates to.
type replicaTarget struct {
	alloc, node string
	// inSync: the copy is in the shard table's in-sync set; a failure must
	// then be committed through the cluster before writes are acknowledged.
	// A copy recovering from the primary is tracked but not yet in sync.
	inSync bool
	// checkpoint is the highest sequence number it acknowledged (every
	// lower one too, since messages arrive in order).
	checkpoint uint64
	// failed: it missed writes and was failed through the cluster. It gets
	// no more writes until it recovers, but while it stays assigned (its
	// node may return within the delayed timeout) the primary keeps the log
	// from its checkpoint on, so that it can catch up by operations.
	failed bool
}

// replicationGroup is a primary's set of targets. Commits read it under the
// copy's leader lock; reconciliation and recoveries change it.
type replicationGroup struct {
	mu      sync.Mutex
	targets map[string]*replicaTarget
}

// snapshot returns the targets that get writes, sorted by allocation ID.
func (g *replicationGroup) snapshot() []replicaTarget {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]replicaTarget, 0, len(g.targets))
	for _, t := range g.targets {
		if !t.failed {
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].alloc < out[b].alloc })
	return out
}

// sync makes the in-sync targets those of the shard table (self excluded),
// keeps the recovering targets that are still assigned, and drops the rest.
func (g *replicationGroup) sync(self string, sh *state.Shard) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.targets == nil {
		g.targets = map[string]*replicaTarget{}
	}
	assigned := map[string]state.Copy{}
	for _, c := range sh.Copies {
		assigned[c.AllocationID] = c
	}
	for id, t := range g.targets {
		if _, ok := assigned[id]; !ok {
			delete(g.targets, id)
			continue
		}
		t.inSync = false
	}
	for _, id := range sh.InSync {
		c, ok := assigned[id]
		if id == self || !ok {
			continue
		}
		t := g.targets[id]
		if t == nil {
			t = &replicaTarget{alloc: id, node: c.NodeID}
			g.targets[id] = t
		}
		t.inSync = !t.failed
	}
}

// track adds a recovering copy; every later commit replicates to it.
func (g *replicationGroup) track(alloc, node string, checkpoint uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.targets == nil {
		g.targets = map[string]*replicaTarget{}
	}
	if t, ok := g.targets[alloc]; ok {
		t.checkpoint, t.failed, t.node = checkpoint, false, node
		return
	}
	g.targets[alloc] = &replicaTarget{alloc: alloc, node: node, checkpoint: checkpoint}
}

func (g *replicationGroup) remove(alloc string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.targets, alloc)
}

// fail stops writes to a target that missed some, keeping its checkpoint.
func (g *replicationGroup) fail(alloc string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.targets[alloc]; ok {
		t.failed, t.inSync = true, false
	}
}

// retained is the highest sequence number no target still needs from the
// log: the least checkpoint of the targets, failed ones included.
func (g *replicationGroup) retained() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	keep := uint64(math.MaxUint64)
	for _, t := range g.targets {
		keep = min(keep, t.checkpoint)
	}
	return keep
}

func (g *replicationGroup) acked(alloc string, checkpoint uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.targets[alloc]; ok {
		t.checkpoint = max(t.checkpoint, checkpoint)
	}
}

// globalCheckpoint is the highest sequence number every in-sync copy has:
// the least of the primary's own (self) and its in-sync targets'.
func (g *replicationGroup) globalCheckpoint(self uint64) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	gcp := self
	for _, t := range g.targets {
		if t.inSync {
			gcp = min(gcp, t.checkpoint)
		}
	}
	return gcp
}

// replicateMsg is a replication request: a group of log records for one
// copy. With resync set it comes from a newly promoted primary and may
// repeat operations the copy has (which must then match).
type replicateMsg struct {
	Header         // the target copy, and the primary term of the records
	gcp            uint64
	mappingVersion uint64
	resync         bool
	// write: the records are a primary's new writes, which the replica
	// may refuse under indexing pressure (the primary then fails it); a
	// recovery's replay or a resync is never refused for pressure.
	write bool
	recs  []shardlog.Record
}

// Flags of a replication message.
const (
	replResync = 1 << iota
	replWrite
)

func encodeReplicate(m replicateMsg) []byte {
	size := 64 + len(m.Cluster) + len(m.Index) + len(m.Alloc)
	for k := range m.recs {
		size += 48 + len(m.recs[k].ID) + len(m.recs[k].Source)
	}
	e := enc{b: make([]byte, 0, size)}
	e.u8(wireVersion)
	e.copyHeader(m.Header)
	e.u64(m.gcp)
	e.u64(m.mappingVersion)
	var flags byte
	if m.resync {
		flags |= replResync
	}
	if m.write {
		flags |= replWrite
	}
	e.u8(flags)
	e.uvarint(uint64(len(m.recs)))
	for k := range m.recs {
		// Each record in the log's own frame (length, CRC-32C, payload),
		// so a record damaged on the way is caught as the log catches it.
		e.b = m.recs[k].AppendFrame(e.b)
	}
	return e.b
}

// errCorruptRecord: a replicated record failed its checksum.
var errCorruptRecord = errors.New("corrupt replicated record")

// decodeReplicateBody reads what follows a replication message's Header.
func decodeReplicateBody(d *dec) replicateMsg {
	var m replicateMsg
	m.gcp, m.mappingVersion = d.u64(), d.u64()
	flags := d.u8()
	if flags&^(replResync|replWrite) != 0 {
		d.fail("unknown replication flags")
	}
	m.resync, m.write = flags&replResync != 0, flags&replWrite != 0
	n := d.count(shardlog.FrameHeader)
	if d.err != nil {
		return m
	}
	m.recs = make([]shardlog.Record, 0, n)
	for range n {
		r, rest, err := shardlog.DecodeFrame(d.b)
		if err != nil {
			d.err, d.b = fmt.Errorf("%w: %v", errCorruptRecord, err), nil
			return m
		}
		m.recs = append(m.recs, r)
		d.b = rest
	}
	return m
}

// replicate starts sending recs (committed with term) to sc's replication
// group and returns the function that waits for the answers. That function
// returns nil once every copy in the group has logged them or has been
// failed through the cluster; an error means the group must not be
// acknowledged. An in-sync copy that missed them is failed (it recovers
// under the same allocation ID); a recovering one is removed from the shard
// table, so that a recovery finishing meanwhile cannot mark it in-sync
// without them (the allocator assigns a new copy). The cluster refuses to
// fail copies for a primary of an older term: a deposed primary
// acknowledges nothing. With no recs it is a barrier: it returns nil only
// if every copy in the group still takes this primary's term. last is the
// primary's own checkpoint (read under its write lock). The function also
// returns how many copies acknowledged.
func (s *Store) replicate(sc *shardCopy, term, mappingVersion, last uint64, recs []shardlog.Record) func() (int, error) {
	targets := sc.group.snapshot()
	if len(targets) == 0 {
		return func() (int, error) { return 0, nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ReplicationTimeout)
	gcp := sc.group.globalCheckpoint(last)
	v := s.meta.State()
	type answer struct {
		t          replicaTarget
		checkpoint uint64
		err        error
	}
	answers := make(chan answer, len(targets))
	for _, t := range targets {
		msg := encodeReplicate(replicateMsg{Header: Header{Cluster: v.ClusterUUID, Index: sc.meta.IndexUUID, Shard: sc.meta.Shard, Alloc: t.alloc, Term: term}, gcp: gcp, mappingVersion: mappingVersion, write: true, recs: recs})
		go func() {
			cp, err := s.sendReplicate(ctx, t.node, msg)
			answers <- answer{t, cp, err}
		}()
	}
	what := "a barrier"
	if len(recs) > 0 {
		what = fmt.Sprintf("writes up to seq %d", recs[len(recs)-1].Seq)
	}
	return func() (int, error) {
		defer cancel()
		var errs []error
		acked := 0
		for range targets {
			a := <-answers
			if a.err == nil {
				sc.group.acked(a.t.alloc, a.checkpoint)
				acked++
				continue
			}
			if errors.Is(a.err, vocab.ErrStaleRouting) {
				// The replica knows a newer primary: this copy was deposed.
				errs = append(errs, fmt.Errorf("%w: copy %s refused %s: %v", vocab.ErrStaleRouting, a.t.alloc, what, a.err))
				continue
			}
			reason := fmt.Sprintf("missed %s from primary %s (term %d): %v", what, sc.meta.AllocationID, term, a.err)
			fctx, fcancel := context.WithTimeout(context.Background(), s.cfg.ReplicationTimeout)
			err := s.meta.CopyFailed(fctx, sc.meta.IndexUUID, sc.meta.Shard, a.t.alloc, term, !a.t.inSync, reason)
			fcancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: copy %s missed %s and could not be failed: %v (after %v)", vocab.ErrUnavailable, a.t.alloc, what, err, a.err))
				continue
			}
			if a.t.inSync {
				sc.group.fail(a.t.alloc)
				s.logger.Warn("in-sync shard copy failed", "shard", sc.name, "allocation_id", a.t.alloc, "reason", reason)
			} else {
				sc.group.remove(a.t.alloc)
				s.logger.Info("recovering shard copy removed", "shard", sc.name, "allocation_id", a.t.alloc, "reason", reason)
			}
		}
		return acked, errors.Join(errs...)
	}
}

// confirmPrimary returns nil if sc is still the primary of term: every
// copy in its replication group takes that term (a promoted copy refuses
// it), or was failed through the cluster, which refuses a deposed primary.
// A read done before it (when sc's checkpoint was last) reflects every
// acknowledged write.
func (s *Store) confirmPrimary(sc *shardCopy, term, last uint64) error {
	if _, err := s.replicate(sc, term, sc.mapping.committedVersion(), last, nil)(); err != nil {
		return fmt.Errorf("shard %s: cannot confirm it is still the primary: %w", sc.name, err)
	}
	return nil
}

// sendReplicate sends one replication message and returns the copy's
// checkpoint.
func (s *Store) sendReplicate(ctx context.Context, node string, msg []byte) (uint64, error) {
	if s.peers == nil {
		return 0, fmt.Errorf("%w: the replica is on node %s and this node has no fabric", vocab.ErrUnavailable, node)
	}
	reply, err := s.peers.Call(ctx, node, MethodReplicate, msg)
	if err != nil {
		return 0, fromRemote(err)
	}
	d := dec{b: reply}
	d.version()
	cp := d.u64()
	return cp, d.end()
}

// serveReplicate runs on a replica, behind serveCopy (which checks that
// the copy is this node's): it logs the operations of one replication
// message, in order, and answers with its checkpoint; they are indexed
// behind the answer (behind.go).
func (s *Store) serveReplicate(ctx context.Context, h Header, m replicateMsg) ([]byte, error) {
	m.Header = h
	cp, err := s.applyReplicated(ctx, m)
	if err != nil {
		return nil, err
	}
	e := enc{}
	e.u8(wireVersion)
	e.u64(cp)
	return e.b, nil
}

// ErrSeqGap: a replica was sent operations past a gap in its sequence
// numbers (it missed some); it must recover.
var ErrSeqGap = errors.New("sequence number gap")

// ErrDiverged: a promoted primary's resync found operations on this copy
// that the new primary does not have; the copy must recover from files.
var ErrDiverged = errors.New("copy diverged from the primary")

// applyReplicated logs replicated operations on the local copy m.Alloc,
// queues them to be indexed, and returns its checkpoint (its highest
// sequence number logged).
func (s *Store) applyReplicated(ctx context.Context, m replicateMsg) (uint64, error) {
	sc, ok := s.copy(m.Alloc)
	if !ok {
		return 0, fmt.Errorf("%w: copy %s is not open on this node", vocab.ErrUnavailable, m.Alloc)
	}
	if err := s.awaitTerm(ctx, sc, m.Term); err != nil {
		return 0, err
	}
	nm := sc.mapping
	if err := s.awaitMapping(ctx, nm, m.mappingVersion); err != nil {
		return 0, err
	}
	if !s.beginWrite() {
		return 0, vocab.ErrClosed
	}
	defer s.writes.Done()
	sc.leader.Lock()
	defer sc.leader.Unlock()
	if t := sc.term.Load(); m.Term < t {
		return 0, fmt.Errorf("%w: operations of primary term %d, but copy %s is at term %d", vocab.ErrStaleRouting, m.Term, m.Alloc, t)
	}
	if sc.primary.Load() {
		// A primary takes no operations from another: the sender lost
		// the shard to it (a move handed over, or a promotion).
		return 0, fmt.Errorf("%w: copy %s is the primary now", vocab.ErrStaleRouting, m.Alloc)
	}
	sc.term.Store(m.Term)
	fresh := m.recs
	if m.resync {
		var err error
		if fresh, err = sc.checkResync(m.gcp, m.recs); err != nil {
			return 0, err
		}
	}
	if len(fresh) > 0 && fresh[0].Seq != sc.nextSeq {
		if fresh[0].Seq > sc.nextSeq {
			return 0, fmt.Errorf("%w: copy %s expects seq %d, got %d", ErrSeqGap, m.Alloc, sc.nextSeq, fresh[0].Seq)
		}
		return 0, fmt.Errorf("%w: copy %s has seq %d already (expects %d)", ErrSeqGap, m.Alloc, fresh[0].Seq, sc.nextSeq)
	}
	if err := sc.appendAndDefer(fresh); err != nil {
		return 0, err
	}
	sc.idx.SetGlobalCheckpoint(min(m.gcp, sc.nextSeq-1))
	return sc.nextSeq - 1, nil
}

// appendAndDefer logs records (in order, contiguous from nextSeq) and
// queues them to be indexed; it runs under the leader lock.
func (sc *shardCopy) appendAndDefer(recs []shardlog.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for k := 1; k < len(recs); k++ {
		if recs[k].Seq != recs[k-1].Seq+1 {
			return fmt.Errorf("%w: records jump from seq %d to %d", ErrSeqGap, recs[k-1].Seq, recs[k].Seq)
		}
	}
	ops := make([]index.Op, len(recs))
	for k := range recs {
		r := &recs[k]
		ops[k] = index.Op{Delete: r.Delete, ID: r.ID, Source: r.Source, SeqNo: r.Seq, Version: r.Version, PrimaryTerm: r.Term}
		if err := sc.idx.Prepare(&ops[k]); err != nil {
			return fmt.Errorf("shard %s: replicated seq %d (%s) does not parse against this node's mapping: %w", sc.name, r.Seq, r.ID, err)
		}
	}
	if err := sc.appendLog(recs); err != nil {
		return fmt.Errorf("shard %s: %w", sc.name, err)
	}
	sc.nextSeq = recs[len(recs)-1].Seq + 1
	return sc.deferApply(ops)
}

// checkResync compares a promoted primary's operations above the global
// checkpoint gcp with this copy's log: the ones the copy has must be the
// same (seq and term), and the copy must have none beyond the primary's
// last. It returns the operations the copy lacks.
func (sc *shardCopy) checkResync(gcp uint64, recs []shardlog.Record) ([]shardlog.Record, error) {
	last := gcp
	if len(recs) > 0 {
		last = max(last, recs[len(recs)-1].Seq)
	}
	have := map[uint64]uint64{} // seq → term, of this copy's operations above gcp
	if err := sc.log.Replay(gcp, func(r *shardlog.Record) error {
		have[r.Seq] = r.Term
		return nil
	}); err != nil {
		return nil, err
	}
	for seq := range have {
		if seq > last {
			return nil, fmt.Errorf("%w: copy has seq %d, the new primary's history ends at %d", ErrDiverged, seq, last)
		}
	}
	var fresh []shardlog.Record
	for _, r := range recs {
		t, ok := have[r.Seq]
		switch {
		case !ok:
			fresh = append(fresh, r)
		case t != r.Term:
			return nil, fmt.Errorf("%w: seq %d is of term %d here, %d on the new primary", ErrDiverged, r.Seq, t, r.Term)
		}
	}
	return fresh, nil
}

// awaitTerm waits (briefly) until this node's shard table knows term for
// sc's shard when a message brings a newer one than the copy has.
func (s *Store) awaitTerm(ctx context.Context, sc *shardCopy, term uint64) error {
	if term <= sc.term.Load() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	_, err := s.meta.AwaitState(wctx, func(v *state.State) bool {
		ix, ok := v.IndexByUUID(sc.meta.IndexUUID)
		return ok && sc.meta.Shard < len(ix.Shards) && ix.Shards[sc.meta.Shard].PrimaryTerm >= term
	})
	if err != nil {
		return fmt.Errorf("%w: primary term %d is not known to this node yet", vocab.ErrStaleRouting, term)
	}
	return nil
}

// awaitMapping waits (briefly) until the node's mapping of nm's index is
// at least at version mv, merging it in.
func (s *Store) awaitMapping(ctx context.Context, nm *nodeMapping, mv uint64) error {
	wctx, cancel := context.WithTimeout(ctx, routingWait)
	defer cancel()
	v, err := s.meta.AwaitState(wctx, func(v *state.State) bool {
		ix, ok := v.IndexByUUID(nm.uuid)
		return ok && ix.MappingVersion >= mv
	})
	if err != nil {
		return fmt.Errorf("%w: mapping version %d of index %s has not reached this node", vocab.ErrUnavailable, mv, nm.name)
	}
	ix, _ := v.IndexByUUID(nm.uuid)
	return nm.merge(ix)
}

// promote makes an open copy the primary of term. Under its write lock,
// before it takes any write, it resyncs the other in-sync copies: it sends
// them its operations above its global checkpoint. A copy that lacks some
// gets them; a copy that has operations this one does not (they were never
// acknowledged) is failed and recovers from files.
func (s *Store) promote(ctx context.Context, sc *shardCopy, term uint64) error {
	sc.leader.Lock()
	defer sc.leader.Unlock()
	sc.term.Store(term)
	gcp := sc.idx.GlobalCheckpoint()
	recs, err := sc.readLog(gcp+1, math.MaxInt)
	if err != nil {
		return fmt.Errorf("shard %s: reading the operations above the global checkpoint %d to resync: %w", sc.name, gcp, err)
	}
	v := s.meta.State()
	var errs []error
	for _, t := range sc.group.snapshot() {
		if !t.inSync {
			continue
		}
		msg := encodeReplicate(replicateMsg{Header: Header{Cluster: v.ClusterUUID, Index: sc.meta.IndexUUID, Shard: sc.meta.Shard, Alloc: t.alloc, Term: term}, gcp: gcp, mappingVersion: sc.mapping.committedVersion(), resync: true, recs: recs})
		cp, err := s.sendReplicate(ctx, t.node, msg)
		if err == nil {
			sc.group.acked(t.alloc, cp)
			continue
		}
		reason := fmt.Sprintf("resync from the new primary %s (term %d): %v", sc.meta.AllocationID, term, err)
		if ferr := s.meta.CopyFailed(ctx, sc.meta.IndexUUID, sc.meta.Shard, t.alloc, term, false, reason); ferr != nil {
			errs = append(errs, fmt.Errorf("shard %s: copy %s failed its resync and could not be failed: %w", sc.name, t.alloc, ferr))
			continue
		}
		sc.group.fail(t.alloc)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := sc.catchUp(); err != nil {
		return err
	}
	sc.primary.Store(true)
	s.logger.Info("shard copy serves as primary", "shard", sc.name, "allocation_id", sc.meta.AllocationID, "term", term, "resynced_ops", len(recs))
	return nil
}
