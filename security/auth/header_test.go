package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseAuthorization(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		want   Credentials
		err    error  // errors.Is target
		reason string // substring of a *CredentialsError's reason
	}{
		{name: "basic", header: "Basic " + b64("bob:s3cret!"), want: BasicCredentials("bob", "s3cret!")},
		{name: "basic scheme is case-insensitive", header: "bAsIc " + b64("bob:pw"), want: BasicCredentials("bob", "pw")},
		{name: "basic password may contain colons", header: "Basic " + b64("bob:a:b:c"), want: BasicCredentials("bob", "a:b:c")},
		{name: "basic empty password parses (authentication refuses it)", header: "Basic " + b64("bob:"), want: BasicCredentials("bob", "")},
		{name: "basic utf-8 user", header: "Basic " + b64("zoë:pässword"), want: BasicCredentials("zoë", "pässword")},
		{name: "apikey", header: "ApiKey " + b64("id1:key1"), want: APIKeyCredentials("id1", "key1")},
		{name: "apikey scheme is case-insensitive", header: "APIKEY " + b64("id1:key1"), want: APIKeyCredentials("id1", "key1")},
		{name: "empty", header: "", err: ErrNoCredentials},
		{name: "unsupported scheme", header: "Bearer abc", err: ErrMalformedCredentials, reason: "unsupported authentication scheme [Bearer]"},
		{name: "scheme only", header: "Basic", err: ErrMalformedCredentials, reason: "nothing follows the scheme"},
		{name: "scheme and space only", header: "Basic ", err: ErrMalformedCredentials, reason: "nothing follows the scheme"},
		{name: "two spaces", header: "Basic  " + b64("bob:pw"), err: ErrMalformedCredentials, reason: "invalid basic authentication header encoding"},
		{name: "trailing junk", header: "Basic " + b64("bob:pw") + " x", err: ErrMalformedCredentials, reason: "encoding"},
		{name: "not base64", header: "Basic !!!!", err: ErrMalformedCredentials, reason: "invalid basic authentication header encoding"},
		{name: "unpadded base64", header: "Basic " + strings.TrimRight(b64("bob:pw1"), "="), err: ErrMalformedCredentials, reason: "encoding"},
		{name: "url base64 alphabet", header: "Basic " + base64.URLEncoding.EncodeToString([]byte("b?>:~~~")), err: ErrMalformedCredentials, reason: "encoding"},
		{name: "no colon", header: "Basic " + b64("bobpw"), err: ErrMalformedCredentials, reason: "no ':'"},
		{name: "empty user", header: "Basic " + b64(":pw"), err: ErrMalformedCredentials, reason: "name before ':' is empty"},
		{name: "control char in user", header: "Basic " + b64("bo\nb:pw"), err: ErrMalformedCredentials, reason: "control characters"},
		{name: "control char in password", header: "Basic " + b64("bob:p\x00w"), err: ErrMalformedCredentials, reason: "control characters"},
		{name: "invalid utf-8", header: "Basic " + b64("bob:\xff\xfe"), err: ErrMalformedCredentials, reason: "not UTF-8"},
		{name: "apikey empty secret", header: "ApiKey " + b64("id1:"), err: ErrMalformedCredentials, reason: "invalid ApiKey value"},
		{name: "apikey no colon", header: "ApiKey " + b64("id1"), err: ErrMalformedCredentials, reason: "invalid ApiKey value"},
		{name: "too long", header: "Basic " + strings.Repeat("A", MaxAuthorizationLength), err: ErrMalformedCredentials, reason: "more than the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAuthorization(tc.header)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, Credentials{}, got)
				if tc.reason != "" {
					var ce *CredentialsError
					require.ErrorAs(t, err, &ce)
					require.Contains(t, ce.Reason, tc.reason)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want.Password.Reveal(), got.Password.Reveal())
		})
	}
}

func TestCredentialsHeaderRoundTrips(t *testing.T) {
	for _, c := range []Credentials{BasicCredentials("bob", "pw:with:colons"), APIKeyCredentials("VuaCfGcBCdbkQm-e5aOx", "ui2lp2axTNmsyakw9tvNnw")} {
		got, err := ParseAuthorization(c.Header())
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	// Elasticsearch's documented example of an encoded key.
	require.Equal(t, "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==", EncodeAPIKey("VuaCfGcBCdbkQm-e5aOx", "ui2lp2axTNmsyakw9tvNnw"))
}

func TestSecretIsRedactedEverywhere(t *testing.T) {
	c := BasicCredentials("bob", "hunter2-secret")
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("creds", "password", c.Password, "creds", c)
	js, err := json.Marshal(c)
	require.NoError(t, err)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c), "%s": fmt.Sprintf("%s", c.Password),
		"%q": fmt.Sprintf("%q", c.Password), "json": string(js), "slog": logged.String(),
	} {
		require.NotContains(t, out, "hunter2", name)
		require.Contains(t, out, redacted, name)
	}
	require.Equal(t, "hunter2-secret", c.Password.Reveal())
}

// FuzzParseAuthorization checks that the parser never panics, that what it
// accepts is bounded and clean, and that an accepted value round-trips
// through Header.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"", "Basic", "Basic ", "Basic " + b64("bob:pw"), "basic " + b64("a:b:c"), "ApiKey " + b64("id:key"),
		"APIKEY " + b64("id:"), "Bearer x", "Basic " + b64(":pw"), "Basic " + b64("a\x00:b"), "Basic !!", "Basic YQ",
		"Basic " + b64("\xff:\xfe"), "ApiKey " + b64("id"), "Basic  " + b64("x:y"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		c, err := ParseAuthorization(header)
		if err != nil {
			require.Equal(t, Credentials{}, c)
			require.NotContains(t, err.Error(), "\n")
			return
		}
		require.LessOrEqual(t, len(header), MaxAuthorizationLength)
		require.Contains(t, []Kind{KindBasic, KindAPIKey}, c.Kind)
		if c.Kind == KindBasic {
			require.NotEmpty(t, c.Username)
			require.True(t, clean(c.Username) && clean(c.Password.Reveal()))
		} else {
			require.NotEmpty(t, c.APIKeyID)
			require.NotEmpty(t, c.APIKeySecret.Reveal())
		}
		again, err := ParseAuthorization(c.Header())
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}
