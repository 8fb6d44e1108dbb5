package auth

import (
	"errors"
	"net/http"
)

// WWWAuthenticate returns the WWW-Authenticate header values of a 401, in
// Elasticsearch's order: Basic with its realm, then ApiKey.
func WWWAuthenticate() []string {
	return []string{`Basic realm="security", charset="UTF-8"`, "ApiKey"}
}

// ErrorCause is one element of an Elasticsearch error: the body of
// "error" and of each "root_cause".
type ErrorCause struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
	// Header carries the WWW-Authenticate values of a 401, as
	// Elasticsearch repeats them in the body.
	Header map[string][]string `json:"header,omitempty"`
}

// ErrorBody is the "error" object.
type ErrorBody struct {
	RootCause []ErrorCause `json:"root_cause"`
	ErrorCause
}

// ErrorResponse is an Elasticsearch error reply:
//
//	{"error":{"root_cause":[{"type":"security_exception","reason":..}],"type":"security_exception","reason":..},"status":401}
type ErrorResponse struct {
	Error  ErrorBody `json:"error"`
	Status int       `json:"status"`
}

func securityException(status int, reason string, header map[string][]string) ErrorResponse {
	c := ErrorCause{Type: "security_exception", Reason: reason, Header: header}
	return ErrorResponse{Error: ErrorBody{RootCause: []ErrorCause{c}, ErrorCause: c}, Status: status}
}

// UnauthorizedResponse is the 401 body with reason, carrying the
// WWW-Authenticate values; send them as headers too (WWWAuthenticate).
func UnauthorizedResponse(reason string) ErrorResponse {
	return securityException(http.StatusUnauthorized, reason, map[string][]string{"WWW-Authenticate": WWWAuthenticate()})
}

// ForbiddenResponse is the 403 body with reason.
func ForbiddenResponse(reason string) ErrorResponse {
	return securityException(http.StatusForbidden, reason, nil)
}

// UnauthenticatedReason is Elasticsearch's 401 reason for a request to
// path that ParseAuthorization or Authenticate refused (err), where creds
// are what ParseAuthorization returned:
//
//   - no header: "missing authentication credentials for REST request [path]"
//   - Basic refused: "unable to authenticate user [bob] for REST request [path]"
//   - ApiKey refused: "unable to authenticate with provided credentials and anonymous access is not allowed for this request"
//   - a malformed header: the parser's reason.
func UnauthenticatedReason(path string, creds Credentials, err error) string {
	var ce *CredentialsError
	switch {
	case errors.Is(err, ErrNoCredentials):
		return "missing authentication credentials for REST request [" + path + "]"
	case errors.As(err, &ce):
		return ce.Reason
	case creds.Kind == KindBasic:
		return "unable to authenticate user [" + creds.Username + "] for REST request [" + path + "]"
	}
	return "unable to authenticate with provided credentials and anonymous access is not allowed for this request"
}

// ResponseFor maps an error of this package to its status and body: 401
// for ErrNoCredentials, ErrMalformedCredentials and
// ErrAuthenticationFailed (path and creds make the reason, see
// UnauthenticatedReason), 403 for ErrForbidden. ok is false for any other
// error, which is not this package's to answer.
func ResponseFor(err error, path string, creds Credentials) (resp ErrorResponse, ok bool) {
	var fe *ForbiddenError
	switch {
	case errors.As(err, &fe):
		return ForbiddenResponse(fe.Error()), true
	case errors.Is(err, ErrForbidden):
		return ForbiddenResponse(err.Error()), true
	case errors.Is(err, ErrNoCredentials), errors.Is(err, ErrMalformedCredentials), errors.Is(err, ErrAuthenticationFailed):
		return UnauthorizedResponse(UnauthenticatedReason(path, creds, err)), true
	}
	return ErrorResponse{}, false
}

// RealmRef names a realm in _authenticate.
type RealmRef struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// APIKeyRef names the API key in _authenticate.
type APIKeyRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// AuthenticateInfo is the reply of GET /_security/_authenticate.
type AuthenticateInfo struct {
	Username            string         `json:"username"`
	Roles               []string       `json:"roles"`
	FullName            *string        `json:"full_name"`
	Email               *string        `json:"email"`
	Metadata            map[string]any `json:"metadata"`
	Enabled             bool           `json:"enabled"`
	AuthenticationRealm RealmRef       `json:"authentication_realm"`
	LookupRealm         RealmRef       `json:"lookup_realm"`
	AuthenticationType  string         `json:"authentication_type"`
	APIKey              *APIKeyRef     `json:"api_key,omitempty"`
}

// Authenticated returns the _authenticate reply for p, in Elasticsearch's
// shape: the native realm is named "default_native"; an API key shows no
// roles and the "_es_api_key" realm.
func Authenticated(p Principal) AuthenticateInfo {
	info := AuthenticateInfo{Username: p.Username, Roles: nonNil(p.Roles), Metadata: p.Metadata, Enabled: true, AuthenticationType: "realm"}
	if p.FullName != "" {
		info.FullName = &p.FullName
	}
	if p.Email != "" {
		info.Email = &p.Email
	}
	switch p.Realm {
	case RealmNative:
		info.AuthenticationRealm = RealmRef{Name: "default_native", Type: RealmNative}
	case RealmReserved:
		info.AuthenticationRealm = RealmRef{Name: RealmReserved, Type: RealmReserved}
		info.Metadata = map[string]any{"_reserved": true}
	case RealmAPIKey:
		info.AuthenticationRealm = RealmRef{Name: RealmAPIKey, Type: RealmAPIKey}
		info.AuthenticationType = "api_key"
		info.Roles = []string{}
		info.APIKey = &APIKeyRef{ID: p.APIKeyID, Name: p.APIKeyName}
	}
	info.LookupRealm = info.AuthenticationRealm
	if info.Metadata == nil {
		info.Metadata = map[string]any{}
	}
	return info
}
