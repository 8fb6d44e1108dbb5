package ctl

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/weftsearch/weft/security/auth"
)

// ErrBadCredentials is wrapped by the refusals of credentials that cannot
// be sent: a user and an API key together, a password without a user, a
// user without a password and no terminal to ask on, an API key that is
// not an encoded one. Their messages never contain a secret.
var ErrBadCredentials = errors.New("credentials")

// ErrBadCACert is wrapped when the --cacert file cannot be used.
var ErrBadCACert = errors.New("--cacert")

// Credentials authenticate a Client: a user and password (HTTP Basic) or an
// API key (Authorization: ApiKey), never both. Password and APIKey are
// auth.Secret, so printing Credentials shows no secret.
type Credentials struct {
	Username string
	Password auth.Secret
	// APIKey is the "encoded" value POST /_security/api_key returns:
	// base64 of "id:api_key".
	APIKey auth.Secret
}

// IsZero reports whether c sends no credentials.
func (c Credentials) IsZero() bool { return c.Username == "" && c.APIKey == "" }

// Validate checks that c can be sent: not a user and an API key together,
// a user with no ':' in its name, and an API key that is base64 of id:key.
func (c Credentials) Validate() error {
	switch {
	case c.Username != "" && c.APIKey != "":
		return fmt.Errorf("%w: a user and an API key together; authenticate with one", ErrBadCredentials)
	case c.Username == "" && c.Password != "":
		return fmt.Errorf("%w: a password without a user; pass --user (or WEFT_USER)", ErrBadCredentials)
	case strings.Contains(c.Username, ":"):
		return fmt.Errorf("%w: user %q contains ':', which HTTP Basic authentication cannot carry", ErrBadCredentials, c.Username)
	case c.APIKey != "":
		raw, err := base64.StdEncoding.DecodeString(c.APIKey.Reveal())
		if err != nil || bytes.IndexByte(raw, ':') < 1 {
			return fmt.Errorf("%w: the API key is not the \"encoded\" value of a created key (base64 of id:api_key); pass that value to --api-key (WEFT_API_KEY)", ErrBadCredentials)
		}
	}
	return nil
}

// apply sets req's Authorization header from c (nothing for zero c).
func (c Credentials) apply(req *http.Request) {
	switch {
	case c.APIKey != "":
		req.Header.Set("Authorization", "ApiKey "+c.APIKey.Reveal())
	case c.Username != "":
		req.SetBasicAuth(c.Username, c.Password.Reveal())
	}
}

// tlsConfig returns the client TLS settings for --cacert file: the system
// roots (which honour SSL_CERT_FILE) plus the file's certificates. An
// empty file gives nil: Go's defaults, the system roots alone.
func tlsConfig(file string) (*tls.Config, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w; pass the cluster's ca.crt (DATA_DIR/certs/ca.crt on a lone node)", ErrBadCACert, file, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool() // no system roots here: trust the file alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w %s holds no PEM certificate; pass the cluster's ca.crt (DATA_DIR/certs/ca.crt on a lone node)", ErrBadCACert, file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// authFlags are the global authentication flags as given; empty is unset.
type authFlags struct {
	user, password, apiKey, cacert string
}

// resolveCredentials merges the flags with the WEFT_USER, WEFT_PASSWORD,
// WEFT_API_KEY and WEFT_CACERT environment variables. A flag beats the
// variable of the same setting, and a flag of one kind (--user, --api-key)
// beats a variable of the other; two of the same standing conflict.
// needPassword is set when a user has no password yet (the caller may ask
// on a terminal).
func resolveCredentials(f authFlags, getenv func(string) string) (creds Credentials, cacert string, needPassword bool, err error) {
	cacert = firstNonEmpty(f.cacert, getenv("WEFT_CACERT"))
	user, key := f.user, auth.Secret(f.apiKey)
	switch {
	case f.user != "" && f.apiKey != "":
		return Credentials{}, "", false, fmt.Errorf("%w: --user and --api-key are both given; authenticate with one", ErrBadCredentials)
	case f.user == "" && f.apiKey == "":
		user, key = getenv("WEFT_USER"), auth.Secret(getenv("WEFT_API_KEY"))
		if user != "" && key != "" {
			return Credentials{}, "", false, fmt.Errorf("%w: WEFT_USER and WEFT_API_KEY are both set; unset one, or choose with --user or --api-key", ErrBadCredentials)
		}
	}
	if f.password != "" && user == "" {
		if key != "" {
			return Credentials{}, "", false, fmt.Errorf("%w: --password goes with --user, not with an API key", ErrBadCredentials)
		}
		return Credentials{}, "", false, fmt.Errorf("%w: --password without a user; pass --user (or WEFT_USER)", ErrBadCredentials)
	}
	creds = Credentials{Username: user, APIKey: key}
	if user != "" {
		creds.Password = auth.Secret(firstNonEmpty(f.password, getenv("WEFT_PASSWORD")))
	}
	if err := creds.Validate(); err != nil {
		return Credentials{}, "", false, err
	}
	return creds, cacert, user != "" && creds.Password == "", nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errNoTerminal is returned by promptPassword when standard input is not a
// terminal to ask on.
var errNoTerminal = errors.New("standard input is not a terminal")

// promptPassword asks for a password on the terminal without echo: with
// stdio.Prompt when set, otherwise on Stdin when it is a terminal (the
// prompt goes to Stderr). It returns errNoTerminal when there is none.
func promptPassword(stdio IO, prompt string) (auth.Secret, error) {
	if stdio.Prompt != nil {
		return stdio.Prompt(prompt)
	}
	f, ok := stdio.Stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", errNoTerminal
	}
	fmt.Fprint(stdio.Stderr, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(stdio.Stderr)
	if err != nil {
		return "", fmt.Errorf("reading the password from the terminal: %w", err)
	}
	return auth.Secret(b), nil
}

// maxPasswordInput bounds what a password source may hold: passwords are
// at most 72 bytes (bcrypt), so anything much longer is the wrong input.
const maxPasswordInput = 4096

// newPassword reads a new user password from standard input (fromStdin) or
// from file, whichever is given, drops the line ending after it, and checks
// it against the password policy. ok is false when neither is given.
func newPassword(stdio IO, fromStdin bool, file string) (pw auth.Secret, ok bool, err error) {
	var r io.Reader
	var src string
	switch {
	case fromStdin && file != "":
		return "", false, usagef("--password-stdin and --password-file are both given; use one")
	case fromStdin:
		r, src = stdio.Stdin, "standard input"
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", false, usageError{fmt.Errorf("--password-file: %w", err)}
		}
		defer f.Close()
		r, src = f, "--password-file "+file
	default:
		return "", false, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPasswordInput+1))
	if err != nil {
		return "", false, usageError{fmt.Errorf("reading the password from %s: %w", src, err)}
	}
	if len(data) > maxPasswordInput {
		return "", false, usagef("%s holds more than %d bytes: not a password", src, maxPasswordInput)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if s == "" {
		return "", false, usagef("%s holds no password", src)
	}
	if err := auth.ValidatePassword(s); err != nil {
		return "", false, usageError{fmt.Errorf("the password from %s: %w", src, err)}
	}
	return auth.Secret(s), true, nil
}

// isLoopback reports whether host (a URL's Host) is a loopback address or
// localhost.
func isLoopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}
