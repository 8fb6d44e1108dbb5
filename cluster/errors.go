package cluster

import (
	"errors"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
)

// Errors of package cluster. They are wrapped with detail (%w); compare
// with errors.Is. The FSM answers a refused command with one of them (the
// same answer on every node), and Propose returns it to the proposer on
// any node: a forwarded proposal's error crosses the fabric as a code and
// comes back as the same sentinel.
var (
	// ErrNoLeader: no Raft leader could be reached before the proposal's
	// context ended (an election, a partition, or a cluster that has not
	// formed yet).
	ErrNoLeader = errors.New("cluster: no leader")
	// ErrNotReady: the cluster has not formed yet (no leader or no cluster
	// UUID), or has no live node to put something on.
	ErrNotReady = errors.New("cluster: not ready")
	// ErrStale: a command names an index by a UUID that no longer (or not
	// yet) belongs to that name, or a copy that is gone.
	ErrStale = errors.New("cluster: stale command")
	// ErrInvalidCommand: a command breaks a rule of the state (a bad
	// field, two copies of a shard on one node, a copy in the wrong
	// state, …).
	ErrInvalidCommand = errors.New("cluster: invalid command")
	// ErrUnknownCommand: a command of a version or type this build does
	// not know.
	ErrUnknownCommand = errors.New("cluster: unknown command")
	// ErrClusterMismatch: something belongs to another cluster (another
	// cluster UUID), or the cluster UUID would change.
	ErrClusterMismatch = errors.New("cluster: cluster mismatch")
	// ErrClosed: the Cluster has been shut down.
	ErrClosed = errors.New("cluster: closed")
	// ErrUserNotFound: a security command names a native user that does
	// not exist (changing its password, enabling or disabling it).
	// Elasticsearch answers 404 for enable and disable, and 400
	// ("user must exist in order to change password") for a password.
	ErrUserNotFound = errors.New("cluster: user not found")
	// ErrAlreadySet: a command that sets something only once found it set
	// (the bootstrap of the elastic user's password). 409 if it ever
	// reaches a client.
	ErrAlreadySet = errors.New("cluster: already set")

	// errNotLeader: a forwarded proposal reached a node that is no longer
	// the leader; the proposer retries with the new one. Never returned
	// from Propose.
	errNotLeader = errors.New("cluster: not the leader")
)

// codeBase keeps cluster's remote error codes apart from other packages'
// (they are interpreted only by the caller of a cluster method, but a
// distinct range makes a stray code easy to spot in a log).
const codeBase = fabric.CodeUserBase + 256

// errorCodes maps each sentinel to its fabric error code: part of the wire
// format of forwarded proposals, never renumbered.
var errorCodes = []struct {
	err  error
	code fabric.Code
}{
	{ErrNoLeader, codeBase + 0},
	{ErrNotReady, codeBase + 1},
	{state.ErrIndexExists, codeBase + 2},
	{state.ErrIndexNotFound, codeBase + 3},
	{state.ErrMappingVersion, codeBase + 4},
	{ErrStale, codeBase + 5},
	{ErrInvalidCommand, codeBase + 6},
	{ErrUnknownCommand, codeBase + 7},
	{ErrClusterMismatch, codeBase + 8},
	{ErrClosed, codeBase + 9},
	{errNotLeader, codeBase + 10},
	{ErrUserNotFound, codeBase + 11},
	{ErrAlreadySet, codeBase + 12},
}

// toRemote turns an error of a local proposal into the *fabric.RemoteError
// a forwarding node receives: a sentinel keeps its identity as a code,
// anything else is CodeInternal.
func toRemote(err error) error {
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return fabric.Errorf(e.code, "%s", err.Error())
		}
	}
	return fabric.Errorf(fabric.CodeInternal, "%s", err.Error())
}

// fromRemote turns a forwarded proposal's error back into the sentinel it
// stood for, keeping the leader's message; other errors are returned as
// they are.
func fromRemote(err error) error {
	var re *fabric.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	for _, e := range errorCodes {
		if re.Code == e.code {
			return &remoteError{sentinel: e.err, msg: re.Message}
		}
	}
	return err
}

// remoteError is a sentinel error that happened on another node.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg + " (on the leader)" }
func (e *remoteError) Unwrap() error { return e.sentinel }
