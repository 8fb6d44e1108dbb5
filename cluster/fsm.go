package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/weftsearch/weft/cluster/state"
)

// fsm is the Raft state machine of the cluster metadata: it decodes each
// committed command, applies it with the pure apply, and publishes the new
// immutable State. Raft calls Apply, Snapshot and Restore from one
// goroutine; State and the watchers may be used from any.
type fsm struct {
	state   atomic.Pointer[state.State]
	applied broadcast // after every applied command and restore
}

// fsmResult is what Apply answers (raft.ApplyFuture.Response on the
// leader that proposed the command).
type fsmResult struct {
	err error
	res Result // what the command found (Result.withApplied)
}

var _ raft.FSM = (*fsm)(nil)

func newFSM() *fsm {
	f := &fsm{}
	f.state.Store(&state.State{})
	return f
}

// State returns the latest applied state; never nil.
func (f *fsm) State() *state.State { return f.state.Load() }

// Apply applies one committed log entry. Entries that are not commands
// (Raft's own) never reach it.
func (f *fsm) Apply(l *raft.Log) any {
	cur := f.State()
	cmd, err := DecodeCommand(l.Data)
	next := draftAt(cur, l.Index).State
	var res Result
	if err == nil {
		next, res, err = applyCommand(cur, l.Index, cmd)
	}
	f.publish(next)
	return fsmResult{err: err, res: res}
}

func (f *fsm) publish(s *state.State) {
	f.state.Store(s)
	f.applied.Signal()
}

// Watch subscribes to a signal after every applied command (and restore).
func (f *fsm) Watch() (<-chan struct{}, func()) { return f.applied.Watch() }

// Snapshot captures the current state; Persist writes it as JSON.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{state: f.State()}, nil
}

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	s, err := decodeSnapshot(r)
	if err != nil {
		return err
	}
	f.publish(s)
	return nil
}

// snapshotDoc is a Raft snapshot's JSON: State's own fields, and beside
// them the security metadata that State's JSON leaves out (so that a State
// rendered for a client never carries a hash). A snapshot written before
// there was security metadata decodes with Security nil.
type snapshotDoc struct {
	*state.State
	Security *state.Security `json:"security,omitempty"`
}

// encodeSnapshot writes s as a snapshot, its security metadata included.
func encodeSnapshot(w io.Writer, s *state.State) error {
	return json.NewEncoder(w).Encode(snapshotDoc{State: s, Security: s.Security})
}

// decodeSnapshot reads what encodeSnapshot writes.
func decodeSnapshot(r io.Reader) (*state.State, error) {
	doc := snapshotDoc{State: &state.State{}}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("cluster: restoring the metadata snapshot: %w", err)
	}
	doc.State.Security = doc.Security
	return doc.State, nil
}

type fsmSnapshot struct{ state *state.State }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := encodeSnapshot(sink, s.state); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: writing the metadata snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
