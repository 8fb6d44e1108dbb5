package auth

// ElasticUser is the reserved superuser whose password is set at the
// cluster's first start.
const ElasticUser = "elastic"

// reservedUsers are the users of the reserved realm. They live in the
// cluster state like native users but cannot be created, deleted or
// changed except for their password.
var reservedUsers = map[string]User{
	ElasticUser: {Username: ElasticUser, Roles: []string{"superuser"}, Enabled: true},
}

// IsReservedUser reports whether name is a reserved user (elastic).
func IsReservedUser(name string) bool {
	_, ok := reservedUsers[name]
	return ok
}

// ReservedUser returns the reserved user name without a password hash:
// the record to complete with a hash and store at bootstrap.
func ReservedUser(name string) (User, bool) {
	u, ok := reservedUsers[name]
	u.Roles = append([]string(nil), u.Roles...)
	return u, ok
}

// builtinRoles are Elasticsearch's reserved roles that Weft serves. They
// take precedence over any stored role of the same name, and PUT role
// refuses their names (ValidateRoleName).
var builtinRoles = map[string]Role{
	// superuser may do everything.
	"superuser": {
		Cluster: []string{"all"},
		Indices: []IndexPrivileges{{Names: []string{"*"}, Privileges: []string{"all"}}},
	},
	// viewer reads every index and its metadata and monitors the cluster;
	// it changes nothing. (Elasticsearch's viewer is about Kibana; this
	// is its data half.)
	"viewer": {
		Cluster: []string{"monitor"},
		Indices: []IndexPrivileges{{Names: []string{"*"}, Privileges: []string{"read", "view_index_metadata", "monitor"}}},
	},
	// monitoring_user monitors the cluster and every index without reading
	// documents.
	"monitoring_user": {
		Cluster: []string{"monitor"},
		Indices: []IndexPrivileges{{Names: []string{"*"}, Privileges: []string{"monitor", "view_index_metadata"}}},
	},
}

// BuiltinRole returns the built-in role name (superuser, viewer,
// monitoring_user).
func BuiltinRole(name string) (Role, bool) {
	r, ok := builtinRoles[name]
	return r, ok
}

// BuiltinRoleNames lists the built-in roles.
func BuiltinRoleNames() []string {
	return []string{"monitoring_user", "superuser", "viewer"}
}
