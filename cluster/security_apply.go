package cluster

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/crypto/bcrypt"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// Bounds on security records.
const (
	// MaxAPIKeyNameBytes bounds an API key's name, as auth.NewAPIKey does.
	MaxAPIKeyNameBytes = 1024
	// bcryptHashBytes is the length of every bcrypt hash ($2a$10$ and 53
	// characters of salt and digest).
	bcryptHashBytes = 60
)

// applySecurity applies the security commands; the other command types
// never reach it.
func (s draft) applySecurity(cmd Command) (Result, error) {
	switch cmd.Type {
	case CmdPutUser:
		return s.putUser(cmd.PutUser)
	case CmdDeleteUser:
		return s.deleteUser(cmd.DeleteUser)
	case CmdChangePassword:
		return Result{}, s.changePassword(cmd.ChangePassword)
	case CmdSetUserEnabled:
		return Result{}, s.setUserEnabled(cmd.SetUserEnabled)
	case CmdPutRole:
		return s.putRole(cmd.PutRole)
	case CmdDeleteRole:
		return s.deleteRole(cmd.DeleteRole)
	case CmdCreateAPIKey:
		return Result{}, s.createAPIKey(cmd.CreateAPIKey)
	case CmdInvalidateAPIKeys:
		return s.invalidateAPIKeys(cmd.InvalidateAPIKeys)
	case CmdSetReservedPassword:
		return Result{}, s.setReservedPassword(cmd.SetReservedPassword)
	}
	return Result{}, fmt.Errorf("%w: command type %q", ErrUnknownCommand, cmd.Type)
}

// editSecurity puts a shallow copy of the security metadata into s, for a
// command to replace one of its maps.
func (s draft) editSecurity() *state.Security {
	sec := &state.Security{}
	if s.Security != nil {
		*sec = *s.Security
	}
	s.Security = sec
	return sec
}

// cloneMap returns a copy of m to change, never nil.
func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return make(map[string]V)
	}
	return maps.Clone(m)
}

// checkPasswordHash refuses anything but a bcrypt hash. Its message never
// quotes the value: a clear password sent by mistake stays out of logs.
func checkPasswordHash(username, hash string) error {
	if len(hash) != bcryptHashBytes {
		return fmt.Errorf("%w: the password of user [%s] must come as a bcrypt hash; the proposing node hashes passwords (auth.BcryptHasher), the cluster state never holds a clear one", ErrInvalidCommand, username)
	}
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		return fmt.Errorf("%w: the password hash of user [%s] is not a well-formed bcrypt hash", ErrInvalidCommand, username)
	}
	return nil
}

// checkUserRoles checks the role names a user is given: they need not
// exist (Elasticsearch ignores unknown ones) but must be names.
func checkUserRoles(u auth.User) error {
	for _, r := range u.Roles {
		if r == "" || len(r) > auth.MaxNameLength {
			return fmt.Errorf("%w: user [%s] has a role name of %d bytes; role names have 1 to %d", ErrInvalidCommand, u.Username, len(r), auth.MaxNameLength)
		}
	}
	return nil
}

func (s draft) putUser(c *PutUser) (Result, error) {
	u := c.User
	if err := auth.ValidateUsername(u.Username); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := checkUserRoles(u); err != nil {
		return Result{}, err
	}
	old, exists := s.Security.User(u.Username)
	switch {
	case u.PasswordHash == "" && !exists:
		return Result{}, fmt.Errorf("%w: user [%s] does not exist: a password must be given to create it", ErrInvalidCommand, u.Username)
	case u.PasswordHash == "":
		u.PasswordHash = old.PasswordHash
	default:
		if err := checkPasswordHash(u.Username, u.PasswordHash); err != nil {
			return Result{}, err
		}
	}
	u.Roles = slices.Clone(u.Roles)
	sec := s.editSecurity()
	sec.Users = cloneMap(sec.Users)
	sec.Users[u.Username] = u
	return Result{Created: !exists}, nil
}

func (s draft) deleteUser(c *DeleteUser) (Result, error) {
	if auth.IsReservedUser(c.Username) {
		return Result{}, fmt.Errorf("%w: user [%s] is reserved and cannot be deleted", ErrInvalidCommand, c.Username)
	}
	if _, ok := s.Security.User(c.Username); !ok {
		return Result{Found: false}, nil
	}
	sec := s.editSecurity()
	sec.Users = cloneMap(sec.Users)
	delete(sec.Users, c.Username)
	return Result{Found: true}, nil
}

func (s draft) changePassword(c *ChangePassword) error {
	if err := checkPasswordHash(c.Username, c.PasswordHash); err != nil {
		return err
	}
	if auth.IsReservedUser(c.Username) {
		s.editReserved(c.Username, func(r *state.ReservedUser) { r.PasswordHash = c.PasswordHash })
		return nil
	}
	return s.editUser(c.Username, func(u *auth.User) { u.PasswordHash = c.PasswordHash })
}

func (s draft) setUserEnabled(c *SetUserEnabled) error {
	if auth.IsReservedUser(c.Username) {
		s.editReserved(c.Username, func(r *state.ReservedUser) { r.Disabled = !c.Enabled })
		return nil
	}
	return s.editUser(c.Username, func(u *auth.User) { u.Enabled = c.Enabled })
}

// editUser changes a copy of a native user and puts it into s.
func (s draft) editUser(name string, change func(*auth.User)) error {
	u, ok := s.Security.User(name)
	if !ok {
		return fmt.Errorf("%w: [%s]; create it with PUT /_security/user/%s", ErrUserNotFound, name, name)
	}
	change(&u)
	sec := s.editSecurity()
	sec.Users = cloneMap(sec.Users)
	sec.Users[name] = u
	return nil
}

// editReserved changes a copy of a reserved user's record and puts it
// into s.
func (s draft) editReserved(name string, change func(*state.ReservedUser)) {
	sec := s.editSecurity()
	sec.Reserved = cloneMap(sec.Reserved)
	r := sec.Reserved[name]
	change(&r)
	sec.Reserved[name] = r
}

func (s draft) setReservedPassword(c *SetReservedPassword) error {
	if !auth.IsReservedUser(c.Username) {
		return fmt.Errorf("%w: user [%s] is not a reserved user", ErrInvalidCommand, c.Username)
	}
	if err := checkPasswordHash(c.Username, c.PasswordHash); err != nil {
		return err
	}
	if c.IfUnset && s.Security != nil && s.Security.Reserved[c.Username].PasswordHash != "" {
		return fmt.Errorf("%w: the password of reserved user [%s] is set already; change it with POST /_security/user/%s/_password or --reset-elastic-password", ErrAlreadySet, c.Username, c.Username)
	}
	s.editReserved(c.Username, func(r *state.ReservedUser) { r.PasswordHash = c.PasswordHash })
	return nil
}

func (s draft) putRole(c *PutRole) (Result, error) {
	if err := auth.ValidateRoleName(c.Name); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	_, exists := s.Security.Role(c.Name)
	sec := s.editSecurity()
	sec.Roles = cloneMap(sec.Roles)
	sec.Roles[c.Name] = c.Role
	return Result{Created: !exists}, nil
}

func (s draft) deleteRole(c *DeleteRole) (Result, error) {
	if err := auth.ValidateRoleName(c.Name); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if _, ok := s.Security.Role(c.Name); !ok {
		return Result{Found: false}, nil
	}
	sec := s.editSecurity()
	sec.Roles = cloneMap(sec.Roles)
	delete(sec.Roles, c.Name)
	return Result{Found: true}, nil
}

func (s draft) createAPIKey(c *CreateAPIKey) error {
	k := c.Key
	if err := checkName("API key ID", k.ID); err != nil {
		return err
	}
	switch {
	case k.Name == "" || len(k.Name) > MaxAPIKeyNameBytes:
		return fmt.Errorf("%w: API key [%s]: its name must have 1 to %d bytes", ErrInvalidCommand, k.ID, MaxAPIKeyNameBytes)
	case k.Owner == "" || len(k.Owner) > auth.MaxNameLength:
		return fmt.Errorf("%w: API key [%s] needs an owner of 1 to %d bytes", ErrInvalidCommand, k.ID, auth.MaxNameLength)
	case k.Realm == "":
		return fmt.Errorf("%w: API key [%s] needs its owner's realm", ErrInvalidCommand, k.ID)
	case k.Invalidated:
		return fmt.Errorf("%w: API key [%s] cannot be created invalidated", ErrInvalidCommand, k.ID)
	case !isSHA256Hex(k.Hash):
		return fmt.Errorf("%w: API key [%s] must come with the hex SHA-256 of its secret (auth.HashAPIKeySecret), never the secret", ErrInvalidCommand, k.ID)
	}
	if old, ok := s.Security.APIKey(k.ID); ok {
		if old.Hash == k.Hash {
			return nil // the same command, retried
		}
		return fmt.Errorf("%w: API key ID [%s] is taken", ErrInvalidCommand, k.ID)
	}
	sec := s.editSecurity()
	sec.APIKeys = cloneMap(sec.APIKeys)
	sec.APIKeys[k.ID] = k
	return nil
}

func isSHA256Hex(h string) bool {
	b, err := hex.DecodeString(h)
	return err == nil && len(b) == 32
}

func (s draft) invalidateAPIKeys(c *InvalidateAPIKeys) (Result, error) {
	if c.Filter.IsZero() {
		return Result{}, fmt.Errorf("%w: invalidating API keys needs ids, name, owner or realm (name \"*\" for every key)", ErrInvalidCommand)
	}
	var res Result
	var sec *state.Security
	for _, k := range s.Security.FindAPIKeys(c.Filter) {
		if k.Invalidated {
			res.PreviouslyInvalidated = append(res.PreviouslyInvalidated, k.ID)
			continue
		}
		if sec == nil {
			sec = s.editSecurity()
			sec.APIKeys = cloneMap(sec.APIKeys)
		}
		k.Invalidated = true
		sec.APIKeys[k.ID] = k
		res.Invalidated = append(res.Invalidated, k.ID)
	}
	return res, nil
}
