// Package vfstest holds the crash test the durable files of every room
// share: a power cut at every step of a write.
package vfstest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weftsearch/weft/internal/vfs"
)

// errCut is the error of the operation the machine halted at.
var errCut = errors.New("power cut")

// CutPowerAtEveryStep runs write once on fresh() to count its operations,
// then once for each of them (and once past the last) on a new fresh(): the
// machine halts at that operation (vfs.Fault.Halt), then the file system
// loses what was not durable (MemFS.Crash). check gets the crashed file
// system and write's error (nil when the cut came after write returned), as
// a subtest "at step k".
func CutPowerAtEveryStep(t *testing.T, fresh func() *vfs.MemFS, write func(vfs.FS) error, check func(t *testing.T, m *vfs.MemFS, err error)) {
	t.Helper()
	m := fresh()
	before := m.Ops()
	if err := write(m); err != nil {
		t.Fatalf("the write fails without a cut: %v", err)
	}
	steps := m.Ops() - before
	if steps <= 0 {
		t.Fatal("the write did nothing")
	}
	for step := 0; step <= steps; step++ {
		t.Run(fmt.Sprint("at step ", step), func(t *testing.T) {
			m := fresh()
			start := m.Ops()
			m.SetFaults(func(op vfs.Op) vfs.Fault {
				if op.Index-start == step {
					return vfs.Fault{Err: errCut, Halt: true}
				}
				return vfs.Fault{}
			})
			err := write(m)
			m.SetFaults(nil)
			m.Crash()
			check(t, m, err)
		})
	}
}
