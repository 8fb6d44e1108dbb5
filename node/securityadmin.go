package node

import (
	"context"
	"errors"
	"maps"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/security/auth"
)

// securityAdmin serves httpapi's /_security APIs from the cluster's Raft
// state: reads from this node's committed state, writes as proposals that
// return once this node has applied them.
type securityAdmin struct {
	cluster.SecurityStore
	c *cluster.Cluster
}

var _ httpapi.SecurityAdmin = securityAdmin{}

func newSecurityAdmin(c *cluster.Cluster) securityAdmin {
	return securityAdmin{SecurityStore: c.SecurityStore(), c: c}
}

func (a securityAdmin) Users() []auth.User { return a.c.State().Security.ListUsers() }

func (a securityAdmin) Roles() map[string]auth.Role {
	sec := a.c.State().Security
	if sec == nil {
		return map[string]auth.Role{}
	}
	return maps.Clone(sec.Roles)
}

func (a securityAdmin) APIKeys() []auth.APIKey {
	sec := a.c.State().Security
	if sec == nil {
		return nil
	}
	return sec.FindAPIKeys(state.APIKeyFilter{Name: "*"})
}

func (a securityAdmin) PutUser(ctx context.Context, u auth.User) (bool, error) {
	return a.c.PutUser(ctx, u)
}

func (a securityAdmin) DeleteUser(ctx context.Context, name string) (bool, error) {
	return a.c.DeleteUser(ctx, name)
}

func (a securityAdmin) SetPassword(ctx context.Context, name, hash string) (bool, error) {
	return found(a.c.SetPassword(ctx, name, hash))
}

func (a securityAdmin) SetEnabled(ctx context.Context, name string, enabled bool) (bool, error) {
	return found(a.c.SetUserEnabled(ctx, name, enabled))
}

func (a securityAdmin) PutRole(ctx context.Context, name string, r auth.Role) (bool, error) {
	return a.c.PutRole(ctx, name, r)
}

func (a securityAdmin) DeleteRole(ctx context.Context, name string) (bool, error) {
	return a.c.DeleteRole(ctx, name)
}

func (a securityAdmin) CreateAPIKey(ctx context.Context, k auth.APIKey) error {
	return a.c.CreateAPIKey(ctx, k)
}

func (a securityAdmin) InvalidateAPIKeys(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, _, err := a.c.InvalidateAPIKeys(ctx, state.APIKeyFilter{IDs: ids})
	return err
}

// found turns ErrUserNotFound into found false.
func found(err error) (bool, error) {
	if errors.Is(err, cluster.ErrUserNotFound) {
		return false, nil
	}
	return err == nil, err
}
