package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// MemFS is an in-memory FS that remembers, beside what reads see, what
// would survive a power loss: for each file the contents at its last
// successful Sync, for each directory its entries at its last SyncDir.
// Crash and CrashTorn replace the visible state with a state the disk may
// hold after a power loss; a crash test runs code against a MemFS, crashes
// it, and checks what reopening finds.
//
// A failed Sync (see SetFaults) models Linux's writeback error behaviour:
// the bytes that Sync should have made durable are marked lost — reads
// still see them, but no later Sync or crash brings them to the disk
// (PostgreSQL's "fsyncgate"), while later writes persist normally.
//
// All methods are safe for concurrent use. The zero value is not usable;
// call NewMem.
type MemFS struct {
	mu     sync.Mutex
	root   *memNode
	gen    uint64 // bumped by each crash: older handles are stale
	ops    int
	faults func(Op) Fault
}

var _ FS = (*MemFS)(nil)

// OpKind names one kind of file system operation.
type OpKind uint8

// The operations MemFS counts and passes to the fault function.
const (
	OpCreate OpKind = iota
	OpOpen
	OpMkdir
	OpList
	OpRemove
	OpRename
	OpSyncDir
	OpRead
	OpWrite
	OpSync
	OpTruncate
)

var opNames = [...]string{"create", "open", "mkdir", "list", "remove", "rename", "syncdir", "read", "write", "sync", "truncate"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op%d", k)
}

// Op is one operation about to run.
type Op struct {
	Kind  OpKind
	Name  string // the path it acts on
	Index int    // how many operations ran before it on this MemFS
}

// Fault is what a fault function makes of an operation; the zero Fault lets
// it run. With Err set the operation fails with Err and changes nothing,
// except that a write first writes Written bytes (a short write) and a Sync
// loses what it should have made durable (a writeback error) — unless Halt
// says that the machine stopped there, which leaves those bytes dirty for
// the page cache of a restarted process or a crash to deal with.
type Fault struct {
	Err     error
	Written int
	Halt    bool
}

// ErrStale is returned by a File opened before the last simulated crash.
var ErrStale = errors.New("file handle opened before a simulated crash")

var (
	errNotDir   = errors.New("not a directory")
	errIsDir    = errors.New("is a directory")
	errNotEmpty = errors.New("directory not empty")
	errReadOnly = errors.New("file not open for writing")
)

type memNode struct {
	dir bool
	// A directory's entries: as reads see them, and as of its last SyncDir.
	kids, synced map[string]*memNode
	// A file's contents: as reads see them, and as of its last Sync; lost
	// marks the bytes of data that a failed Sync dropped (nil if none).
	data, durable []byte
	lost          []bool
}

func newDir() *memNode {
	return &memNode{dir: true, kids: map[string]*memNode{}, synced: map[string]*memNode{}}
}

// NewMem returns an empty MemFS; its root directory always exists.
func NewMem() *MemFS { return &MemFS{root: newDir()} }

// SetFaults sets the function asked before every operation (nil: none).
// It runs with the MemFS locked and must not call it.
func (m *MemFS) SetFaults(fn func(Op) Fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = fn
}

// Ops returns how many operations have run.
func (m *MemFS) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// begin counts an operation and returns its fault's error as a
// *fs.PathError, or nil. m.mu is held.
func (m *MemFS) begin(kind OpKind, name string) error {
	if f := m.fault(kind, name); f.Err != nil {
		return pathErr(kind.String(), name, f.Err)
	}
	return nil
}

// fault counts an operation and returns its fault. m.mu is held.
func (m *MemFS) fault(kind OpKind, name string) Fault {
	op := Op{Kind: kind, Name: name, Index: m.ops}
	m.ops++
	if m.faults == nil {
		return Fault{}
	}
	return m.faults(op)
}

func split(name string) []string {
	name = strings.Trim(filepath.ToSlash(filepath.Clean(name)), "/")
	if name == "" || name == "." {
		return nil
	}
	return strings.Split(name, "/")
}

// lookup returns the node at name. m.mu is held.
func (m *MemFS) lookup(name string) (*memNode, error) {
	n := m.root
	for _, p := range split(name) {
		if !n.dir {
			return nil, errNotDir
		}
		if n = n.kids[p]; n == nil {
			return nil, fs.ErrNotExist
		}
	}
	return n, nil
}

// parent returns the directory that holds name, and name's last element.
// m.mu is held.
func (m *MemFS) parent(name string) (*memNode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", fs.ErrInvalid
	}
	d, err := m.lookupDir(strings.Join(parts[:len(parts)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	return d, parts[len(parts)-1], nil
}

// lookupDir returns the directory at name. m.mu is held.
func (m *MemFS) lookupDir(name string) (*memNode, error) {
	d, err := m.lookup(name)
	if err == nil && !d.dir {
		err = errNotDir
	}
	return d, err
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpCreate, name); err != nil {
		return nil, err
	}
	d, base, err := m.parent(name)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	n := d.kids[base]
	switch {
	case n == nil:
		n = &memNode{}
		d.kids[base] = n
	case n.dir:
		return nil, pathErr("create", name, errIsDir)
	default:
		n.truncate(0)
	}
	return m.handle(n, name, true), nil
}

func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

func (m *MemFS) OpenRW(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpOpen, name); err != nil {
		return nil, err
	}
	n, err := m.lookup(name)
	if err == nil && n.dir {
		err = errIsDir
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return m.handle(n, name, writable), nil
}

func (m *MemFS) handle(n *memNode, name string, writable bool) *memFile {
	return &memFile{m: m, n: n, name: name, gen: m.gen, writable: writable}
}

func (m *MemFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpMkdir, dir); err != nil {
		return err
	}
	n := m.root
	for _, p := range split(dir) {
		k := n.kids[p]
		if k == nil {
			k = newDir()
			n.kids[p] = k
		} else if !k.dir {
			return pathErr("mkdir", dir, errNotDir)
		}
		n = k
	}
	return nil
}

func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpList, dir); err != nil {
		return nil, err
	}
	d, err := m.lookupDir(dir)
	if err != nil {
		return nil, pathErr("list", dir, err)
	}
	names := make([]string, 0, len(d.kids))
	for name := range d.kids {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpRemove, name); err != nil {
		return err
	}
	d, base, err := m.parent(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n := d.kids[base]
	switch {
	case n == nil:
		return pathErr("remove", name, fs.ErrNotExist)
	case n.dir && len(n.kids) > 0:
		return pathErr("remove", name, errNotEmpty)
	}
	delete(d.kids, base)
	return nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpRename, oldname); err != nil {
		return err
	}
	od, obase, err := m.parent(oldname)
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	n := od.kids[obase]
	if n == nil {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	nd, nbase, err := m.parent(newname)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	if t := nd.kids[nbase]; t != nil && t.dir {
		return pathErr("rename", newname, errIsDir)
	}
	delete(od.kids, obase)
	nd.kids[nbase] = n
	return nil
}

func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(OpSyncDir, dir); err != nil {
		return err
	}
	d, err := m.lookupDir(dir)
	if err != nil {
		return pathErr("syncdir", dir, err)
	}
	d.synced = maps.Clone(d.kids)
	return nil
}

// Crash simulates a power loss in which nothing that was not synced reached
// the disk: every file gets its contents as of its last successful Sync,
// every directory its entries as of its last SyncDir; what is no longer
// reachable is gone. Files opened before return ErrStale.
func (m *MemFS) Crash() { m.crash(nil, 0) }

// CrashTorn simulates a power loss in which the disk got an arbitrary part
// of what was not synced, as the kernel's writeback may leave it: rng
// decides, independently, whether each changed directory entry and each
// changed pageSize-byte page of each file reached the disk (pages beyond
// the old size that did not read as zeros), and whether a file's
// unsynced shrinking did. Bytes a failed Sync lost never do.
func (m *MemFS) CrashTorn(rng *rand.Rand, pageSize int) {
	m.crash(func() bool { return rng.IntN(2) == 0 }, pageSize)
}

func (m *MemFS) crash(pick func() bool, pageSize int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	seen := map[*memNode]bool{m.root: true}
	var walk func(d *memNode)
	walk = func(d *memNode) {
		kids := maps.Clone(d.synced)
		if pick != nil {
			for _, name := range sortedUnion(d.kids, d.synced) {
				if cur := d.kids[name]; cur != d.synced[name] && pick() {
					if cur == nil {
						delete(kids, name)
					} else {
						kids[name] = cur
					}
				}
			}
		}
		d.kids, d.synced = kids, maps.Clone(kids)
		for _, name := range sortedUnion(kids, nil) {
			n := kids[name]
			if seen[n] {
				continue
			}
			seen[n] = true
			if n.dir {
				walk(n)
			} else {
				n.crashFile(pick, pageSize)
			}
		}
	}
	walk(m.root)
}

func sortedUnion(a, b map[string]*memNode) []string {
	names := make([]string, 0, len(a)+len(b))
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// crashFile sets the file's contents to what the disk holds after a crash.
func (n *memNode) crashFile(pick func() bool, pageSize int) {
	if pick != nil {
		disk := slices.Clone(n.durable)
		if len(n.data) < len(disk) && pick() {
			disk = disk[:len(n.data)]
		}
		for p := 0; p < len(n.data); p += pageSize {
			end := min(p+pageSize, len(n.data))
			if !n.dirty(p, end) || !pick() {
				continue
			}
			if len(disk) < end {
				disk = append(disk, make([]byte, end-len(disk))...)
			}
			for i := p; i < end; i++ {
				if !n.isLost(i) {
					disk[i] = n.data[i]
				}
			}
		}
		n.durable = disk
	}
	n.data, n.lost = slices.Clone(n.durable), nil
}

// dirty reports whether data[from:to] holds a byte the disk lacks that a
// Sync could still write.
func (n *memNode) dirty(from, to int) bool {
	for i := from; i < to; i++ {
		if (i >= len(n.durable) || n.data[i] != n.durable[i]) && !n.isLost(i) {
			return true
		}
	}
	return false
}

func (n *memNode) isLost(i int) bool { return i < len(n.lost) && n.lost[i] }

// sync makes the file's contents durable, except the lost bytes, which keep
// what the disk had (zeros past its old end).
func (n *memNode) sync() {
	disk := slices.Clone(n.data)
	for i := range min(len(n.lost), len(disk)) {
		if n.lost[i] {
			disk[i] = 0
			if i < len(n.durable) {
				disk[i] = n.durable[i]
			}
		}
	}
	n.durable = disk
}

// failSync marks the bytes a Sync would have written as lost.
func (n *memNode) failSync() {
	if len(n.lost) < len(n.data) {
		n.lost = append(n.lost, make([]bool, len(n.data)-len(n.lost))...)
	}
	for i := range n.data {
		if i >= len(n.durable) || n.data[i] != n.durable[i] {
			n.lost[i] = true
		}
	}
}

// write writes b at off, growing the file with zeros as needed.
func (n *memNode) write(b []byte, off int) {
	if end := off + len(b); end > len(n.data) {
		n.data = append(n.data, make([]byte, end-len(n.data))...)
	}
	copy(n.data[off:], b)
	for i := off; i < min(off+len(b), len(n.lost)); i++ {
		n.lost[i] = false
	}
}

// truncate sets the file's size, growing it with zeros.
func (n *memNode) truncate(size int) {
	if size > len(n.data) {
		n.write(nil, size)
		return
	}
	n.data = n.data[:size]
	if len(n.lost) > size {
		n.lost = n.lost[:size]
	}
}

type memFile struct {
	m        *MemFS
	n        *memNode
	name     string
	gen      uint64
	writable bool
	off      int64 // Read's offset
	closed   bool
}

var _ File = (*memFile)(nil)

// check reports why the handle cannot be used. m.mu is held.
func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case f.gen != f.m.gen:
		return pathErr(op, f.name, ErrStale)
	case write && !f.writable:
		return pathErr(op, f.name, errReadOnly)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	n, err := f.readAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if err := f.m.begin(OpRead, f.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, fs.ErrInvalid)
	}
	flt := f.m.fault(OpWrite, f.name)
	if flt.Err == nil {
		f.n.write(p, int(off))
		return len(p), nil
	}
	n := min(max(flt.Written, 0), len(p))
	f.n.write(p[:n], int(off))
	return n, pathErr("write", f.name, flt.Err)
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	if flt := f.m.fault(OpSync, f.name); flt.Err != nil {
		if !flt.Halt {
			f.n.failSync()
		}
		return pathErr("sync", f.name, flt.Err)
	}
	f.n.sync()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, fs.ErrInvalid)
	}
	if err := f.m.begin(OpTruncate, f.name); err != nil {
		return err
	}
	f.n.truncate(int(size))
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return 0, err
	}
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}
