package shard

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/weftsearch/weft/vocab"
)

// The file stream of a file-based recovery, as fabric.SendStream carries
// it from the primary's snapshot to the target's staging directory:
//
//	"WEFTREC2", the recovery's ID (uvarint length + bytes), the total of
//	the file sizes (8 bytes, big-endian), then for each file its path
//	(uvarint length + bytes, relative, slash-separated), its size (8 bytes,
//	big-endian) and its bytes, and a path of length 0 to end.
//
// The total comes first so that the target's progress (bytes recovered of
// bytes total) is honest from the first byte. Version 1 ("WEFTREC1") named
// the target's allocation ID and had no total.
const filesMagic = "WEFTREC2"

// Bounds of what a file stream may name.
const (
	maxRecoveryIDLen = 256
	maxFileNameLen   = 4096
)

// streamFile is one file of a snapshot, as sent.
type streamFile struct {
	rel  string // slash-separated, relative to the snapshot
	size int64
}

// fileStream reads a recovery's file stream from a snapshot directory:
// the file bytes go from each file straight into the caller's buffer.
// It is an io.Reader for fabric.SendStream, used by one goroutine.
type fileStream struct {
	root    string
	files   []streamFile
	total   int64
	pending []byte // framing not yet read
	next    int    // the next file to open
	cur     *os.File
	left    int64 // bytes of cur not yet read
	ended   bool  // the end marker is in pending or read
}

// newFileStream lists the files under root (which nothing writes to any
// more) for the recovery id.
func newFileStream(id, root string) (*fileStream, error) {
	fsm := &fileStream{root: root}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fsm.files = append(fsm.files, streamFile{rel: filepath.ToSlash(rel), size: info.Size()})
		fsm.total += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the snapshot %s: %w", root, err)
	}
	fsm.pending = append([]byte(filesMagic), appendStr(nil, id)...)
	fsm.pending = binary.BigEndian.AppendUint64(fsm.pending, uint64(fsm.total))
	return fsm, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Read fills p with the stream's next bytes.
func (fsm *fileStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case len(fsm.pending) > 0:
			c := copy(p[n:], fsm.pending)
			fsm.pending = fsm.pending[c:]
			n += c
		case fsm.cur != nil && fsm.left > 0:
			m, err := fsm.cur.Read(p[n : n+int(min(int64(len(p)-n), fsm.left))])
			n += m
			fsm.left -= int64(m)
			if errors.Is(err, io.EOF) && fsm.left > 0 {
				return n, fmt.Errorf("%s shrank while being sent", fsm.cur.Name())
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return n, err
			}
		case fsm.cur != nil:
			err := fsm.cur.Close()
			fsm.cur = nil
			if err != nil {
				return n, err
			}
		case fsm.next < len(fsm.files):
			sf := fsm.files[fsm.next]
			fsm.next++
			f, err := os.Open(filepath.Join(fsm.root, filepath.FromSlash(sf.rel)))
			if err != nil {
				return n, err
			}
			fsm.cur, fsm.left = f, sf.size
			fsm.pending = binary.BigEndian.AppendUint64(appendStr(fsm.pending[:0], sf.rel), uint64(sf.size))
		case !fsm.ended:
			fsm.ended = true
			fsm.pending = appendStr(fsm.pending[:0], "")
		default:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	return n, nil
}

// Close closes the file being read, if any.
func (fsm *fileStream) Close() error {
	if fsm.cur == nil {
		return nil
	}
	err := fsm.cur.Close()
	fsm.cur = nil
	return err
}

// receiveFiles is the target's stream handler: it writes the files of a
// recovery into the recovery's staging directory, fsyncing them on
// another goroutine while later bytes arrive. It returns once every file
// and directory it wrote is durable; on error it removes what it wrote.
func (s *Store) receiveFiles(_ context.Context, _ string, r io.Reader) (err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(filesMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != filesMagic {
		return fmt.Errorf("%w: not a recovery file stream of version %s", ErrBadMessage, filesMagic[len(filesMagic)-1:])
	}
	id, err := readStr(br, maxRecoveryIDLen)
	if err != nil {
		return err
	}
	s.mu.RLock()
	rec := s.expected[id]
	s.mu.RUnlock()
	if rec == nil {
		return fmt.Errorf("%w: no recovery %s expects files on this node", vocab.ErrStaleRouting, id)
	}
	var tb [8]byte
	if _, err := io.ReadFull(br, tb[:]); err != nil {
		return err
	}
	total := int64(binary.BigEndian.Uint64(tb[:]))
	if total < 0 {
		return fmt.Errorf("%w: a snapshot of %d bytes", ErrBadMessage, uint64(total))
	}
	rec.update(func(i *vocab.RecoveryInfo) { i.BytesTotal, i.BytesDone = total, 0 })
	root := filepath.Join(s.stagingDir(id), "index")
	sy := newSyncer()
	defer func() {
		if werr := sy.wait(); err == nil {
			err = werr
		}
		if err != nil {
			_ = os.RemoveAll(s.stagingDir(id))
		}
	}()
	dirs := map[string]bool{root: true}
	buf := make([]byte, recoveryFileChunk)
	var got int64
	for {
		name, err := readStr(br, maxFileNameLen)
		if err != nil {
			return err
		}
		if name == "" {
			break
		}
		clean := filepath.Clean(filepath.FromSlash(name))
		if !filepath.IsLocal(clean) {
			return fmt.Errorf("%w: file name %q leaves the index directory", ErrBadMessage, name)
		}
		var sb [8]byte
		if _, err := io.ReadFull(br, sb[:]); err != nil {
			return err
		}
		size := int64(binary.BigEndian.Uint64(sb[:]))
		if size < 0 || size > total-got {
			return fmt.Errorf("%w: file %s of %d bytes is beyond the stream's total of %d", ErrBadMessage, name, uint64(size), total)
		}
		path := filepath.Join(root, clean)
		for d := filepath.Dir(path); !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		if err := receiveFile(br, path, size, buf, sy, rec); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		got += size
	}
	if got != total {
		return fmt.Errorf("%w: the stream announced %d bytes and carried %d", ErrBadMessage, total, got)
	}
	if err := sy.wait(); err != nil {
		return err
	}
	// The files are durable; now their names, deepest directory first.
	ordered := make([]string, 0, len(dirs))
	for d := range dirs {
		ordered = append(ordered, d)
	}
	sort.Slice(ordered, func(a, b int) bool { return len(ordered[a]) > len(ordered[b]) })
	for _, d := range ordered {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// kickBytes is how much of a file is written between two requests to
// start writing it back, so that the disk works while the network does.
const kickBytes = 32 << 20

// receiveFile writes size bytes from br to a new file at path, through
// buf, and hands the file to sy, which fsyncs and closes it.
func receiveFile(br *bufio.Reader, path string, size int64, buf []byte, sy *syncer, rec *recovery) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	var sinceKick int64
	for left := size; left > 0; {
		n, rerr := br.Read(buf[:min(int64(len(buf)), left)])
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				_ = f.Close()
				return err
			}
			left -= int64(n)
			sinceKick += int64(n)
			rec.update(func(i *vocab.RecoveryInfo) { i.BytesDone += int64(n) })
			if sinceKick >= kickBytes {
				sy.kick(f)
				sinceKick = 0
			}
		}
		if rerr != nil {
			_ = f.Close()
			if errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF
			}
			return rerr
		}
	}
	sy.finish(f)
	return nil
}

// syncer fsyncs files on its own goroutine, so that a recovery's disk
// writes back while its stream goes on: kick asks for an fsync of a file
// still being written (skipped when the syncer is busy), finish for the
// last fsync of a complete file and its close. wait returns once every
// file handed over is synced and closed, with the first error.
type syncer struct {
	jobs chan syncJob
	done chan struct{}
	once sync.Once
	err  error // set before done closes
}

type syncJob struct {
	f     *os.File
	close bool
}

func newSyncer() *syncer {
	y := &syncer{jobs: make(chan syncJob, 16), done: make(chan struct{})}
	go y.run()
	return y
}

func (y *syncer) run() {
	defer close(y.done)
	for j := range y.jobs {
		if err := j.f.Sync(); err != nil && y.err == nil {
			y.err = fmt.Errorf("fsync %s: %w", j.f.Name(), err)
		}
		if j.close {
			if err := j.f.Close(); err != nil && y.err == nil {
				y.err = err
			}
		}
	}
}

func (y *syncer) kick(f *os.File) {
	select {
	case y.jobs <- syncJob{f: f}:
	default:
	}
}

func (y *syncer) finish(f *os.File) { y.jobs <- syncJob{f: f, close: true} }

// wait ends the syncer (no kick or finish after it) and returns its first
// error. Idempotent.
func (y *syncer) wait() error {
	y.once.Do(func() { close(y.jobs) })
	<-y.done
	return y.err
}

func readStr(br *bufio.Reader, limit uint64) (string, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", fmt.Errorf("%w: a name of %d bytes", ErrBadMessage, n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(br, b)
	return string(b), err
}

// Staging and snapshot directories, in the store's directory: a
// recovery's files arrive in .recovering-<recovery ID> on the target; the
// primary's snapshot for it is .snapshot-<recovery ID>. A recovery ID is
// the target's allocation ID, "@" and a number unique to the attempt, so
// an attempt never writes into another's directory.
const (
	stagingPrefix  = ".recovering-"
	snapshotPrefix = ".snapshot-"
)

func (s *Store) stagingDir(id string) string { return filepath.Join(s.dir, stagingPrefix+sanitize(id)) }
func (s *Store) snapshotDir(id string) string {
	return filepath.Join(s.dir, snapshotPrefix+sanitize(id))
}

// removeLeftovers deletes the directories of s.dir named prefix+name for
// which stale(name) is true: what a crash or an abandoned attempt left.
func (s *Store) removeLeftovers(prefix string, stale func(name string) bool) {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name(), prefix); ok && e.IsDir() && stale(name) {
			_ = os.RemoveAll(filepath.Join(s.dir, e.Name()))
		}
	}
}

// claimed reports whether a recovery of ids (the store's sources or
// expected recoveries, keyed by recovery ID) has the directory name
// (a sanitized recovery ID).
func claimed[V any](s *Store, name string, ids map[string]V) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id := range ids {
		if sanitize(id) == name {
			return true
		}
	}
	return false
}

// expectFiles lets (rec != nil) or stops (nil) the file stream of the
// recovery id.
func (s *Store) expectFiles(id string, rec *recovery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec == nil {
		delete(s.expected, id)
		return
	}
	s.expected[id] = rec
}

func sanitize(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '.' {
			return '_'
		}
		return r
	}, id)
}
