package httpapi_test

import (
	"context"
	"sync"

	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/security/auth"
)

// memSecurity is an in-memory httpapi.SecurityAdmin and auth.Store, safe
// for concurrent use: the stand-in for the cluster state's security
// records.
type memSecurity struct {
	mu    sync.RWMutex
	users map[string]auth.User
	roles map[string]auth.Role
	keys  map[string]auth.APIKey
}

var _ httpapi.SecurityAdmin = (*memSecurity)(nil)

func newMemSecurity() *memSecurity {
	return &memSecurity{users: map[string]auth.User{}, roles: map[string]auth.Role{}, keys: map[string]auth.APIKey{}}
}

func (m *memSecurity) User(name string) (auth.User, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	u, ok := m.users[name]
	return u, ok
}

func (m *memSecurity) Role(name string) (auth.Role, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.roles[name]
	return r, ok
}

func (m *memSecurity) APIKey(id string) (auth.APIKey, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	k, ok := m.keys[id]
	return k, ok
}

func (m *memSecurity) Users() []auth.User {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]auth.User, 0, len(m.users))
	for _, u := range m.users {
		out = append(out, u)
	}
	return out
}

func (m *memSecurity) Roles() map[string]auth.Role {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]auth.Role, len(m.roles))
	for n, r := range m.roles {
		out[n] = r
	}
	return out
}

func (m *memSecurity) APIKeys() []auth.APIKey {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]auth.APIKey, 0, len(m.keys))
	for _, k := range m.keys {
		out = append(out, k)
	}
	return out
}

func (m *memSecurity) PutUser(_ context.Context, u auth.User) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, exists := m.users[u.Username]
	if u.PasswordHash == "" {
		u.PasswordHash = old.PasswordHash
	}
	m.users[u.Username] = u
	return !exists, nil
}

func (m *memSecurity) DeleteUser(_ context.Context, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.users[name]
	delete(m.users, name)
	return ok, nil
}

func (m *memSecurity) SetPassword(_ context.Context, name, hash string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[name]
	if ok {
		u.PasswordHash = hash
		m.users[name] = u
	}
	return ok, nil
}

func (m *memSecurity) SetEnabled(_ context.Context, name string, enabled bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[name]
	if ok {
		u.Enabled = enabled
		m.users[name] = u
	}
	return ok, nil
}

func (m *memSecurity) PutRole(_ context.Context, name string, r auth.Role) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, exists := m.roles[name]
	m.roles[name] = r
	return !exists, nil
}

func (m *memSecurity) DeleteRole(_ context.Context, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.roles[name]
	delete(m.roles, name)
	return ok, nil
}

func (m *memSecurity) CreateAPIKey(_ context.Context, k auth.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[k.ID] = k
	return nil
}

func (m *memSecurity) InvalidateAPIKeys(_ context.Context, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if k, ok := m.keys[id]; ok {
			k.Invalidated = true
			m.keys[id] = k
		}
	}
	return nil
}
