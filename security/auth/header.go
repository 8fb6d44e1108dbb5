package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxAuthorizationLength bounds the Authorization header value that
// ParseAuthorization accepts. A username is at most 507 bytes
// (MaxNameLength) and a password at most 72 (MaxPasswordLength), so 4 KiB of
// base64 leaves room for any legitimate value while a huge header is
// refused before it is decoded.
const MaxAuthorizationLength = 4096

var (
	// ErrNoCredentials is returned by ParseAuthorization for an empty
	// header: the request carries no credentials (a 401 "missing
	// authentication credentials").
	ErrNoCredentials = errors.New("auth: the request has no Authorization header")
	// ErrMalformedCredentials is wrapped by every *CredentialsError: the
	// header is present but is not a well-formed Basic or ApiKey value.
	ErrMalformedCredentials = errors.New("auth: malformed Authorization header")
)

// CredentialsError reports an Authorization header that could not be
// parsed. Reason is Elasticsearch's wording where it has one ("invalid basic
// authentication header encoding") and never contains the secret.
type CredentialsError struct {
	Scheme string // "Basic", "ApiKey", or the unsupported scheme as sent (truncated)
	Reason string
}

func (e *CredentialsError) Error() string { return "auth: " + e.Reason }

// Unwrap makes errors.Is(err, ErrMalformedCredentials) hold.
func (e *CredentialsError) Unwrap() error { return ErrMalformedCredentials }

// Kind tells which scheme a Credentials value came in.
type Kind int

const (
	// KindBasic is `Authorization: Basic base64(username:password)`.
	KindBasic Kind = iota + 1
	// KindAPIKey is `Authorization: ApiKey base64(id:api_key)`.
	KindAPIKey
)

func (k Kind) String() string {
	switch k {
	case KindBasic:
		return "Basic"
	case KindAPIKey:
		return "ApiKey"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Credentials are what a request presents. For KindBasic, Username and
// Password are set; for KindAPIKey, APIKeyID and APIKeySecret.
type Credentials struct {
	Kind         Kind
	Username     string
	Password     Secret
	APIKeyID     string
	APIKeySecret Secret
}

// BasicCredentials builds KindBasic credentials (for callers that have the
// pair already, as searchctl and tests do).
func BasicCredentials(username, password string) Credentials {
	return Credentials{Kind: KindBasic, Username: username, Password: Secret(password)}
}

// APIKeyCredentials builds KindAPIKey credentials.
func APIKeyCredentials(id, secret string) Credentials {
	return Credentials{Kind: KindAPIKey, APIKeyID: id, APIKeySecret: Secret(secret)}
}

// Header returns the Authorization header value that carries c: the
// inverse of ParseAuthorization.
func (c Credentials) Header() string {
	switch c.Kind {
	case KindBasic:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password.Reveal()))
	case KindAPIKey:
		return "ApiKey " + EncodeAPIKey(c.APIKeyID, c.APIKeySecret.Reveal())
	}
	return ""
}

// EncodeAPIKey is base64(id:secret), the "encoded" value Elasticsearch
// returns when a key is created and clients send after "ApiKey ".
func EncodeAPIKey(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))
}

// ParseAuthorization parses an Authorization header value. The scheme
// (Basic or ApiKey) is matched case-insensitively and must be followed by
// exactly one space and a padded standard base64 value that decodes to
// "name:secret", where the name is non-empty, and both are valid UTF-8
// without control characters (the secret may contain ':'). Values longer
// than MaxAuthorizationLength are refused before decoding.
//
// It returns ErrNoCredentials for "", and a *CredentialsError (which wraps
// ErrMalformedCredentials) for anything else it refuses, including an
// unsupported scheme. Both mean 401.
func ParseAuthorization(header string) (Credentials, error) {
	if header == "" {
		return Credentials{}, ErrNoCredentials
	}
	if len(header) > MaxAuthorizationLength {
		return Credentials{}, &CredentialsError{Reason: fmt.Sprintf("the Authorization header is %d bytes, more than the limit of %d", len(header), MaxAuthorizationLength)}
	}
	scheme, value, ok := strings.Cut(header, " ")
	var kind Kind
	switch {
	case strings.EqualFold(scheme, "Basic"):
		kind = KindBasic
	case strings.EqualFold(scheme, "ApiKey"):
		kind = KindAPIKey
	default:
		return Credentials{}, &CredentialsError{Scheme: printable(scheme, 32), Reason: fmt.Sprintf("unsupported authentication scheme [%s]; send Basic or ApiKey credentials", printable(scheme, 32))}
	}
	bad := func(what string) error {
		if kind == KindBasic {
			return &CredentialsError{Scheme: "Basic", Reason: "invalid basic authentication header " + what}
		}
		return &CredentialsError{Scheme: "ApiKey", Reason: "invalid ApiKey value: " + what}
	}
	if !ok || value == "" {
		return Credentials{}, bad("value: nothing follows the scheme")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(value)
	if err != nil {
		return Credentials{}, bad("encoding")
	}
	name, secret, ok := strings.Cut(string(raw), ":")
	switch {
	case !ok:
		return Credentials{}, bad("value: no ':' between name and secret")
	case name == "":
		return Credentials{}, bad("value: the name before ':' is empty")
	case !clean(name) || !clean(secret):
		return Credentials{}, bad("value: not UTF-8 or has control characters")
	}
	if kind == KindBasic {
		return BasicCredentials(name, secret), nil
	}
	if secret == "" {
		return Credentials{}, bad("value: the key after ':' is empty")
	}
	return APIKeyCredentials(name, secret), nil
}

// clean reports whether s is valid UTF-8 without control characters.
func clean(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// printable returns s cut to max bytes with anything but printable ASCII
// replaced by '?', safe to put in an error message.
func printable(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
