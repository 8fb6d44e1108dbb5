package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrAuthenticationFailed is the one error Authenticate returns for
// credentials it does not accept, whatever the reason (unknown user, wrong
// password, disabled user, unknown, expired or invalidated API key), so a
// caller cannot tell them apart. It means 401.
var ErrAuthenticationFailed = errors.New("auth: unable to authenticate")

// Store is the read-only view of the security records that Authenticate
// needs; the cluster's Raft state implements it. Lookups are local and
// must not block. Returned values must not be modified by the caller, nor
// by the store afterwards (a change replaces the record).
type Store interface {
	// User returns the native or reserved user name.
	User(name string) (User, bool)
	// Role returns the stored role name (built-in roles are not asked).
	Role(name string) (Role, bool)
	// APIKey returns the API key with id.
	APIKey(id string) (APIKey, bool)
}

// Principal is who a request comes from, with what it may do.
type Principal struct {
	// Username is the user, or the owner of the API key.
	Username string
	// Realm is RealmNative, RealmReserved or RealmAPIKey.
	Realm string
	// Roles are the user's role names (for an API key, its owner's when
	// the key was created), sorted.
	Roles    []string
	FullName string
	Email    string
	Metadata map[string]any
	// APIKeyID and APIKeyName are set when an API key authenticated.
	APIKeyID   string
	APIKeyName string
	// OwnerRealm is the realm of an API key's owner.
	OwnerRealm string
	// Permission decides the checks of CheckCluster and CheckIndices.
	Permission Permission
}

// IsAPIKey reports whether an API key authenticated p.
func (p Principal) IsAPIKey() bool { return p.APIKeyID != "" }

// Config tunes an Authenticator.
type Config struct {
	// Hasher checks passwords; nil means BcryptHasher{}.
	Hasher PasswordHasher
	// CacheSize bounds the cache of verified passwords (entries); 0
	// disables the cache.
	CacheSize int
	// CacheTTL is how long a verified password is trusted without
	// running the hasher again.
	CacheTTL time.Duration
	// Now is the clock for the cache and API key expiry; nil means
	// time.Now.
	Now func() time.Time
}

// DefaultConfig caches 10000 verified passwords for 20 minutes
// (Elasticsearch's realm cache TTL) with bcrypt at cost 10.
func DefaultConfig() Config {
	return Config{Hasher: BcryptHasher{}, CacheSize: 10000, CacheTTL: 20 * time.Minute}
}

// Validate names the first field out of bounds.
func (c Config) Validate() error {
	switch {
	case c.CacheSize < 0:
		return fmt.Errorf("auth: Config.CacheSize %d is negative; use 0 to disable the cache", c.CacheSize)
	case c.CacheSize > 0 && c.CacheTTL <= 0:
		return fmt.Errorf("auth: Config.CacheTTL %s must be positive when CacheSize is %d", c.CacheTTL, c.CacheSize)
	}
	return nil
}

// Authenticator turns credentials into a Principal. It is safe for
// concurrent use.
type Authenticator struct {
	store  Store
	hasher PasswordHasher
	now    func() time.Time
	cache  *passwordCache
	// dummyHash is a hash of a random password at the hasher's cost,
	// compared against for unknown users so they cost what a wrong
	// password does.
	dummyHash string
}

// NewAuthenticator returns an Authenticator over store.
func NewAuthenticator(store Store, cfg Config) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("auth: NewAuthenticator needs a Store")
	}
	if cfg.Hasher == nil {
		cfg.Hasher = BcryptHasher{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	random := make([]byte, 32)
	if _, err := rand.Read(random); err != nil {
		return nil, fmt.Errorf("auth: generating the dummy password: %w", err)
	}
	dummy, err := cfg.Hasher.Hash(string(random[:MaxPasswordLength/3]))
	if err != nil {
		return nil, err
	}
	a := &Authenticator{store: store, hasher: cfg.Hasher, now: cfg.Now, dummyHash: dummy}
	if cfg.CacheSize > 0 {
		a.cache = newPasswordCache(cfg.CacheSize, cfg.CacheTTL)
	}
	return a, nil
}

// Authenticate checks c. It returns the Principal, or an error wrapping
// ErrAuthenticationFailed; its message names the user or key id, never
// the secret, and is the same for every reason a credential is refused.
//
// For Basic credentials the hasher runs for unknown users too (against a
// dummy hash), so an unknown user and a wrong password cost the same. A
// password verified before against the user's current hash is accepted
// from the cache without the hasher; a changed hash misses the cache.
// A disabled user is refused, after the password check.
//
// An API key is refused when unknown, not matching, invalidated, expired,
// or when its owner no longer exists or is disabled (Elasticsearch keeps
// such keys working; Weft does not).
func (a *Authenticator) Authenticate(ctx context.Context, c Credentials) (Principal, error) {
	if err := ctx.Err(); err != nil {
		return Principal{}, err
	}
	switch c.Kind {
	case KindBasic:
		return a.authenticateUser(c.Username, c.Password.Reveal())
	case KindAPIKey:
		return a.authenticateAPIKey(c.APIKeyID, c.APIKeySecret.Reveal())
	}
	return Principal{}, fmt.Errorf("%w: credentials of unknown kind %v", ErrAuthenticationFailed, c.Kind)
}

func (a *Authenticator) authenticateUser(username, password string) (Principal, error) {
	fail := fmt.Errorf("%w: user [%s]", ErrAuthenticationFailed, username)
	u, ok := a.store.User(username)
	if !ok || u.PasswordHash == "" {
		_ = a.hasher.Compare(a.dummyHash, password)
		return Principal{}, fail
	}
	now := a.now()
	if !a.cache.verified(username, password, u.PasswordHash, now) {
		if a.hasher.Compare(u.PasswordHash, password) != nil {
			return Principal{}, fail
		}
		a.cache.remember(username, password, u.PasswordHash, now)
	}
	if !u.Enabled {
		return Principal{}, fail
	}
	realm := RealmNative
	if IsReservedUser(username) {
		realm = RealmReserved
	}
	perm, err := NewPermission(a.RoleDescriptors(u.Roles))
	if err != nil {
		return Principal{}, fmt.Errorf("auth: user [%s] has a role that does not compile; fix or delete it: %w", username, err)
	}
	roles := append([]string(nil), u.Roles...)
	sort.Strings(roles)
	return Principal{
		Username: u.Username, Realm: realm, Roles: roles, FullName: u.FullName, Email: u.Email,
		Metadata: u.Metadata, Permission: perm,
	}, nil
}

func (a *Authenticator) authenticateAPIKey(id, secret string) (Principal, error) {
	fail := fmt.Errorf("%w: API key [%s]", ErrAuthenticationFailed, id)
	k, ok := a.store.APIKey(id)
	if !ok || !apiKeySecretMatches(k.Hash, secret) || k.Invalidated || k.Expired(a.now()) {
		return Principal{}, fail
	}
	if owner, ok := a.store.User(k.Owner); !ok || !owner.Enabled {
		return Principal{}, fail
	}
	perm, err := NewPermission(k.LimitedBy)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: API key [%s] has an owner role that does not compile: %w", id, err)
	}
	if len(k.RoleDescriptors) > 0 {
		own, err := NewPermission(k.RoleDescriptors)
		if err != nil {
			return Principal{}, fmt.Errorf("auth: API key [%s] has a role descriptor that does not compile: %w", id, err)
		}
		perm = perm.Limit(own)
	}
	roles := make([]string, 0, len(k.LimitedBy))
	for n := range k.LimitedBy {
		roles = append(roles, n)
	}
	sort.Strings(roles)
	return Principal{
		Username: k.Owner, Realm: RealmAPIKey, Roles: roles, APIKeyID: k.ID, APIKeyName: k.Name,
		OwnerRealm: k.Realm, Permission: perm,
	}, nil
}

// RoleDescriptors resolves role names: built-in roles first, then the
// store. Unknown names are left out, as Elasticsearch ignores a user's
// roles that do not exist. It is the snapshot NewAPIKey keeps.
func (a *Authenticator) RoleDescriptors(names []string) map[string]Role {
	out := make(map[string]Role, len(names))
	for _, n := range names {
		if r, ok := BuiltinRole(n); ok {
			out[n] = r
		} else if r, ok := a.store.Role(n); ok {
			out[n] = r
		}
	}
	return out
}

// ClearCache forgets every verified password (POST
// /_security/realm/_clear_cache). Changing a password needs no clearing:
// an entry is only trusted against the hash it was verified with.
func (a *Authenticator) ClearCache() { a.cache.clear() }
