package auth

// MapStore is a Store over plain maps, for tests and tools. It is safe for
// concurrent reads; whoever writes its maps must not do so while it is
// read.
type MapStore struct {
	Users   map[string]User
	Roles   map[string]Role
	APIKeys map[string]APIKey
}

var _ Store = MapStore{}

// User implements Store.
func (s MapStore) User(name string) (User, bool) { u, ok := s.Users[name]; return u, ok }

// Role implements Store.
func (s MapStore) Role(name string) (Role, bool) { r, ok := s.Roles[name]; return r, ok }

// APIKey implements Store.
func (s MapStore) APIKey(id string) (APIKey, bool) { k, ok := s.APIKeys[id]; return k, ok }
