package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Realm names, as Elasticsearch reports them in _authenticate and the audit
// log.
const (
	// RealmNative is the realm of users kept in the cluster state.
	RealmNative = "native"
	// RealmReserved is the realm of the built-in users (elastic), also
	// kept in the cluster state but not deletable.
	RealmReserved = "reserved"
	// RealmAPIKey is the realm of a request authenticated by an API key;
	// the key's owner is the principal's Username.
	RealmAPIKey = "_es_api_key"
)

// User is a native or reserved user as the cluster state keeps it. Only the
// password's hash is kept; View is the shape to show.
type User struct {
	Username     string         `json:"username"`
	PasswordHash string         `json:"password_hash,omitempty"`
	Roles        []string       `json:"roles"`
	FullName     string         `json:"full_name,omitempty"`
	Email        string         `json:"email,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Enabled      bool           `json:"enabled"`
}

// UserView is a User as GET /_security/user answers it: no password hash.
type UserView struct {
	Username string         `json:"username"`
	Roles    []string       `json:"roles"`
	FullName *string        `json:"full_name"`
	Email    *string        `json:"email"`
	Metadata map[string]any `json:"metadata"`
	Enabled  bool           `json:"enabled"`
}

// View returns u without its password hash, with Elasticsearch's nulls for
// an unset full name and email and {"_reserved":true} metadata for
// reserved users.
func (u User) View() UserView {
	v := UserView{Username: u.Username, Roles: nonNil(u.Roles), Metadata: u.Metadata, Enabled: u.Enabled}
	if u.FullName != "" {
		v.FullName = &u.FullName
	}
	if u.Email != "" {
		v.Email = &u.Email
	}
	if IsReservedUser(u.Username) {
		v.Metadata = map[string]any{"_reserved": true}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	return v
}

// Role is Elasticsearch's role descriptor:
//
//	{"cluster":["monitor"],"indices":[{"names":["logs-*"],"privileges":["read"]}]}
//
// Privilege names are the predefined ones (ClusterPrivilegeNames,
// IndexPrivilegeNames) or patterns over action names ("indices:data/read/*").
type Role struct {
	Cluster  []string          `json:"cluster"`
	Indices  []IndexPrivileges `json:"indices"`
	Metadata map[string]any    `json:"metadata,omitempty"`
}

// IndexPrivileges grants Privileges on the indices Names match. A name is an
// exact index name, a pattern with * and ?, or a /regular expression/ in Go's
// RE2 syntax (Elasticsearch uses Lucene's; the common subset agrees) that
// must match the whole name.
type IndexPrivileges struct {
	Names      []string `json:"names"`
	Privileges []string `json:"privileges"`
}

// UnmarshalJSON accepts a single string for names and privileges as well as
// an array, as Elasticsearch's role parser does, and refuses unknown fields.
func (ip *IndexPrivileges) UnmarshalJSON(b []byte) error {
	var raw struct {
		Names      stringOrSlice `json:"names"`
		Privileges stringOrSlice `json:"privileges"`
	}
	if err := strictUnmarshal(b, &raw); err != nil {
		return err
	}
	ip.Names, ip.Privileges = raw.Names, raw.Privileges
	return nil
}

type stringOrSlice []string

func (s *stringOrSlice) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}

// ErrInvalidRole is wrapped by the errors of ParseRole and Role.Validate.
var ErrInvalidRole = errors.New("auth: invalid role")

// ParseRole parses the body of PUT /_security/role/{name}: unknown fields
// are refused, as Elasticsearch does, and the role is validated.
func ParseRole(name string, body []byte) (Role, error) {
	var r Role
	if err := strictUnmarshal(body, &r); err != nil {
		return Role{}, fmt.Errorf("%w: failed to parse role [%s]: %v", ErrInvalidRole, name, err)
	}
	if err := r.Validate(); err != nil {
		return Role{}, fmt.Errorf("role [%s]: %w", name, err)
	}
	return r, nil
}

// Validate checks that every privilege is known (or a pattern over the
// actions of its kind) and every index name pattern compiles. It is what a
// PUT role must call before the role is proposed to the cluster state.
func (r Role) Validate() error {
	_, err := compileRole(r)
	return err
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// APIKey is an API key as the cluster state keeps it. Only the SHA-256 of
// its secret is kept (see HashAPIKeySecret). RoleDescriptors are the roles
// given at creation (none: the key has its owner's privileges); LimitedBy is
// the owner's roles as they were when the key was created. The key may do
// what both allow.
type APIKey struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Hash            string          `json:"hash"`
	Owner           string          `json:"owner"`
	Realm           string          `json:"realm"`
	Created         time.Time       `json:"created"`
	Expiration      time.Time       `json:"expiration,omitzero"`
	Invalidated     bool            `json:"invalidated"`
	RoleDescriptors map[string]Role `json:"role_descriptors,omitempty"`
	LimitedBy       map[string]Role `json:"limited_by"`
	Metadata        map[string]any  `json:"metadata,omitempty"`
}

// APIKeyView is an API key as GET /_security/api_key answers it (times in
// epoch milliseconds, no hash).
type APIKeyView struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Creation        int64             `json:"creation"`
	Expiration      *int64            `json:"expiration,omitempty"`
	Invalidated     bool              `json:"invalidated"`
	Username        string            `json:"username"`
	Realm           string            `json:"realm"`
	Metadata        map[string]any    `json:"metadata"`
	RoleDescriptors map[string]Role   `json:"role_descriptors"`
	LimitedBy       []map[string]Role `json:"limited_by,omitempty"`
}

// View returns k in the shape of GET /_security/api_key. limitedBy says
// whether to include the owner's roles, as ?with_limited_by=true asks.
func (k APIKey) View(limitedBy bool) APIKeyView {
	v := APIKeyView{
		ID: k.ID, Name: k.Name, Creation: k.Created.UnixMilli(), Invalidated: k.Invalidated,
		Username: k.Owner, Realm: k.Realm, Metadata: k.Metadata, RoleDescriptors: k.RoleDescriptors,
	}
	if !k.Expiration.IsZero() {
		ms := k.Expiration.UnixMilli()
		v.Expiration = &ms
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	if v.RoleDescriptors == nil {
		v.RoleDescriptors = map[string]Role{}
	}
	if limitedBy {
		v.LimitedBy = []map[string]Role{k.LimitedBy}
	}
	return v
}

// Expired reports whether k has an expiration at or before now.
func (k APIKey) Expired(now time.Time) bool {
	return !k.Expiration.IsZero() && !now.Before(k.Expiration)
}

// MaxNameLength is the longest user or role name, as in Elasticsearch.
const MaxNameLength = 507

// ErrInvalidName is wrapped by ValidateUsername and ValidateRoleName.
var ErrInvalidName = errors.New("auth: invalid name")

// ValidateUsername applies Elasticsearch's rule for native user names: 1 to
// 507 characters of printable Basic Latin (letters, digits, spaces,
// punctuation, symbols), no leading or trailing whitespace, and not a
// reserved user (those are changed only through their own APIs).
func ValidateUsername(name string) error {
	if err := validateName("username", name); err != nil {
		return err
	}
	if IsReservedUser(name) {
		return fmt.Errorf("%w: user [%s] is reserved and only the password can be changed", ErrInvalidName, name)
	}
	return nil
}

// ValidateRoleName is ValidateUsername's rule for role names; built-in
// roles are refused.
func ValidateRoleName(name string) error {
	if err := validateName("role name", name); err != nil {
		return err
	}
	if _, ok := BuiltinRole(name); ok {
		return fmt.Errorf("%w: role [%s] is reserved and cannot be modified", ErrInvalidName, name)
	}
	return nil
}

func validateName(what, name string) error {
	ok := len(name) >= 1 && len(name) <= MaxNameLength && name[0] != ' ' && name[len(name)-1] != ' '
	for i := 0; ok && i < len(name); i++ {
		ok = name[i] >= 0x20 && name[i] <= 0x7e
	}
	if !ok {
		return fmt.Errorf("%w: invalid %s [%s]; it must be 1 to %d printable Basic Latin characters (letters, digits, spaces, punctuation and symbols) without leading or trailing whitespace",
			ErrInvalidName, what, printable(name, 64), MaxNameLength)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
