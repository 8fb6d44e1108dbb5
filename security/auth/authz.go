package auth

import (
	"errors"
	"strings"
)

// ErrForbidden is wrapped by every *ForbiddenError: the principal is
// authenticated but lacks the privilege (403 security_exception).
var ErrForbidden = errors.New("auth: action is unauthorized")

// ForbiddenError is a denied action. Error returns Elasticsearch's reason,
// e.g.
//
//	action [indices:data/read/search] is unauthorized for user [bob] with effective roles [r1] on indices [secret], this action is granted by the index privileges [read,all]
type ForbiddenError struct {
	Action   Action
	Scope    Scope
	Username string
	// APIKeyID is set when the principal is an API key; the message then
	// names the key rather than the user's roles.
	APIKeyID string
	Roles    []string
	// Indices are the indices the action was refused on; empty for
	// cluster actions and for index actions that name no index.
	Indices []string
	// GrantedBy are the predefined privileges that would allow the
	// action.
	GrantedBy []string
	// Reason, when set, replaces the message (CheckChangePassword).
	Reason string
}

func (e *ForbiddenError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	var b strings.Builder
	b.WriteString("action [" + string(e.Action) + "] is unauthorized for ")
	if e.APIKeyID != "" {
		b.WriteString("API key id [" + e.APIKeyID + "] of user [" + e.Username + "]")
	} else {
		b.WriteString("user [" + e.Username + "] with effective roles [" + strings.Join(e.Roles, ",") + "]")
	}
	if len(e.Indices) > 0 {
		b.WriteString(" on indices [" + strings.Join(e.Indices, ",") + "]")
	}
	if len(e.GrantedBy) > 0 {
		kind := "index"
		if e.Scope == ScopeCluster {
			kind = "cluster"
		}
		b.WriteString(", this action is granted by the " + kind + " privileges [" + strings.Join(e.GrantedBy, ",") + "]")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

func (p Principal) forbidden(action Action, scope Scope, indices []string) *ForbiddenError {
	e := &ForbiddenError{Action: action, Scope: scope, Username: p.Username, APIKeyID: p.APIKeyID, Roles: p.Roles, Indices: indices}
	if scope == ScopeCluster {
		e.GrantedBy = grantingPrivileges(action, clusterPrivileges)
	} else {
		e.GrantedBy = grantingPrivileges(action, indexPrivileges)
	}
	return e
}

// CheckCluster returns nil when p may run the cluster action, else a
// *ForbiddenError. ActionAuthenticate is allowed to every principal.
func CheckCluster(p Principal, action Action) error {
	if action == ActionAuthenticate && p.Username != "" {
		return nil
	}
	if p.Permission.AllowsCluster(action) {
		return nil
	}
	return p.forbidden(action, ScopeCluster, nil)
}

// CheckOwnAPIKeys is CheckCluster for an API key action that the caller
// has restricted to p's own keys (create; get or invalidate with
// owner=true or ids all owned by p): manage_own_api_key is then enough.
// An API key principal may not create keys (Elasticsearch allows only
// derived keys without privileges; Weft refuses them).
func CheckOwnAPIKeys(p Principal, action Action) error {
	if p.IsAPIKey() && action == ActionCreateAPIKey {
		return &ForbiddenError{Action: action, Scope: ScopeCluster, Username: p.Username, APIKeyID: p.APIKeyID,
			Reason: "action [" + string(action) + "] is unauthorized for API key id [" + p.APIKeyID + "] of user [" + p.Username + "]: an API key cannot create API keys; authenticate as the user"}
	}
	if p.Permission.allowsOwnAPIKeys(action) {
		return nil
	}
	return p.forbidden(action, ScopeCluster, nil)
}

// CheckChangePassword allows a user to change its own password (as
// Elasticsearch does, not through an API key) and anyone with
// manage_security to change any user's.
func CheckChangePassword(p Principal, username string) error {
	if p.Username == username && !p.IsAPIKey() && username != "" {
		return nil
	}
	return CheckCluster(p, ActionChangePassword)
}

// CheckIndices returns nil when p may run the index action on every one of
// indices, the concrete names after alias and wildcard resolution. Else it
// returns a *ForbiddenError naming the indices refused. With no indices
// (ActionClosePointInTime, a wildcard that matched nothing) it holds when
// p has the action on some index pattern.
func CheckIndices(p Principal, action Action, indices []string) error {
	if len(indices) == 0 {
		if p.Permission.allowsIndexSomewhere(action) {
			return nil
		}
		return p.forbidden(action, ScopeIndices, nil)
	}
	var denied []string
	for _, ix := range indices {
		if !p.Permission.AllowsIndex(action, ix) {
			denied = append(denied, ix)
		}
	}
	if denied == nil {
		return nil
	}
	return p.forbidden(action, ScopeIndices, denied)
}

// FilterIndices returns the indices p may run the action on, in order: the
// expansion of a wildcard, which in Elasticsearch expands only to indices
// the user may see. It never fails; the caller decides what an empty
// expansion means (allow_no_indices).
func FilterIndices(p Principal, action Action, indices []string) []string {
	out := make([]string, 0, len(indices))
	for _, ix := range indices {
		if p.Permission.AllowsIndex(action, ix) {
			out = append(out, ix)
		}
	}
	return out
}
