package shardlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weftsearch/weft/internal/vfs"
)

// How the log keeps what it acknowledges.
//
// Durability. A record is durable once Append returns nil: Append writes,
// then fsyncs with group commit (concurrent appenders share one fsync). A
// new segment's directory entry is fsynced before a record goes into it,
// and a segment is fsynced before the next one is started; so is the entry
// of every directory Open creates for the log.
//
// Failure. A failed or short write, or a failed fsync, fails the log for
// good (ErrFailed): that Append and every later one return an error, so
// nothing written after the failure is acknowledged, and the log never
// retries an fsync (after a failed one Linux may have dropped the dirty
// pages and report the next fsync as a success). This is what Elasticsearch
// does to a shard copy whose translog fails. Reopening the log (a node
// restart) cuts the unacknowledged tail and writes again.
//
// Open. Every segment but the last was fsynced whole, so any bad frame in
// one is corruption. In the last segment a crash may leave the unsynced
// end of the file torn: cut short, zero-filled, or with a later part
// written back and an earlier one not (writeback is not in file order),
// so CRC-valid records after a bad frame at offset B prove nothing about
// data that was on disk. A sync mark does. The rule: Open tries every
// byte offset after B for a mark frame (length 25, op 2, zero term and seq,
// CRC match) stating durable > B, at an offset >= durable; a found one
// makes the log corrupt (ErrCorrupt: the open fails, naming the file
// and B). Otherwise B starts a torn tail: the file is cut at B, fsynced,
// and the cut logged. CRC-valid records met on the way are counted for the
// log and skipped whole, so a mark inside their ids is not read.
//
// What the rule cannot tell: damage to the records of the last fsync
// before a crash (no mark vouches for them yet) is cut as a torn tail
// (Close's final mark covers a cleanly closed log); and a mark inside the
// id of a record the damage cut into is read, so a crafted id could make a
// torn tail look corrupt, which fails safe (the open refuses). Random
// bytes pass as a mark with negligible probability: 17 fixed bytes, a
// bounded offset and a 32-bit CRC.

// Sentinel errors, wrapped with detail; test with errors.Is.
var (
	// ErrFailed: a write or fsync of the log failed; the log accepts no
	// more appends until it is reopened.
	ErrFailed = errors.New("shard log failed")
	// ErrCorrupt: the log holds damaged data that had been fsynced; the
	// copy cannot be opened as it is.
	ErrCorrupt = errors.New("shard log corrupt")
	// ErrClosed: the log has been closed.
	ErrClosed = errors.New("shard log closed")
)

// segmentScan is what reading one segment found.
type segmentScan struct {
	size        int64
	valid       int64  // the end of the last good frame
	first, last uint64 // seq range of its records; first == 0: none
	bad         error  // why the frame at valid is bad; nil if valid == size
}

// scanSegment calls fn for each record of the segment's valid prefix, in
// order. A bad frame ends the prefix and is reported in the scan, not as an
// error; errors are fn's and the file system's.
func scanSegment(fsys vfs.FS, path string, fn func(*Record) error) (segmentScan, error) {
	var sc segmentScan
	f, err := fsys.Open(path)
	if err != nil {
		return sc, err
	}
	defer f.Close()
	if sc.size, err = f.Size(); err != nil {
		return sc, err
	}
	r := frameReader{br: bufio.NewReaderSize(f, int(min(max(sc.size, 16), 1<<20))), size: sc.size}
	for {
		p, err := r.read()
		switch {
		case err == io.EOF:
			sc.valid = r.off
			return sc, nil
		case errors.Is(err, errBadFrame):
			sc.valid, sc.bad = r.off, err
			return sc, nil
		case err != nil:
			return sc, err
		}
		if _, ok := parseMark(p); ok {
			continue
		}
		rec, err := decodeRecord(p)
		if err != nil {
			sc.valid, sc.bad = r.off, fmt.Errorf("%w: %v", errBadFrame, err)
			return sc, nil
		}
		if sc.first == 0 {
			sc.first = rec.Seq
		}
		sc.last = rec.Seq
		if err := fn(&rec); err != nil {
			return sc, err
		}
	}
}

// afterBadFrame searches tail — a segment's bytes from its first bad frame,
// at offset bad, to its end — for a sync mark that vouches for bytes past
// bad, and returns its offset (-1 if none) and what it vouches for. On the
// way it counts the CRC-valid records it finds after the bad frame (seq
// above lastSeq, no further above it than the bytes in between allow) and
// skips over them, so that a mark inside a record's id is not taken for one.
func afterBadFrame(tail []byte, bad int64, lastSeq uint64) (markAt, durable int64, records int) {
	gap := 0 // where the bytes since the last record found start
	for i := 1; i+FrameHeader+markPayload <= len(tail); i++ {
		n := int(binary.LittleEndian.Uint32(tail[i:]))
		if n < markPayload || n > len(tail)-i-FrameHeader {
			continue
		}
		frame := tail[i:][:FrameHeader+n]
		p := frame[FrameHeader:]
		if n == markPayload {
			if d, ok := parseMark(p); ok && d > bad && d <= bad+int64(i) && checksumOK(frame) {
				return bad + int64(i), d, records
			}
			continue
		}
		seq := binary.BigEndian.Uint64(p[8:])
		if p[24] > recDelete || seq <= lastSeq || seq-lastSeq > uint64((i-gap)/minRecordFrame+1) || !checksumOK(frame) {
			continue
		}
		if _, err := decodeRecord(p); err != nil {
			continue
		}
		records++
		lastSeq = seq
		i += FrameHeader + n - 1
		gap = i + 1
	}
	return -1, 0, records
}

type segment struct {
	num         uint64
	path        string
	first, last uint64 // seq range; first == 0: empty
}

// Log is one shard copy's write-ahead log. Append may be called from many
// goroutines, and Replay, LastSeq, Segments and Fsyncs alongside it; Trim
// from one goroutine at a time.
type Log struct {
	fs      vfs.FS
	dir     string
	segSize int64
	logger  *slog.Logger

	// syncMu is held by whoever fsyncs a segment (syncTo, a rotation,
	// Close), so that no two fsyncs of one file overlap: the kernel reports
	// a writeback error to one of them only. Taken before mu.
	syncMu sync.Mutex
	synced uint64 // bytes written this session that are durable; guarded by syncMu

	mu        sync.Mutex // guards the fields below
	f         vfs.File   // the current (last) segment
	size      int64      // its length
	syncedOff int64      // how much of it is known fsynced
	marked    int64      // what its last sync mark vouches for
	segs      []*segment
	written   uint64 // total bytes written this session
	buf       []byte
	closed    bool
	failed    error // set once a write or fsync fails; wraps ErrFailed

	fsyncs atomic.Uint64

	// beforeSync, if set (tests), runs in syncTo before it reads how much
	// has been written and fsyncs.
	beforeSync func()
}

// Open opens the log in dir on fsys, creating it if needed, after
// checking every segment: a torn tail of the last one is cut (and logged),
// damage to fsynced data fails the open with an error wrapping
// ErrCorrupt. segSize is the size at which a new segment is started.
// logger gets the log's warnings and errors, which name dir.
func Open(fsys vfs.FS, dir string, segSize int64, logger *slog.Logger) (*Log, error) {
	l := &Log{fs: fsys, dir: dir, segSize: segSize, logger: logger}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		err = mkdirDurable(fsys, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("shard log: open %s: %w", dir, err)
	}
	// A process that died may have left entries that are not yet durable
	// (this directory in its parent, a segment in it): records are about to
	// be acknowledged on top of them.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := fsys.SyncDir(d); err != nil {
			return nil, fmt.Errorf("shard log: %w", err)
		}
	}
	for _, name := range names {
		var num uint64
		if !strings.HasSuffix(name, ".wal") {
			continue
		}
		if _, err := fmt.Sscanf(name, "%020d.wal", &num); err != nil {
			continue
		}
		l.segs = append(l.segs, &segment{num: num, path: filepath.Join(dir, name)})
	}
	sort.Slice(l.segs, func(a, b int) bool { return l.segs[a].num < l.segs[b].num })
	if len(l.segs) == 0 {
		if err := l.newSegmentLocked(1); err != nil {
			return nil, err
		}
		return l, nil
	}
	var lastSeq uint64
	var tail segmentScan
	for k, s := range l.segs {
		sc, err := scanSegment(fsys, s.path, func(r *Record) error {
			lastSeq = r.Seq
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("shard log: read %s: %w", s.path, err)
		}
		s.first, s.last = sc.first, sc.last
		if sc.bad != nil && k < len(l.segs)-1 {
			return nil, corruptError(s.path, sc, "every segment but the last was fsynced whole before the next was started")
		}
		tail = sc
	}
	if err := l.openLastSegment(tail, lastSeq); err != nil {
		return nil, err
	}
	return l, nil
}

// mkdirDurable creates dir and the directories missing above it, and
// fsyncs the parent of each one it created: a record is not durable while
// its log's directory, or one above it, can vanish in a power cut (Open
// fsyncs only dir and its parent, which covers a log whose parent existed).
func mkdirDurable(fsys vfs.FS, dir string) error {
	top := dir // the highest directory missing
	for {
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		if _, err := fsys.List(parent); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		top = parent
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
		if d == top {
			return nil
		}
	}
}

// openLastSegment opens the last segment for appending, cutting its torn
// tail if it has one, and fsyncs it: what a process that died left in the
// page cache is read and replayed, so it must be on disk before records
// after it are acknowledged.
func (l *Log) openLastSegment(sc segmentScan, lastSeq uint64) error {
	s := l.segs[len(l.segs)-1]
	f, err := l.fs.OpenRW(s.path)
	if err != nil {
		return fmt.Errorf("shard log: open %s: %w", s.path, err)
	}
	if err := l.cutTornTail(f, s.path, sc, lastSeq); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("shard log: fsync %s: %w", s.path, err)
	}
	l.f, l.size, l.syncedOff = f, sc.valid, sc.valid
	return nil
}

// cutTornTail truncates the last segment after its valid prefix if a bad
// frame follows it, unless a sync mark shows the bad frame had been
// fsynced (ErrCorrupt).
func (l *Log) cutTornTail(f vfs.File, path string, sc segmentScan, lastSeq uint64) error {
	if sc.bad == nil {
		return nil
	}
	tail := make([]byte, sc.size-sc.valid)
	if _, err := f.ReadAt(tail, sc.valid); err != nil {
		return fmt.Errorf("shard log: read %s: %w", path, err)
	}
	markAt, durable, records := afterBadFrame(tail, sc.valid, lastSeq)
	if markAt >= 0 {
		return corruptError(path, sc, fmt.Sprintf("a sync mark at byte %d says its first %d bytes had been fsynced", markAt, durable))
	}
	if err := f.Truncate(sc.valid); err != nil {
		return fmt.Errorf("shard log: cut the torn tail of %s at byte %d: %w", path, sc.valid, err)
	}
	if size, err := f.Size(); err != nil || size != sc.valid {
		return fmt.Errorf("shard log: cut the torn tail of %s at byte %d: size is %d after truncating (%v)", path, sc.valid, size, err)
	}
	// What was cut is certain; whether it had been acknowledged is not:
	// no sync mark vouches for it, which is so of a write the stop
	// interrupted, but also of the last fsync's records before a crash
	// (see "What the rule cannot tell" above).
	l.logger.Warn("shard log: cut a torn tail: the bytes from the end of the last valid record, which no sync mark says were fsynced (most often a write the node's stop interrupted; damage to the records of the last fsync before a crash reads the same)",
		"dir", l.dir, "segment", path, "offset", sc.valid, "bytes_cut", sc.size-sc.valid, "reason", sc.bad, "valid_records_cut", records)
	return nil
}

func corruptError(path string, sc segmentScan, why string) error {
	return fmt.Errorf("%w: %s: bad record at byte %d (%v), and %s: data that was on disk is damaged. "+
		"Recover this shard copy from another copy; or, to open it with the operations before that point (those after it are lost), "+
		"truncate the file to %d bytes and move the segments after it away",
		ErrCorrupt, path, sc.valid, sc.bad, why, sc.valid)
}

// newSegmentLocked creates segment num, fsyncs the directory, and makes it
// the current segment.
func (l *Log) newSegmentLocked(num uint64) error {
	path := filepath.Join(l.dir, fmt.Sprintf("%020d.wal", num))
	f, err := l.fs.Create(path)
	if err != nil {
		return fmt.Errorf("shard log: create segment %s: %w", path, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		_ = f.Close()
		return fmt.Errorf("shard log: create segment %s: %w", path, err)
	}
	l.f, l.size, l.syncedOff, l.marked = f, 0, 0, 0
	l.segs = append(l.segs, &segment{num: num, path: path})
	return nil
}

// failLocked fails the log with cause (the first failure wins) and returns
// the error every Append returns from now on.
func (l *Log) failLocked(cause error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %s: %w", ErrFailed, l.dir, cause)
		l.logger.Error("shard log failed: this shard copy acknowledges no more writes; it is failed and reopened, which cuts the unacknowledged tail (a replica then catches up from its primary), and keeps failing while the disk does; check the disk for space and I/O errors",
			"dir", l.dir, "err", cause)
	}
	return l.failed
}

// Failed returns the error that failed the log for good (wrapping
// ErrFailed), or nil.
func (l *Log) Failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Append writes recs (in order, seqs increasing) and returns once they are
// on disk. Concurrent callers share fsyncs (group commit). An error means
// none of recs is acknowledged; once one wraps ErrFailed, every later
// call fails with it.
func (l *Log) Append(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := l.rotateIfFull(); err != nil {
		return err
	}
	l.mu.Lock()
	target, err := l.writeLocked(recs)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.syncTo(target)
}

// writeLocked writes recs' frames, after a sync mark if an fsync has
// completed since the last one, and returns how many bytes this session
// will have written once they are durable.
func (l *Log) writeLocked(recs []Record) (uint64, error) {
	switch {
	case l.closed:
		return 0, ErrClosed
	case l.failed != nil:
		return 0, l.failed
	}
	l.buf = l.buf[:0]
	mark := l.syncedOff > l.marked
	if mark {
		l.buf = appendMark(l.buf, l.syncedOff)
	}
	for k := range recs {
		start := len(l.buf)
		l.buf = recs[k].AppendFrame(l.buf)
		if n := len(l.buf) - start - FrameHeader; n > maxRecord {
			return 0, fmt.Errorf("shard log: record seq %d is %d bytes, over the %d-byte limit", recs[k].Seq, n, maxRecord)
		}
	}
	n, err := l.f.WriteAt(l.buf, l.size)
	if err == nil && n < len(l.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s := l.segs[len(l.segs)-1]
		return 0, l.failLocked(fmt.Errorf("write %d bytes at byte %d of %s (%d written): %w", len(l.buf), l.size, s.path, n, err))
	}
	if mark {
		l.marked = l.syncedOff
	}
	l.size += int64(len(l.buf))
	s := l.segs[len(l.segs)-1]
	if s.first == 0 {
		s.first = recs[0].Seq
	}
	s.last = recs[len(recs)-1].Seq
	l.written += uint64(len(l.buf))
	if cap(l.buf) > 4<<20 {
		l.buf = nil // do not pin a huge buffer
	}
	return l.written, nil
}

// syncTo returns once the first target bytes written are durable. The first
// waiter fsyncs for everyone who wrote before it started.
func (l *Log) syncTo(target uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= target {
		return nil
	}
	if l.beforeSync != nil {
		l.beforeSync()
	}
	l.mu.Lock()
	switch {
	case l.closed:
		defer l.mu.Unlock()
		return ErrClosed
	case l.failed != nil:
		defer l.mu.Unlock()
		return l.failed
	}
	upTo, f, off := l.written, l.f, l.size
	path := l.segs[len(l.segs)-1].path
	l.mu.Unlock()

	err := f.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.failLocked(fmt.Errorf("fsync %s: %w", path, err))
	}
	l.fsyncs.Add(1)
	l.synced = upTo
	if l.f == f && off > l.syncedOff {
		l.syncedOff = off
	}
	return nil
}

// rotateIfFull starts the next segment if the current one has reached
// segSize.
func (l *Log) rotateIfFull() error {
	l.mu.Lock()
	full := l.size >= l.segSize
	l.mu.Unlock()
	if !full {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.failed != nil:
		return l.failed
	case l.size < l.segSize: // another Append rotated
		return nil
	}
	return l.rotateLocked()
}

// rotateLocked fsyncs the current segment, starts the next and closes the
// old one. l.syncMu and l.mu are held.
func (l *Log) rotateLocked() error {
	s := l.segs[len(l.segs)-1]
	if err := l.f.Sync(); err != nil {
		return l.failLocked(fmt.Errorf("fsync %s before starting the next segment: %w", s.path, err))
	}
	l.fsyncs.Add(1)
	l.synced = l.written
	old := l.f
	if err := l.newSegmentLocked(s.num + 1); err != nil {
		return l.failLocked(err)
	}
	_ = old.Close() // fsynced above: closing cannot lose what it holds
	return nil
}

// Replay calls fn, in order, for every record with seq > after. A bad
// frame in any segment but the last one (which may be being written) is an
// error wrapping ErrCorrupt.
func (l *Log) Replay(after uint64, fn func(*Record) error) error {
	// Copies, not the log's segments: Append moves the last one's range
	// under l.mu while this reads without it.
	l.mu.Lock()
	segs := make([]segment, len(l.segs))
	for k, s := range l.segs {
		segs[k] = *s
	}
	l.mu.Unlock()
	for k, s := range segs {
		if s.last != 0 && s.last <= after {
			continue
		}
		sc, err := scanSegment(l.fs, s.path, func(r *Record) error {
			if r.Seq <= after {
				return nil
			}
			return fn(r)
		})
		if err != nil {
			return fmt.Errorf("shard log: replay %s: %w", s.path, err)
		}
		if sc.bad != nil && k < len(segs)-1 {
			return corruptError(s.path, sc, "it is not the segment being written")
		}
	}
	return nil
}

// FirstSeq is the lowest seq the log still holds (0 if empty): the log has
// every operation from it to LastSeq.
func (l *Log) FirstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		if s.first != 0 {
			return s.first
		}
	}
	return 0
}

// LastSeq is the highest seq in the log (0 if empty).
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := len(l.segs) - 1; k >= 0; k-- {
		if l.segs[k].last != 0 {
			return l.segs[k].last
		}
	}
	return 0
}

// Trim deletes the segments, other than the one being written, whose records
// all have seq <= persisted (they are in the persisted index). A removal the
// directory has not synced may be undone by a crash; the segment then holds
// only records that replay skips.
func (l *Log) Trim(persisted uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.segs[:0]
	var firstErr error
	for k, s := range l.segs {
		if k < len(l.segs)-1 && s.last <= persisted {
			if err := l.fs.Remove(s.path); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("shard log: trim %s: %w", s.path, err)
			}
			continue
		}
		keep = append(keep, s)
	}
	l.segs = keep
	return firstErr
}

// Segments returns the number of segment files.
func (l *Log) Segments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs)
}

// Fsyncs returns how many fsyncs Append has done (for tests and metrics).
func (l *Log) Fsyncs() uint64 { return l.fsyncs.Load() }

// SetBeforeSync makes fn (nil: nothing) run at the start of every group
// fsync, before it reads how much has been written; tests use it to hold
// an fsync in progress while more appends queue behind it. fn runs with the
// log's fsync lock held: it must not call Append or Close.
func (l *Log) SetBeforeSync(fn func()) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.beforeSync = fn
}

// Close ends the current segment with a sync mark for all of it, fsyncs,
// and closes the log's file; once failed, it only closes it. Appends still
// waiting for their fsync fail with ErrClosed. Idempotent.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.failed == nil && l.syncedOff > l.marked {
		mark := appendMark(l.buf[:0], l.syncedOff)
		if _, werr := l.f.WriteAt(mark, l.size); werr != nil {
			err = l.failLocked(fmt.Errorf("write the closing sync mark: %w", werr))
		} else if serr := l.f.Sync(); serr != nil {
			err = l.failLocked(fmt.Errorf("fsync on close: %w", serr))
		}
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
