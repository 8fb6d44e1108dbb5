package shard

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/weftsearch/weft/fabric"
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

// recoveryLeaseTTL drops the retention lease of a recovery that stopped
// asking (its target died).
const recoveryLeaseTTL = 10 * time.Minute

// recoveryChunkBytes bounds the operations sent in one message.
const recoveryChunkBytes = 4 << 20

// recoveryFileChunk is the stream chunk of file-based recovery.
const recoveryFileChunk = 1 << 20

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
func (s *Store) Recoveries() []RecoveryInfo {
	s.mu.RLock()
	out := make([]RecoveryInfo, 0, len(s.recoveries))
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
	info RecoveryInfo
}

func (r *recovery) update(fn func(*RecoveryInfo)) {
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
func (s *Store) recover(ctx context.Context, ix *IndexView, num int, c CopyView) {
	v := s.meta.View()
	p, ok := ix.Shards[num].Primary()
	if !ok || !v.Active(p) || p.AllocationID == c.AllocationID {
		return // no primary to recover from yet
	}
	r := &recovery{info: RecoveryInfo{Index: ix.Name, Shard: num, AllocationID: c.AllocationID, Stage: "init",
		SourceNode: v.Nodes[p.NodeID].Name, TargetNode: v.Nodes[v.LocalNode].Name, Started: time.Now()}}
	s.mu.Lock()
	s.recoveries[c.AllocationID] = r
	s.mu.Unlock()
	err := s.runRecovery(ctx, v, ix, num, c, p, r)
	r.update(func(i *RecoveryInfo) {
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

func (s *Store) runRecovery(ctx context.Context, v *View, ix *IndexView, num int, c CopyView, p CopyView, r *recovery) error {
	if s.peers == nil {
		return fmt.Errorf("%w: the primary is on node %s and this node has no fabric", ErrUnavailable, p.NodeID)
	}
	nm, ok := s.mapping(ix.UUID)
	if !ok {
		return fmt.Errorf("index %s has no mapping on this node yet", ix.Name)
	}
	dir := filepath.Join(s.dir, c.AllocationID)
	meta := copyMeta{AllocationID: c.AllocationID, Index: ix.Name, IndexUUID: ix.UUID, Shard: num, AssignedAt: v.Version}
	start := recoveryStart{Cluster: v.ClusterUUID, Index: ix.UUID, Shard: num, Primary: p.AllocationID, Target: c.AllocationID, TargetNode: v.LocalNode}
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
	if err := s.callJSON(ctx, p.NodeID, methodRecoveryStart, start, &plan); err != nil {
		return fmt.Errorf("asking primary %s on node %s to recover from it: %w", p.AllocationID, p.NodeID, err)
	}
	r.update(func(i *RecoveryInfo) { i.Mode, i.StartSeq = plan.Mode, plan.StartSeq })
	if plan.Mode == RecoveryFiles {
		r.update(func(i *RecoveryInfo) { i.Stage = "index" })
		if sc != nil {
			s.unregister(sc)
			_ = sc.close()
		}
		staging := s.stagingDir(c.AllocationID)
		_ = os.RemoveAll(staging)
		s.expectFiles(c.AllocationID, r)
		var fr recoveryFilesReply
		err := s.callJSON(ctx, p.NodeID, methodRecoveryFiles, recoveryOps{ID: plan.ID}, &fr)
		s.expectFiles(c.AllocationID, nil)
		if err != nil {
			return fmt.Errorf("copying the primary's files: %w", err)
		}
		if _, err := os.Stat(dir); err == nil {
			if err := removeDir(dir); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(staging, "index"), filepath.Join(dir, "index")); err != nil {
			return fmt.Errorf("installing the copied index: %w", err)
		}
		_ = os.RemoveAll(staging)
		if err := writeFileAtomic(filepath.Join(dir, copyMetaFile), meta); err != nil {
			return err
		}
		var err2 error
		if sc, err2 = s.openLocal(dir, meta, nm, false, ix.Shards[num].PrimaryTerm); err2 != nil {
			return fmt.Errorf("opening the copied index: %w", err2)
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
	r.update(func(i *RecoveryInfo) { i.Stage = "translog" })
	sc.leader.Lock()
	from := sc.nextSeq
	sc.leader.Unlock()
	var or recoveryOpsReply
	if err := s.callJSON(ctx, p.NodeID, methodRecoveryOps, recoveryOps{ID: plan.ID, From: from}, &or); err != nil {
		return fmt.Errorf("replaying the primary's operations from seq %d: %w", from, err)
	}
	r.update(func(i *RecoveryInfo) { i.Stage, i.OpsDone = "finalize", or.Ops })
	sc.idx.EndReplay()
	return s.meta.CopyStarted(ctx, ix.UUID, num, c.AllocationID)
}

// olderTermAbove reports whether the copy's log has an operation above
// gcp from a primary term older than term; under the leader lock.
func (sc *shardCopy) olderTermAbove(gcp, term uint64) bool {
	older := false
	_ = sc.log.Replay(gcp, func(r *LogRecord) error {
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
		return fmt.Errorf("%w: reply version", errBadMessage)
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
func (c *Coordinator) serveRecoveryStart(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryStart
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	if err := c.checkRouting(ctx, m.Cluster, m.Index, m.Shard, m.Primary, true); err != nil {
		return nil, remoteErr(err)
	}
	sc, ok := c.store.copy(m.Primary)
	if !ok {
		return nil, remoteErr(fmt.Errorf("%w: primary copy %s is not open", ErrUnavailable, m.Primary))
	}
	plan := recoveryPlan{ID: m.Target + "@" + fmt.Sprint(time.Now().UnixNano()), Mode: RecoveryFiles}
	sc.leader.Lock()
	last := sc.lastSeq()
	first := sc.log.FirstSeq()
	if m.HasData && !m.OlderTermAboveGCP && m.MaxSeq <= last && (first == 0 || first <= m.MaxSeq+1) {
		plan.Mode, plan.StartSeq = RecoveryOps, m.MaxSeq
	} else {
		// Whatever the snapshot holds, the operations after what is
		// applied now stay until the target has them.
		plan.StartSeq = sc.idx.AppliedSeq()
	}
	c.store.setLease(plan.ID, lease{primary: m.Primary, target: m.Target, keepAfter: plan.StartSeq})
	sc.leader.Unlock()
	c.store.mu.Lock()
	c.store.sources[plan.ID] = &sourceRecovery{start: m, plan: plan}
	c.store.mu.Unlock()
	return jsonReply(plan)
}

func (s *Store) source(id string) (*sourceRecovery, *shardCopy, error) {
	s.mu.RLock()
	sr := s.sources[id]
	s.mu.RUnlock()
	if sr == nil {
		return nil, nil, fmt.Errorf("%w: no recovery %s on this node", ErrStaleRouting, id)
	}
	sc, ok := s.copy(sr.start.Primary)
	if !ok {
		return nil, nil, fmt.Errorf("%w: primary copy %s is not open", ErrUnavailable, sr.start.Primary)
	}
	return sr, sc, nil
}

// serveRecoveryFiles runs on the primary: it snapshots its index and
// streams the files to the target's node, throttled.
func (c *Coordinator) serveRecoveryFiles(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryOps
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	sr, sc, err := c.store.source(m.ID)
	if err != nil {
		return nil, remoteErr(err)
	}
	snap := filepath.Join(c.store.dir, ".snapshot-"+sanitize(m.ID))
	_ = os.RemoveAll(snap)
	defer os.RemoveAll(snap)
	if err := sc.idx.Snapshot(snap); err != nil {
		return nil, err
	}
	c.store.setLease(m.ID, lease{primary: sr.start.Primary, target: sr.start.Target, keepAfter: sr.plan.StartSeq})
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeFiles(pw, sr.start.Target, snap)) }()
	var src io.Reader = pr
	if bps := c.store.recoveryRate(); bps > 0 {
		src = &throttled{r: pr, lim: rate.NewLimiter(rate.Limit(bps), recoveryFileChunk), ctx: ctx}
	}
	n, err := fabric.SendStream(ctx, nodeConn{peers: c.store.peers, node: sr.start.TargetNode}, methodRecoveryFiles, src, recoveryFileChunk)
	_ = pr.Close()
	if err != nil {
		return nil, fmt.Errorf("streaming the snapshot to node %s: %w", sr.start.TargetNode, err)
	}
	return jsonReply(recoveryFilesReply{Bytes: n})
}

// serveRecoveryOps runs on the primary: it sends the target its operations
// from m.From on, from the log, as replication messages; for the last ones
// it holds its write lock, then adds the target to its replication group.
func (c *Coordinator) serveRecoveryOps(ctx context.Context, req *fabric.Request) ([]byte, error) {
	var m recoveryOps
	if err := readJSON(req.Payload, &m); err != nil {
		return nil, err
	}
	sr, sc, err := c.store.source(m.ID)
	if err != nil {
		return nil, remoteErr(err)
	}
	defer func() {
		c.store.mu.Lock()
		delete(c.store.sources, m.ID)
		c.store.mu.Unlock()
		c.store.dropLease(m.ID)
	}()
	v := c.meta.View()
	var sent int64
	send := func(recs []LogRecord, term uint64) error {
		msg := encodeReplicate(replicateMsg{cluster: v.ClusterUUID, index: sr.start.Index, shard: sr.start.Shard, alloc: sr.start.Target,
			term: term, gcp: sc.group.globalCheckpoint(recs[len(recs)-1].Seq), mappingVersion: sc.mapping.committedVersion(), recs: recs})
		if _, err := c.store.sendReplicate(ctx, sr.start.TargetNode, msg); err != nil {
			return err
		}
		sent += int64(len(recs))
		return nil
	}
	from := m.From
	// Bulk of the operations without the lock: writes go on meanwhile.
	for {
		recs, err := sc.readLog(from, recoveryChunkBytes)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			break
		}
		if err := send(recs, sc.term.Load()); err != nil {
			return nil, fmt.Errorf("sending operations from seq %d: %w", from, err)
		}
		from = recs[len(recs)-1].Seq + 1
		c.store.setLease(m.ID, lease{primary: sr.start.Primary, target: sr.start.Target, keepAfter: from - 1})
	}
	// The rest under the write lock, then the target joins the group.
	sc.leader.Lock()
	defer sc.leader.Unlock()
	for {
		recs, err := sc.readLog(from, recoveryChunkBytes)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			break
		}
		if err := send(recs, sc.term.Load()); err != nil {
			return nil, fmt.Errorf("sending operations from seq %d: %w", from, err)
		}
		from = recs[len(recs)-1].Seq + 1
	}
	if from != sc.nextSeq {
		return nil, fmt.Errorf("%w: the primary's log ends at seq %d but it has written up to %d", ErrSeqGap, from-1, sc.nextSeq-1)
	}
	sc.group.track(sr.start.Target, sr.start.TargetNode, from-1)
	return jsonReply(recoveryOpsReply{Ops: sent})
}

// readLog returns the logged operations from seq from on, up to about
// limit bytes.
func (sc *shardCopy) readLog(from uint64, limit int) ([]LogRecord, error) {
	var out []LogRecord
	size := 0
	errFull := errors.New("full")
	err := sc.log.Replay(from-1, func(r *LogRecord) error {
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

// The file stream: "WEFTREC1", the target's allocation ID, then for each
// file its path (relative, slash-separated), its size and its bytes, and a
// path of length 0 to end.
const filesMagic = "WEFTREC1"

func writeFiles(w io.Writer, target, root string) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.WriteString(filesMagic); err != nil {
		return err
	}
	writeStr := func(s string) error {
		var b [binary.MaxVarintLen64]byte
		if _, err := bw.Write(b[:binary.PutUvarint(b[:], uint64(len(s)))]); err != nil {
			return err
		}
		_, err := bw.WriteString(s)
		return err
	}
	if err := writeStr(target); err != nil {
		return err
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := writeStr(filepath.ToSlash(rel)); err != nil {
			return err
		}
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(st.Size()))
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
		n, err := io.Copy(bw, io.LimitReader(f, st.Size()))
		if err == nil && n != st.Size() {
			err = fmt.Errorf("%s shrank while copying", path)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := writeStr(""); err != nil {
		return err
	}
	return bw.Flush()
}

// receiveFiles is the target's stream handler: it writes the files of a
// recovery into the copy's staging directory.
func (s *Store) receiveFiles(_ context.Context, _ string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	magic := make([]byte, len(filesMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != filesMagic {
		return fmt.Errorf("%w: not a recovery file stream", errBadMessage)
	}
	readStr := func(limit uint64) (string, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return "", err
		}
		if n > limit {
			return "", fmt.Errorf("%w: a name of %d bytes", errBadMessage, n)
		}
		b := make([]byte, n)
		_, err = io.ReadFull(br, b)
		return string(b), err
	}
	target, err := readStr(256)
	if err != nil {
		return err
	}
	s.mu.RLock()
	rec := s.expected[target]
	s.mu.RUnlock()
	if rec == nil {
		return fmt.Errorf("%w: no recovery of copy %s expects files on this node", ErrStaleRouting, target)
	}
	root := filepath.Join(s.stagingDir(target), "index")
	for {
		name, err := readStr(4096)
		if err != nil {
			return err
		}
		if name == "" {
			return nil
		}
		clean := filepath.Clean(filepath.FromSlash(name))
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%w: file name %q leaves the index directory", errBadMessage, name)
		}
		var sb [8]byte
		if _, err := io.ReadFull(br, sb[:]); err != nil {
			return err
		}
		size := int64(binary.BigEndian.Uint64(sb[:]))
		path := filepath.Join(root, clean)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, io.LimitReader(br, size))
		if err == nil && n != size {
			err = io.ErrUnexpectedEOF
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		rec.update(func(i *RecoveryInfo) { i.BytesDone += size; i.BytesTotal += size })
	}
}

func (s *Store) stagingDir(alloc string) string { return filepath.Join(s.dir, ".recovering-"+alloc) }

// expectFiles lets (rec != nil) or stops (nil) file streams for alloc.
func (s *Store) expectFiles(alloc string, rec *recovery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec == nil {
		delete(s.expected, alloc)
		return
	}
	s.expected[alloc] = rec
}

func sanitize(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '.' {
			return '_'
		}
		return r
	}, id)
}

// throttled reads at most lim's rate.
type throttled struct {
	r   io.Reader
	lim *rate.Limiter
	ctx context.Context
}

func (t *throttled) Read(p []byte) (int, error) {
	if len(p) > t.lim.Burst() {
		p = p[:t.lim.Burst()]
	}
	n, err := t.r.Read(p)
	if n > 0 {
		if werr := t.lim.WaitN(t.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// nodeConn presents one node reached through Peers as the fabric.Conn that
// fabric.SendStream sends on.
type nodeConn struct {
	peers Peers
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
