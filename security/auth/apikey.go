package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidAPIKeyRequest is wrapped by NewAPIKey's refusals.
var ErrInvalidAPIKeyRequest = errors.New("auth: invalid API key request")

// CreateAPIKeyRequest is the body of POST /_security/api_key, with the
// expiration already parsed from Elasticsearch's time value ("1d").
type CreateAPIKeyRequest struct {
	Name string
	// Expiration is the key's lifetime from now; 0 means it never
	// expires.
	Expiration time.Duration
	// RoleDescriptors narrow the key below its owner; none means the
	// owner's privileges.
	RoleDescriptors map[string]Role
	Metadata        map[string]any
}

// CreatedAPIKey is the answer to POST /_security/api_key. APIKey is the
// secret, shown this once; Encoded is base64(id:api_key) for the
// Authorization header.
type CreatedAPIKey struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Expiration *int64 `json:"expiration,omitempty"`
	APIKey     string `json:"api_key"`
	Encoded    string `json:"encoded"`
}

// apiKeySecretBytes is the entropy of a key's secret: 256 bits.
const apiKeySecretBytes = 32

// NewAPIKey makes a key for owner, who must be a user (not an API key):
// a random 20-character id, a random 256-bit secret, and the record to keep
// in the cluster state, which holds only the secret's SHA-256. ownerRoles
// are the owner's role descriptors now (Authenticator.RoleDescriptors):
// the key is limited by this snapshot for its whole life, as in
// Elasticsearch.
func NewAPIKey(req CreateAPIKeyRequest, owner Principal, ownerRoles map[string]Role, now time.Time) (APIKey, CreatedAPIKey, error) {
	switch {
	case owner.IsAPIKey():
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("%w: API key [%s] cannot create API keys; authenticate as user [%s]", ErrInvalidAPIKeyRequest, owner.APIKeyID, owner.Username)
	case owner.Username == "":
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("%w: no owner", ErrInvalidAPIKeyRequest)
	case req.Name == "" || len(req.Name) > 1024:
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("%w: api key name [%s] must be 1 to 1024 characters", ErrInvalidAPIKeyRequest, printable(req.Name, 64))
	case req.Expiration < 0:
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("%w: expiration [%s] is negative", ErrInvalidAPIKeyRequest, req.Expiration)
	}
	for name, r := range req.RoleDescriptors {
		if err := r.Validate(); err != nil {
			return APIKey{}, CreatedAPIKey{}, fmt.Errorf("%w: role descriptor [%s]: %w", ErrInvalidAPIKeyRequest, name, err)
		}
	}
	idBytes := make([]byte, 15)
	secretBytes := make([]byte, apiKeySecretBytes)
	if _, err := rand.Read(idBytes); err != nil {
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("auth: generating an API key id: %w", err)
	}
	if _, err := rand.Read(secretBytes); err != nil {
		return APIKey{}, CreatedAPIKey{}, fmt.Errorf("auth: generating an API key secret: %w", err)
	}
	id := base64.RawURLEncoding.EncodeToString(idBytes)
	secret := base64.RawURLEncoding.EncodeToString(secretBytes)
	k := APIKey{
		ID: id, Name: req.Name, Hash: HashAPIKeySecret(secret), Owner: owner.Username, Realm: owner.Realm,
		Created: now.UTC(), RoleDescriptors: req.RoleDescriptors, LimitedBy: ownerRoles, Metadata: req.Metadata,
	}
	if k.LimitedBy == nil {
		k.LimitedBy = map[string]Role{}
	}
	c := CreatedAPIKey{ID: id, Name: req.Name, APIKey: secret, Encoded: EncodeAPIKey(id, secret)}
	if req.Expiration > 0 {
		k.Expiration = k.Created.Add(req.Expiration)
		ms := k.Expiration.UnixMilli()
		c.Expiration = &ms
	}
	return k, c, nil
}

// HashAPIKeySecret returns the hex SHA-256 of an API key secret, the form
// kept in APIKey.Hash.
//
// A plain SHA-256 is enough here, unlike for passwords: the secret is 256
// random bits, so a leaked hash cannot be reversed by guessing, and the
// slow hashes (bcrypt) exist only to slow the guessing of low-entropy
// human passwords. Being fast, it needs no cache in front of it.
func HashAPIKeySecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// apiKeySecretMatches compares in constant time.
func apiKeySecretMatches(hash, secret string) bool {
	want, err := hex.DecodeString(hash)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	got := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(want, got[:]) == 1
}
