package cluster

import (
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// SecurityStore is auth.Store over the latest committed state: every
// lookup reads the state then current (an atomic load and a map lookup;
// nothing is copied). One authentication may see two states when a
// command commits in between; each lookup is consistent on its own.
type SecurityStore struct {
	state func() *state.State
}

var _ auth.Store = SecurityStore{}

// NewSecurityStore returns a SecurityStore over state, which must return
// the latest committed State (never nil), e.g. Cluster.State.
func NewSecurityStore(state func() *state.State) SecurityStore { return SecurityStore{state: state} }

// SecurityStore returns auth.Store over this node's latest applied state.
func (c *Cluster) SecurityStore() SecurityStore { return NewSecurityStore(c.State) }

// User implements auth.Store.
func (s SecurityStore) User(name string) (auth.User, bool) { return s.state().Security.User(name) }

// Role implements auth.Store.
func (s SecurityStore) Role(name string) (auth.Role, bool) { return s.state().Security.Role(name) }

// APIKey implements auth.Store.
func (s SecurityStore) APIKey(id string) (auth.APIKey, bool) { return s.state().Security.APIKey(id) }
