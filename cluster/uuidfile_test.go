package cluster

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/internal/vfs/vfstest"
)

// The cluster UUID kept beside the Raft state survives a power cut at
// every step of its write: once written, a restart reads it; before, it
// reads nothing or the whole UUID, never a part of it.
func TestClusterUUIDSurvivesAPowerCutAtEveryStep(t *testing.T) {
	const uuid = "5f1e6c2a-8a53-4d55-9f0e-0c6f4b1d2e3a"
	fresh := func() *vfs.MemFS {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll(filepath.Join("data", raftDirName)))
		require.NoError(t, m.SyncDir("."))
		require.NoError(t, m.SyncDir("data"))
		return m
	}
	vfstest.CutPowerAtEveryStep(t, fresh, func(fs vfs.FS) error { return writeClusterUUID(fs, "data", uuid) },
		func(t *testing.T, m *vfs.MemFS, err error) {
			got, rerr := readClusterUUID(m, "data")
			require.NoError(t, rerr)
			if err == nil {
				require.Equal(t, uuid, got, "a written UUID survives the cut")
				return
			}
			require.Contains(t, []string{"", uuid}, got, "nothing or the whole UUID")
		})
}
