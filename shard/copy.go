package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// replayChunk is how many log records replay applies per bleve batch.
const replayChunk = 2000

// shardCopy is one shard copy on this node: a bleve index and its log in
// the copy's own directory, named by its allocation ID. It runs the write
// path of a primary (version checks, sequence numbers, group commit).
type shardCopy struct {
	meta   copyMeta
	name   string // "index/num", for logs and errors
	dir    string
	idx    *index.Index
	log    *shardlog.Log
	logger *slog.Logger

	// store is the node's store (mapping commits, replication, failures);
	// mapping is the node's mapping of the copy's index.
	store   *Store
	mapping *nodeMapping

	// term is the primary term the copy writes with, or (a replica) the
	// highest it has accepted operations of.
	term atomic.Uint64
	// primary: the copy has taken over as primary (after its resync).
	primary atomic.Bool
	// group is the copies a primary replicates to (empty on a replica).
	group replicationGroup

	qmu   sync.Mutex
	queue []*writeReq

	leader  sync.Mutex // held by the goroutine committing a group
	nextSeq uint64     // guarded by leader

	// behind holds what a replica has logged and acknowledged but not
	// indexed yet (behind.go).
	behind behind
}

// copyMeta identifies a copy; it is kept in the copy's directory as
// copy.json, so that the store knows what a directory holds before the
// cluster state tells it.
type copyMeta struct {
	AllocationID string `json:"allocation_id"`
	Index        string `json:"index"`
	IndexUUID    string `json:"index_uuid"`
	Shard        int    `json:"shard"`
	// AssignedAt is the version of the view that assigned the copy to this
	// node (0: unknown). A view older than it does not know the copy yet,
	// so it never deletes it (a node replaying the cluster's log after a
	// restart goes through such views).
	AssignedAt uint64 `json:"assigned_at,omitempty"`
}

const copyMetaFile = "copy.json"

// Item is one write of a group routed to a shard's primary: the op, its
// result slot, and whether the coordinator gave it its id.
type Item struct {
	Op       *vocab.Op
	Result   *vocab.OpResult
	AutoID   bool
	prepared *index.Op // OpIndex/OpCreate: parsed before the leader lock
}

// prepare parses the documents of index and create items (their source does
// not depend on the stored document), outside the leader lock so that
// concurrent requests parse in parallel. Items that fail are marked failed.
func (s *shardCopy) prepare(items []Item) {
	for k := range items {
		it := &items[k]
		if it.Op.Type != vocab.OpIndex && it.Op.Type != vocab.OpCreate {
			continue
		}
		iop := &index.Op{ID: it.Op.ID, Source: it.Op.Source}
		if err := s.idx.Prepare(iop); err != nil {
			it.Result.Fail(badDocument(err))
			continue
		}
		it.prepared = iop
	}
}

type writeReq struct {
	items []Item
	done  bool // guarded by leader
	err   error
}

// openCopy opens the copy in dir, or creates it there (create: the
// directory holds no index yet), replaying its log past the index's
// persisted state. m is the node's mapping of the copy's index.
func openCopy(st *Store, dir string, meta copyMeta, nm *nodeMapping, create bool, term uint64) (*shardCopy, error) {
	m, segBytes, logger := nm.m, st.cfg.LogSegmentBytes, st.logger
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("shard: create copy directory %s: %w", dir, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, copyMetaFile), meta); err != nil {
			return nil, err
		}
	}
	idxDir := filepath.Join(dir, "index")
	var (
		idx *index.Index
		err error
	)
	if create || !index.Exists(idxDir) {
		idx, err = index.Create(idxDir, m)
	} else {
		idx, err = index.Open(idxDir, m)
	}
	if err != nil {
		return nil, err
	}
	idx.Bleve().SetName(meta.Index)
	lg, err := shardlog.Open(st.cfg.logFS(), filepath.Join(dir, "log"), segBytes, logger)
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	s := &shardCopy{meta: meta, name: fmt.Sprintf("%s/%d", meta.Index, meta.Shard), dir: dir, idx: idx, log: lg, logger: logger,
		store: st, mapping: nm}
	s.term.Store(term)
	if err := s.replay(logger); err != nil {
		_ = lg.Close()
		_ = idx.Close()
		return nil, err
	}
	s.nextSeq = max(lg.LastSeq(), idx.AppliedSeq()) + 1
	return s, nil
}

// readCopyMeta reads dir/copy.json.
func readCopyMeta(dir string) (copyMeta, error) {
	var m copyMeta
	raw, err := os.ReadFile(filepath.Join(dir, copyMetaFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.AllocationID == "" || m.IndexUUID == "" {
		return m, fmt.Errorf("shard: %s/%s is corrupt (%v)", dir, copyMetaFile, err)
	}
	return m, nil
}

// replay applies the log records after the index's persisted state.
func (s *shardCopy) replay(logger *slog.Logger) error {
	from := s.idx.AppliedSeq()
	var ops []index.Op
	n := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := s.idx.Apply(context.Background(), ops)
		ops = ops[:0]
		return err
	}
	err := s.log.Replay(from, func(r *shardlog.Record) error {
		op := index.Op{Delete: r.Delete, ID: r.ID, Source: r.Source, SeqNo: r.Seq, Version: r.Version, PrimaryTerm: r.Term}
		if err := s.idx.Prepare(&op); err != nil {
			logger.Warn("shard log replay: skipping a record the mapping rejects", "shard", s.name, "seq", r.Seq, "id", r.ID, "err", err)
			return nil
		}
		ops = append(ops, op)
		n++
		if len(ops) >= replayChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("shard %s: replay log after seq %d: %w", s.name, from, err)
	}
	s.idx.EndReplay()
	if n > 0 {
		logger.Info("shard log replayed", "shard", s.name, "after_seq", from, "records", n)
	}
	return nil
}

// write commits items through the group-commit leader: whoever holds the
// leader lock takes every queued request, logs them with one fsync and
// applies them as one batch.
func (s *shardCopy) write(items []Item) error {
	req := &writeReq{items: items}
	s.qmu.Lock()
	s.queue = append(s.queue, req)
	s.qmu.Unlock()
	s.leader.Lock()
	defer s.leader.Unlock()
	if req.done {
		return req.err
	}
	s.qmu.Lock()
	group := s.queue
	s.queue = nil
	s.qmu.Unlock()
	err := s.commit(group)
	for _, r := range group {
		r.done = true
		r.err = err
	}
	return err
}

type pendingDoc struct {
	exists  bool
	version int64
	seq     uint64
	term    uint64
	source  []byte
}

// commit decides, logs, applies and replicates a group of write requests;
// it runs under the leader lock. Every item's outcome is in its result (a
// failure of the whole group fails each item), so it returns nil.
func (s *shardCopy) commit(group []*writeReq) error {
	p := s.planGroup(group)
	if len(p.ops) == 0 {
		if len(p.answered) > 0 {
			if err := s.store.confirmPrimary(s, p.term, s.lastSeq()); err != nil {
				return s.failGroup(p, err)
			}
		}
		return nil
	}
	return s.writeGroup(p)
}

// groupPlan is what commit decided for a group's items before writing
// anything.
type groupPlan struct {
	term uint64 // the primary term the group is written in
	// pending is each id's state after the group's writes decided so far.
	pending map[string]*pendingDoc
	// ops are the operations to apply, in seq order; recs[k] logs ops[k]
	// and logged[k] is the item it answers.
	ops    []index.Op
	recs   []shardlog.Record
	logged []Item
	// answered are the items decided against the documents' state that log
	// no operation (conflicts, not found, noops, lookup or parse errors):
	// answers read from this copy, which it may give only while it is still
	// the primary, so they are confirmed with the replication group, like a
	// realtime get (a deposed primary would otherwise report a conflict with
	// a state the new primary has moved on from).
	answered []Item
}

// planGroup decides every item of group, in order, against the documents'
// state (the index's, and the group's earlier writes): an item either gets
// the next seq from s.nextSeq and an operation to log, or is answered
// here. Items that failed in prepare are left as they are. Under the
// leader lock.
func (s *shardCopy) planGroup(group []*writeReq) *groupPlan {
	p := &groupPlan{term: s.term.Load(), pending: map[string]*pendingDoc{}}
	for _, r := range group {
		for _, it := range r.items {
			if it.Result.Err != nil {
				continue // failed in prepare
			}
			if !s.decide(p, it) {
				p.answered = append(p.answered, it)
			}
		}
	}
	return p
}

// decide evaluates one item for p: if it writes, it takes the next seq,
// adds its operation and record to p, sets the result the item will have
// once the group is acknowledged, and returns true; otherwise it has
// answered the item's result and returns false.
func (s *shardCopy) decide(p *groupPlan, it Item) bool {
	op, res := it.Op, it.Result
	cur, prev, err := s.currentDoc(it, p.pending)
	if err != nil {
		res.Fail(err)
		return false
	}
	if err := checkConditions(op, cur); err != nil {
		res.Fail(err)
		return false
	}
	source, del, ok := newSource(op, cur, res)
	if !ok {
		return false
	}
	iop, err := s.indexOp(it, source, del, prev, p.term)
	if err != nil {
		res.Fail(badDocument(err))
		return false
	}
	iop.SeqNo = s.nextSeq
	s.nextSeq++
	iop.Version = cur.version + 1
	if op.VersionType != vocab.VersionInternal {
		iop.Version = op.Version
	}
	if del {
		res.Result = "deleted"
	} else if cur.exists {
		res.Result = "updated"
	} else {
		res.Result = "created"
	}
	res.Version, res.SeqNo, res.PrimaryTerm = iop.Version, iop.SeqNo, p.term
	p.pending[op.ID] = &pendingDoc{exists: !del, version: iop.Version, seq: iop.SeqNo, term: p.term, source: source}
	p.ops = append(p.ops, iop)
	p.recs = append(p.recs, shardlog.Record{Term: p.term, Seq: iop.SeqNo, Version: iop.Version, Delete: del, ID: op.ID, Source: source})
	p.logged = append(p.logged, it)
	return true
}

// currentDoc returns the state of the document that the write of it sees:
// the group's earlier write of the id if there is one (prev nil), else
// what the index holds (prev: the index's document); an auto-generated id
// has no document. The error is the index's lookup error.
func (s *shardCopy) currentDoc(it Item, pending map[string]*pendingDoc) (cur *pendingDoc, prev *index.Prev, err error) {
	if cur := pending[it.Op.ID]; cur != nil {
		return cur, nil, nil
	}
	if it.AutoID {
		return &pendingDoc{}, &index.Prev{}, nil
	}
	prev, err = s.idx.Lookup(it.Op.ID)
	if err != nil {
		return nil, nil, err
	}
	return &pendingDoc{exists: prev.Exists, version: prev.Version, seq: prev.SeqNo, term: prev.PrimaryTerm, source: prev.Source()}, prev, nil
}

// checkConditions checks op's preconditions against cur — if_seq_no and
// if_primary_term, an external version — and returns the version conflict
// (wrapping ErrVersionConflict) if one fails.
func checkConditions(op *vocab.Op, cur *pendingDoc) error {
	if op.IfSeqNo != nil || op.IfPrimaryTerm != nil {
		if !cur.exists || (op.IfSeqNo != nil && *op.IfSeqNo != cur.seq) || (op.IfPrimaryTerm != nil && *op.IfPrimaryTerm != cur.term) {
			return fmt.Errorf("%w: [%s]: required seqNo [%s], primary term [%s]; current document has seqNo [%d] and primary term [%d]",
				vocab.ErrVersionConflict, op.ID, optU64(op.IfSeqNo), optU64(op.IfPrimaryTerm), cur.seq, cur.term)
		}
	}
	if op.VersionType != vocab.VersionInternal && cur.exists &&
		(cur.version > op.Version || (cur.version == op.Version && op.VersionType == vocab.VersionExternal)) {
		return externalConflict(op, cur.version)
	}
	return nil
}

// newSource decides what op writes over cur: the source to index, or del
// for a delete (ok true). When op writes nothing — a create of an existing
// document, a delete or update of a missing one, an update that changes
// nothing, a malformed op — it answers res and returns ok false.
func newSource(op *vocab.Op, cur *pendingDoc, res *vocab.OpResult) (source []byte, del, ok bool) {
	switch op.Type {
	case vocab.OpCreate:
		if cur.exists {
			res.Fail(fmt.Errorf("%w: [%s]: version conflict, document already exists (current version [%d])", vocab.ErrVersionConflict, op.ID, cur.version))
			return nil, false, false
		}
		return op.Source, false, true
	case vocab.OpIndex:
		return op.Source, false, true
	case vocab.OpDelete:
		if !cur.exists {
			res.Result, res.Err = "not_found", fmt.Errorf("%w: [%s]", vocab.ErrDocumentNotFound, op.ID)
			return nil, false, false
		}
		return nil, true, true
	case vocab.OpUpdate:
		u := op.Update
		if u == nil {
			res.Fail(fmt.Errorf("%w: update of [%s] has no doc", vocab.ErrInvalidRequest, op.ID))
			return nil, false, false
		}
		if !cur.exists {
			switch {
			case u.DocAsUpsert && len(u.Doc) > 0:
				return u.Doc, false, true
			case len(u.Upsert) > 0:
				return u.Upsert, false, true
			}
			res.Fail(fmt.Errorf("%w: [%s]: document missing", vocab.ErrDocumentNotFound, op.ID))
			return nil, false, false
		}
		merged, changed, err := mergeSource(cur.source, u.Doc)
		if err != nil {
			res.Fail(badDocument(err))
			return nil, false, false
		}
		if !changed && !u.NoDetectNoop {
			res.Result = "noop"
			res.Version, res.SeqNo, res.PrimaryTerm = cur.version, cur.seq, cur.term
			return nil, false, false
		}
		return merged, false, true
	}
	res.Fail(fmt.Errorf("%w: unknown op type %d", vocab.ErrInvalidRequest, op.Type))
	return nil, false, false
}

// indexOp returns the index operation of it that writes source (del:
// deletes the document) over prev in term: the one prepare parsed before
// the leader lock if there is one, else one parsed here; the error is the
// parse error. Its seq and version are left to the caller.
func (s *shardCopy) indexOp(it Item, source []byte, del bool, prev *index.Prev, term uint64) (index.Op, error) {
	if it.prepared != nil {
		iop := *it.prepared
		iop.Prev, iop.PrimaryTerm = prev, term
		return iop, nil
	}
	iop := index.Op{Delete: del, ID: it.Op.ID, Source: source, Prev: prev, PrimaryTerm: term}
	if err := s.idx.Prepare(&iop); err != nil {
		return index.Op{}, err
	}
	return iop, nil
}

// writeGroup makes p's operations durable and visible: it commits the
// mapping they need, logs them here while the replicas log and index them,
// applies them to the index, and, once the replication group has them,
// sets each logged item's copy count and trims the log. On a failure it
// fails the group (failGroup) and returns nil. Under the leader lock.
func (s *shardCopy) writeGroup(p *groupPlan) error {
	mv, err := s.store.commitMapping(s.mapping)
	if err != nil {
		s.nextSeq -= uint64(len(p.ops))
		return s.failGroup(p, err)
	}
	// The replicas log and index while this copy does; the group is
	// acknowledged once both are done.
	replicated := s.store.replicate(s, p.term, mv, s.lastSeq(), p.recs)
	if err := s.appendLog(p.recs); err != nil {
		// Nothing acknowledged; the seqs may have reached the file, so they
		// are not reused. The log refuses every later write: this copy is
		// failed, and an in-sync replica (which may have these operations;
		// they were never acknowledged) takes over.
		_, _ = replicated()
		s.store.failCopy(s, fmt.Sprintf("its log failed: %v", err))
		return s.failGroup(p, fmt.Errorf("shard %s: %w", s.name, err))
	}
	if err := s.idx.Apply(context.Background(), p.ops); err != nil {
		_, _ = replicated()
		return s.failGroup(p, fmt.Errorf("shard %s: logged but not indexed (replayed on restart): %w", s.name, err))
	}
	acked, err := replicated()
	if err != nil {
		// The group is applied here but not guaranteed anywhere else: this
		// copy stops serving as primary (no reads of writes that a new
		// primary may not have, no more writes) until the shard table says
		// it still is the primary and it has resynced its replicas.
		s.primary.Store(false)
		s.logger.Warn("shard copy stops serving as primary: a group could not be replicated", "shard", s.name, "allocation_id", s.meta.AllocationID, "err", err)
		return s.failGroup(p, fmt.Errorf("%w: shard %s: not acknowledged: %v", vocab.ErrUnavailable, s.name, err))
	}
	for _, it := range p.logged {
		it.Result.Copies = 1 + acked
	}
	s.trimLog()
	return nil
}

// failGroup fails the items of p: the logged ones with err, the
// answered ones with ErrUnavailable, since this copy could not
// confirm it is still the primary. It returns nil, commit's result for a
// group whose items carry their errors.
func (s *shardCopy) failGroup(p *groupPlan, err error) error {
	for _, it := range p.logged {
		it.Result.Fail(err)
	}
	for _, it := range p.answered {
		it.Result.Fail(fmt.Errorf("%w: shard %s: answered from a copy that could not confirm it is still the primary: %v", vocab.ErrUnavailable, s.name, err))
	}
	return nil
}

// appendLog appends recs to the copy's log: nil once they are durable, the
// log's error otherwise, except that a log closed under a write in flight
// (the copy was closed) is ErrClosed, as a closed store's writes are.
func (s *shardCopy) appendLog(recs []shardlog.Record) error {
	err := s.log.Append(recs)
	if errors.Is(err, shardlog.ErrClosed) {
		return vocab.ErrClosed
	}
	return err
}

// lastSeq is the highest sequence number the copy has logged; under the
// leader lock.
func (s *shardCopy) lastSeq() uint64 { return s.nextSeq - 1 }

// trimLog deletes log segments wholly below what the index has persisted,
// what recoveries in progress still need, and what the copies of its
// replication group (failed ones too, while assigned) still lack.
func (s *shardCopy) trimLog() {
	if s.log.Segments() < 2 {
		return
	}
	keep := min(s.idx.PersistedSeq(), s.store.retention(s.meta.AllocationID), s.group.retained())
	if err := s.log.Trim(keep); err != nil {
		// The writes are durable and applied; a segment left behind only
		// costs disk and is retried on the next commit.
		s.logger.Warn("shard log trim failed", "shard", s.name, "keep_after", keep, "err", err)
	}
}

func optU64(v *uint64) string {
	if v == nil {
		return "any"
	}
	return fmt.Sprint(*v)
}

// badDocument classes an error of parsing or indexing a document as the
// document's fault: it keeps an error that already names its kind (a
// mapping or parse error, an invalid request) and makes any other a parse
// error of the document.
func badDocument(err error) error {
	for _, kind := range []error{index.ErrDocParse, index.ErrStrictDynamic, index.ErrMappingConflict, index.ErrInvalidMapping,
		index.ErrIllegalArgument, vocab.ErrInvalidRequest, vocab.ErrVersionConflict, vocab.ErrDocumentNotFound} {
		if errors.Is(err, kind) {
			return err
		}
	}
	return fmt.Errorf("%w: %v", index.ErrDocParse, err)
}

// externalConflict is the conflict of an externally versioned write with
// the stored version.
func externalConflict(op *vocab.Op, current int64) error {
	than := "higher or equal to"
	if op.VersionType == vocab.VersionExternalGTE {
		than = "higher than"
	}
	return fmt.Errorf("%w: [%s]: version conflict, current version [%d] is %s the one provided [%d]", vocab.ErrVersionConflict, op.ID, current, than, op.Version)
}

// mergeSource merges a partial document into a source, recursively for
// objects (ES partial update). changed is false when nothing differs.
func mergeSource(src, doc []byte) ([]byte, bool, error) {
	var base, patch map[string]any
	if err := decodeObject(src, &base); err != nil {
		return nil, false, fmt.Errorf("%w: stored source: %v", index.ErrDocParse, err)
	}
	if err := decodeObject(doc, &patch); err != nil {
		return nil, false, fmt.Errorf("%w: update doc: %v", index.ErrDocParse, err)
	}
	var orig map[string]any
	_ = decodeObject(src, &orig)
	mergeMaps(base, patch)
	if reflect.DeepEqual(base, orig) {
		return src, false, nil
	}
	out, err := json.Marshal(base)
	return out, true, err
}

func decodeObject(b []byte, into *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if *into == nil {
		return errors.New("not a JSON object")
	}
	return nil
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func (s *shardCopy) close() error {
	s.leader.Lock()
	defer s.leader.Unlock()
	s.closeBehind()
	err := s.idx.Close()
	if p := s.idx.PersistedSeq(); p > 0 {
		_ = s.log.Trim(p)
	}
	if lerr := s.log.Close(); err == nil {
		err = lerr
	}
	return err
}

// waitForWrites returns once the group being committed when it was called
// (if any) is applied: such writes are searchable when it returns.
func (s *shardCopy) waitForWrites() {
	s.leader.Lock()
	//lint:ignore SA2001 the lock is only a wait for the group in flight
	s.leader.Unlock()
}
