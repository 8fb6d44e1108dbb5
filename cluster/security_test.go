package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// testHasher is bcrypt at its lowest cost: real hashes, fast tests.
var testHasher = auth.BcryptHasher{Cost: bcrypt.MinCost}

func hashOf(t testing.TB, password string) string {
	h, err := testHasher.Hash(password)
	require.NoError(t, err)
	return h
}

// secFixture is fixture() with security metadata: native users alice
// (roles reader) and bob (disabled), the elastic password set, role
// reader, and API keys k1 (alice's, "ci-1"), k2 (alice's, "ci-2",
// invalidated) and k3 (bob's, "deploy").
func secFixture(t testing.TB) *state.State {
	s := fixture()
	key := func(id, name, owner string, invalidated bool) auth.APIKey {
		return auth.APIKey{ID: id, Name: name, Hash: auth.HashAPIKeySecret("secret-" + id), Owner: owner, Realm: auth.RealmNative,
			Created: time.Unix(1700000000, 0).UTC(), Invalidated: invalidated, LimitedBy: map[string]auth.Role{}}
	}
	s.Security = &state.Security{
		Users: map[string]auth.User{
			"alice": {Username: "alice", PasswordHash: hashOf(t, "alice-pw"), Roles: []string{"reader"}, Enabled: true},
			"bob":   {Username: "bob", PasswordHash: hashOf(t, "bob-pw"), Enabled: false},
		},
		Reserved: map[string]state.ReservedUser{auth.ElasticUser: {PasswordHash: hashOf(t, "elastic-pw")}},
		Roles: map[string]auth.Role{"reader": {Cluster: []string{"monitor"},
			Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read"}}}}},
		APIKeys: map[string]auth.APIKey{
			"k1": key("k1", "ci-1", "alice", false),
			"k2": key("k2", "ci-2", "alice", true),
			"k3": key("k3", "deploy", "bob", false),
		},
	}
	return s
}

// snapshotBytes is the state as a Raft snapshot holds it, security
// included.
func snapshotBytes(t testing.TB, s *state.State) []byte {
	var b bytes.Buffer
	require.NoError(t, encodeSnapshot(&b, s))
	return b.Bytes()
}

func TestApplySecurity(t *testing.T) {
	h := hashOf(t, "new-password")
	apiKey := auth.APIKey{ID: "k9", Name: "new", Hash: auth.HashAPIKeySecret("s9"), Owner: "alice", Realm: auth.RealmNative,
		Created: time.Unix(1700000100, 0).UTC(), LimitedBy: map[string]auth.Role{}}
	tests := []struct {
		name    string
		cmd     Command
		prep    func(s *state.State)
		wantErr error
		want    Result
		check   func(t *testing.T, s *state.State)
	}{
		{name: "create a user", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: h, Roles: []string{"superuser"}, Enabled: true}}},
			want: Result{Created: true},
			check: func(t *testing.T, s *state.State) {
				u, ok := s.Security.User("carol")
				require.True(t, ok)
				require.Equal(t, auth.User{Username: "carol", PasswordHash: h, Roles: []string{"superuser"}, Enabled: true}, u)
			}},
		{name: "create a user in a state without security", prep: func(s *state.State) { s.Security = nil },
			cmd:  Command{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: h, Enabled: true}}},
			want: Result{Created: true},
			check: func(t *testing.T, s *state.State) {
				_, ok := s.Security.User("carol")
				require.True(t, ok)
			}},
		{name: "update a user keeps its hash when none is given", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "alice", FullName: "Alice", Enabled: true}}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User("alice")
				require.Equal(t, "Alice", u.FullName)
				require.NoError(t, testHasher.Compare(u.PasswordHash, "alice-pw"))
				require.Empty(t, u.Roles)
			}},
		{name: "a new user needs a password", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "carol", Enabled: true}}}, wantErr: ErrInvalidCommand},
		{name: "a clear password is refused", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: "changeme-please", Enabled: true}}}, wantErr: ErrInvalidCommand},
		{name: "a 60-byte non-bcrypt value is refused", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: string(bytes.Repeat([]byte("x"), 60))}}}, wantErr: ErrInvalidCommand},
		{name: "a reserved user cannot be put", cmd: Command{PutUser: &PutUser{User: auth.User{Username: auth.ElasticUser, PasswordHash: h}}}, wantErr: ErrInvalidCommand},
		{name: "an invalid username", cmd: Command{PutUser: &PutUser{User: auth.User{Username: " lead", PasswordHash: h}}}, wantErr: ErrInvalidCommand},
		{name: "an empty role name", cmd: Command{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: h, Roles: []string{""}}}}, wantErr: ErrInvalidCommand},

		{name: "delete a user", cmd: Command{DeleteUser: &DeleteUser{Username: "bob"}}, want: Result{Found: true},
			check: func(t *testing.T, s *state.State) {
				_, ok := s.Security.User("bob")
				require.False(t, ok)
				_, ok = s.Security.APIKey("k3")
				require.True(t, ok, "the user's API keys stay (they no longer authenticate)")
			}},
		{name: "delete a missing user", cmd: Command{DeleteUser: &DeleteUser{Username: "nobody"}}, want: Result{Found: false}},
		{name: "the elastic user cannot be deleted", cmd: Command{DeleteUser: &DeleteUser{Username: auth.ElasticUser}}, wantErr: ErrInvalidCommand},

		{name: "change a native password", cmd: Command{ChangePassword: &ChangePassword{Username: "alice", PasswordHash: h}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User("alice")
				require.Equal(t, h, u.PasswordHash)
				require.Equal(t, []string{"reader"}, u.Roles)
			}},
		{name: "change the elastic password", cmd: Command{ChangePassword: &ChangePassword{Username: auth.ElasticUser, PasswordHash: h}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User(auth.ElasticUser)
				require.Equal(t, h, u.PasswordHash)
				require.Equal(t, []string{"superuser"}, u.Roles)
			}},
		{name: "change a missing user's password", cmd: Command{ChangePassword: &ChangePassword{Username: "nobody", PasswordHash: h}}, wantErr: ErrUserNotFound},
		{name: "change a password to a clear one", cmd: Command{ChangePassword: &ChangePassword{Username: "alice", PasswordHash: "hunter22"}}, wantErr: ErrInvalidCommand},

		{name: "enable a user", cmd: Command{SetUserEnabled: &SetUserEnabled{Username: "bob", Enabled: true}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User("bob")
				require.True(t, u.Enabled)
			}},
		{name: "disable the elastic user", cmd: Command{SetUserEnabled: &SetUserEnabled{Username: auth.ElasticUser}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User(auth.ElasticUser)
				require.False(t, u.Enabled)
				require.NoError(t, testHasher.Compare(u.PasswordHash, "elastic-pw"))
			}},
		{name: "enable a missing user", cmd: Command{SetUserEnabled: &SetUserEnabled{Username: "nobody", Enabled: true}}, wantErr: ErrUserNotFound},

		{name: "create a role", cmd: Command{PutRole: &PutRole{Name: "writer", Role: auth.Role{Cluster: []string{}, Indices: []auth.IndexPrivileges{{Names: []string{"*"}, Privileges: []string{"write"}}}}}},
			want: Result{Created: true},
			check: func(t *testing.T, s *state.State) {
				r, ok := s.Security.Role("writer")
				require.True(t, ok)
				require.Equal(t, []string{"write"}, r.Indices[0].Privileges)
				require.Equal(t, []string{"reader", "writer"}, s.Security.RoleNames())
			}},
		{name: "replace a role", cmd: Command{PutRole: &PutRole{Name: "reader", Role: auth.Role{Cluster: []string{"all"}}}},
			check: func(t *testing.T, s *state.State) {
				r, _ := s.Security.Role("reader")
				require.Equal(t, []string{"all"}, r.Cluster)
			}},
		{name: "a built-in role cannot be put", cmd: Command{PutRole: &PutRole{Name: "superuser"}}, wantErr: ErrInvalidCommand},
		{name: "an invalid role name", cmd: Command{PutRole: &PutRole{Name: ""}}, wantErr: ErrInvalidCommand},
		{name: "delete a role", cmd: Command{DeleteRole: &DeleteRole{Name: "reader"}}, want: Result{Found: true},
			check: func(t *testing.T, s *state.State) {
				_, ok := s.Security.Role("reader")
				require.False(t, ok)
			}},
		{name: "delete a missing role", cmd: Command{DeleteRole: &DeleteRole{Name: "nothing"}}, want: Result{Found: false}},
		{name: "a built-in role cannot be deleted", cmd: Command{DeleteRole: &DeleteRole{Name: "viewer"}}, wantErr: ErrInvalidCommand},

		{name: "create an API key", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: apiKey}},
			check: func(t *testing.T, s *state.State) {
				k, ok := s.Security.APIKey("k9")
				require.True(t, ok)
				require.Equal(t, apiKey, k)
			}},
		{name: "an API key retried is the same key", prep: func(s *state.State) { s.Security.APIKeys["k9"] = apiKey },
			cmd: Command{CreateAPIKey: &CreateAPIKey{Key: apiKey}}},
		{name: "an API key ID is never reused", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: func() auth.APIKey { k := apiKey; k.ID = "k1"; return k }()}}, wantErr: ErrInvalidCommand},
		{name: "an API key with its secret instead of a hash", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: func() auth.APIKey { k := apiKey; k.Hash = "s9"; return k }()}}, wantErr: ErrInvalidCommand},
		{name: "an API key without an owner", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: func() auth.APIKey { k := apiKey; k.Owner = ""; return k }()}}, wantErr: ErrInvalidCommand},
		{name: "an API key without a name", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: func() auth.APIKey { k := apiKey; k.Name = ""; return k }()}}, wantErr: ErrInvalidCommand},
		{name: "an API key created invalidated", cmd: Command{CreateAPIKey: &CreateAPIKey{Key: func() auth.APIKey { k := apiKey; k.Invalidated = true; return k }()}}, wantErr: ErrInvalidCommand},

		{name: "invalidate API keys by owner", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{Owner: "alice"}}},
			want: Result{Invalidated: []string{"k1"}, PreviouslyInvalidated: []string{"k2"}},
			check: func(t *testing.T, s *state.State) {
				k, _ := s.Security.APIKey("k1")
				require.True(t, k.Invalidated)
				k, _ = s.Security.APIKey("k3")
				require.False(t, k.Invalidated)
			}},
		{name: "invalidate API keys by ID", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{IDs: []string{"k3", "nope", "k3"}}}},
			want: Result{Invalidated: []string{"k3"}}},
		{name: "invalidate API keys by name prefix", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{Name: "ci-*"}}},
			want: Result{Invalidated: []string{"k1"}, PreviouslyInvalidated: []string{"k2"}}},
		{name: "invalidate every API key", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{Name: "*"}}},
			want: Result{Invalidated: []string{"k1", "k3"}, PreviouslyInvalidated: []string{"k2"}}},
		{name: "invalidate API keys matching nothing", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{Owner: "alice", Name: "deploy"}}}},
		{name: "invalidating needs a filter", cmd: Command{InvalidateAPIKeys: &InvalidateAPIKeys{}}, wantErr: ErrInvalidCommand},

		{name: "bootstrap the elastic password", prep: func(s *state.State) { s.Security = nil },
			cmd: Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: h, IfUnset: true}},
			check: func(t *testing.T, s *state.State) {
				require.True(t, s.Security.ElasticPasswordSet())
				u, _ := s.Security.User(auth.ElasticUser)
				require.Equal(t, h, u.PasswordHash)
				require.True(t, u.Enabled)
			}},
		{name: "the elastic password is bootstrapped once", cmd: Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: h, IfUnset: true}},
			wantErr: ErrAlreadySet},
		{name: "reset the elastic password", cmd: Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: h}},
			check: func(t *testing.T, s *state.State) {
				u, _ := s.Security.User(auth.ElasticUser)
				require.Equal(t, h, u.PasswordHash)
			}},
		{name: "a reserved password for a native user", cmd: Command{SetReservedPassword: &SetReservedPassword{Username: "alice", PasswordHash: h}}, wantErr: ErrInvalidCommand},
		{name: "a clear reserved password", cmd: Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: "changeme"}}, wantErr: ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := secFixture(t)
			if tc.prep != nil {
				tc.prep(s)
			}
			before := snapshotBytes(t, s)
			cmd, err := tc.cmd.normalized()
			require.NoError(t, err)
			next, res, err := applyCommand(s, 8, cmd)
			require.JSONEq(t, string(before), string(snapshotBytes(t, s)), "apply modified its input state")
			require.EqualValues(t, 8, next.Version)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				s.Version = 8
				require.Equal(t, s, next, "a refused command changes nothing but the version")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, res)
			require.NoError(t, checkInvariants(next))
			if tc.check != nil {
				tc.check(t, next)
			}
		})
	}
}

// The FSM never holds a clear secret: no refusal message quotes the
// value it refused either.
func TestSecurityRefusalsDoNotQuoteSecrets(t *testing.T) {
	const clear = "correct-horse-battery"
	for _, cmd := range []Command{
		{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: clear}}},
		{ChangePassword: &ChangePassword{Username: "alice", PasswordHash: clear}},
		{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: clear}},
		{CreateAPIKey: &CreateAPIKey{Key: auth.APIKey{ID: "k", Name: "n", Owner: "alice", Realm: auth.RealmNative, Hash: clear}}},
	} {
		c, err := cmd.normalized()
		require.NoError(t, err)
		_, err = apply(secFixture(t), 8, c)
		require.ErrorIs(t, err, ErrInvalidCommand)
		require.NotContains(t, err.Error(), clear)
	}
}

func TestFSMAnswersWhatASecurityCommandFound(t *testing.T) {
	f := newFSM()
	f.publish(secFixture(t))
	res := f.Apply(&raft.Log{Index: 8, Type: raft.LogCommand, Data: encode(t, Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{Owner: "alice"}}})})
	require.Equal(t, fsmResult{res: Result{Invalidated: []string{"k1"}, PreviouslyInvalidated: []string{"k2"}}}, res)
	res = f.Apply(&raft.Log{Index: 9, Type: raft.LogCommand, Data: encode(t, Command{DeleteUser: &DeleteUser{Username: "alice"}})})
	require.Equal(t, fsmResult{res: Result{Found: true}}, res)
}

// Snapshots keep the security metadata; State's own JSON, the shape any
// client rendering starts from, never carries it.
func TestSecurityIsInSnapshotsAndNeverInClientJSON(t *testing.T) {
	s := secFixture(t)
	f := newFSM()
	f.publish(s)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))

	g := newFSM()
	require.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, s, g.State())
	require.NotNil(t, g.State().Security)

	client, err := json.Marshal(g.State())
	require.NoError(t, err)
	for _, secret := range []string{s.Security.Users["alice"].PasswordHash, s.Security.Reserved[auth.ElasticUser].PasswordHash,
		s.Security.APIKeys["k1"].Hash, "alice", "reader", "ci-1"} {
		require.NotContains(t, string(client), secret)
		require.Contains(t, sink.String(), secret)
	}
	var plain state.State
	require.NoError(t, json.Unmarshal(client, &plain))
	require.Nil(t, plain.Security)
}

// A snapshot written before there was security metadata restores with
// none.
func TestSnapshotWithoutSecurityRestores(t *testing.T) {
	old, err := json.Marshal(fixture())
	require.NoError(t, err)
	f := newFSM()
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(old))))
	require.Equal(t, fixture(), f.State())
	require.Nil(t, f.State().Security)
	u, ok := f.State().Security.User(auth.ElasticUser)
	require.True(t, ok)
	require.Empty(t, u.PasswordHash, "the elastic user exists without a password until it is set")
}

// The store over the committed state authenticates and authorises with
// security/auth, and sees each newly committed state.
func TestSecurityStoreAuthenticates(t *testing.T) {
	f := newFSM()
	f.publish(secFixture(t))
	a, err := auth.NewAuthenticator(NewSecurityStore(f.State), auth.Config{Hasher: testHasher})
	require.NoError(t, err)
	ctx := context.Background()

	p, err := a.Authenticate(ctx, auth.BasicCredentials("alice", "alice-pw"))
	require.NoError(t, err)
	require.NoError(t, auth.CheckIndices(p, auth.ActionSearch, []string{"logs-1"}))
	require.Error(t, auth.CheckIndices(p, auth.ActionSearch, []string{"secret"}))
	_, err = a.Authenticate(ctx, auth.BasicCredentials("bob", "bob-pw"))
	require.ErrorIs(t, err, auth.ErrAuthenticationFailed, "bob is disabled")
	_, err = a.Authenticate(ctx, auth.BasicCredentials(auth.ElasticUser, "elastic-pw"))
	require.NoError(t, err)
	p, err = a.Authenticate(ctx, auth.APIKeyCredentials("k1", "secret-k1"))
	require.NoError(t, err)
	require.Equal(t, "alice", p.Username)
	_, err = a.Authenticate(ctx, auth.APIKeyCredentials("k2", "secret-k2"))
	require.ErrorIs(t, err, auth.ErrAuthenticationFailed, "k2 is invalidated")

	f.Apply(&raft.Log{Index: 8, Type: raft.LogCommand, Data: encode(t, Command{ChangePassword: &ChangePassword{Username: "alice", PasswordHash: hashOf(t, "alice-new")}})})
	_, err = a.Authenticate(ctx, auth.BasicCredentials("alice", "alice-pw"))
	require.ErrorIs(t, err, auth.ErrAuthenticationFailed)
	_, err = a.Authenticate(ctx, auth.BasicCredentials("alice", "alice-new"))
	require.NoError(t, err)
}

func TestSecurityListings(t *testing.T) {
	sec := secFixture(t).Security
	var names []string
	for _, u := range sec.ListUsers() {
		names = append(names, u.Username)
	}
	require.Equal(t, []string{"alice", "bob", auth.ElasticUser}, names)
	require.Len(t, (*state.Security)(nil).ListUsers(), 1, "elastic is listed even before its password is set")

	ids := func(keys []auth.APIKey) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	tests := []struct {
		name   string
		filter state.APIKeyFilter
		want   []string
	}{
		{"everything", state.APIKeyFilter{}, []string{"k1", "k2", "k3"}},
		{"by IDs, once each", state.APIKeyFilter{IDs: []string{"k3", "k1", "k3"}}, []string{"k1", "k3"}},
		{"by exact name", state.APIKeyFilter{Name: "ci-1"}, []string{"k1"}},
		{"by name prefix", state.APIKeyFilter{Name: "ci*"}, []string{"k1", "k2"}},
		{"by owner", state.APIKeyFilter{Owner: "bob"}, []string{"k3"}},
		{"by realm", state.APIKeyFilter{Realm: auth.RealmReserved}, nil},
		{"by owner and ID", state.APIKeyFilter{Owner: "bob", IDs: []string{"k1"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ids(sec.FindAPIKeys(tc.filter)))
		})
	}
}

// securitySeeds are one valid command of each security type, against
// secFixture, for the fuzz tests' corpora.
func securitySeeds(t testing.TB) []Command {
	h := hashOf(t, "seed-password")
	return []Command{
		{PutUser: &PutUser{User: auth.User{Username: "carol", PasswordHash: h, Roles: []string{"reader"}, FullName: "Carol",
			Email: "c@example.com", Metadata: map[string]any{"team": "ops"}, Enabled: true}}},
		{DeleteUser: &DeleteUser{Username: "bob"}},
		{ChangePassword: &ChangePassword{Username: "alice", PasswordHash: h}},
		{SetUserEnabled: &SetUserEnabled{Username: auth.ElasticUser, Enabled: false}},
		{PutRole: &PutRole{Name: "writer", Role: auth.Role{Cluster: []string{"monitor"},
			Indices: []auth.IndexPrivileges{{Names: []string{"logs-*", "/met.*/"}, Privileges: []string{"write"}}}}}},
		{DeleteRole: &DeleteRole{Name: "reader"}},
		{CreateAPIKey: &CreateAPIKey{Key: auth.APIKey{ID: "k9", Name: "n", Hash: auth.HashAPIKeySecret("s"), Owner: "alice",
			Realm: auth.RealmNative, Created: time.Unix(1, 0).UTC(), LimitedBy: map[string]auth.Role{"reader": {}}}}},
		{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: state.APIKeyFilter{IDs: []string{"k1"}, Name: "ci-*", Owner: "alice", Realm: auth.RealmNative}}},
		{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: h}},
	}
}

// Every fuzz seed is a command the state accepts, so the fuzzers start
// from the paths that change it.
func TestSecuritySeedsApply(t *testing.T) {
	for _, c := range securitySeeds(t) {
		c, err := c.normalized()
		require.NoError(t, err)
		_, err = apply(secFixture(t), 8, c)
		require.NoError(t, err, "%s", c.Type)
	}
}
