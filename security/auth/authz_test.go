package auth

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// userWith is a native principal holding roles, compiled as Authenticate
// would.
func userWith(t *testing.T, username string, roles map[string]Role) Principal {
	t.Helper()
	perm, err := NewPermission(roles)
	require.NoError(t, err)
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	return Principal{Username: username, Realm: RealmNative, Roles: names, Permission: perm}
}

func indexRole(names []string, privs ...string) Role {
	return Role{Indices: []IndexPrivileges{{Names: names, Privileges: privs}}}
}

func TestCheckIndicesMessages(t *testing.T) {
	bob := userWith(t, "bob", map[string]Role{"r1": indexRole([]string{"logs-*"}, "read")})
	for _, tc := range []struct {
		name    string
		action  Action
		indices []string
		want    string // "" = allowed
	}{
		{name: "read granted", action: ActionSearch, indices: []string{"logs-1", "logs-2"}},
		{name: "one index denied is named", action: ActionSearch, indices: []string{"logs-1", "secret"},
			want: "action [indices:data/read/search] is unauthorized for user [bob] with effective roles [r1] on indices [secret], this action is granted by the index privileges [read,all]"},
		{name: "every denied index is named", action: ActionGet, indices: []string{"a", "logs-1", "b"},
			want: "action [indices:data/read/get] is unauthorized for user [bob] with effective roles [r1] on indices [a,b], this action is granted by the index privileges [read,all]"},
		{name: "write denied to a reader", action: ActionIndexDoc, indices: []string{"logs-1"},
			want: "action [indices:data/write/index] is unauthorized for user [bob] with effective roles [r1] on indices [logs-1], this action is granted by the index privileges [create,index,write,all]"},
		{name: "delete index lists its granting privileges", action: ActionDeleteIndex, indices: []string{"logs-1"},
			want: "action [indices:admin/delete] is unauthorized for user [bob] with effective roles [r1] on indices [logs-1], this action is granted by the index privileges [delete_index,manage,all]"},
		{name: "bulk lists its granting privileges", action: ActionBulk, indices: []string{"logs-1"},
			want: "action [indices:data/write/bulk] is unauthorized for user [bob] with effective roles [r1] on indices [logs-1], this action is granted by the index privileges [create_doc,create,delete,index,write,all]"},
		{name: "no indices: allowed with the action anywhere", action: ActionClosePointInTime},
		{name: "no indices: refused without it anywhere", action: ActionDeleteIndex,
			want: "action [indices:admin/delete] is unauthorized for user [bob] with effective roles [r1], this action is granted by the index privileges [delete_index,manage,all]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckIndices(bob, tc.action, tc.indices)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrForbidden)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestCheckClusterMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Principal
		action Action
		want   string
	}{
		{name: "monitor may see health", p: userWith(t, "mon", map[string]Role{"m": {Cluster: []string{"monitor"}}}), action: ActionClusterHealth},
		{name: "monitor may not update settings", p: userWith(t, "mon", map[string]Role{"m": {Cluster: []string{"monitor"}}}), action: ActionClusterUpdateSettings,
			want: "action [cluster:admin/settings/update] is unauthorized for user [mon] with effective roles [m], this action is granted by the cluster privileges [manage,all]"},
		{name: "health is granted by monitor manage all", p: userWith(t, "none", nil), action: ActionClusterHealth,
			want: "action [cluster:monitor/health] is unauthorized for user [none] with effective roles [], this action is granted by the cluster privileges [monitor,manage,all]"},
		{name: "manage is not manage_security", p: userWith(t, "ops", map[string]Role{"ops": {Cluster: []string{"manage"}}}), action: ActionPutUser,
			want: "action [cluster:admin/xpack/security/user/put] is unauthorized for user [ops] with effective roles [ops], this action is granted by the cluster privileges [manage_security,all]"},
		{name: "manage_security may put users", p: userWith(t, "sec", map[string]Role{"s": {Cluster: []string{"manage_security"}}}), action: ActionPutUser},
		{name: "anyone authenticated may _authenticate", p: userWith(t, "none", nil), action: ActionAuthenticate},
		{name: "action patterns are privileges", p: userWith(t, "p", map[string]Role{"p": {Cluster: []string{"cluster:monitor/nodes/*"}}}), action: ActionNodesStats},
		{name: "template actions are cluster actions", p: userWith(t, "t", map[string]Role{"t": {Cluster: []string{"manage_index_templates"}}}), action: ActionPutIndexTemplate},
		{name: "the zero principal may do nothing", p: Principal{}, action: ActionMain,
			want: "action [cluster:monitor/main] is unauthorized for user [] with effective roles [], this action is granted by the cluster privileges [monitor,manage,all]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCluster(tc.p, tc.action)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrForbidden)
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestPrivilegeHierarchy checks all ⊇ manage ⊇ monitor over the whole
// catalogue (and the index ones), and that every action of the catalogue
// is granted by all of its scope and by some narrower predefined privilege.
func TestPrivilegeHierarchy(t *testing.T) {
	for action, scope := range Catalogue() {
		ps := clusterPrivileges
		if scope == ScopeIndices {
			ps = indexPrivileges
		}
		granted := grantingPrivileges(action, ps)
		require.Contains(t, granted, "all", "%s is not granted by all", action)
		require.Greater(t, len(granted), 1, "%s is granted only by all", action)
		has := func(name string) bool {
			for _, g := range granted {
				if g == name {
					return true
				}
			}
			return false
		}
		if has("monitor") {
			require.True(t, has("manage"), "%s: monitor without manage", action)
		}
		if has("manage") {
			require.True(t, has("all"), "%s: manage without all", action)
		}
		if scope == ScopeIndices {
			for _, narrow := range []string{"read", "write", "create_index", "delete_index", "view_index_metadata", "maintenance", "monitor"} {
				if has(narrow) && narrow != "read" && narrow != "write" {
					require.True(t, has("manage"), "%s: %s without manage", action, narrow)
				}
			}
		}
	}
}

func TestIndexPrivilegesGrant(t *testing.T) {
	for _, tc := range []struct {
		priv    string
		allowed []Action
		denied  []Action
	}{
		{"read", []Action{ActionSearch, ActionGet, ActionMultiGet, ActionMultiSearch, ActionFieldCaps, ActionResolveIndex}, []Action{ActionIndexDoc, ActionDeleteIndex, ActionGetMapping}},
		{"write", []Action{ActionIndexDoc, ActionCreateDoc, ActionUpdateDoc, ActionDeleteDoc, ActionBulk, ActionDeleteByQuery, ActionAutoPutMapping}, []Action{ActionSearch, ActionCreateIndex, ActionPutMapping}},
		{"index", []Action{ActionIndexDoc, ActionCreateDoc, ActionUpdateDoc, ActionBulk}, []Action{ActionDeleteDoc, ActionSearch}},
		{"create", []Action{ActionIndexDoc, ActionCreateDoc, ActionBulk}, []Action{ActionUpdateDoc, ActionDeleteDoc}},
		{"create_doc", []Action{ActionCreateDoc, ActionBulk}, []Action{ActionIndexDoc, ActionUpdateDoc}},
		{"delete", []Action{ActionDeleteDoc, ActionBulk}, []Action{ActionIndexDoc}},
		{"create_index", []Action{ActionCreateIndex, ActionAutoCreateIndex}, []Action{ActionDeleteIndex, ActionIndexDoc}},
		{"delete_index", []Action{ActionDeleteIndex}, []Action{ActionCreateIndex, ActionDeleteDoc}},
		{"view_index_metadata", []Action{ActionGetMapping, ActionGetIndex, ActionGetAliases, ActionGetSettings}, []Action{ActionSearch, ActionPutMapping}},
		{"monitor", []Action{ActionIndicesStats, ActionIndicesRecovery, ActionGetSettings}, []Action{ActionSearch, ActionRefresh}},
		{"maintenance", []Action{ActionRefresh, ActionFlush, ActionForceMerge}, []Action{ActionDeleteIndex}},
		{"manage", []Action{ActionCreateIndex, ActionDeleteIndex, ActionPutMapping, ActionUpdateSettings, ActionUpdateAliases, ActionRefresh, ActionIndicesStats}, []Action{ActionSearch, ActionIndexDoc}},
		{"all", []Action{ActionSearch, ActionIndexDoc, ActionDeleteIndex, ActionCreateIndex}, nil},
		{"indices:data/read/get", []Action{ActionGet}, []Action{ActionSearch}},
	} {
		t.Run(tc.priv, func(t *testing.T) {
			p := userWith(t, "u", map[string]Role{"r": indexRole([]string{"idx"}, tc.priv)})
			for _, a := range tc.allowed {
				require.NoError(t, CheckIndices(p, a, []string{"idx"}), a)
				require.Error(t, CheckIndices(p, a, []string{"other"}), a)
			}
			for _, a := range tc.denied {
				require.ErrorIs(t, CheckIndices(p, a, []string{"idx"}), ErrForbidden, a)
			}
		})
	}
}

func TestFilterIndices(t *testing.T) {
	p := userWith(t, "bob", map[string]Role{
		"logs":   indexRole([]string{"logs-*"}, "read"),
		"orders": indexRole([]string{"/orders-20[0-9]{2}/"}, "read", "write"),
		"admin":  indexRole([]string{"scratch"}, "manage"),
	})
	all := []string{"logs-a", "secret", "orders-2024", "orders-x", "scratch", "logs-b"}
	for _, tc := range []struct {
		action Action
		want   []string
	}{
		{ActionSearch, []string{"logs-a", "orders-2024", "logs-b"}},
		{ActionIndexDoc, []string{"orders-2024"}},
		{ActionDeleteIndex, []string{"scratch"}},
		{ActionDeleteDoc, []string{"orders-2024"}},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			require.Equal(t, tc.want, FilterIndices(p, tc.action, all))
		})
	}
	require.Empty(t, FilterIndices(Principal{}, ActionSearch, all), "the zero principal sees nothing")
}

func TestUnionOfRoles(t *testing.T) {
	p := userWith(t, "bob", map[string]Role{"a": indexRole([]string{"x"}, "read"), "b": indexRole([]string{"x"}, "write"), "c": {Cluster: []string{"monitor"}}})
	require.NoError(t, CheckIndices(p, ActionSearch, []string{"x"}))
	require.NoError(t, CheckIndices(p, ActionIndexDoc, []string{"x"}))
	require.NoError(t, CheckCluster(p, ActionClusterHealth))
	require.Error(t, CheckIndices(p, ActionDeleteIndex, []string{"x"}))
}

func TestLimitIsIntersection(t *testing.T) {
	owner, err := NewPermission(map[string]Role{"o": {Cluster: []string{"manage"}, Indices: []IndexPrivileges{{Names: []string{"*"}, Privileges: []string{"all"}}}}})
	require.NoError(t, err)
	key, err := NewPermission(map[string]Role{"k": {Cluster: []string{"all"}, Indices: []IndexPrivileges{{Names: []string{"logs-*", "secret"}, Privileges: []string{"read"}}}}})
	require.NoError(t, err)
	p := owner.Limit(key)
	require.True(t, p.AllowsIndex(ActionSearch, "logs-1"))
	require.False(t, p.AllowsIndex(ActionIndexDoc, "logs-1"), "the key does not grant write")
	require.False(t, p.AllowsIndex(ActionSearch, "other"), "the key does not name other")
	require.True(t, p.AllowsCluster(ActionClusterHealth))
	require.False(t, p.AllowsCluster(ActionPutUser), "the key's all is limited by the owner's manage")
}

func TestCheckOwnAPIKeysAndPasswords(t *testing.T) {
	own := userWith(t, "bob", map[string]Role{"k": {Cluster: []string{"manage_own_api_key"}}})
	require.NoError(t, CheckOwnAPIKeys(own, ActionCreateAPIKey))
	require.NoError(t, CheckOwnAPIKeys(own, ActionGetAPIKey))
	require.ErrorIs(t, CheckCluster(own, ActionGetAPIKey), ErrForbidden, "manage_own_api_key does not reach other users' keys")
	require.ErrorIs(t, CheckOwnAPIKeys(userWith(t, "eve", nil), ActionCreateAPIKey), ErrForbidden)

	asKey := own
	asKey.APIKeyID, asKey.Realm = "k1", RealmAPIKey
	require.ErrorIs(t, CheckOwnAPIKeys(asKey, ActionCreateAPIKey), ErrForbidden, "an API key cannot create keys")

	require.NoError(t, CheckChangePassword(own, "bob"))
	require.ErrorIs(t, CheckChangePassword(own, "alice"), ErrForbidden)
	require.ErrorIs(t, CheckChangePassword(asKey, "bob"), ErrForbidden, "an API key cannot change its owner's password")
	sec := userWith(t, "admin", map[string]Role{"s": {Cluster: []string{"manage_security"}}})
	require.NoError(t, CheckChangePassword(sec, "alice"))
}

func TestAPIKeyForbiddenMessageNamesTheKey(t *testing.T) {
	p := userWith(t, "bob", nil)
	p.APIKeyID, p.Realm = "abc123", RealmAPIKey
	require.EqualError(t, CheckIndices(p, ActionSearch, []string{"x"}),
		"action [indices:data/read/search] is unauthorized for API key id [abc123] of user [bob] on indices [x], this action is granted by the index privileges [read,all]")
}

func TestBuiltinRoles(t *testing.T) {
	perms := map[string]Permission{}
	for _, n := range BuiltinRoleNames() {
		r, ok := BuiltinRole(n)
		require.True(t, ok, n)
		require.NoError(t, r.Validate(), n)
		p, err := NewPermission(map[string]Role{n: r})
		require.NoError(t, err)
		perms[n] = p
	}
	for a, scope := range Catalogue() {
		if scope == ScopeCluster {
			require.True(t, perms["superuser"].AllowsCluster(a), a)
		} else {
			require.True(t, perms["superuser"].AllowsIndex(a, ".anything"), a)
		}
	}
	require.True(t, perms["viewer"].AllowsIndex(ActionSearch, "x"))
	require.False(t, perms["viewer"].AllowsIndex(ActionIndexDoc, "x"))
	require.False(t, perms["viewer"].AllowsCluster(ActionClusterUpdateSettings))
	require.True(t, perms["monitoring_user"].AllowsCluster(ActionClusterHealth))
	require.False(t, perms["monitoring_user"].AllowsIndex(ActionSearch, "x"))
}
