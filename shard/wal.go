package shard

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The shard log: an append-only write-ahead log of one shard copy.
//
// Segment files are named <n>.wal (n = 20-digit segment number). Each record
// is framed as
//
//	length  uint32 LE   bytes of payload
//	crc     uint32 LE   CRC-32C (Castagnoli) of payload
//	payload: term u64 | seq u64 | version u64 | op u8 | uvarint len(id) | id | source
//
// A record is durable once Append returns: Append writes, then fsyncs with
// group commit (concurrent appenders share one fsync). On open, a record that
// is cut short or fails its checksum at the tail of the last segment (a crash
// mid-write) is truncated away; the same damage in an earlier segment is
// corruption and fails the open.

// Record ops.
const (
	recIndex  byte = 0
	recDelete byte = 1
)

const recHeader = 8

// maxRecord bounds one record so that a corrupt length cannot make the
// reader allocate without limit.
const maxRecord = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// LogRecord is one logged operation.
type LogRecord struct {
	Term    uint64
	Seq     uint64
	Version int64
	Delete  bool
	ID      string
	Source  []byte
}

func (r *LogRecord) appendTo(b []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, recHeader)...)
	b = binary.BigEndian.AppendUint64(b, r.Term)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Version))
	op := recIndex
	if r.Delete {
		op = recDelete
	}
	b = append(b, op)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = append(b, r.Source...)
	payload := b[start+recHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	return b
}

var errBadPayload = errors.New("malformed record payload")

func decodeRecord(p []byte) (LogRecord, error) {
	var r LogRecord
	if len(p) < 25 {
		return r, errBadPayload
	}
	r.Term = binary.BigEndian.Uint64(p[0:])
	r.Seq = binary.BigEndian.Uint64(p[8:])
	r.Version = int64(binary.BigEndian.Uint64(p[16:]))
	switch p[24] {
	case recIndex:
	case recDelete:
		r.Delete = true
	default:
		return r, errBadPayload
	}
	n, k := binary.Uvarint(p[25:])
	if k <= 0 || uint64(len(p)-25-k) < n {
		return r, errBadPayload
	}
	r.ID = string(p[25+k : 25+k+int(n)])
	if src := p[25+k+int(n):]; len(src) > 0 {
		r.Source = append([]byte(nil), src...)
	}
	return r, nil
}

type segment struct {
	num         uint64
	path        string
	first, last uint64 // seq range; first == 0: empty
}

// Log is one shard copy's write-ahead log. Append may be called from many
// goroutines; Replay and Trim from one at a time.
type Log struct {
	dir     string
	segSize int64

	mu      sync.Mutex // guards the fields below
	f       *os.File
	size    int64
	segs    []*segment
	written uint64 // total bytes ever written this session
	buf     []byte
	closed  bool

	syncMu sync.Mutex // held while fsyncing; guards synced
	synced uint64

	fsyncs atomic.Uint64

	// beforeSync, if set (tests), runs in syncTo before it reads how much
	// has been written and fsyncs.
	beforeSync func()
}

// OpenLog opens (creating if needed) the log in dir, truncating a torn tail.
// segSize is the size at which a new segment file is started.
func OpenLog(dir string, segSize int64) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard log: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("shard log: list %s: %w", dir, err)
	}
	l := &Log{dir: dir, segSize: segSize}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".wal") {
			continue
		}
		var num uint64
		if _, err := fmt.Sscanf(name, "%020d.wal", &num); err != nil {
			continue
		}
		l.segs = append(l.segs, &segment{num: num, path: filepath.Join(dir, name)})
	}
	sort.Slice(l.segs, func(a, b int) bool { return l.segs[a].num < l.segs[b].num })
	for k, s := range l.segs {
		last := k == len(l.segs)-1
		valid, err := scanSegment(s.path, func(r *LogRecord) error {
			if s.first == 0 {
				s.first = r.Seq
			}
			s.last = r.Seq
			return nil
		})
		if err != nil {
			if !last || !errors.Is(err, errTorn) {
				return nil, fmt.Errorf("shard log: segment %s is corrupt at byte %d: %w; move it away to open the shard (its operations are lost)", s.path, valid, err)
			}
			if err := os.Truncate(s.path, valid); err != nil {
				return nil, fmt.Errorf("shard log: truncate torn tail of %s at %d: %w", s.path, valid, err)
			}
		}
	}
	if len(l.segs) == 0 {
		if err := l.newSegment(1); err != nil {
			return nil, err
		}
	} else {
		s := l.segs[len(l.segs)-1]
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("shard log: open %s: %w", s.path, err)
		}
		st, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		l.f, l.size = f, st.Size()
	}
	return l, nil
}

func (l *Log) newSegment(num uint64) error {
	path := filepath.Join(l.dir, fmt.Sprintf("%020d.wal", num))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("shard log: create segment %s: %w", path, err)
	}
	if err := syncDir(l.dir); err != nil {
		_ = f.Close()
		return err
	}
	l.f, l.size = f, 0
	l.segs = append(l.segs, &segment{num: num, path: path})
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("shard log: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("shard log: fsync dir %s: %w", dir, err)
	}
	return nil
}

var errTorn = errors.New("torn or corrupt record")

// scanSegment calls fn for each valid record and returns the length of the
// valid prefix; err wraps errTorn when invalid bytes follow it.
func scanSegment(path string, fn func(*LogRecord) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [recHeader]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return off, nil
			}
			return off, fmt.Errorf("%w: short header", errTorn)
		}
		n := binary.LittleEndian.Uint32(hdr[0:])
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n > maxRecord {
			return off, fmt.Errorf("%w: length %d", errTorn, n)
		}
		if cap(payload) < int(n) {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(br, payload); err != nil {
			return off, fmt.Errorf("%w: short payload", errTorn)
		}
		if crc32.Checksum(payload, crcTable) != sum {
			return off, fmt.Errorf("%w: checksum mismatch", errTorn)
		}
		r, err := decodeRecord(payload)
		if err != nil {
			return off, fmt.Errorf("%w: %v", errTorn, err)
		}
		if err := fn(&r); err != nil {
			return off, err
		}
		off += int64(recHeader) + int64(n)
	}
}

// Append writes recs (in order, seqs increasing) and returns once they are
// on disk. Concurrent callers share fsyncs (group commit).
func (l *Log) Append(recs []LogRecord) error {
	if len(recs) == 0 {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.size >= l.segSize {
		if err := l.rotateLocked(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	l.buf = l.buf[:0]
	for k := range recs {
		l.buf = recs[k].appendTo(l.buf)
	}
	if _, err := l.f.Write(l.buf); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("shard log: write %s: %w", l.dir, err)
	}
	l.size += int64(len(l.buf))
	s := l.segs[len(l.segs)-1]
	if s.first == 0 {
		s.first = recs[0].Seq
	}
	s.last = recs[len(recs)-1].Seq
	l.written += uint64(len(l.buf))
	target := l.written
	if cap(l.buf) > 4<<20 {
		l.buf = nil // do not pin a huge buffer
	}
	l.mu.Unlock()
	return l.syncTo(target)
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
	upTo, f := l.written, l.f
	l.mu.Unlock()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("shard log: fsync %s: %w", l.dir, err)
	}
	l.fsyncs.Add(1)
	l.synced = upTo
	return nil
}

// rotateLocked fsyncs and closes the current segment and starts the next.
func (l *Log) rotateLocked() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("shard log: fsync %s: %w", l.dir, err)
	}
	l.fsyncs.Add(1)
	if err := l.f.Close(); err != nil {
		return err
	}
	return l.newSegment(l.segs[len(l.segs)-1].num + 1)
}

// Replay calls fn, in order, for every record with seq > after.
func (l *Log) Replay(after uint64, fn func(*LogRecord) error) error {
	l.mu.Lock()
	segs := append([]*segment(nil), l.segs...)
	l.mu.Unlock()
	for _, s := range segs {
		if s.last != 0 && s.last <= after {
			continue
		}
		if _, err := scanSegment(s.path, func(r *LogRecord) error {
			if r.Seq <= after {
				return nil
			}
			return fn(r)
		}); err != nil && !errors.Is(err, errTorn) {
			return fmt.Errorf("shard log: replay %s: %w", s.path, err)
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

// decodeFramedRecord decodes one record in its log frame (length, CRC,
// payload) from the front of b — how records travel in replication
// messages — and returns the bytes after it. The source is copied.
func decodeFramedRecord(b []byte) (LogRecord, []byte, error) {
	if len(b) < recHeader {
		return LogRecord{}, nil, fmt.Errorf("%w: short record header", errCorruptRecord)
	}
	n := binary.LittleEndian.Uint32(b[0:])
	sum := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-recHeader) || n > maxRecord {
		return LogRecord{}, nil, fmt.Errorf("%w: record length %d exceeds the message", errCorruptRecord, n)
	}
	payload := b[recHeader : recHeader+int(n)]
	if crc32.Checksum(payload, crcTable) != sum {
		return LogRecord{}, nil, fmt.Errorf("%w: checksum mismatch", errCorruptRecord)
	}
	r, err := decodeRecord(payload)
	if err != nil {
		return LogRecord{}, nil, fmt.Errorf("%w: %v", errCorruptRecord, err)
	}
	return r, b[recHeader+int(n):], nil
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
// all have seq <= persisted (they are in the persisted index).
func (l *Log) Trim(persisted uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.segs[:0]
	var firstErr error
	for k, s := range l.segs {
		if k < len(l.segs)-1 && s.last <= persisted {
			if err := os.Remove(s.path); err != nil && firstErr == nil {
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

// Fsyncs returns how many fsyncs the log has done (for tests and metrics).
func (l *Log) Fsyncs() uint64 { return l.fsyncs.Load() }

// Close syncs and closes the log. Idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
