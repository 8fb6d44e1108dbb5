package auth

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Role
		err  string
	}{
		{name: "es shape", body: `{"cluster":["monitor"],"indices":[{"names":["logs-*"],"privileges":["read","view_index_metadata"]}]}`,
			want: Role{Cluster: []string{"monitor"}, Indices: []IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read", "view_index_metadata"}}}}},
		{name: "single strings", body: `{"indices":[{"names":"logs-*","privileges":"read"}]}`,
			want: Role{Indices: []IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read"}}}}},
		{name: "action pattern privileges", body: `{"cluster":["cluster:monitor/*"],"indices":[{"names":["a"],"privileges":["indices:data/read/*"]}]}`,
			want: Role{Cluster: []string{"cluster:monitor/*"}, Indices: []IndexPrivileges{{Names: []string{"a"}, Privileges: []string{"indices:data/read/*"}}}}},
		{name: "metadata", body: `{"metadata":{"version":1}}`, want: Role{Metadata: map[string]any{"version": float64(1)}}},
		{name: "unknown field", body: `{"cluster":[],"run_as_everyone":true}`, err: `unknown field "run_as_everyone"`},
		{name: "unknown index field", body: `{"indices":[{"names":["a"],"privileges":["read"],"query":"x"}]}`, err: `unknown field "query"`},
		{name: "unknown cluster privilege", body: `{"cluster":["root"]}`, err: "unknown cluster privilege [root]"},
		{name: "index privilege as cluster privilege", body: `{"cluster":["read"]}`, err: "unknown cluster privilege [read]"},
		{name: "index action as cluster privilege", body: `{"cluster":["indices:data/read/*"]}`, err: "unknown cluster privilege"},
		{name: "unknown index privilege", body: `{"indices":[{"names":["a"],"privileges":["rread"]}]}`, err: "unknown index privilege [rread]"},
		{name: "no names", body: `{"indices":[{"privileges":["read"]}]}`, err: "needs both names and privileges"},
		{name: "bad regexp", body: `{"indices":[{"names":["/(/"],"privileges":["read"]}]}`, err: "not a valid regular expression"},
		{name: "trailing data", body: `{} {}`, err: "trailing data"},
		{name: "not json", body: `cluster`, err: "failed to parse role [r]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRole("r", []byte(tc.body))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidRole)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, r)
		})
	}
}

func TestModelsRoundTripThroughJSON(t *testing.T) {
	created := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	role := Role{Cluster: []string{"monitor"}, Indices: []IndexPrivileges{{Names: []string{"a*"}, Privileges: []string{"read"}}}}
	for _, v := range []any{
		&User{Username: "bob", PasswordHash: "$2a$10$x", Roles: []string{"r"}, FullName: "Bob", Email: "b@example.com", Metadata: map[string]any{"k": "v"}, Enabled: true},
		&role,
		&APIKey{ID: "id", Name: "n", Hash: "ab", Owner: "bob", Realm: RealmNative, Created: created, Expiration: created.Add(time.Hour),
			Invalidated: true, RoleDescriptors: map[string]Role{"k": role}, LimitedBy: map[string]Role{"r": role}},
		&APIKey{ID: "id", Name: "n", Hash: "ab", Owner: "bob", Realm: RealmNative, Created: created, LimitedBy: map[string]Role{}},
	} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		back := newOfSameType(v)
		require.NoError(t, json.Unmarshal(b, back), string(b))
		require.Equal(t, v, back, string(b))
	}
}

func newOfSameType(v any) any {
	switch v.(type) {
	case *User:
		return &User{}
	case *Role:
		return &Role{}
	case *APIKey:
		return &APIKey{}
	}
	panic("unknown type")
}

func TestViewsHideSecrets(t *testing.T) {
	u := User{Username: "bob", PasswordHash: "$2a$10$secrethash", Roles: []string{"r"}, Enabled: true}
	b, err := json.Marshal(u.View())
	require.NoError(t, err)
	require.JSONEq(t, `{"username":"bob","roles":["r"],"full_name":null,"email":null,"metadata":{},"enabled":true}`, string(b))

	e, _ := ReservedUser(ElasticUser)
	b, err = json.Marshal(e.View())
	require.NoError(t, err)
	require.JSONEq(t, `{"username":"elastic","roles":["superuser"],"full_name":null,"email":null,"metadata":{"_reserved":true},"enabled":true}`, string(b))

	created := time.UnixMilli(1700000000000).UTC()
	k := APIKey{ID: "id1", Name: "k", Hash: "deadbeef", Owner: "bob", Realm: RealmNative, Created: created, Expiration: created.Add(time.Second),
		LimitedBy: map[string]Role{"r": {Cluster: []string{"monitor"}}}}
	b, err = json.Marshal(k.View(false))
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"id1","name":"k","creation":1700000000000,"expiration":1700000001000,"invalidated":false,"username":"bob","realm":"native","metadata":{},"role_descriptors":{}}`, string(b))
	b, err = json.Marshal(k.View(true))
	require.NoError(t, err)
	require.Contains(t, string(b), `"limited_by":[{"r":{"cluster":["monitor"],"indices":null}}]`)
	require.NotContains(t, string(b), "deadbeef")
}

func TestValidateNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  string
		valid bool
	}{
		{"plain", "bob", true},
		{"punctuation and inner space", "bob.smith@example.com Jr", true},
		{"empty", "", false},
		{"leading space", " bob", false},
		{"trailing space", "bob ", false},
		{"non-ascii", "zoë", false},
		{"control", "bo\tb", false},
		{"max length", string(make([]byte, 0)) + repeat('a', MaxNameLength), true},
		{"too long", repeat('a', MaxNameLength+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range []error{ValidateUsername(tc.user), ValidateRoleName(tc.user)} {
				if tc.valid {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, ErrInvalidName)
				}
			}
		})
	}
	require.ErrorContains(t, ValidateUsername("elastic"), "reserved")
	require.ErrorContains(t, ValidateRoleName("superuser"), "reserved")
}

func repeat(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
