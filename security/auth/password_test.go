package auth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

func TestValidatePassword(t *testing.T) {
	for _, tc := range []struct {
		name, password, err string
	}{
		{name: "six characters", password: "abcdef"},
		{name: "six multibyte characters", password: "ääääää"},
		{name: "seventy-two bytes", password: strings.Repeat("x", 72)},
		{name: "empty", password: "", err: "passwords must be at least [6] characters long"},
		{name: "five characters", password: "abcde", err: "passwords must be at least [6] characters long"},
		{name: "five multibyte characters are ten bytes but five characters", password: "ääääå", err: "passwords must be at least [6] characters long"},
		{name: "seventy-three bytes", password: strings.Repeat("x", 73), err: "at most [72] bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePassword(tc.password)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrPasswordPolicy)
			require.ErrorContains(t, err, tc.err)
		})
	}
	require.EqualError(t, ValidatePassword("abc"), "passwords must be at least [6] characters long", "Elasticsearch's message, word for word")
}

func TestBcryptHasher(t *testing.T) {
	h := BcryptHasher{Cost: bcrypt.MinCost}
	hash, err := h.Hash("correct horse")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(hash, "$2a$04$"), hash)
	require.NotContains(t, hash, "correct horse")
	require.NoError(t, h.Compare(hash, "correct horse"))
	require.Error(t, h.Compare(hash, "correct horsE"))
	require.Error(t, h.Compare("not a hash", "correct horse"))
	again, err := h.Hash("correct horse")
	require.NoError(t, err)
	require.NotEqual(t, hash, again, "salted")
	cost, err := bcrypt.Cost([]byte(mustHash(t, BcryptHasher{}, "pw1234")))
	require.NoError(t, err)
	require.Equal(t, 10, cost, "the zero BcryptHasher uses Elasticsearch's default cost")
}

func mustHash(t *testing.T, h PasswordHasher, pw string) string {
	t.Helper()
	s, err := h.Hash(pw)
	require.NoError(t, err)
	return s
}

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		pw, err := GeneratePassword()
		require.NoError(t, err)
		require.Len(t, pw, GeneratedPasswordLength)
		require.NoError(t, ValidatePassword(pw))
		for _, c := range pw {
			require.True(t, strings.ContainsRune(passwordAlphabet, c), "%q", c)
		}
		require.False(t, seen[pw], "repeated password")
		seen[pw] = true
	}
	// Over 200×20 draws from 64 symbols every symbol shows (the chance one
	// is missing is below 64·(63/64)^4000, about 1e-25).
	used := map[rune]bool{}
	for pw := range seen {
		for _, c := range pw {
			used[c] = true
		}
	}
	require.Len(t, used, len(passwordAlphabet))
}
