package vfs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
)

// A crash at every step of WriteFileAtomic — the machine halts at the
// step's operation, then loses what was not durable — leaves the old
// contents or the new ones whole; once it has returned, the new ones
// survive any crash.
func TestWriteFileAtomicSurvivesACrashAtEveryStep(t *testing.T) {
	const path = "dir/meta.json"
	old, updated := []byte(`{"v":1}`), []byte(`{"v":2,"longer":true}`)
	setup := func() *vfs.MemFS {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("dir"))
		require.NoError(t, m.SyncDir("."))
		require.NoError(t, vfs.WriteFileAtomic(m, path, old))
		return m
	}
	// How many operations one write takes, counted on a clean run.
	m := setup()
	before := m.Ops()
	require.NoError(t, vfs.WriteFileAtomic(m, path, updated))
	steps := m.Ops() - before
	require.Positive(t, steps)

	halted := errors.New("power cut")
	for step := 0; step <= steps; step++ {
		t.Run(fmt.Sprint("at step ", step), func(t *testing.T) {
			m := setup()
			start := m.Ops()
			m.SetFaults(func(op vfs.Op) vfs.Fault {
				if op.Index-start == step {
					return vfs.Fault{Err: halted, Halt: true}
				}
				return vfs.Fault{}
			})
			err := vfs.WriteFileAtomic(m, path, updated)
			m.SetFaults(nil)
			m.Crash()
			got, rerr := vfs.ReadFile(m, path)
			require.NoError(t, rerr, "the file is never missing after a crash")
			if err == nil {
				require.Equal(t, string(updated), string(got), "a write that returned survives the crash")
				return
			}
			require.Contains(t, []string{string(old), string(updated)}, string(got), "old or new, whole")
		})
	}
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
