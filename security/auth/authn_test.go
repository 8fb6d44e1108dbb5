package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// countingHasher is bcrypt at its lowest cost that counts Compare calls.
type countingHasher struct {
	BcryptHasher
	compares atomic.Int64
}

func (h *countingHasher) Compare(hash, password string) error {
	h.compares.Add(1)
	return h.BcryptHasher.Compare(hash, password)
}

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }
func hashOf(t *testing.T, pw string) string {
	t.Helper()
	h, err := BcryptHasher{Cost: bcrypt.MinCost}.Hash(pw)
	require.NoError(t, err)
	return h
}

type fixture struct {
	store  MapStore
	hasher *countingHasher
	clock  *clock
	auth   *Authenticator
}

func newFixture(t *testing.T, cacheSize int) *fixture {
	t.Helper()
	f := &fixture{
		store: MapStore{
			Users: map[string]User{
				"elastic":  {Username: "elastic", PasswordHash: hashOf(t, "elastic-pw"), Roles: []string{"superuser"}, Enabled: true},
				"bob":      {Username: "bob", PasswordHash: hashOf(t, "bob-pw"), Roles: []string{"logs_reader", "logs_writer", "ghost"}, FullName: "Bob", Enabled: true},
				"disabled": {Username: "disabled", PasswordHash: hashOf(t, "dis-pw"), Roles: []string{"superuser"}, Enabled: false},
				"nohash":   {Username: "nohash", Roles: []string{"superuser"}, Enabled: true},
			},
			Roles: map[string]Role{
				"logs_reader": indexRole([]string{"logs-*"}, "read"),
				"logs_writer": indexRole([]string{"logs-*"}, "write"),
				"superuser":   indexRole([]string{"nothing"}, "read"), // a stored role never shadows a built-in one
			},
			APIKeys: map[string]APIKey{},
		},
		hasher: &countingHasher{BcryptHasher: BcryptHasher{Cost: bcrypt.MinCost}},
		clock:  newClock(),
	}
	cfg := DefaultConfig()
	cfg.Hasher, cfg.Now, cfg.CacheSize = f.hasher, f.clock.now, cacheSize
	a, err := NewAuthenticator(f.store, cfg)
	require.NoError(t, err)
	f.auth = a
	return f
}

func TestAuthenticateUsers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		creds      Credentials
		wantRealm  string
		wantRoles  []string
		compares   int64 // hasher runs
		wantFailed bool
	}{
		{name: "native user", creds: BasicCredentials("bob", "bob-pw"), wantRealm: RealmNative, wantRoles: []string{"ghost", "logs_reader", "logs_writer"}, compares: 1},
		{name: "reserved user", creds: BasicCredentials("elastic", "elastic-pw"), wantRealm: RealmReserved, wantRoles: []string{"superuser"}, compares: 1},
		{name: "wrong password", creds: BasicCredentials("bob", "nope-pw"), compares: 1, wantFailed: true},
		{name: "unknown user runs the hasher like a wrong password", creds: BasicCredentials("mallory", "bob-pw"), compares: 1, wantFailed: true},
		{name: "user without a hash runs the hasher too", creds: BasicCredentials("nohash", ""), compares: 1, wantFailed: true},
		{name: "disabled user with the right password", creds: BasicCredentials("disabled", "dis-pw"), compares: 1, wantFailed: true},
		{name: "empty password", creds: BasicCredentials("bob", ""), compares: 1, wantFailed: true},
		{name: "username is case-sensitive", creds: BasicCredentials("Bob", "bob-pw"), compares: 1, wantFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 100)
			p, err := f.auth.Authenticate(context.Background(), tc.creds)
			require.Equal(t, tc.compares, f.hasher.compares.Load())
			if tc.wantFailed {
				require.ErrorIs(t, err, ErrAuthenticationFailed)
				require.Equal(t, "auth: unable to authenticate: user ["+tc.creds.Username+"]", err.Error(), "one message for every reason")
				require.Equal(t, Principal{}, p)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.creds.Username, p.Username)
			require.Equal(t, tc.wantRealm, p.Realm)
			require.Equal(t, tc.wantRoles, p.Roles)
			require.False(t, p.IsAPIKey())
		})
	}
}

func TestAuthenticatedPrincipalsPermissions(t *testing.T) {
	f := newFixture(t, 100)
	bob, err := f.auth.Authenticate(context.Background(), BasicCredentials("bob", "bob-pw"))
	require.NoError(t, err)
	require.NoError(t, CheckIndices(bob, ActionSearch, []string{"logs-1"}))
	require.NoError(t, CheckIndices(bob, ActionIndexDoc, []string{"logs-1"}))
	require.ErrorIs(t, CheckIndices(bob, ActionSearch, []string{"secret"}), ErrForbidden)
	require.ErrorIs(t, CheckCluster(bob, ActionClusterHealth), ErrForbidden)

	root, err := f.auth.Authenticate(context.Background(), BasicCredentials("elastic", "elastic-pw"))
	require.NoError(t, err)
	require.NoError(t, CheckIndices(root, ActionDeleteIndex, []string{"anything"}), "the built-in superuser wins over a stored role of that name")
	require.NoError(t, CheckCluster(root, ActionPutUser))
}

func TestPasswordCache(t *testing.T) {
	ctx := context.Background()
	t.Run("a repeated request does not run the hasher", func(t *testing.T) {
		f := newFixture(t, 100)
		for range 5 {
			_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, f.hasher.compares.Load())
	})
	t.Run("a wrong password is never cached", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		for range 3 {
			_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw2"))
			require.ErrorIs(t, err, ErrAuthenticationFailed)
		}
		require.EqualValues(t, 4, f.hasher.compares.Load())
	})
	t.Run("a changed password hash misses the cache", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		u := f.store.Users["bob"]
		u.PasswordHash = hashOf(t, "new-pw")
		f.store.Users["bob"] = u
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.ErrorIs(t, err, ErrAuthenticationFailed, "the old password must not be accepted from the cache")
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "new-pw"))
		require.NoError(t, err)
		require.EqualValues(t, 3, f.hasher.compares.Load())
	})
	t.Run("a user disabled after caching is refused", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		u := f.store.Users["bob"]
		u.Enabled = false
		f.store.Users["bob"] = u
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.ErrorIs(t, err, ErrAuthenticationFailed)
	})
	t.Run("a deleted user is refused", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		delete(f.store.Users, "bob")
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.ErrorIs(t, err, ErrAuthenticationFailed)
	})
	t.Run("entries expire after the TTL", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		f.clock.add(DefaultConfig().CacheTTL)
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		require.EqualValues(t, 2, f.hasher.compares.Load())
	})
	t.Run("the cache is bounded and keeps the most recent", func(t *testing.T) {
		f := newFixture(t, 1)
		for _, c := range []Credentials{BasicCredentials("bob", "bob-pw"), BasicCredentials("elastic", "elastic-pw"), BasicCredentials("elastic", "elastic-pw"), BasicCredentials("bob", "bob-pw")} {
			_, err := f.auth.Authenticate(ctx, c)
			require.NoError(t, err)
			require.Equal(t, 1, f.auth.cache.len())
		}
		require.EqualValues(t, 3, f.hasher.compares.Load(), "bob was evicted by elastic")
	})
	t.Run("ClearCache forgets", func(t *testing.T) {
		f := newFixture(t, 100)
		_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		f.auth.ClearCache()
		_, err = f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
		require.NoError(t, err)
		require.EqualValues(t, 2, f.hasher.compares.Load())
	})
	t.Run("no cache with size 0", func(t *testing.T) {
		f := newFixture(t, 0)
		for range 2 {
			_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
			require.NoError(t, err)
		}
		require.EqualValues(t, 2, f.hasher.compares.Load())
	})
	t.Run("pairs that concatenate alike are different keys", func(t *testing.T) {
		c := newPasswordCache(10, time.Hour)
		require.NotEqual(t, c.keyOf("ab", "c"), c.keyOf("a", "bc"))
	})
}

func TestAuthenticateIsSafeForConcurrentUse(t *testing.T) {
	f := newFixture(t, 2)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			creds := []Credentials{BasicCredentials("bob", "bob-pw"), BasicCredentials("elastic", "elastic-pw"), BasicCredentials("bob", "x")}[i%3]
			for range 20 {
				_, err := f.auth.Authenticate(context.Background(), creds)
				if i%3 == 2 {
					assert.ErrorIs(t, err, ErrAuthenticationFailed)
				} else {
					assert.NoError(t, err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestAuthenticateAPIKeys(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 100)
	bob, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
	require.NoError(t, err)
	now := f.clock.now()

	mk := func(req CreateAPIKeyRequest) CreatedAPIKey {
		t.Helper()
		k, created, err := NewAPIKey(req, bob, f.auth.RoleDescriptors(bob.Roles), now)
		require.NoError(t, err)
		require.NotContains(t, k.Hash, created.APIKey)
		f.store.APIKeys[k.ID] = k
		return created
	}
	full := mk(CreateAPIKeyRequest{Name: "full"})
	narrow := mk(CreateAPIKeyRequest{Name: "narrow", RoleDescriptors: map[string]Role{
		"ro": {Cluster: []string{"all"}, Indices: []IndexPrivileges{{Names: []string{"logs-1", "secret"}, Privileges: []string{"read", "write"}}}},
	}})
	expiring := mk(CreateAPIKeyRequest{Name: "expiring", Expiration: time.Hour})
	invalidated := mk(CreateAPIKeyRequest{Name: "invalidated"})
	k := f.store.APIKeys[invalidated.ID]
	k.Invalidated = true
	f.store.APIKeys[invalidated.ID] = k

	t.Run("a key without role descriptors has its owner's privileges", func(t *testing.T) {
		p, err := f.auth.Authenticate(ctx, APIKeyCredentials(full.ID, full.APIKey))
		require.NoError(t, err)
		require.Equal(t, Principal{Username: "bob", Realm: RealmAPIKey, Roles: []string{"logs_reader", "logs_writer"}, APIKeyID: full.ID, APIKeyName: "full", OwnerRealm: RealmNative, Permission: p.Permission}, p)
		require.NoError(t, CheckIndices(p, ActionSearch, []string{"logs-1", "logs-2"}))
		require.NoError(t, CheckIndices(p, ActionIndexDoc, []string{"logs-2"}))
	})
	t.Run("a key is narrowed below its owner, never above", func(t *testing.T) {
		p, err := f.auth.Authenticate(ctx, APIKeyCredentials(narrow.ID, narrow.APIKey))
		require.NoError(t, err)
		require.NoError(t, CheckIndices(p, ActionSearch, []string{"logs-1"}))
		require.NoError(t, CheckIndices(p, ActionIndexDoc, []string{"logs-1"}))
		require.ErrorIs(t, CheckIndices(p, ActionSearch, []string{"logs-2"}), ErrForbidden, "the owner may, the key may not")
		require.ErrorIs(t, CheckIndices(p, ActionSearch, []string{"secret"}), ErrForbidden, "the key names it, the owner may not")
		require.ErrorIs(t, CheckCluster(p, ActionClusterHealth), ErrForbidden, "the key's cluster all is limited by the owner's none")
		require.Equal(t, []string{"logs-1"}, FilterIndices(p, ActionSearch, []string{"logs-1", "logs-2", "secret"}))
	})
	t.Run("the owner's roles are a snapshot taken at creation", func(t *testing.T) {
		f.store.Roles["logs_reader"] = indexRole([]string{"*"}, "all")
		defer func() { f.store.Roles["logs_reader"] = indexRole([]string{"logs-*"}, "read") }()
		p, err := f.auth.Authenticate(ctx, APIKeyCredentials(full.ID, full.APIKey))
		require.NoError(t, err)
		require.ErrorIs(t, CheckIndices(p, ActionDeleteIndex, []string{"logs-1"}), ErrForbidden)
	})
	t.Run("an expiring key works until its expiration", func(t *testing.T) {
		_, err := f.auth.Authenticate(ctx, APIKeyCredentials(expiring.ID, expiring.APIKey))
		require.NoError(t, err)
		f.clock.add(time.Hour)
		defer f.clock.add(-time.Hour)
		_, err = f.auth.Authenticate(ctx, APIKeyCredentials(expiring.ID, expiring.APIKey))
		require.ErrorIs(t, err, ErrAuthenticationFailed)
	})
	for _, tc := range []struct {
		name  string
		creds Credentials
	}{
		{"invalidated", APIKeyCredentials(invalidated.ID, invalidated.APIKey)},
		{"unknown id", APIKeyCredentials("nope", full.APIKey)},
		{"wrong secret", APIKeyCredentials(full.ID, narrow.APIKey)},
		{"secret of another key's id", APIKeyCredentials(narrow.ID, full.APIKey)},
		{"hash as secret", APIKeyCredentials(full.ID, f.store.APIKeys[full.ID].Hash)},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			p, err := f.auth.Authenticate(ctx, tc.creds)
			require.ErrorIs(t, err, ErrAuthenticationFailed)
			require.Equal(t, Principal{}, p)
		})
	}
	t.Run("refused: owner disabled or deleted", func(t *testing.T) {
		u := f.store.Users["bob"]
		u.Enabled = false
		f.store.Users["bob"] = u
		_, err := f.auth.Authenticate(ctx, APIKeyCredentials(full.ID, full.APIKey))
		require.ErrorIs(t, err, ErrAuthenticationFailed)
		delete(f.store.Users, "bob")
		_, err = f.auth.Authenticate(ctx, APIKeyCredentials(full.ID, full.APIKey))
		require.ErrorIs(t, err, ErrAuthenticationFailed)
		u.Enabled = true
		f.store.Users["bob"] = u
	})
}

func TestNewAPIKey(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	bob := Principal{Username: "bob", Realm: RealmNative}
	for _, tc := range []struct {
		name  string
		req   CreateAPIKeyRequest
		owner Principal
		err   string
	}{
		{name: "ok", req: CreateAPIKeyRequest{Name: "k", Expiration: 24 * time.Hour}, owner: bob},
		{name: "no name", req: CreateAPIKeyRequest{}, owner: bob, err: "name [] must be 1 to 1024"},
		{name: "negative expiration", req: CreateAPIKeyRequest{Name: "k", Expiration: -time.Second}, owner: bob, err: "negative"},
		{name: "bad role descriptor", req: CreateAPIKeyRequest{Name: "k", RoleDescriptors: map[string]Role{"r": {Cluster: []string{"fly"}}}}, owner: bob, err: "unknown cluster privilege [fly]"},
		{name: "an API key cannot create keys", req: CreateAPIKeyRequest{Name: "k"}, owner: Principal{Username: "bob", APIKeyID: "x"}, err: "cannot create API keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, c, err := NewAPIKey(tc.req, tc.owner, map[string]Role{"r": indexRole([]string{"*"}, "read")}, now)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidAPIKeyRequest)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, k.ID, 20)
			require.Len(t, c.APIKey, 43, "32 bytes, base64url without padding")
			require.Equal(t, k.ID, c.ID)
			require.Equal(t, HashAPIKeySecret(c.APIKey), k.Hash)
			require.Equal(t, EncodeAPIKey(c.ID, c.APIKey), c.Encoded)
			require.Equal(t, now.Add(24*time.Hour), k.Expiration)
			require.Equal(t, now.Add(24*time.Hour).UnixMilli(), *c.Expiration)
			require.Equal(t, "bob", k.Owner)
			require.Equal(t, RealmNative, k.Realm)
			k2, c2, err := NewAPIKey(tc.req, tc.owner, nil, now)
			require.NoError(t, err)
			require.NotEqual(t, k.ID, k2.ID)
			require.NotEqual(t, c.APIKey, c2.APIKey)
			require.NotNil(t, k2.LimitedBy)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	require.ErrorContains(t, Config{CacheSize: -1}.Validate(), "CacheSize -1")
	require.ErrorContains(t, Config{CacheSize: 5}.Validate(), "CacheTTL")
	_, err := NewAuthenticator(nil, DefaultConfig())
	require.ErrorContains(t, err, "needs a Store")
}

func TestAuthenticateHonoursContext(t *testing.T) {
	f := newFixture(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.auth.Authenticate(ctx, BasicCredentials("bob", "bob-pw"))
	require.ErrorIs(t, err, context.Canceled)
}
