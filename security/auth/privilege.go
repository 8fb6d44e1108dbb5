package auth

import (
	"fmt"
	"strings"
)

// privilege is a named set of actions: the actions matching an include
// pattern and no exclude pattern.
type privilege struct {
	name    string
	include []string
	exclude []string
	// ownAPIKeys marks manage_own_api_key: its API key actions are granted
	// only on the caller's own keys, which CheckOwnAPIKeys decides.
	ownAPIKeys bool
}

func (p *privilege) grants(action Action) bool {
	a := string(action)
	for _, x := range p.exclude {
		if globMatch(x, a) {
			return false
		}
	}
	for _, in := range p.include {
		if globMatch(in, a) {
			return true
		}
	}
	return false
}

// allClusterActions are the actions the cluster privilege all grants:
// every cluster action, and the index template actions Elasticsearch
// authorizes at the cluster level.
var allClusterActions = []string{"cluster:*", "indices:admin/template/*", "indices:admin/index_template/*"}

// clusterPrivileges are Elasticsearch's cluster privileges that Weft
// serves, narrowest first: the order of "this action is granted by the
// cluster privileges [...]".
var clusterPrivileges = []*privilege{
	{name: "monitor", include: []string{"cluster:monitor/*"}},
	{name: "manage_index_templates", include: []string{"indices:admin/template/*", "indices:admin/index_template/*"}},
	{name: "manage_own_api_key", include: []string{"cluster:admin/xpack/security/api_key/*"}, ownAPIKeys: true},
	{name: "manage_api_key", include: []string{"cluster:admin/xpack/security/api_key/*"}},
	{name: "manage_security", include: []string{"cluster:admin/xpack/security/*"}},
	// manage is everything but security, as in Elasticsearch.
	{name: "manage", include: allClusterActions, exclude: []string{"cluster:admin/xpack/security/*"}},
	{name: "all", include: allClusterActions},
}

// indexPrivileges are Elasticsearch's index privileges, narrowest first
// (and alphabetical among equals): the order of "this action is granted by
// the index privileges [...]".
var indexPrivileges = []*privilege{
	{name: "create_doc", include: []string{"indices:data/write/index:op_type/create", "indices:data/write/bulk*", "indices:admin/mapping/auto_put"}},
	{name: "create", include: []string{"indices:data/write/index*", "indices:data/write/bulk*", "indices:admin/mapping/auto_put"}},
	{name: "delete", include: []string{"indices:data/write/delete*", "indices:data/write/bulk*"}},
	{name: "index", include: []string{"indices:data/write/index*", "indices:data/write/bulk*", "indices:data/write/update*", "indices:admin/mapping/auto_put"}},
	{name: "write", include: []string{"indices:data/write/*", "indices:admin/mapping/auto_put"}},
	{name: "read", include: []string{"indices:data/read/*", "indices:admin/resolve/index"}},
	{name: "view_index_metadata", include: []string{
		"indices:admin/aliases/get", "indices:admin/get", "indices:admin/mappings/fields/get*", "indices:admin/mappings/get",
		"indices:admin/shards/search_shards", "indices:admin/validate/query*", "indices:monitor/settings/get",
		"indices:admin/resolve/index", "indices:data/read/field_caps*",
	}},
	{name: "maintenance", include: []string{"indices:admin/refresh*", "indices:admin/flush*", "indices:admin/forcemerge*"}},
	{name: "monitor", include: []string{"indices:monitor/*"}},
	{name: "auto_configure", include: []string{"indices:admin/auto_create", "indices:admin/mapping/auto_put"}},
	{name: "create_index", include: []string{"indices:admin/create", "indices:admin/auto_create"}},
	{name: "delete_index", include: []string{"indices:admin/delete"}},
	{name: "manage", include: []string{"indices:monitor/*", "indices:admin/*", "indices:data/read/field_caps*"}},
	{name: "all", include: []string{"indices:*"}},
}

// ClusterPrivilegeNames lists the predefined cluster privileges.
func ClusterPrivilegeNames() []string { return privilegeNames(clusterPrivileges) }

// IndexPrivilegeNames lists the predefined index privileges.
func IndexPrivilegeNames() []string { return privilegeNames(indexPrivileges) }

func privilegeNames(ps []*privilege) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return names
}

// privilegeSet is the union of the privileges of one grant.
type privilegeSet []*privilege

func (s privilegeSet) grants(action Action) bool {
	for _, p := range s {
		if !p.ownAPIKeys && p.grants(action) {
			return true
		}
	}
	return false
}

// compilePrivileges resolves names against the predefined privileges of a
// kind; a name with ':' is a pattern over that kind's actions (prefix
// "cluster:" or "indices:"), as Elasticsearch allows.
func compilePrivileges(kind string, names []string, predefined []*privilege) (privilegeSet, error) {
	set := make(privilegeSet, 0, len(names))
	for _, n := range names {
		if p := lookupPrivilege(n, predefined); p != nil {
			set = append(set, p)
			continue
		}
		prefix := "indices:"
		if kind == "cluster" {
			prefix = "cluster:"
		}
		if strings.HasPrefix(n, prefix) || (kind == "cluster" && strings.HasPrefix(n, "indices:admin/") && strings.Contains(n, "template")) {
			set = append(set, &privilege{name: n, include: []string{n}})
			continue
		}
		return nil, fmt.Errorf("%w: unknown %s privilege [%s]; a privilege must be one of the predefined %s privilege names [%s] or a pattern over the %s actions (%s*)",
			ErrInvalidRole, kind, printable(n, 64), kind, strings.Join(privilegeNames(predefined), ","), kind, prefix)
	}
	return set, nil
}

func lookupPrivilege(name string, ps []*privilege) *privilege {
	for _, p := range ps {
		if strings.EqualFold(p.name, name) {
			return p
		}
	}
	return nil
}

// grantingPrivileges names the predefined privileges that grant action, in
// the order Elasticsearch's 403 message lists them.
func grantingPrivileges(action Action, ps []*privilege) []string {
	var names []string
	for _, p := range ps {
		if p.grants(action) {
			names = append(names, p.name)
		}
	}
	return names
}
