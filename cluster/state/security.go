package state

import (
	"maps"
	"slices"
	"strings"

	"github.com/weftsearch/weft/security/auth"
)

// Security is the cluster's security metadata in the Raft state: native
// users, the changeable part of the reserved users (elastic), roles and
// API keys, in security/auth's models. Secrets are kept only as hashes
// (bcrypt for passwords, SHA-256 for API key secrets); the FSM refuses a
// command whose hash is not of that form, so a clear secret never enters
// the log.
//
// It is part of the immutable State: a command that changes it puts a new
// Security with a copy of the one map it changes. Its maps must not be
// modified. State's client JSON leaves it out (json:"-"); only the Raft
// snapshot persists it (see package cluster's snapshotDoc), so nothing that renders a State
// for a client can show a hash by mistake.
//
// *Security implements auth.Store over one committed state; its methods
// accept a nil receiver (a state before any security command).
type Security struct {
	// Users are the native users, by username. Reserved users are never
	// here.
	Users map[string]auth.User `json:"users,omitempty"`
	// Reserved holds, by reserved username, what of a reserved user can
	// change; the rest (roles) is auth.ReservedUser's.
	Reserved map[string]ReservedUser `json:"reserved,omitempty"`
	// Roles are the stored roles by name; built-in roles are never here.
	Roles map[string]auth.Role `json:"roles,omitempty"`
	// APIKeys are the API keys by ID, invalidated ones included.
	APIKeys map[string]auth.APIKey `json:"api_keys,omitempty"`
}

// ReservedUser is the changeable part of a reserved user.
type ReservedUser struct {
	// PasswordHash is the bcrypt hash of its password; "" until the
	// password is first set (then nobody can log in as the user).
	PasswordHash string `json:"password_hash,omitempty"`
	// Disabled: the user is refused (_security/user/elastic/_disable).
	Disabled bool `json:"disabled,omitempty"`
}

var _ auth.Store = (*Security)(nil)

// User implements auth.Store: a native user, or a reserved user (always
// found; its PasswordHash is "" while its password was never set).
func (sec *Security) User(name string) (auth.User, bool) {
	if u, ok := auth.ReservedUser(name); ok {
		var r ReservedUser
		if sec != nil {
			r = sec.Reserved[name]
		}
		u.PasswordHash, u.Enabled = r.PasswordHash, !r.Disabled
		return u, true
	}
	if sec == nil {
		return auth.User{}, false
	}
	u, ok := sec.Users[name]
	return u, ok
}

// Role implements auth.Store: a stored role (built-in roles are
// auth.BuiltinRole's, never stored).
func (sec *Security) Role(name string) (auth.Role, bool) {
	if sec == nil {
		return auth.Role{}, false
	}
	r, ok := sec.Roles[name]
	return r, ok
}

// APIKey implements auth.Store.
func (sec *Security) APIKey(id string) (auth.APIKey, bool) {
	if sec == nil {
		return auth.APIKey{}, false
	}
	k, ok := sec.APIKeys[id]
	return k, ok
}

// ListUsers returns every user, reserved ones included, sorted by name
// (GET /_security/user). The records carry their hashes: render them with
// auth.User.View.
func (sec *Security) ListUsers() []auth.User {
	names := []string{auth.ElasticUser}
	if sec != nil {
		names = append(names, slices.Collect(maps.Keys(sec.Users))...)
	}
	slices.Sort(names)
	out := make([]auth.User, 0, len(names))
	for _, n := range names {
		u, _ := sec.User(n)
		out = append(out, u)
	}
	return out
}

// RoleNames returns the stored roles' names, sorted (built-in roles not
// included).
func (sec *Security) RoleNames() []string {
	if sec == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(sec.Roles))
}

// ElasticPasswordSet reports whether the elastic user's password has been
// set (bootstrapped or reset).
func (sec *Security) ElasticPasswordSet() bool {
	return sec != nil && sec.Reserved[auth.ElasticUser].PasswordHash != ""
}

// FindAPIKeys returns the API keys f matches, invalidated ones included,
// sorted by ID (GET /_security/api_key; the caller drops what it does not
// show).
func (sec *Security) FindAPIKeys(f APIKeyFilter) []auth.APIKey {
	if sec == nil {
		return nil
	}
	var out []auth.APIKey
	if len(f.IDs) > 0 {
		for _, id := range f.IDs {
			if k, ok := sec.APIKeys[id]; ok && f.Match(k) && !slices.ContainsFunc(out, func(o auth.APIKey) bool { return o.ID == id }) {
				out = append(out, k)
			}
		}
	} else {
		for _, k := range sec.APIKeys {
			if f.Match(k) {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b auth.APIKey) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// APIKeyFilter selects API keys as Elasticsearch's get and invalidate API
// key requests do: every field that is set must match (IDs: any of them).
type APIKeyFilter struct {
	IDs []string `json:"ids,omitempty"`
	// Name is an exact name, a prefix followed by "*", or "*" (any).
	Name string `json:"name,omitempty"`
	// Owner is the owning username (?owner=true or ?username=).
	Owner string `json:"owner,omitempty"`
	// Realm is the owner's realm (?realm_name=).
	Realm string `json:"realm,omitempty"`
}

// IsZero reports whether f sets nothing (it would match every key).
func (f APIKeyFilter) IsZero() bool {
	return len(f.IDs) == 0 && f.Name == "" && f.Owner == "" && f.Realm == ""
}

// Match reports whether k is one of the keys f selects.
func (f APIKeyFilter) Match(k auth.APIKey) bool {
	switch {
	case len(f.IDs) > 0 && !slices.Contains(f.IDs, k.ID):
		return false
	case f.Owner != "" && k.Owner != f.Owner:
		return false
	case f.Realm != "" && k.Realm != f.Realm:
		return false
	case f.Name == "" || f.Name == "*":
		return true
	case strings.HasSuffix(f.Name, "*"):
		return strings.HasPrefix(k.Name, strings.TrimSuffix(f.Name, "*"))
	}
	return k.Name == f.Name
}
