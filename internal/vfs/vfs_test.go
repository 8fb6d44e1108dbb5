package vfs

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConformance runs the same contract against the OS and MemFS.
func TestConformance(t *testing.T) {
	impls := map[string]func(t *testing.T) (FS, string){
		"os":  func(t *testing.T) (FS, string) { return OS, t.TempDir() },
		"mem": func(t *testing.T) (FS, string) { return NewMem(), "/data" },
	}
	for name, mk := range impls {
		t.Run(name, func(t *testing.T) {
			fsys, root := mk(t)
			dir := filepath.Join(root, "a", "b")
			require.NoError(t, fsys.MkdirAll(dir))
			require.NoError(t, fsys.MkdirAll(dir), "MkdirAll of an existing directory")

			p := filepath.Join(dir, "f")
			f, err := fsys.Create(p)
			require.NoError(t, err)
			n, err := f.WriteAt([]byte("hello world"), 0)
			require.NoError(t, err)
			require.Equal(t, 11, n)
			_, err = f.WriteAt([]byte("W"), 6)
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			size, err := f.Size()
			require.NoError(t, err)
			require.EqualValues(t, 11, size)
			require.NoError(t, f.Truncate(5))
			require.NoError(t, f.Close())

			r, err := fsys.Open(p)
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, "hello", string(got))
			buf := make([]byte, 3)
			n, err = r.ReadAt(buf, 3)
			require.Equal(t, 2, n)
			require.ErrorIs(t, err, io.EOF)
			_, err = r.WriteAt([]byte("x"), 0)
			require.Error(t, err, "a file opened with Open is read-only")
			require.NoError(t, r.Close())

			rw, err := fsys.OpenRW(p)
			require.NoError(t, err)
			_, err = rw.WriteAt([]byte("J"), 0)
			require.NoError(t, err)
			require.NoError(t, rw.Close())

			_, err = fsys.Create(filepath.Join(dir, "g"))
			require.NoError(t, err)
			names, err := fsys.List(dir)
			require.NoError(t, err)
			require.Equal(t, []string{"f", "g"}, names)

			require.NoError(t, fsys.Rename(p, filepath.Join(dir, "g")), "rename replaces a file")
			names, err = fsys.List(dir)
			require.NoError(t, err)
			require.Equal(t, []string{"g"}, names)
			r, err = fsys.Open(filepath.Join(dir, "g"))
			require.NoError(t, err)
			got, err = io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, "Jello", string(got))
			require.NoError(t, r.Close())
			require.NoError(t, fsys.SyncDir(dir))

			require.Error(t, fsys.Remove(filepath.Join(root, "a")), "a directory that is not empty stays")
			require.NoError(t, fsys.Remove(filepath.Join(dir, "g")))
			_, err = fsys.Open(filepath.Join(dir, "g"))
			require.ErrorIs(t, err, fs.ErrNotExist)
			_, err = fsys.List(filepath.Join(root, "nope"))
			require.ErrorIs(t, err, fs.ErrNotExist)
			require.ErrorIs(t, fsys.Remove(filepath.Join(dir, "g")), fs.ErrNotExist)
		})
	}
}

func readFile(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func writeAt(t *testing.T, f File, s string, off int64) {
	t.Helper()
	_, err := f.WriteAt([]byte(s), off)
	require.NoError(t, err)
}

// memWithDir returns a MemFS holding the durable, empty directory /d.
func memWithDir(t *testing.T) *MemFS {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	require.NoError(t, m.SyncDir("/"))
	return m
}

// memWithFile returns a MemFS holding the durable, empty file /d/f, open.
func memWithFile(t *testing.T) (*MemFS, File) {
	m := memWithDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	return m, f
}

func TestMemCrashKeepsOnlySyncedData(t *testing.T) {
	m, f := memWithFile(t)
	writeAt(t, f, "synced", 0)
	require.NoError(t, f.Sync())
	writeAt(t, f, "+lost", 6)
	m.Crash()
	require.Equal(t, "synced", readFile(t, m, "/d/f"))
	_, err := f.WriteAt([]byte("x"), 0)
	require.ErrorIs(t, err, ErrStale, "handles from before a crash are dead")
}

func TestMemCrashKeepsOnlySyncedEntries(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T, m *MemFS)
		want    []string // entries of /d after a crash without SyncDir
		wantDur []string // after a crash that follows SyncDir
	}{
		{"create", func(t *testing.T, m *MemFS) {
			f, err := m.Create("/d/new")
			require.NoError(t, err)
			require.NoError(t, f.Sync())
		}, []string{"old"}, []string{"new", "old"}},
		{"remove", func(t *testing.T, m *MemFS) { require.NoError(t, m.Remove("/d/old")) }, []string{"old"}, []string{}},
		{"rename", func(t *testing.T, m *MemFS) { require.NoError(t, m.Rename("/d/old", "/d/moved")) }, []string{"old"}, []string{"moved"}},
		{"mkdir", func(t *testing.T, m *MemFS) { require.NoError(t, m.MkdirAll("/d/sub")) }, []string{"old"}, []string{"old", "sub"}},
	}
	for _, tc := range tests {
		for _, sync := range []bool{false, true} {
			m := memWithDir(t)
			f, err := m.Create("/d/old")
			require.NoError(t, err)
			writeAt(t, f, "data", 0)
			require.NoError(t, f.Sync())
			require.NoError(t, m.SyncDir("/d"))
			tc.change(t, m)
			want := tc.want
			if sync {
				require.NoError(t, m.SyncDir("/d"))
				want = tc.wantDur
			}
			m.Crash()
			names, err := m.List("/d")
			require.NoError(t, err)
			require.Equal(t, want, names, "%s, SyncDir %v", tc.name, sync)
		}
	}
}

// TestMemFailedSyncLosesData models fsyncgate: after a failed Sync the
// bytes it should have written stay visible but never reach the disk, even
// when a later Sync succeeds; later writes do.
func TestMemFailedSyncLosesData(t *testing.T) {
	m, f := memWithFile(t)
	writeAt(t, f, "aaaa", 0)
	require.NoError(t, f.Sync())
	writeAt(t, f, "bbbb", 4)
	eio := errors.New("EIO")
	m.SetFaults(func(op Op) Fault {
		if op.Kind == OpSync {
			return Fault{Err: eio}
		}
		return Fault{}
	})
	require.ErrorIs(t, f.Sync(), eio)
	m.SetFaults(nil)
	require.Equal(t, "aaaabbbb", readFile(t, m, "/d/f"), "the page cache still shows the lost bytes")
	writeAt(t, f, "cccc", 8)
	require.NoError(t, f.Sync(), "the retried fsync succeeds")
	m.Crash()
	require.Equal(t, "aaaa\x00\x00\x00\x00cccc", readFile(t, m, "/d/f"))
}

// TestMemHaltedSyncLosesNothing: a machine that stopped in an fsync left
// the bytes dirty; a restarted process syncs them.
func TestMemHaltedSyncLosesNothing(t *testing.T) {
	m, f := memWithFile(t)
	writeAt(t, f, "dirty", 0)
	stop := errors.New("power cut")
	m.SetFaults(func(Op) Fault { return Fault{Err: stop, Halt: true} })
	require.ErrorIs(t, f.Sync(), stop)
	m.SetFaults(nil)
	g, err := m.OpenRW("/d/f")
	require.NoError(t, err)
	require.NoError(t, g.Sync())
	m.Crash()
	require.Equal(t, "dirty", readFile(t, m, "/d/f"))
}

func TestMemShortWriteAndFaultIndex(t *testing.T) {
	m := memWithDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	var seen []Op
	enospc := errors.New("ENOSPC")
	m.SetFaults(func(op Op) Fault {
		seen = append(seen, op)
		if op.Kind == OpWrite {
			return Fault{Err: enospc, Written: 3}
		}
		return Fault{}
	})
	n, err := f.WriteAt([]byte("abcdef"), 0)
	require.ErrorIs(t, err, enospc)
	require.Equal(t, 3, n)
	require.NoError(t, f.Sync())
	require.Equal(t, "abc", readFile(t, m, "/d/f"))
	require.Equal(t, []OpKind{OpWrite, OpSync, OpOpen, OpRead, OpRead}, kinds(seen))
	require.Equal(t, m.Ops()-len(seen), seen[0].Index)
	require.Equal(t, "/d/f", seen[0].Name)
}

func kinds(ops []Op) []OpKind {
	out := make([]OpKind, len(ops))
	for k, op := range ops {
		out[k] = op.Kind
	}
	return out
}

// TestMemCrashTorn checks, over many seeds, that a torn crash keeps all
// synced bytes, never brings back lost ones, gives each other byte either
// its written value or zero, and does reach the states that a strict crash
// cannot: a later unsynced page on disk without an earlier one.
func TestMemCrashTorn(t *testing.T) {
	const page = 4
	var partial, holes int
	for seed := range uint64(200) {
		m := memWithDir(t)
		f, err := m.Create("/d/f")
		require.NoError(t, err)
		require.NoError(t, m.SyncDir("/d"))
		writeAt(t, f, "0123", 0)
		require.NoError(t, f.Sync())
		writeAt(t, f, "4567", 4)
		m.SetFaults(func(Op) Fault { return Fault{Err: errors.New("EIO")} })
		require.Error(t, f.Sync())
		m.SetFaults(nil)
		writeAt(t, f, "89abcdef", 8)
		m.CrashTorn(rand.New(rand.NewPCG(seed, 1)), page)
		got := readFile(t, m, "/d/f")
		require.GreaterOrEqual(t, len(got), 4)
		require.Equal(t, "0123", got[:4])
		for i := 4; i < len(got); i++ {
			if i < 8 {
				require.Zero(t, got[i], "seed %d: byte %d was lost by a failed fsync", seed, i)
				continue
			}
			if got[i] != "0123456789abcdef"[i] {
				require.Zero(t, got[i], "seed %d", seed)
			}
		}
		if len(got) > 4 && len(got) < 16 {
			partial++
		}
		if len(got) == 16 && got[8] == 0 {
			holes++
		}
	}
	require.Positive(t, partial, "some crashes keep part of the unsynced tail")
	require.Positive(t, holes, "some crashes keep a later page without an earlier one")
}
