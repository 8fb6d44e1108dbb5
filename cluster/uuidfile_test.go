package cluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
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
	m := fresh()
	before := m.Ops()
	require.NoError(t, writeClusterUUID(m, "data", uuid))
	steps := m.Ops() - before

	cut := errors.New("power cut")
	for step := 0; step <= steps; step++ {
		t.Run(fmt.Sprint("at step ", step), func(t *testing.T) {
			m := fresh()
			start := m.Ops()
			m.SetFaults(func(op vfs.Op) vfs.Fault {
				if op.Index-start == step {
					return vfs.Fault{Err: cut, Halt: true}
				}
				return vfs.Fault{}
			})
			err := writeClusterUUID(m, "data", uuid)
			m.SetFaults(nil)
			m.Crash()
			got, rerr := readClusterUUID(m, "data")
			require.NoError(t, rerr)
			if err == nil {
				require.Equal(t, uuid, got, "a written UUID survives the cut")
				return
			}
			require.Contains(t, []string{"", uuid}, got, "nothing or the whole UUID")
		})
	}
}
