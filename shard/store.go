package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/vocab"
)

// Store holds this node's shard copies — each in its own directory named
// by its allocation ID — and the node's copy of every index's mapping. It
// reconciles both with the committed metadata: it creates, opens and
// deletes copies as the shard table assigns and removes them, and commits
// a mapping that dynamic fields changed before any copy logs an operation
// that needs it. All methods are safe for concurrent use.
type Store struct {
	dir    string
	cfg    Config
	meta   Metadata
	peers  fabric.Caller // nil: no fabric (a single node never replicates)
	logger *slog.Logger

	mu         sync.RWMutex
	copies     map[string]*shardCopy   // open copies, by allocation ID
	mappings   map[string]*nodeMapping // by index UUID
	failed     map[string]string       // allocation IDs that failed to open → why
	recovering map[string]bool         // allocation IDs with a recovery running
	recoveries map[string]*recovery    // the latest recovery of each local copy
	expected   map[string]*recovery    // copies whose files may be streamed in now
	sources    map[string]*sourceRecovery
	leases     map[string]*lease
	throttle   *recoveryThrottle // of every recovery file stream this node sends
	pits       *readerContexts   // this node's pinned views (points in time, scrolls)
	// requestCounters reports the counters of the requests this node
	// coordinated, with its copies' statistics (SetRequestCounters).
	requestCounters func() map[string]vocab.IndexNodeStats
	closed          bool
	closing         bool           // Close was called
	running         bool           // the reconcile loop was started
	loopStop        chan struct{}  // closed by Close: the loop ends
	loopDone        chan struct{}  // closed by the loop as it ends
	writes          sync.WaitGroup // writes in flight on local copies
	background      sync.WaitGroup // recoveries and failure reports
	stop            chan struct{}  // closed by Close: background work ends

	// pressure accounts the bytes of the writes in flight on this node
	// (IndexingPressure).
	pressure *membudget.IndexingPressure

	// behindBytes is the source bytes the node's replicas have logged and
	// not yet indexed, all together (behind.go).
	behindBytes atomic.Int64
}

// nodeMapping is the node's mapping of one index: shared by the index's
// local copies (dynamic fields are added to it while documents are
// parsed) and read by the coordinator to translate requests.
type nodeMapping struct {
	name, uuid string
	m          *index.Mapping

	mu sync.Mutex // serializes commits and merges; guards the fields below
	// committed is the cluster's mapping version merged into m.
	committed uint64
	// synced is m.Version() when m last equalled what is committed: a
	// different m.Version() means dynamic fields await their commit.
	synced uint64
}

// mappingCommitTimeout bounds how long a write waits for the cluster to
// commit the mapping change its documents made.
const mappingCommitTimeout = 30 * time.Second

// OpenStore opens the store in dir (created if missing). Copies are opened
// by Reconcile, once the committed metadata says which to serve. peers
// reaches the other nodes (nil on a node without a fabric).
func OpenStore(dir string, cfg Config, meta Metadata, peers fabric.Caller, logger *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: create data dir %s: %w", dir, err)
	}
	s := &Store{dir: dir, cfg: cfg, meta: meta, peers: peers, logger: logger,
		copies: map[string]*shardCopy{}, mappings: map[string]*nodeMapping{}, failed: map[string]string{},
		recovering: map[string]bool{}, recoveries: map[string]*recovery{}, expected: map[string]*recovery{},
		sources: map[string]*sourceRecovery{}, leases: map[string]*lease{}, stop: make(chan struct{}), loopStop: make(chan struct{}), loopDone: make(chan struct{}),
		pits: newReaderContexts(), pressure: membudget.NewIndexingPressure(cfg.IndexingPressureBytes)}
	s.throttle = newRecoveryThrottle(s.recoveryRate, recoveryFileChunk)
	s.cleanDeleted()
	return s, nil
}

// IndexingPressure is this node's accounting of the bytes of writes in
// flight, shared by its coordinator (the coordinating stage), its
// primaries and its replicas.
func (s *Store) IndexingPressure() *membudget.IndexingPressure { return s.pressure }

// Start runs the loop that reconciles the store with every new view, until
// Close.
func (s *Store) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running && !s.closing {
		s.running = true
		go s.reconcileLoop()
	}
}

// reconcileRetry is how often reconciliation runs without a new view, so
// that a failed step is retried.
const reconcileRetry = 2 * time.Second

func (s *Store) reconcileLoop() {
	defer close(s.loopDone)
	changed, unwatch := s.meta.Watch()
	defer unwatch()
	tick := time.NewTicker(reconcileRetry)
	defer tick.Stop()
	var lastErr string
	for {
		if s.meta.Ready() == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := s.Reconcile(ctx, s.meta.State())
			cancel()
			if err != nil && err.Error() != lastErr {
				s.logger.Warn("shard: reconciling local copies with the shard table", "err", err)
			}
			lastErr = ""
			if err != nil {
				lastErr = err.Error()
			}
		}
		s.pits.sweep(time.Now(), func(alloc string) bool { _, ok := s.copy(alloc); return ok })
		select {
		case <-s.loopStop:
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// Fields are the field types of the named indices as this node's mappings
// know them (an index without a local mapping adds none).
func (s *Store) Fields(names []string) vocab.FieldTypes {
	v := s.meta.State()
	var out vocab.FieldTypes
	for _, n := range names {
		ix, ok := v.Indices[n]
		if !ok {
			continue
		}
		if nm, ok := s.mapping(ix.UUID); ok {
			out = append(out, nm.m)
		}
	}
	return out
}

// SetRequestCounters sets what the copy statistics this node reports to
// others carry as its request counters (the counters of the requests it
// coordinated). Call it before the fabric listens.
func (s *Store) SetRequestCounters(fn func() map[string]vocab.IndexNodeStats) {
	s.requestCounters = fn
}

// Close stops the reconcile loop, releases every reader context and
// closes every open copy (flushing its log); writes in flight finish
// first. Idempotent.
func (s *Store) Close() error {
	// The loop stops first: once closed, the store reports no copy open,
	// and a reconcile would try to open them again.
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	running := s.running
	s.mu.Unlock()
	if running {
		close(s.loopStop)
		<-s.loopDone
	}
	s.mu.Lock()
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	s.pits.closeAll()
	s.writes.Wait()
	s.background.Wait()
	var errs []error
	for _, c := range s.copies {
		if err := c.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copy returns the open copy with the given allocation ID.
func (s *Store) copy(allocationID string) (*shardCopy, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.copies[allocationID]
	return c, ok && !s.closed
}

// beginWrite counts a write in flight on local copies; false once closed.
func (s *Store) beginWrite() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	s.writes.Add(1)
	return true
}

// mapping returns the node's mapping of the index with the given UUID.
func (s *Store) mapping(uuid string) (*nodeMapping, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	nm, ok := s.mappings[uuid]
	return nm, ok
}

// copies returns the open copies, sorted by name.
func (s *Store) openCopies() []*shardCopy {
	s.mu.RLock()
	out := make([]*shardCopy, 0, len(s.copies))
	for _, c := range s.copies {
		out = append(out, c)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out
}

// recoveryRate is the limit on all the recovery file streams this node
// sends together, in bytes per second (0: none): the cluster's setting when it has
// one, else Config.RecoveryMaxBytesPerSec.
func (s *Store) recoveryRate() int64 {
	if r := s.meta.State().Settings.RecoveryMaxBytesPerSec; r != nil {
		return *r
	}
	return s.cfg.RecoveryMaxBytesPerSec
}

// Reconcile brings the store in line with v: it creates or merges the
// mapping of every index, opens or creates the copies assigned to this
// node (reporting new ones started) and closes and deletes the copies the
// shard table no longer holds. A copy that cannot be opened is reported
// failed. It returns the first error that stopped it; the next call
// resumes.
func (s *Store) Reconcile(ctx context.Context, v *state.State) error {
	if err := s.syncMappings(v); err != nil {
		return err
	}
	assigned := map[string]bool{}
	var errs []error
	for _, ix := range SortedIndices(v) {
		for num := range ix.Shards {
			sh := &ix.Shards[num]
			for _, c := range sh.Copies {
				if c.NodeID != s.meta.LocalNode() {
					continue
				}
				assigned[c.AllocationID] = true
				if err := s.ensureCopy(ctx, v.Version, ix, num, sh, c); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := s.dropUnassigned(v, assigned); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func SortedIndices(v *state.State) []*state.Index {
	out := make([]*state.Index, 0, len(v.Indices))
	for _, ix := range v.Indices {
		out = append(out, ix)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// syncMappings creates the node mapping of new indices, merges newer
// committed versions into existing ones and drops those of deleted indices.
func (s *Store) syncMappings(v *state.State) error {
	live := map[string]bool{}
	var errs []error
	for _, ix := range v.Indices {
		live[ix.UUID] = true
		s.mu.RLock()
		nm := s.mappings[ix.UUID]
		s.mu.RUnlock()
		if nm == nil {
			m, err := index.ParseMapping(ix.Mapping)
			if err != nil {
				errs = append(errs, fmt.Errorf("shard: index %s: committed mapping: %w", ix.Name, err))
				continue
			}
			nm = &nodeMapping{name: ix.Name, uuid: ix.UUID, m: m, committed: ix.MappingVersion, synced: m.Version()}
			s.mu.Lock()
			if _, ok := s.mappings[ix.UUID]; !ok {
				s.mappings[ix.UUID] = nm
			}
			s.mu.Unlock()
			continue
		}
		if err := nm.merge(ix); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	for uuid := range s.mappings {
		if !live[uuid] {
			delete(s.mappings, uuid)
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// merge brings a newer committed mapping into the node mapping. Fields the
// node added that are not committed yet stay (their commit follows); a
// conflict between the two means this node's uncommitted change lost, and
// the node mapping becomes the committed one.
func (nm *nodeMapping) merge(ix *state.Index) error {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return nm.mergeLocked(ix)
}

func (nm *nodeMapping) mergeLocked(ix *state.Index) error {
	if ix.MappingVersion <= nm.committed {
		return nil
	}
	committed, err := index.ParseMapping(ix.Mapping)
	if err != nil {
		return fmt.Errorf("shard: index %s: committed mapping version %d: %w", ix.Name, ix.MappingVersion, err)
	}
	pending := nm.m.Version() != nm.synced
	if err := nm.m.Merge(committed); err != nil {
		nm.m.Reset(committed)
		pending = false
	}
	nm.committed = ix.MappingVersion
	if !pending {
		nm.synced = nm.m.Version()
	}
	return nil
}

// commitMapping commits the node mapping's dynamic fields, if any await
// their commit, through the metadata (compare-and-set on the mapping
// version; a lost race merges the winner's mapping and tries again), and
// returns the committed mapping version that covers them. A field that
// conflicts with one committed meanwhile fails with
// index.ErrMappingConflict and resets the node mapping to the committed one.
func (s *Store) commitMapping(nm *nodeMapping) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), mappingCommitTimeout)
	defer cancel()
	nm.mu.Lock()
	defer nm.mu.Unlock()
	for {
		local := nm.m.Version()
		if local == nm.synced {
			return nm.committed, nil
		}
		raw, err := json.Marshal(nm.m)
		if err != nil {
			return 0, err
		}
		ver, err := s.meta.PutMapping(ctx, nm.name, nm.uuid, raw, nm.committed)
		if err == nil {
			nm.committed, nm.synced = ver, local
			return ver, nil
		}
		if !errors.Is(err, state.ErrMappingVersion) {
			return 0, fmt.Errorf("shard: index %s: committing new fields: %w", nm.name, err)
		}
		base := nm.committed
		v, err := s.meta.AwaitState(ctx, func(v *state.State) bool {
			ix, ok := v.IndexByUUID(nm.uuid)
			return !ok || ix.MappingVersion > base
		})
		if err != nil {
			return 0, fmt.Errorf("shard: index %s: waiting for the mapping that won: %w", nm.name, err)
		}
		ix, ok := v.IndexByUUID(nm.uuid)
		if !ok {
			return 0, fmt.Errorf("%w: index [%s] was deleted", state.ErrIndexNotFound, nm.name)
		}
		committed, err := index.ParseMapping(ix.Mapping)
		if err != nil {
			return 0, err
		}
		if err := nm.m.Merge(committed); err != nil {
			nm.m.Reset(committed)
			nm.committed, nm.synced = ix.MappingVersion, nm.m.Version()
			return 0, err
		}
		nm.committed = ix.MappingVersion
	}
}

// committedVersion is the cluster's mapping version merged into the node
// mapping.
func (nm *nodeMapping) committedVersion() uint64 {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return nm.committed
}

// ensureCopy brings one copy that v assigns to this node in line: a new
// primary is created, a primary whose node came back reopened (never
// recreated empty: the shard table remembers that the shard has data), a
// replica or move target recovers from the primary; an open primary's
// replication group follows the shard table, and a replica just promoted
// resyncs the others before it takes writes.
func (s *Store) ensureCopy(ctx context.Context, version uint64, ix *state.Index, num int, sh *state.Shard, c state.Copy) error {
	replica := !c.Primary || c.RelocatingFrom != ""
	s.mu.RLock()
	why, failed := s.failed[c.AllocationID]
	recovering := s.recovering[c.AllocationID]
	s.mu.RUnlock()
	if oc, ok := s.copy(c.AllocationID); ok && (c.State != state.CopyStarted) && !recovering && oc.log.Failed() != nil {
		// Its log failed (a full disk, an I/O error) and the copy was
		// failed for it: close it, and reopen it from disk (cutting the
		// unacknowledged tail) below, or let a replica's recovery do so
		// and catch up.
		s.unregister(oc)
		if err := oc.close(); err != nil {
			s.logger.Warn("closing a shard copy whose log failed", "shard", oc.name, "allocation_id", c.AllocationID, "err", err)
		}
	}
	if oc, ok := s.copy(c.AllocationID); ok {
		if err := s.follow(ctx, oc, sh, c); err != nil || (c.State == state.CopyStarted) {
			return err
		}
		if !replica {
			// Its node came back with the copy open: the same files.
			return s.meta.CopyStarted(ctx, ix.UUID, num, c.AllocationID)
		}
		if !recovering {
			s.startRecovery(ix, num, c) // it may have missed writes: catch up
		}
		return nil
	}
	if failed && (c.State == state.CopyStarted) {
		// Reported; the cluster will promote another copy, and this one
		// comes back initializing and recovers over its files.
		return fmt.Errorf("shard: copy %s of %s/%d failed earlier: %s", c.AllocationID, ix.Name, num, why)
	}
	if replica && (c.State != state.CopyStarted) {
		if !recovering {
			s.startRecovery(ix, num, c)
		}
		return nil
	}
	nm, ok := s.mapping(ix.UUID)
	if !ok {
		return fmt.Errorf("shard: index %s has no mapping on this node", ix.Name)
	}
	dir := filepath.Join(s.dir, c.AllocationID)
	_, statErr := os.Stat(filepath.Join(dir, copyMetaFile))
	exists := statErr == nil
	if !exists && ((c.State == state.CopyStarted) || sh.Started) {
		// A copy of a shard that holds data, whose files are gone: never
		// recreate it empty, which would silently lose acknowledged
		// writes. Failed, it leaves the in-sync set (a replica then
		// recovers from the primary).
		reason := fmt.Sprintf("the files of copy %s/%d (allocation %s) are missing from %s", ix.Name, num, c.AllocationID, dir)
		s.markFailed(c.AllocationID, reason)
		return s.meta.CopyFailed(ctx, ix.UUID, num, c.AllocationID, 0, false, reason)
	}
	meta := copyMeta{AllocationID: c.AllocationID, Index: ix.Name, IndexUUID: ix.UUID, Shard: num, AssignedAt: version}
	sc, err := s.openLocal(dir, meta, nm, !exists, sh.PrimaryTerm)
	if err != nil {
		reason := fmt.Sprintf("opening %s: %v", dir, err)
		s.markFailed(c.AllocationID, reason)
		s.logger.Error("shard copy failed to open", "shard", meta.Index, "num", num, "allocation_id", c.AllocationID, "err", err)
		return s.meta.CopyFailed(ctx, ix.UUID, num, c.AllocationID, 0, false, reason)
	}
	sc.idx.EndReplay()
	s.logger.Info("shard copy opened", "shard", sc.name, "allocation_id", c.AllocationID, "created", !exists, "term", sh.PrimaryTerm, "primary", c.Primary)
	if err := s.follow(ctx, sc, sh, c); err != nil {
		return err
	}
	if c.State != state.CopyStarted {
		return s.meta.CopyStarted(ctx, ix.UUID, num, c.AllocationID)
	}
	return nil
}

// follow keeps an open copy in line with the shard table: a primary's
// replication group, and the resync a freshly promoted primary owes the
// other in-sync copies.
func (s *Store) follow(ctx context.Context, sc *shardCopy, sh *state.Shard, c state.Copy) error {
	if !c.Primary {
		sc.primary.Store(false)
		return nil
	}
	sc.group.sync(c.AllocationID, sh)
	if sc.primary.Load() && sc.term.Load() >= sh.PrimaryTerm {
		return nil
	}
	// Newly the primary, or the primary again after a group it could not
	// replicate: resync the in-sync copies first.
	return s.promote(ctx, sc, sh.PrimaryTerm)
}

// openLocal opens (or creates) the copy in dir and registers it.
func (s *Store) openLocal(dir string, meta copyMeta, nm *nodeMapping, create bool, term uint64) (*shardCopy, error) {
	sc, err := openCopy(s, dir, meta, nm, create, term)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.Join(vocab.ErrClosed, sc.close())
	}
	if old := s.copies[meta.AllocationID]; old != nil {
		_ = old.close()
	}
	s.copies[meta.AllocationID] = sc
	delete(s.failed, meta.AllocationID)
	return sc, nil
}

// unregister forgets an open copy (its caller closes it).
func (s *Store) unregister(sc *shardCopy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.copies[sc.meta.AllocationID] == sc {
		delete(s.copies, sc.meta.AllocationID)
	}
}

// startRecovery runs the recovery of copy c in the background.
func (s *Store) startRecovery(ix *state.Index, num int, c state.Copy) {
	s.mu.Lock()
	if s.closed || s.recovering[c.AllocationID] {
		s.mu.Unlock()
		return
	}
	s.recovering[c.AllocationID] = true
	s.background.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.background.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		s.recover(ctx, ix, num, c)
		s.awaitStarted(ctx, c.AllocationID)
		s.mu.Lock()
		delete(s.recovering, c.AllocationID)
		s.mu.Unlock()
	}()
}

// startedWait bounds how long a finished recovery waits for this node's
// view to show the copy started.
const startedWait = 10 * time.Second

// awaitStarted waits, after a recovery of alloc that succeeded, until this
// node's view shows the copy started (or gone): until then the reconcile
// loop, seeing it initializing still, would recover it again for nothing.
func (s *Store) awaitStarted(ctx context.Context, alloc string) {
	s.mu.RLock()
	r := s.recoveries[alloc]
	s.mu.RUnlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	done := r.info.Stage == "done"
	r.mu.Unlock()
	if !done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, startedWait)
	defer cancel()
	_, _ = s.meta.AwaitState(ctx, func(v *state.State) bool {
		for _, ix := range v.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					if c.AllocationID == alloc {
						return (c.State == state.CopyStarted)
					}
				}
			}
		}
		return true // gone
	})
}

// failCopy reports, in the background, that a local copy failed (its log
// failed); the cluster promotes another in-sync copy.
func (s *Store) failCopy(sc *shardCopy, reason string) {
	s.markFailed(sc.meta.AllocationID, reason)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.background.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ReplicationTimeout)
		defer cancel()
		if err := s.meta.CopyFailed(ctx, sc.meta.IndexUUID, sc.meta.Shard, sc.meta.AllocationID, 0, false, reason); err != nil {
			s.logger.Error("could not report a failed shard copy to the cluster", "shard", sc.name, "allocation_id", sc.meta.AllocationID, "err", err)
		}
	}()
}

func (s *Store) markFailed(allocationID, reason string) {
	s.mu.Lock()
	s.failed[allocationID] = reason
	s.mu.Unlock()
}

// dropUnassigned closes and deletes the open copies, and deletes the copy
// directories, that the shard table no longer assigns to this node. Only
// directories that hold a copy.json are touched. Local directories are
// created only after their assignment was applied locally, so a lagging
// view never deletes a copy it has not yet heard of.
func (s *Store) dropUnassigned(v *state.State, assigned map[string]bool) error {
	var gone []*shardCopy
	s.mu.Lock()
	for id, c := range s.copies {
		if !assigned[id] && c.meta.AssignedAt <= v.Version {
			gone = append(gone, c)
			delete(s.copies, id)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, c := range gone {
		if err := c.close(); err != nil {
			s.logger.Warn("closing an unassigned shard copy", "shard", c.name, "allocation_id", c.meta.AllocationID, "err", err)
		}
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("shard: list %s: %w", s.dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || assigned[e.Name()] || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(s.dir, e.Name())
		meta, err := readCopyMeta(dir)
		if err != nil {
			continue // not a copy directory (or one whose creation never finished: keep it for a person to look at)
		}
		if meta.AssignedAt > v.Version {
			continue // assigned by a view newer than v
		}
		if err := removeDir(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		s.logger.Info("shard copy deleted", "shard", fmt.Sprintf("%s/%d", meta.Index, meta.Shard), "allocation_id", meta.AllocationID)
	}
	return errors.Join(errs...)
}

// removeDir deletes dir, renaming it first so that a crash mid-removal
// leaves no half copy that looks whole.
func removeDir(dir string) error {
	gone := filepath.Join(filepath.Dir(dir), deletedPrefix+filepath.Base(dir))
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("shard: remove %s: %w", dir, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("shard: remove %s: %w", gone, err)
	}
	return nil
}

// deletedPrefix marks a directory being removed.
const deletedPrefix = ".deleted-"

// cleanDeleted finishes removals that a crash interrupted.
func (s *Store) cleanDeleted() {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), deletedPrefix) {
			_ = os.RemoveAll(filepath.Join(s.dir, e.Name()))
		}
	}
}

// writeFileAtomic writes v as JSON to p (vfs.WriteFileAtomic: a synced
// temporary file, a rename, a synced directory, crash-tested at every
// step): p holds the old or the new content, never a mix.
func writeFileAtomic(p string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(vfs.OS, p, raw); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory of the operating system's file system, after
// a file in it was created, renamed or removed.
func syncDir(dir string) error {
	if err := vfs.OS.SyncDir(dir); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}

// AdoptCopy turns the shard directory src of an earlier layout (index/ and
// log/) into the copy allocationID at dst: it writes the copy's identity
// into src, then renames src to dst. Repeating it after a crash finishes
// the job. dst must not exist.
func AdoptCopy(src, dst, allocationID, indexName, indexUUID string, num int) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("shard: adopting %s: %s already exists", src, dst)
	}
	meta := copyMeta{AllocationID: allocationID, Index: indexName, IndexUUID: indexUUID, Shard: num}
	if err := writeFileAtomic(filepath.Join(src, copyMetaFile), meta); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("shard: adopting %s as %s: %w", src, dst, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return syncDir(filepath.Dir(src))
}
