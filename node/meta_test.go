package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
	"github.com/weftsearch/weft/internal/vfs/vfstest"
	"github.com/weftsearch/weft/node"
)

// The node's identity (node.json) survives a power cut at every step of
// its first write: once the node has been handed an ID, a restart reads the
// same one; before that, a restart finds no file or a whole one, never a
// damaged file that would stop the node.
func TestNodeIdentitySurvivesAPowerCutAtEveryStep(t *testing.T) {
	fresh := func() *vfs.MemFS {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("data"))
		require.NoError(t, m.SyncDir("."))
		return m
	}
	var id string
	vfstest.CutPowerAtEveryStep(t, fresh, func(fs vfs.FS) error {
		var err error
		id, err = node.LoadMeta(fs, "data")
		return err
	}, func(t *testing.T, m *vfs.MemFS, err error) {
		again, rerr := node.LoadMeta(m, "data")
		require.NoError(t, rerr, "a restart after the cut starts")
		if err == nil {
			require.Equal(t, id, again, "the ID handed out survives the cut")
		}
	})
}
