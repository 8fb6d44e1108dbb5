package node_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
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
	m := fresh()
	before := m.Ops()
	_, err := node.LoadMeta(m, "data")
	require.NoError(t, err)
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
			id, err := node.LoadMeta(m, "data")
			m.SetFaults(nil)
			m.Crash()
			again, rerr := node.LoadMeta(m, "data")
			require.NoError(t, rerr, "a restart after the cut starts")
			if err == nil {
				require.Equal(t, id, again, "the ID handed out survives the cut")
			}
		})
	}
}
