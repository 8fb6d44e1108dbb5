package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// Peer recovery: a replica or move target (initializing in the shard
// table) copies the shard from its primary, then joins the in-sync set
// through the cluster.
//
//  1. The target tells the primary what it holds: nothing, or a copy with
//     its highest sequence number, its global checkpoint and whether it
//     has operations above that checkpoint from an older primary term.
//  2. The primary chooses: operation-based when the target's copy is a
//     prefix of the primary's history (nothing from an older term above its
//     checkpoint) and the primary's log still holds every operation after
//     it; otherwise file-based — a consistent snapshot of the primary's
//     index (taken while writes go on) is streamed to the target over the
//     fabric (fabric.SendStream; large chunks take the RDMA path or stripe
//     when the fabric has them), throttled to max_bytes_per_sec.
//  3. The primary sends the operations after the target's starting point
//     from its log, in chunks, as replication messages; for the last ones
//     it holds its write lock, then adds the target to its replication
//     group, so every later write reaches it too, in order.
//  4. The target reports itself started; the cluster adds it to the
//     in-sync set. A move target then replaces its source.
//
// While a recovery runs, the primary keeps its log from being trimmed
// below what the target still needs (a retention lease, dropped when the
// recovery ends or goes quiet for recoveryLeaseTTL).

// recoveryLeaseTTL drops the retention lease of a recovery that stopped
// asking (its target died).
const recoveryLeaseTTL = 10 * time.Minute

// recoveryChunkBytes bounds the operations sent in one message.
const recoveryChunkBytes = 4 << 20

// recoveryFileChunk and recoveryFileWindow are the stream chunk of
// file-based recovery and how many are in flight.
const (
	recoveryFileChunk  = 1 << 20
	recoveryFileWindow = fabric.DefaultStreamWindow
)

// lease keeps a primary's log from being trimmed below keepAfter.
type lease struct {
	primary   string // allocation ID of the primary copy
	target    string
	keepAfter uint64
	touched   time.Time
}

// retention is the highest sequence number of the primary copy alloc's log
// that no recovery still needs: every operation above it must stay.
func (s *Store) retention(alloc string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := uint64(math.MaxUint64)
	for id, l := range s.leases {
		if time.Since(l.touched) > recoveryLeaseTTL {
			delete(s.leases, id)
			continue
		}
		if l.primary == alloc {
			keep = min(keep, l.keepAfter)
		}
	}
	return keep
}

func (s *Store) setLease(id string, l lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.touched = time.Now()
	s.leases[id] = &l
}

func (s *Store) dropLease(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, id)
}

// Recoveries lists the recoveries of copies on this node, newest first.
func (s *Store) Recoveries() []vocab.RecoveryInfo {
	s.mu.RLock()
	out := make([]vocab.RecoveryInfo, 0, len(s.recoveries))
	for _, r := range s.recoveries {
		r.mu.Lock()
		out = append(out, r.info)
		r.mu.Unlock()
	}
	s.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Started.After(out[b].Started) })
	return out
}

// recovery is a target's recovery in progress (or done), for Recoveries.
type recovery struct {
	mu   sync.Mutex
	info vocab.RecoveryInfo
}

func (r *recovery) update(fn func(*vocab.RecoveryInfo)) {
	r.mu.Lock()
	fn(&r.info)
	r.mu.Unlock()
}

// recoveryStart is what a target tells its primary (step 1).
type recoveryStart struct {
	Cluster    string `json:"cluster"`
	Index      string `json:"index_uuid"`
	Shard      int    `json:"shard"`
	Primary    string `json:"primary"` // the primary's allocation ID
	Target     string `json:"target"`
	TargetNode string `json:"target_node"`
	HasData    bool   `json:"has_data"`
	MaxSeq     uint64 `json:"max_seq"`
	// OlderTermAboveGCP: the target has operations above its global
	// checkpoint from a primary term older than the primary's.
	OlderTermAboveGCP bool `json:"older_term_above_gcp"`
}

type recoveryPlan struct {
	ID       string `json:"id"`
	Mode     string `json:"mode"`
	StartSeq uint64 `json:"start_seq"`
}

type recoveryFilesReply struct {
	Bytes int64 `json:"bytes"`
}

type recoveryOps struct {
	ID   string `json:"id"`
	From uint64 `json:"from"` // the first sequence number the target lacks
}

type recoveryOpsReply struct {
	Ops int64 `json:"ops"`
}

// recover brings the copy c (a replica or move target, initializing) up to
// date from the shard's primary and reports it started. It runs in its own
// goroutine, once per copy at a time; on failure it returns and the next
// reconciliation tries again.
func (s *Store) recover(ctx context.Context, ix *state.Index, num int, c state.Copy) {
	v := s.meta.State()
	p, ok := ix.Shards[num].Primary()
	if !ok || !v.Active(p) || p.AllocationID == c.AllocationID {
		return // no primary to recover from yet
	}
	r := &recovery{info: vocab.RecoveryInfo{Index: ix.Name, Shard: num, AllocationID: c.AllocationID, Stage: "init",
		SourceNode: v.NodeName(p.NodeID), TargetNode: v.NodeName(s.meta.LocalNode()), Started: time.Now()}}
	s.mu.Lock()
	s.recoveries[c.AllocationID] = r
	s.mu.Unlock()
	err := s.runRecovery(ctx, v, ix, num, c, p, r)
	r.update(func(i *vocab.RecoveryInfo) {
		i.Stopped = time.Now()
		if err != nil {
			i.Stage, i.Error = "failed", err.Error()
		} else {
			i.Stage = "done"
		}
	})
	if err != nil {
		s.logger.Warn("shard copy recovery failed; it is retried", "shard", fmt.Sprintf("%s/%d", ix.Name, num), "allocation_id", c.AllocationID, "err", err)
		return
	}
	s.logger.Info("shard copy recovered", "shard", fmt.Sprintf("%s/%d", ix.Name, num), "allocation_id", c.AllocationID, "mode", r.info.Mode,
		"bytes", r.info.BytesDone, "ops", r.info.OpsDone, "took", time.Since(r.info.Started).Round(time.Millisecond))
}

func (s *Store) runRecovery(ctx context.Context, v *state.State, ix *state.Index, num int, c state.Copy, p state.Copy, r *recovery) error {
	if s.peers == nil {
		return fmt.Errorf("%w: the primary is on node %s and this node has no fabric", vocab.ErrUnavailable, p.NodeID)
	}
	nm, ok := s.mapping(ix.UUID)
	if !ok {
		return fmt.Errorf("index %s has no mapping on this node yet", ix.Name)
	}
	dir := filepath.Join(s.dir, c.AllocationID)
	meta := copyMeta{AllocationID: c.AllocationID, Index: ix.Name, IndexUUID: ix.UUID, Shard: num, AssignedAt: v.Version}
	start := recoveryStart{Cluster: v.ClusterUUID, Index: ix.UUID, Shard: num, Primary: p.AllocationID, Target: c.AllocationID, TargetNode: s.meta.LocalNode()}
	sc, _ := s.copy(c.AllocationID)
	if sc == nil {
		if _, err := os.Stat(filepath.Join(dir, copyMetaFile)); err == nil {
			var oerr error
			if sc, oerr = s.openLocal(dir, meta, nm, false, ix.Shards[num].PrimaryTerm); oerr != nil {
				s.logger.Warn("the local copy cannot be opened; recovering it from files", "dir", dir, "err", oerr)
				sc = nil
			}
		}
	}
	if sc != nil {
		sc.leader.Lock()
		start.HasData, start.MaxSeq = true, sc.lastSeq()
		start.OlderTermAboveGCP = sc.olderTermAbove(sc.idx.GlobalCheckpoint(), ix.Shards[num].PrimaryTerm)
		sc.leader.Unlock()
	}
	var plan recoveryPlan
	if err := s.callJSON(ctx, p.NodeID, MethodRecoveryStart, start, &plan); err != nil {
		return fmt.Errorf("asking primary %s on node %s to recover from it: %w", p.AllocationID, p.NodeID, err)
	}
	r.update(func(i *vocab.RecoveryInfo) { i.Mode, i.StartSeq = plan.Mode, plan.StartSeq })
	if plan.Mode == vocab.RecoveryFiles {
		r.update(func(i *vocab.RecoveryInfo) { i.Stage = "index" })
		if sc != nil {
			s.unregister(sc)
			_ = sc.close()
		}
		var err error
		if sc, err = s.recoverFiles(ctx, p.NodeID, plan.ID, dir, meta, nm, ix.Shards[num].PrimaryTerm, r); err != nil {
			return err
		}
	}
	if sc == nil {
		// Nothing local and the primary replays its whole log onto an
		// empty copy (its log still holds everything).
		var err error
		if sc, err = s.openLocal(dir, meta, nm, true, ix.Shards[num].PrimaryTerm); err != nil {
			return err
		}
	}
	r.update(func(i *vocab.RecoveryInfo) { i.Stage = "translog" })
	sc.leader.Lock()
	from := sc.nextSeq
	sc.leader.Unlock()
	var or recoveryOpsReply
	if err := s.callJSON(ctx, p.NodeID, MethodRecoveryOps, recoveryOps{ID: plan.ID, From: from}, &or); err != nil {
		return fmt.Errorf("replaying the primary's operations from seq %d: %w", from, err)
	}
	r.update(func(i *vocab.RecoveryInfo) { i.Stage, i.OpsDone = "finalize", or.Ops })
	if err := sc.catchUp(); err != nil {
		return err
	}
	sc.idx.EndReplay()
	return s.meta.CopyStarted(ctx, ix.UUID, num, c.AllocationID)
}

// recoverFiles copies the primary's files for the recovery id into a
// staging directory, installs them as the copy in dir (replacing what was
// there) once they are durable, and opens the copy.
func (s *Store) recoverFiles(ctx context.Context, primaryNode, id, dir string, meta copyMeta, nm *nodeMapping, term uint64, r *recovery) (*shardCopy, error) {
	alloc := meta.AllocationID
	// Another attempt's staging directory is left over (a crash, or an
	// attempt whose stream never ended cleanly): remove it.
	s.removeLeftovers(stagingPrefix, func(name string) bool {
		return strings.HasPrefix(name, sanitize(alloc)+"@") && !claimed(s, name, s.expected)
	})
	staging := s.stagingDir(id)
	s.expectFiles(id, r)
	var fr recoveryFilesReply
	err := s.callJSON(ctx, primaryNode, MethodRecoveryFiles, recoveryOps{ID: id}, &fr)
	s.expectFiles(id, nil)
	defer os.RemoveAll(staging)
	if err != nil {
		return nil, fmt.Errorf("copying the primary's files: %w", err)
	}
	// receiveFiles made the files and their directories durable before
	// the call returned; now the move into place, then the copy's identity.
	if _, err := os.Stat(dir); err == nil {
		if err := removeDir(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(staging, "index"), filepath.Join(dir, "index")); err != nil {
		return nil, fmt.Errorf("installing the copied index: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	if err := syncDir(s.dir); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, copyMetaFile), meta); err != nil {
		return nil, err
	}
	sc, err := s.openLocal(dir, meta, nm, false, term)
	if err != nil {
		return nil, fmt.Errorf("opening the copied index: %w", err)
	}
	return sc, nil
}

// olderTermAbove reports whether the copy's log has an operation above
// gcp from a primary term older than term; under the leader lock.
func (sc *shardCopy) olderTermAbove(gcp, term uint64) bool {
	older := false
	_ = sc.log.Replay(gcp, func(r *shardlog.Record) error {
		if r.Term < term {
			older = true
		}
		return nil
	})
	return older
}

// callJSON calls a recovery method on a node with a JSON request and reply.
func (s *Store) callJSON(ctx context.Context, node string, m fabric.Method, req, reply any) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return err
	}
	out, err := s.peers.Call(ctx, node, m, append([]byte{wireVersion}, raw...))
	if err != nil {
		return fromRemote(err)
	}
	if len(out) < 1 || out[0] != wireVersion {
		return fmt.Errorf("%w: reply version", ErrBadMessage)
	}
	return json.Unmarshal(out[1:], reply)
}

// readJSON decodes a versioned JSON request.
func readJSON(p []byte, into any) error {
	if len(p) < 1 || p[0] != wireVersion {
		return fabric.Errorf(fabric.CodeBadRequest, "unknown request version")
	}
	if err := json.Unmarshal(p[1:], into); err != nil {
		return fabric.Errorf(fabric.CodeBadRequest, "%v", err)
	}
	return nil
}

// sourceRecovery is a recovery the primary serves.
type sourceRecovery struct {
	start recoveryStart
	plan  recoveryPlan
}

// serveRecoveryStart runs on the primary: it chooses how the target
// recovers and takes a retention lease for it.
func (s *Store) serveRecoveryStart(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryStart
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	if err := s.checkRouting(ctx, Header{Cluster: m.Cluster, Index: m.Index, Shard: m.Shard, Alloc: m.Primary}, true); err != nil {
		return nil, remoteErr(err)
	}
	sc, ok := s.copy(m.Primary)
	if !ok {
		return nil, remoteErr(fmt.Errorf("%w: primary copy %s is not open", vocab.ErrUnavailable, m.Primary))
	}
	plan := recoveryPlan{ID: m.Target + "@" + fmt.Sprint(time.Now().UnixNano()), Mode: vocab.RecoveryFiles}
	sc.leader.Lock()
	last := sc.lastSeq()
	first := sc.log.FirstSeq()
	if m.HasData && !m.OlderTermAboveGCP && m.MaxSeq <= last && (first == 0 || first <= m.MaxSeq+1) {
		plan.Mode, plan.StartSeq = vocab.RecoveryOps, m.MaxSeq
	} else {
		// Whatever the snapshot holds, the operations after what is
		// applied now stay until the target has them.
		plan.StartSeq = sc.idx.AppliedSeq()
	}
	s.setLease(plan.ID, lease{primary: m.Primary, target: m.Target, keepAfter: plan.StartSeq})
	sc.leader.Unlock()
	s.mu.Lock()
	s.sources[plan.ID] = &sourceRecovery{start: m, plan: plan}
	s.mu.Unlock()
	return jsonReply(plan)
}

func (s *Store) source(id string) (*sourceRecovery, *shardCopy, error) {
	s.mu.RLock()
	sr := s.sources[id]
	s.mu.RUnlock()
	if sr == nil {
		return nil, nil, fmt.Errorf("%w: no recovery %s on this node", vocab.ErrStaleRouting, id)
	}
	sc, ok := s.copy(sr.start.Primary)
	if !ok {
		return nil, nil, fmt.Errorf("%w: primary copy %s is not open", vocab.ErrUnavailable, sr.start.Primary)
	}
	return sr, sc, nil
}

// serveRecoveryFiles runs on the primary: it snapshots its index and
// streams the files to the target's node, throttled.
func (s *Store) serveRecoveryFiles(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryOps
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	sr, sc, err := s.source(m.ID)
	if err != nil {
		return nil, remoteErr(err)
	}
	st := s
	st.removeLeftovers(snapshotPrefix, func(name string) bool { return !claimed(st, name, st.sources) })
	snap := st.snapshotDir(m.ID)
	defer os.RemoveAll(snap)
	if err := sc.idx.Snapshot(snap); err != nil {
		return nil, err
	}
	st.setLease(m.ID, lease{primary: sr.start.Primary, target: sr.start.Target, keepAfter: sr.plan.StartSeq})
	files, err := newFileStream(m.ID, snap)
	if err != nil {
		return nil, err
	}
	defer files.Close()
	n, err := fabric.SendStream(ctx, nodeConn{peers: st.peers, node: sr.start.TargetNode}, MethodRecoveryFiles, st.throttle.reader(ctx, files),
		fabric.StreamOptions{Chunk: recoveryFileChunk, Window: recoveryFileWindow})
	if err != nil {
		return nil, fmt.Errorf("streaming the snapshot to node %s: %w", sr.start.TargetNode, err)
	}
	return jsonReply(recoveryFilesReply{Bytes: n})
}

// serveRecoveryOps runs on the primary: it sends the target its operations
// from m.From on, from the log, as replication messages; for the last ones
// it holds its write lock, then adds the target to its replication group.
func (s *Store) serveRecoveryOps(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryOps
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	sr, sc, err := s.source(m.ID)
	if err != nil {
		return nil, remoteErr(err)
	}
	defer func() {
		s.mu.Lock()
		delete(s.sources, m.ID)
		s.mu.Unlock()
		s.dropLease(m.ID)
	}()
	v := s.meta.State()
	var sent int64
	send := func(recs []shardlog.Record, term uint64) error {
		msg := encodeReplicate(replicateMsg{Header: Header{Cluster: v.ClusterUUID, Index: sr.start.Index, Shard: sr.start.Shard, Alloc: sr.start.Target, Term: term}, gcp: sc.group.globalCheckpoint(recs[len(recs)-1].Seq), mappingVersion: sc.mapping.committedVersion(), recs: recs})
		if _, err := s.sendReplicate(ctx, sr.start.TargetNode, msg); err != nil {
			return err
		}
		sent += int64(len(recs))
		return nil
	}
	from := m.From
	// sendLogged sends the log from seq from to its end, chunk by chunk;
	// after each chunk, sent(from) with the next seq to send.
	sendLogged := func(sent func(from uint64)) error {
		for {
			recs, err := sc.readLog(from, recoveryChunkBytes)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				return nil
			}
			if err := send(recs, sc.term.Load()); err != nil {
				return fmt.Errorf("sending operations from seq %d: %w", from, err)
			}
			from = recs[len(recs)-1].Seq + 1
			sent(from)
		}
	}
	// Bulk of the operations without the lock: writes go on meanwhile, and
	// the lease keeps the log from being trimmed below what is not sent yet.
	if err := sendLogged(func(from uint64) {
		s.setLease(m.ID, lease{primary: sr.start.Primary, target: sr.start.Target, keepAfter: from - 1})
	}); err != nil {
		return nil, err
	}
	// The rest under the write lock, then the target joins the group.
	sc.leader.Lock()
	defer sc.leader.Unlock()
	if err := sendLogged(func(uint64) {}); err != nil {
		return nil, err
	}
	if from != sc.nextSeq {
		return nil, fmt.Errorf("%w: the primary's log ends at seq %d but it has written up to %d", ErrSeqGap, from-1, sc.nextSeq-1)
	}
	sc.group.track(sr.start.Target, sr.start.TargetNode, from-1)
	return jsonReply(recoveryOpsReply{Ops: sent})
}

// readLog returns the logged operations from seq from on, up to about
// limit bytes.
func (sc *shardCopy) readLog(from uint64, limit int) ([]shardlog.Record, error) {
	var out []shardlog.Record
	size := 0
	errFull := errors.New("full")
	err := sc.log.Replay(from-1, func(r *shardlog.Record) error {
		out = append(out, *r)
		size += len(r.Source) + len(r.ID) + 32
		if size >= limit {
			return errFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, err
	}
	return out, nil
}

// nodeConn presents one node reached through Peers as the fabric.Conn that
// fabric.SendStream sends on.
type nodeConn struct {
	peers fabric.Caller
	node  string
}

var _ fabric.Conn = nodeConn{}

func (n nodeConn) Call(ctx context.Context, m fabric.Method, p []byte) ([]byte, error) {
	return n.peers.Call(ctx, n.node, m, p)
}
func (n nodeConn) Send(ctx context.Context, m fabric.Method, p []byte) error {
	_, err := n.peers.Call(ctx, n.node, m, p)
	return err
}
func (n nodeConn) Stats() fabric.ConnStats { return fabric.ConnStats{} }
func (n nodeConn) RemoteAddr() string      { return "node " + n.node }
func (n nodeConn) Close() error            { return nil }
