package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/security/auth/authhttp"
)

// Authenticator is what the API needs of *auth.Authenticator: checking
// credentials, and the owner's role descriptors an API key is limited by.
type Authenticator interface {
	authhttp.Authenticator
	// RoleDescriptors resolves role names (built-in first, then stored);
	// unknown names are left out.
	RoleDescriptors(names []string) map[string]auth.Role
}

var _ Authenticator = (*auth.Authenticator)(nil)

// SecurityAdmin reads and changes the security records (users, roles, API
// keys) that the cluster's Raft state keeps. The node implements it over
// the committed state and Raft proposals; httpapi owns the interface.
//
// Reads (the auth.Store methods and the lists) are local, must not block,
// and return values the caller must not modify. Writes block until the
// change is committed and visible to this node's reads, or ctx ends; they
// return the leader and proposal errors of the cluster, which translate
// maps to statuses. Secrets arrive only hashed: a password as the hash of
// Security.Hasher, an API key secret as auth.HashAPIKeySecret.
type SecurityAdmin interface {
	auth.Store
	// Users lists every user, reserved ones included, in any order.
	Users() []auth.User
	// Roles lists the stored roles by name (built-in roles are not
	// stored).
	Roles() map[string]auth.Role
	// APIKeys lists every API key, expired and invalidated ones included.
	APIKeys() []auth.APIKey

	// PutUser creates or replaces the native user u.Username (never a
	// reserved one: the caller validated the name). An empty
	// u.PasswordHash keeps the stored hash. created reports whether
	// the user did not exist.
	PutUser(ctx context.Context, u auth.User) (created bool, err error)
	// DeleteUser removes a native user; found is false when there was
	// none.
	DeleteUser(ctx context.Context, name string) (found bool, err error)
	// SetPassword replaces the password hash of a native or reserved
	// user; found is false when there is none.
	SetPassword(ctx context.Context, name, hash string) (found bool, err error)
	// SetEnabled enables or disables a user; found is false when there
	// is none.
	SetEnabled(ctx context.Context, name string, enabled bool) (found bool, err error)
	// PutRole creates or replaces a role (validated, not a built-in
	// name); created reports whether it did not exist.
	PutRole(ctx context.Context, name string, r auth.Role) (created bool, err error)
	// DeleteRole removes a role; found is false when there was none.
	DeleteRole(ctx context.Context, name string) (found bool, err error)
	// CreateAPIKey stores a new API key (k.ID is fresh, k.Hash set).
	CreateAPIKey(ctx context.Context, k auth.APIKey) error
	// InvalidateAPIKeys marks the keys with ids invalidated; ids that
	// are unknown or already invalidated are skipped.
	InvalidateAPIKeys(ctx context.Context, ids []string) error
}

// Security turns authentication and authorization on (Config.Security).
type Security struct {
	// Authenticator checks credentials; required.
	Authenticator Authenticator
	// Admin serves the /_security APIs; required.
	Admin SecurityAdmin
	// Audit receives authentication failures and authorization
	// decisions; nil writes no audit log.
	Audit *audit.Logger
	// Hasher hashes the passwords the /_security APIs receive, on the
	// node that receives them; nil means auth.BcryptHasher{}.
	Hasher auth.PasswordHasher
	// Now is the clock of API key creation and expiry; nil means
	// time.Now.
	Now func() time.Time
}

// securityState is a Server's security, built from Security.
type securityState struct {
	cfg    Security
	mw     *authhttp.Middleware
	owners *contextOwners
}

func newSecurityState(cfg Security, logger *slog.Logger) (*securityState, error) {
	if cfg.Authenticator == nil || cfg.Admin == nil {
		return nil, errors.New("httpapi: Config.Security needs an Authenticator and an Admin")
	}
	if cfg.Hasher == nil {
		cfg.Hasher = auth.BcryptHasher{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	mw, err := authhttp.New(authhttp.Config{Authenticator: cfg.Authenticator, Audit: cfg.Audit, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &securityState{cfg: cfg, mw: mw, owners: newContextOwners(cfg.Now)}, nil
}

// securityRoutes registers the /_security APIs (served with security on
// only; with it off they answer 501).
func (s *Server) securityRoutes() {
	s.handle("GET /_security/_authenticate", s.handleAuthenticate, noParams...)
	for _, m := range []string{"PUT", "POST"} {
		s.handle(m+" /_security/user/{name}", s.handlePutUser, "refresh")
		s.handle(m+" /_security/user/{name}/_password", s.handleChangePassword, "refresh")
		s.handle(m+" /_security/user/_password", s.handleChangePassword, "refresh")
		s.handle(m+" /_security/user/{name}/_enable", s.handleSetEnabled, "refresh")
		s.handle(m+" /_security/user/{name}/_disable", s.handleSetEnabled, "refresh")
		s.handle(m+" /_security/role/{name}", s.handlePutRole, "refresh")
		s.handle(m+" /_security/api_key", s.handleCreateAPIKey, "refresh")
	}
	s.handle("GET /_security/user", s.handleGetUsers, "with_profile_uid")
	s.handle("GET /_security/user/{name}", s.handleGetUsers, "with_profile_uid")
	s.handle("DELETE /_security/user/{name}", s.handleDeleteUser, "refresh")
	s.handle("GET /_security/role", s.handleGetRoles, noParams...)
	s.handle("GET /_security/role/{name}", s.handleGetRoles, noParams...)
	s.handle("DELETE /_security/role/{name}", s.handleDeleteRole, "refresh")
	s.handle("GET /_security/api_key", s.handleGetAPIKeys, "id", "name", "owner", "username", "realm_name", "with_limited_by", "active_only")
	s.handle("DELETE /_security/api_key", s.handleInvalidateAPIKeys, noParams...)
}

// admin returns the security admin, or 501 with security off.
func (s *Server) admin() (SecurityAdmin, error) {
	if s.sec == nil {
		return nil, errNoPrincipal
	}
	return s.sec.cfg.Admin, nil
}

// handleAuthenticate serves GET /_security/_authenticate.
func (s *Server) handleAuthenticate(w http.ResponseWriter, r *http.Request) error {
	p, ok := principalOf(r.Context())
	if !ok {
		return errNoPrincipal
	}
	s.writeJSON(w, r, http.StatusOK, auth.Authenticated(p))
	return nil
}

// userBody is the body of PUT /_security/user/{name}.
type userBody struct {
	Password     *string        `json:"password"`
	PasswordHash *string        `json:"password_hash"`
	Roles        []string       `json:"roles"`
	FullName     *string        `json:"full_name"`
	Email        *string        `json:"email"`
	Metadata     map[string]any `json:"metadata"`
	Enabled      *bool          `json:"enabled"`
}

// parseUserBody parses and validates a user body: unknown fields are
// refused, as Elasticsearch does; a password must meet the policy;
// password_hash is not accepted (the node hashes what it receives).
func parseUserBody(body []byte) (userBody, error) {
	var b userBody
	if err := decodeStrict(body, &b); err != nil {
		return userBody{}, badRequest("x_content_parse_exception", "failed to parse the user body: %v", err)
	}
	if b.PasswordHash != nil {
		return userBody{}, illegalArgument("[password_hash] is not supported; send [password] and the node hashes it")
	}
	if b.Password != nil {
		if err := auth.ValidatePassword(*b.Password); err != nil {
			return userBody{}, err
		}
	}
	for _, role := range b.Roles {
		if role == "" {
			return userBody{}, validationErr("role names must not be empty")
		}
	}
	for k := range b.Metadata {
		if len(k) > 0 && k[0] == '_' {
			return userBody{}, validationErr("metadata keys may not start with [_]")
		}
	}
	return b, nil
}

// handlePutUser serves PUT|POST /_security/user/{name}: {"created": bool}.
// Without a password it updates an existing user and keeps its password.
func (s *Server) handlePutUser(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := auth.ValidateUsername(name); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	b, err := parseUserBody(body)
	if err != nil {
		return err
	}
	u := auth.User{Username: name, Roles: b.Roles, Metadata: b.Metadata, Enabled: b.Enabled == nil || *b.Enabled}
	if u.Roles == nil {
		u.Roles = []string{}
	}
	if b.FullName != nil {
		u.FullName = *b.FullName
	}
	if b.Email != nil {
		u.Email = *b.Email
	}
	if b.Password != nil {
		if u.PasswordHash, err = s.sec.cfg.Hasher.Hash(*b.Password); err != nil {
			return err
		}
	} else if _, ok := admin.User(name); !ok {
		return validationErr("password must be specified unless you are updating an existing user")
	}
	created, err := admin.PutUser(r.Context(), u)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]bool{"created": created})
	return nil
}

// handleGetUsers serves GET /_security/user[/{name}] (names
// comma-separated): the users found by name, without password hashes; a
// name found nowhere is a 404 with {} when none is found.
func (s *Server) handleGetUsers(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	out := map[string]auth.UserView{}
	names := splitComma(r.PathValue("name"))
	if len(names) == 0 {
		for _, u := range admin.Users() {
			out[u.Username] = u.View()
		}
	}
	for _, n := range names {
		if u, ok := admin.User(n); ok {
			out[n] = u.View()
		}
	}
	status := http.StatusOK
	if len(names) > 0 && len(out) == 0 {
		status = http.StatusNotFound
	}
	s.writeJSON(w, r, status, out)
	return nil
}

// handleDeleteUser serves DELETE /_security/user/{name}: {"found": bool},
// 404 when not found. Reserved users cannot be deleted.
func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := auth.ValidateUsername(name); err != nil {
		return err
	}
	found, err := admin.DeleteUser(r.Context(), name)
	if err != nil {
		return err
	}
	s.writeFound(w, r, found)
	return nil
}

func (s *Server) writeFound(w http.ResponseWriter, r *http.Request, found bool) {
	status := http.StatusOK
	if !found {
		status = http.StatusNotFound
	}
	s.writeJSON(w, r, status, map[string]bool{"found": found})
}

// passwordBody is the body of POST /_security/user/{name}/_password.
type passwordBody struct {
	Password     *string `json:"password"`
	PasswordHash *string `json:"password_hash"`
}

// parsePasswordBody parses a change-password body: a password that meets
// the policy.
func parsePasswordBody(body []byte) (string, error) {
	var b passwordBody
	if err := decodeStrict(body, &b); err != nil {
		return "", badRequest("x_content_parse_exception", "failed to parse the change password body: %v", err)
	}
	if b.PasswordHash != nil {
		return "", illegalArgument("[password_hash] is not supported; send [password] and the node hashes it")
	}
	if b.Password == nil {
		return "", validationErr("password must be specified")
	}
	if err := auth.ValidatePassword(*b.Password); err != nil {
		return "", err
	}
	return *b.Password, nil
}

// handleChangePassword serves POST|PUT /_security/user[/{name}]/_password:
// a user may change its own password (not through an API key); changing
// another's needs manage_security. Replies {}.
func (s *Server) handleChangePassword(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	p, _ := principalOf(r.Context())
	name := r.PathValue("name")
	if name == "" {
		name = p.Username
	}
	if err := s.authorizeCluster(r.Context(), func(p auth.Principal) error { return auth.CheckChangePassword(p, name) }, auth.ActionChangePassword); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	password, err := parsePasswordBody(body)
	if err != nil {
		return err
	}
	hash, err := s.sec.cfg.Hasher.Hash(password)
	if err != nil {
		return err
	}
	found, err := admin.SetPassword(r.Context(), name, hash)
	if err != nil {
		return err
	}
	if !found {
		return &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception", Reason: fmt.Sprintf("user [%s] does not exist", name)}
	}
	s.writeJSON(w, r, http.StatusOK, struct{}{})
	return nil
}

// handleSetEnabled serves PUT|POST /_security/user/{name}/_enable and
// _disable. A user may not disable itself. Replies {}.
func (s *Server) handleSetEnabled(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	enable := r.Pattern == "PUT /_security/user/{name}/_enable" || r.Pattern == "POST /_security/user/{name}/_enable"
	if p, _ := principalOf(r.Context()); !enable && p.Username == name && !p.IsAPIKey() {
		return illegalArgument("users may not update the enabled status of their own account: [%s] is the authenticated user", name)
	}
	found, err := admin.SetEnabled(r.Context(), name, enable)
	if err != nil {
		return err
	}
	if !found {
		return &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception", Reason: fmt.Sprintf("user [%s] does not exist", name)}
	}
	s.writeJSON(w, r, http.StatusOK, struct{}{})
	return nil
}

// handlePutRole serves PUT|POST /_security/role/{name}:
// {"role":{"created":bool}}.
func (s *Server) handlePutRole(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := auth.ValidateRoleName(name); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	role, err := auth.ParseRole(name, body)
	if err != nil {
		return err
	}
	created, err := admin.PutRole(r.Context(), name, role)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"role": map[string]bool{"created": created}})
	return nil
}

// roleView is a role as GET /_security/role answers it.
type roleView struct {
	auth.Role
	Metadata          map[string]any `json:"metadata"`
	TransientMetadata map[string]any `json:"transient_metadata"`
}

func viewRole(r auth.Role, builtin bool) roleView {
	v := roleView{Role: r, Metadata: r.Metadata, TransientMetadata: map[string]any{"enabled": true}}
	if v.Cluster == nil {
		v.Cluster = []string{}
	}
	if v.Indices == nil {
		v.Indices = []auth.IndexPrivileges{}
	}
	if builtin {
		v.Metadata = map[string]any{"_reserved": true}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	return v
}

// handleGetRoles serves GET /_security/role[/{name}]: stored and built-in
// roles; a named role found nowhere is a 404 with {}.
func (s *Server) handleGetRoles(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	out := map[string]roleView{}
	names := splitComma(r.PathValue("name"))
	if len(names) == 0 {
		for n, role := range admin.Roles() {
			out[n] = viewRole(role, false)
		}
		names = auth.BuiltinRoleNames()
	}
	for _, n := range names {
		if role, ok := auth.BuiltinRole(n); ok {
			out[n] = viewRole(role, true)
		} else if role, ok := admin.Role(n); ok {
			out[n] = viewRole(role, false)
		}
	}
	status := http.StatusOK
	if r.PathValue("name") != "" && len(out) == 0 {
		status = http.StatusNotFound
	}
	s.writeJSON(w, r, status, out)
	return nil
}

// handleDeleteRole serves DELETE /_security/role/{name}: {"found": bool}.
func (s *Server) handleDeleteRole(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := auth.ValidateRoleName(name); err != nil {
		return err
	}
	found, err := admin.DeleteRole(r.Context(), name)
	if err != nil {
		return err
	}
	s.writeFound(w, r, found)
	return nil
}

// apiKeyBody is the body of POST /_security/api_key.
type apiKeyBody struct {
	Name            string                     `json:"name"`
	Expiration      string                     `json:"expiration"`
	RoleDescriptors map[string]json.RawMessage `json:"role_descriptors"`
	Metadata        map[string]any             `json:"metadata"`
}

// parseAPIKeyBody parses a create API key body: the expiration as a time
// value ("1d", "30m"), each role descriptor as a role (validated).
func parseAPIKeyBody(body []byte) (auth.CreateAPIKeyRequest, error) {
	var b apiKeyBody
	if err := decodeStrict(body, &b); err != nil {
		return auth.CreateAPIKeyRequest{}, badRequest("x_content_parse_exception", "failed to parse the API key body: %v", err)
	}
	req := auth.CreateAPIKeyRequest{Name: b.Name, Metadata: b.Metadata}
	if b.Name == "" {
		return req, validationErr("api key name is required")
	}
	if b.Expiration != "" {
		d, err := parseTimeValue(b.Expiration)
		if err != nil {
			return req, err
		}
		if d <= 0 {
			return req, validationErr("api key expiration must be positive, got [" + b.Expiration + "]")
		}
		req.Expiration = d
	}
	if len(b.RoleDescriptors) > 0 {
		req.RoleDescriptors = make(map[string]auth.Role, len(b.RoleDescriptors))
		for name, raw := range b.RoleDescriptors {
			role, err := auth.ParseRole(name, raw)
			if err != nil {
				return req, err
			}
			req.RoleDescriptors[name] = role
		}
	}
	return req, nil
}

// handleCreateAPIKey serves POST|PUT /_security/api_key: a key owned by the
// authenticated user, limited by the user's roles now and by the body's
// role_descriptors. Replies id, name, api_key, encoded (and expiration).
func (s *Server) handleCreateAPIKey(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	if err := s.authorizeCluster(r.Context(), func(p auth.Principal) error { return auth.CheckOwnAPIKeys(p, auth.ActionCreateAPIKey) }, auth.ActionCreateAPIKey); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := parseAPIKeyBody(body)
	if err != nil {
		return err
	}
	p, _ := principalOf(r.Context())
	k, created, err := auth.NewAPIKey(req, p, s.sec.cfg.Authenticator.RoleDescriptors(p.Roles), s.sec.cfg.Now())
	if err != nil {
		return err
	}
	if err := admin.CreateAPIKey(r.Context(), k); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, created)
	return nil
}

// ownsKey reports whether k is p's: the key p authenticated with, or one
// its user created.
func ownsKey(p auth.Principal, k auth.APIKey) bool {
	if p.IsAPIKey() {
		return k.ID == p.APIKeyID
	}
	return k.Owner == p.Username && k.Realm == p.Realm
}

// apiKeyFilter selects API keys, as GET and DELETE /_security/api_key do.
type apiKeyFilter struct {
	IDs      []string
	Name     string
	Owner    bool
	Username string
	Realm    string
}

func (f apiKeyFilter) matches(p auth.Principal, k auth.APIKey) bool {
	switch {
	case len(f.IDs) > 0 && !slices.Contains(f.IDs, k.ID):
		return false
	case f.Name != "" && !globName(f.Name, k.Name):
		return false
	case f.Owner && !ownsKey(p, k):
		return false
	case f.Username != "" && k.Owner != f.Username:
		return false
	case f.Realm != "" && k.Realm != f.Realm:
		return false
	}
	return true
}

// globName matches an API key name against a name that may end in *, as
// Elasticsearch's name filter does.
func globName(pattern, name string) bool {
	if n := len(pattern); n > 0 && pattern[n-1] == '*' {
		return len(name) >= n-1 && name[:n-1] == pattern[:n-1]
	}
	return pattern == name
}

// selectKeys returns the keys f matches that p may see with action: every
// key with manage_api_key (or manage_security), else p's own, else a 403.
// A request that names keys (ids) of others without the privilege is a 403
// too, rather than an answer that leaves them out.
func (s *Server) selectKeys(ctx context.Context, admin SecurityAdmin, action auth.Action, f apiKeyFilter) ([]auth.APIKey, error) {
	p, _ := principalOf(ctx)
	all := true
	err := s.authorizeCluster(ctx, func(p auth.Principal) error {
		if f.Owner || auth.CheckCluster(p, action) != nil {
			all = false
			if err := auth.CheckOwnAPIKeys(p, action); err != nil {
				return err
			}
			for _, id := range f.IDs {
				if k, ok := admin.APIKey(id); ok && !ownsKey(p, k) {
					return auth.CheckCluster(p, action)
				}
			}
		}
		return nil
	}, action)
	if err != nil {
		return nil, err
	}
	var out []auth.APIKey
	for _, k := range admin.APIKeys() {
		if f.matches(p, k) && (all || ownsKey(p, k)) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Created.Before(out[j].Created) || (out[i].Created.Equal(out[j].Created) && out[i].ID < out[j].ID)
	})
	return out, nil
}

// handleGetAPIKeys serves GET /_security/api_key: {"api_keys":[...]}.
func (s *Server) handleGetAPIKeys(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := apiKeyFilter{Name: q.Get("name"), Username: q.Get("username"), Realm: q.Get("realm_name")}
	if id := q.Get("id"); id != "" {
		f.IDs = []string{id}
	}
	if f.Owner, err = queryBool(q, "owner", false); err != nil {
		return err
	}
	withLimitedBy, err := queryBool(q, "with_limited_by", false)
	if err != nil {
		return err
	}
	activeOnly, err := queryBool(q, "active_only", false)
	if err != nil {
		return err
	}
	keys, err := s.selectKeys(r.Context(), admin, auth.ActionGetAPIKey, f)
	if err != nil {
		return err
	}
	views := make([]auth.APIKeyView, 0, len(keys))
	now := s.sec.cfg.Now()
	for _, k := range keys {
		if activeOnly && (k.Invalidated || k.Expired(now)) {
			continue
		}
		views = append(views, k.View(withLimitedBy))
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"api_keys": views})
	return nil
}

// invalidateBody is the body of DELETE /_security/api_key.
type invalidateBody struct {
	ID       string   `json:"id"`
	IDs      []string `json:"ids"`
	Name     string   `json:"name"`
	Owner    bool     `json:"owner"`
	Username string   `json:"username"`
	Realm    string   `json:"realm_name"`
}

// parseInvalidateBody parses an invalidate API keys body: at least one of
// id, ids, name, owner, username, realm_name; id and ids not both.
func parseInvalidateBody(body []byte) (apiKeyFilter, error) {
	var b invalidateBody
	if err := decodeStrict(body, &b); err != nil {
		return apiKeyFilter{}, badRequest("x_content_parse_exception", "failed to parse the invalidate API key body: %v", err)
	}
	if b.ID != "" && len(b.IDs) > 0 {
		return apiKeyFilter{}, validationErr("only one of [api key id, api key ids] can be specified")
	}
	f := apiKeyFilter{IDs: b.IDs, Name: b.Name, Owner: b.Owner, Username: b.Username, Realm: b.Realm}
	if b.ID != "" {
		f.IDs = []string{b.ID}
	}
	for _, id := range f.IDs {
		if id == "" {
			return apiKeyFilter{}, validationErr("api key ids must not be empty")
		}
	}
	if len(f.IDs) == 0 && f.Name == "" && !f.Owner && f.Username == "" && f.Realm == "" {
		return apiKeyFilter{}, validationErr("One of [api key id(s), api key name, username, realm name] must be specified if [owner] flag is false")
	}
	return f, nil
}

// handleInvalidateAPIKeys serves DELETE /_security/api_key.
func (s *Server) handleInvalidateAPIKeys(w http.ResponseWriter, r *http.Request) error {
	admin, err := s.admin()
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	f, err := parseInvalidateBody(body)
	if err != nil {
		return err
	}
	keys, err := s.selectKeys(r.Context(), admin, auth.ActionInvalidateAPIKey, f)
	if err != nil {
		return err
	}
	invalidated, previously := []string{}, []string{}
	for _, k := range keys {
		if k.Invalidated {
			previously = append(previously, k.ID)
		} else {
			invalidated = append(invalidated, k.ID)
		}
	}
	if len(invalidated) > 0 {
		if err := admin.InvalidateAPIKeys(r.Context(), invalidated); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"invalidated_api_keys": invalidated, "previously_invalidated_api_keys": previously, "error_count": 0,
	})
	return nil
}
