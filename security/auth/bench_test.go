package auth

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// BenchmarkAuthenticate measures what a request pays to authenticate:
// Basic from the cache (the common case), Basic with bcrypt at
// Elasticsearch's default cost (a cache miss), and an API key (SHA-256).
// Each includes compiling the principal's roles.
func BenchmarkAuthenticate(b *testing.B) {
	hash, err := BcryptHasher{Cost: bcrypt.DefaultCost}.Hash("bob-pw")
	require.NoError(b, err)
	store := MapStore{
		Users:   map[string]User{"bob": {Username: "bob", PasswordHash: hash, Roles: []string{"r1", "r2"}, Enabled: true}},
		Roles:   map[string]Role{"r1": indexRole([]string{"logs-*", "/metrics-[0-9]+/"}, "read"), "r2": {Cluster: []string{"monitor"}, Indices: []IndexPrivileges{{Names: []string{"app"}, Privileges: []string{"write"}}}}},
		APIKeys: map[string]APIKey{},
	}
	bob := Principal{Username: "bob", Realm: RealmNative}
	k, created, err := NewAPIKey(CreateAPIKeyRequest{Name: "k", RoleDescriptors: map[string]Role{"k": indexRole([]string{"logs-1"}, "read")}}, bob, map[string]Role{"r1": store.Roles["r1"]}, time.Now())
	require.NoError(b, err)
	store.APIKeys[k.ID] = k
	for _, bc := range []struct {
		name      string
		cacheSize int
		creds     Credentials
	}{
		{"basic/cached", 100, BasicCredentials("bob", "bob-pw")},
		{"basic/bcrypt-cost-10", 0, BasicCredentials("bob", "bob-pw")},
		{"api-key", 100, APIKeyCredentials(created.ID, created.APIKey)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.CacheSize = bc.cacheSize
			a, err := NewAuthenticator(store, cfg)
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(ctx, bc.creds); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckIndices measures one authorization of a search on 10
// indices against two roles with globs and a regexp.
func BenchmarkCheckIndices(b *testing.B) {
	perm, err := NewPermission(map[string]Role{
		"r1": indexRole([]string{"logs-*", "/metrics-[0-9]+/"}, "read"),
		"r2": indexRole([]string{"app", "other-*"}, "write", "read"),
	})
	require.NoError(b, err)
	p := Principal{Username: "bob", Permission: perm}
	indices := []string{"logs-1", "logs-2", "metrics-1", "metrics-22", "app", "other-a", "logs-3", "logs-4", "logs-5", "app"}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckIndices(p, ActionSearch, indices); err != nil {
			b.Fatal(err)
		}
	}
}
