package auth

import (
	"fmt"
	"sort"
)

// Permission is what a principal may do, compiled from roles. It is a list
// of layers, each the union of some roles; an action is allowed when every
// layer allows it. A user has one layer (its roles); an API key has two:
// its owner's roles as they were at the key's creation, limited by the
// key's own role descriptors. The zero Permission allows nothing.
//
// A Permission is immutable and safe for concurrent use.
type Permission struct {
	layers [][]compiledRole
}

// compiledRole is a Role with its patterns compiled.
type compiledRole struct {
	cluster privilegeSet
	// ownAPIKeys is set by manage_own_api_key.
	ownAPIKeys bool
	indices    []indexGrant
}

type indexGrant struct {
	names namePattern
	privs privilegeSet
}

// NewPermission compiles roles into a one-layer Permission: the union of
// the roles. It fails on a role that Role.Validate refuses.
func NewPermission(roles map[string]Role) (Permission, error) {
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	layer := make([]compiledRole, 0, len(roles))
	for _, n := range names {
		c, err := compileRole(roles[n])
		if err != nil {
			return Permission{}, fmt.Errorf("role [%s]: %w", n, err)
		}
		layer = append(layer, c)
	}
	return Permission{layers: [][]compiledRole{layer}}, nil
}

// Limit returns the Permission that allows what both p and q allow.
func (p Permission) Limit(q Permission) Permission {
	layers := make([][]compiledRole, 0, len(p.layers)+len(q.layers))
	return Permission{layers: append(append(layers, p.layers...), q.layers...)}
}

func compileRole(r Role) (compiledRole, error) {
	cluster, err := compilePrivileges("cluster", r.Cluster, clusterPrivileges)
	if err != nil {
		return compiledRole{}, err
	}
	c := compiledRole{cluster: cluster}
	for _, p := range cluster {
		c.ownAPIKeys = c.ownAPIKeys || p.ownAPIKeys
	}
	for _, ip := range r.Indices {
		if len(ip.Names) == 0 || len(ip.Privileges) == 0 {
			return compiledRole{}, fmt.Errorf("%w: an indices entry needs both names and privileges", ErrInvalidRole)
		}
		names, err := compilePatterns(ip.Names, true)
		if err != nil {
			return compiledRole{}, err
		}
		privs, err := compilePrivileges("index", ip.Privileges, indexPrivileges)
		if err != nil {
			return compiledRole{}, err
		}
		c.indices = append(c.indices, indexGrant{names: names, privs: privs})
	}
	return c, nil
}

// every reports whether each layer has a role for which ok holds; no
// layers: false.
func (p Permission) every(ok func(*compiledRole) bool) bool {
	if len(p.layers) == 0 {
		return false
	}
	for _, layer := range p.layers {
		granted := false
		for i := range layer {
			if ok(&layer[i]) {
				granted = true
				break
			}
		}
		if !granted {
			return false
		}
	}
	return true
}

// AllowsCluster reports whether p holds the cluster action.
func (p Permission) AllowsCluster(action Action) bool {
	return p.every(func(r *compiledRole) bool { return r.cluster.grants(action) })
}

// allowsOwnAPIKeys reports whether p holds action at least on the
// principal's own API keys.
func (p Permission) allowsOwnAPIKeys(action Action) bool {
	return p.every(func(r *compiledRole) bool {
		return r.cluster.grants(action) || (r.ownAPIKeys && lookupPrivilege("manage_own_api_key", clusterPrivileges).grants(action))
	})
}

// AllowsIndex reports whether p holds the index action on index.
func (p Permission) AllowsIndex(action Action, index string) bool {
	return p.every(func(r *compiledRole) bool {
		for i := range r.indices {
			g := &r.indices[i]
			if g.privs.grants(action) && g.names.match(index) {
				return true
			}
		}
		return false
	})
}

// allowsIndexSomewhere reports whether p holds the index action on some
// index pattern (in every layer), for actions that name no index.
func (p Permission) allowsIndexSomewhere(action Action) bool {
	return p.every(func(r *compiledRole) bool {
		for i := range r.indices {
			if r.indices[i].privs.grants(action) {
				return true
			}
		}
		return false
	})
}
