package vfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/internal/vfs/vfstest"
)

// A crash at every step of WriteFileAtomic — the machine halts at the
// step's operation, then loses what was not durable — leaves the old
// contents or the new ones whole; once it has returned, the new ones
// survive any crash.
func TestWriteFileAtomicSurvivesACrashAtEveryStep(t *testing.T) {
	const path = "dir/meta.json"
	old, updated := []byte(`{"v":1}`), []byte(`{"v":2,"longer":true}`)
	fresh := func() *vfs.MemFS {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("dir"))
		require.NoError(t, m.SyncDir("."))
		require.NoError(t, vfs.WriteFileAtomic(m, path, old))
		return m
	}
	vfstest.CutPowerAtEveryStep(t, fresh, func(fs vfs.FS) error { return vfs.WriteFileAtomic(fs, path, updated) },
		func(t *testing.T, m *vfs.MemFS, err error) {
			got, rerr := vfs.ReadFile(m, path)
			require.NoError(t, rerr, "the file is never missing after a crash")
			if err == nil {
				require.Equal(t, string(updated), string(got), "a write that returned survives the crash")
				return
			}
			require.Contains(t, []string{string(old), string(updated)}, string(got), "old or new, whole")
		})
}

func TestWriteFileAtomicOnTheOSFileSystem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.json")
	require.NoError(t, vfs.WriteFileAtomic(vfs.OS, path, []byte("one")))
	require.NoError(t, vfs.WriteFileAtomic(vfs.OS, path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	_, err = os.Stat(path + ".tmp")
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary file is renamed away")
}
