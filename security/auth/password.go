package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/bcrypt"
)

// MinPasswordLength is Elasticsearch's minimum password length.
const MinPasswordLength = 6

// MaxPasswordLength is bcrypt's limit: it reads at most 72 bytes, so a
// longer password would be silently cut; it is refused instead.
const MaxPasswordLength = 72

// ErrPasswordPolicy is wrapped by ValidatePassword's errors. The HTTP API
// answers it with 400 action_request_validation_exception and the reason
// "Validation Failed: 1: <message>;", as Elasticsearch does.
var ErrPasswordPolicy = errors.New("auth: password refused by the password policy")

type policyError struct{ msg string }

func (e *policyError) Error() string { return e.msg }
func (e *policyError) Unwrap() error { return ErrPasswordPolicy }

// ValidatePassword applies the password policy: at least
// MinPasswordLength characters (Elasticsearch's message: "passwords must be
// at least [6] characters long") and at most MaxPasswordLength bytes.
func ValidatePassword(password string) error {
	if n := len([]rune(password)); n < MinPasswordLength {
		return &policyError{fmt.Sprintf("passwords must be at least [%d] characters long", MinPasswordLength)}
	}
	if len(password) > MaxPasswordLength {
		return &policyError{fmt.Sprintf("passwords must be at most [%d] bytes long, the most bcrypt reads; this one is %d", MaxPasswordLength, len(password))}
	}
	return nil
}

// PasswordHasher hashes passwords and checks them against a hash. It must
// be safe for concurrent use.
type PasswordHasher interface {
	// Hash returns a hash of password to keep in User.PasswordHash.
	Hash(password string) (string, error)
	// Compare returns nil when password matches hash, an error otherwise
	// (also for a malformed hash). It takes as long for a wrong password
	// as for a right one.
	Compare(hash, password string) error
}

// BcryptHasher is the PasswordHasher of Weft, bcrypt as Elasticsearch's
// default. Cost 0 means bcrypt.DefaultCost (10, Elasticsearch's default);
// tests use bcrypt.MinCost.
type BcryptHasher struct{ Cost int }

var _ PasswordHasher = BcryptHasher{}

// Hash returns the bcrypt hash of password ($2a$...).
func (h BcryptHasher) Hash(password string) (string, error) {
	cost := h.Cost
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	b, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("auth: hashing a password with bcrypt cost %d: %w", cost, err)
	}
	return string(b), nil
}

// Compare checks password against a bcrypt hash.
func (BcryptHasher) Compare(hash, password string) error {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password))
}

// GeneratedPasswordLength is the length of GeneratePassword's passwords.
const GeneratedPasswordLength = 20

// passwordAlphabet is letters, digits and two marks that need no quoting
// in a shell or a URL, so the printed password pastes as is.
const passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// GeneratePassword returns a random password of GeneratedPasswordLength
// characters from crypto/rand, each uniform over 64 symbols (120 bits),
// for the bootstrap elastic password.
func GeneratePassword() (string, error) {
	b := make([]byte, GeneratedPasswordLength)
	max := big.NewInt(int64(len(passwordAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("auth: generating a password: %w", err)
		}
		b[i] = passwordAlphabet[n.Int64()]
	}
	return string(b), nil
}
