package cluster

import (
	"context"
	"fmt"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// The security proposals below work from any node, as Propose does: a
// follower forwards them to the leader, and the FSM's refusals come back
// as the same sentinels (ErrInvalidCommand: 400; ErrUserNotFound: 404,
// or 400 for a password change as Elasticsearch answers; ErrAlreadySet:
// 409). Secrets are hashed by the caller, on the proposing node, before
// they are proposed; none of these methods logs a record.
//
// Each returns once the change is applied on this node too, so a request
// served here next sees it (an authentication right after a user was
// created, a GET right after a PUT).
//
// A proposal retried after a leader failed may find its own earlier
// commit: then PutUser and PutRole report created false, DeleteUser and
// DeleteRole found false, InvalidateAPIKeys the keys as previously
// invalidated.

// PutUser creates or replaces the native user u (u.PasswordHash is a
// bcrypt hash, or "" to keep an existing user's) and reports whether it
// created it.
func (c *Cluster) PutUser(ctx context.Context, u auth.User) (created bool, err error) {
	res, err := c.proposeVisible(ctx, Command{PutUser: &PutUser{User: u}})
	return res.Created, err
}

// DeleteUser deletes the native user name and reports whether it existed.
func (c *Cluster) DeleteUser(ctx context.Context, name string) (found bool, err error) {
	res, err := c.proposeVisible(ctx, Command{DeleteUser: &DeleteUser{Username: name}})
	return res.Found, err
}

// SetPassword replaces the password hash (bcrypt) of a native or reserved
// user.
func (c *Cluster) SetPassword(ctx context.Context, username, passwordHash string) error {
	_, err := c.proposeVisible(ctx, Command{ChangePassword: &ChangePassword{Username: username, PasswordHash: passwordHash}})
	return err
}

// SetUserEnabled enables or disables a native or reserved user.
func (c *Cluster) SetUserEnabled(ctx context.Context, username string, enabled bool) error {
	_, err := c.proposeVisible(ctx, Command{SetUserEnabled: &SetUserEnabled{Username: username, Enabled: enabled}})
	return err
}

// PutRole validates the role here (auth.Role.Validate; a refusal wraps
// ErrInvalidCommand and auth.ErrInvalidRole), then creates or replaces it
// and reports whether it created it.
func (c *Cluster) PutRole(ctx context.Context, name string, r auth.Role) (created bool, err error) {
	if err := r.Validate(); err != nil {
		return false, fmt.Errorf("%w: role [%s]: %w", ErrInvalidCommand, name, err)
	}
	res, err := c.proposeVisible(ctx, Command{PutRole: &PutRole{Name: name, Role: r}})
	return res.Created, err
}

// DeleteRole deletes the stored role name and reports whether it existed.
func (c *Cluster) DeleteRole(ctx context.Context, name string) (found bool, err error) {
	res, err := c.proposeVisible(ctx, Command{DeleteRole: &DeleteRole{Name: name}})
	return res.Found, err
}

// CreateAPIKey stores k, as auth.NewAPIKey made it (with the hash of its
// secret, never the secret).
func (c *Cluster) CreateAPIKey(ctx context.Context, k auth.APIKey) error {
	_, err := c.proposeVisible(ctx, Command{CreateAPIKey: &CreateAPIKey{Key: k}})
	return err
}

// InvalidateAPIKeys invalidates the keys f matches and returns their IDs:
// those it invalidated and those invalidated before, each sorted.
func (c *Cluster) InvalidateAPIKeys(ctx context.Context, f state.APIKeyFilter) (invalidated, previously []string, err error) {
	res, err := c.proposeVisible(ctx, Command{InvalidateAPIKeys: &InvalidateAPIKeys{Filter: f}})
	return res.Invalidated, res.PreviouslyInvalidated, err
}

// SetElasticPassword replaces the elastic user's password hash (bcrypt).
func (c *Cluster) SetElasticPassword(ctx context.Context, passwordHash string) error {
	_, err := c.proposeVisible(ctx, Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: passwordHash}})
	return err
}

// ResetElasticPassword is the way back in for an operator with shell
// access to a node who lost the elastic password: the node, started with
// --reset-elastic-password, calls it once Start has returned. It sets
// password (a new generated one when "") as the elastic user's, hashing
// it here, and returns it for the node to print once to its standard
// output. Like Propose it waits for a leader while ctx lasts (give it a
// deadline long enough for the node to join). The password is never
// logged.
func (c *Cluster) ResetElasticPassword(ctx context.Context, password auth.Secret) (auth.Secret, error) {
	if password == "" {
		p, err := auth.GeneratePassword()
		if err != nil {
			return "", err
		}
		password = auth.Secret(p)
	}
	if err := auth.ValidatePassword(password.Reveal()); err != nil {
		return "", fmt.Errorf("cluster: the new elastic password is refused: %w", err)
	}
	hash, err := c.cfg.hasher().Hash(password.Reveal())
	if err != nil {
		return "", err
	}
	if err := c.SetElasticPassword(ctx, hash); err != nil {
		return "", fmt.Errorf("cluster: resetting the elastic password: %w", err)
	}
	c.log.Warn("cluster: the elastic user's password was reset from this node (--reset-elastic-password)")
	return password, nil
}

// bootstrapElasticPassword sets the elastic user's password at the
// cluster's first start, on the leader: Config.ElasticPassword, else a
// generated one handed to Config.ElasticPasswordGenerated once its hash is
// committed. It does nothing once the password is set (a later start, or
// another leader that got there first) or when the node has neither.
func (l *leaderLoop) bootstrapElasticPassword(ctx context.Context) {
	c := l.c
	if c.State().Security.ElasticPasswordSet() || (c.cfg.ElasticPassword == "" && c.cfg.ElasticPasswordGenerated == nil) {
		return
	}
	password, generated := c.cfg.ElasticPassword, false
	if password == "" {
		p, err := auth.GeneratePassword()
		if err != nil {
			c.log.Error("cluster: cannot generate the elastic password", "err", err)
			return
		}
		password, generated = auth.Secret(p), true
	}
	hash, err := c.cfg.hasher().Hash(password.Reveal())
	if err != nil {
		c.log.Error("cluster: cannot hash the elastic password", "err", err)
		return
	}
	cmd := Command{SetReservedPassword: &SetReservedPassword{Username: auth.ElasticUser, PasswordHash: hash, IfUnset: true}}
	if err := l.propose(ctx, cmd); err != nil {
		return // logged by propose; the next leader tries again while it is unset
	}
	if !generated {
		c.log.Info("cluster: the elastic user's password is set from the configured one (WEFT_ELASTIC_PASSWORD)")
		return
	}
	c.log.Info("cluster: the elastic user's password was generated; this node shows it once on its standard output")
	c.cfg.ElasticPasswordGenerated(password)
}

// proposeVisible proposes cmd and waits until this node's state holds it.
func (c *Cluster) proposeVisible(ctx context.Context, cmd Command) (Result, error) {
	res, err := c.Propose(ctx, cmd)
	if err != nil {
		return res, err
	}
	if _, err := c.Await(ctx, func(st *state.State) bool { return st.Version >= res.Version }); err != nil {
		return res, fmt.Errorf("cluster: committed, but not yet applied on this node: %w", err)
	}
	return res, nil
}
