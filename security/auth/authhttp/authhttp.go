// Package authhttp is the HTTP middleware of security/auth: it
// authenticates every request from its Authorization header before the
// handler runs (and before anything reads the body), answers 401 in
// Elasticsearch's shape, audits the outcome, and hands the Principal to the
// handler through the request context.
package authhttp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/weftsearch/weft/security/audit"
	"github.com/weftsearch/weft/security/auth"
)

// Authenticator is what the middleware needs of *auth.Authenticator.
type Authenticator interface {
	Authenticate(ctx context.Context, c auth.Credentials) (auth.Principal, error)
}

var _ Authenticator = (*auth.Authenticator)(nil)

// Config builds a Middleware.
type Config struct {
	// Authenticator checks credentials; required.
	Authenticator Authenticator
	// Audit receives authentication failures (and, through
	// Middleware.Audit, authorization outcomes); nil audits nothing.
	Audit *audit.Logger
	// Logger receives audit write failures and internal errors; nil
	// discards.
	Logger *slog.Logger
	// Attach puts the Principal into the request's context; nil means
	// WithPrincipal (read back with PrincipalFrom).
	Attach func(context.Context, auth.Principal) context.Context
	// RequestID names a request in the audit log; nil means the
	// X-Opaque-Id header when the client sent one (at most 256 bytes),
	// else a random id.
	RequestID func(*http.Request) string
}

// Middleware authenticates requests. It is safe for concurrent use.
type Middleware struct {
	cfg Config
}

// New returns a Middleware, or an error naming what Config lacks.
func New(cfg Config) (*Middleware, error) {
	if cfg.Authenticator == nil {
		return nil, errors.New("authhttp: Config.Authenticator is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Attach == nil {
		cfg.Attach = WithPrincipal
	}
	if cfg.RequestID == nil {
		cfg.RequestID = defaultRequestID
	}
	return &Middleware{cfg: cfg}, nil
}

type ctxKey int

const (
	principalKey ctxKey = iota
	requestIDKey
)

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey, p)
}

// PrincipalFrom returns the Principal the middleware attached (with the
// default Attach).
func PrincipalFrom(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(principalKey).(auth.Principal)
	return p, ok
}

// RequestIDFrom returns the request id the middleware gave the request, so
// the handler's audit events carry the same one.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func defaultRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Opaque-Id"); id != "" && len(id) <= 256 {
		return id
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand does not fail (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Wrap returns a handler that authenticates each request and calls next
// with the Principal in the context, or answers 401 without calling next.
// It reads only the headers: an unauthenticated request's body is never
// read, and the connection is closed after the 401 when a body was
// announced, so the server does not drain it either.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := m.cfg.RequestID(r)
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		var (
			creds auth.Credentials
			p     auth.Principal
			err   error
		)
		switch values := r.Header.Values("Authorization"); len(values) {
		case 0:
			err = auth.ErrNoCredentials
		case 1:
			creds, err = auth.ParseAuthorization(values[0])
		default:
			err = &auth.CredentialsError{Reason: "more than one Authorization header; send exactly one"}
		}
		if err == nil {
			p, err = m.cfg.Authenticator.Authenticate(ctx, creds)
		}
		if err != nil {
			m.refuse(w, r.WithContext(ctx), creds, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(m.cfg.Attach(ctx, p)))
	})
}

// refuse answers a request that did not authenticate.
func (m *Middleware) refuse(w http.ResponseWriter, r *http.Request, creds auth.Credentials, err error) {
	resp, ok := auth.ResponseFor(err, r.URL.RequestURI(), creds)
	if !ok {
		// Not a credentials problem: a role that does not compile, a
		// cancelled request. The client gets no details.
		m.cfg.Logger.Error("authhttp: authenticating a request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		resp = auth.ErrorResponse{Status: http.StatusInternalServerError, Error: auth.ErrorBody{
			RootCause:  []auth.ErrorCause{{Type: "security_exception", Reason: "error authenticating the request; the node logged the details"}},
			ErrorCause: auth.ErrorCause{Type: "security_exception", Reason: "error authenticating the request; the node logged the details"},
		}}
	} else {
		m.logAudit(audit.Event{
			Kind: audit.AuthenticationFailed, User: creds.Username, APIKeyID: creds.APIKeyID,
			RemoteAddress: r.RemoteAddr, RequestID: RequestIDFrom(r.Context()), Method: r.Method, Path: r.URL.Path,
		})
	}
	if resp.Status == http.StatusUnauthorized {
		for _, v := range auth.WWWAuthenticate() {
			w.Header().Add("WWW-Authenticate", v)
		}
	}
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	WriteResponse(w, r, resp)
}

// WriteResponse writes an Elasticsearch error reply (a 401 or 403 of
// auth.ResponseFor) as JSON; a HEAD request gets the status only.
func WriteResponse(w http.ResponseWriter, r *http.Request, resp auth.ErrorResponse) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Elastic-Product", "Elasticsearch")
	w.WriteHeader(resp.Status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// Audit records an authorization decision for r: err nil is
// access_granted (written only when the audit log includes them), an
// auth.ErrForbidden is access_denied with its reason. Other errors are not
// authorization decisions and are not audited.
func (m *Middleware) Audit(r *http.Request, p auth.Principal, action auth.Action, indices []string, err error) {
	e := audit.Event{
		User: p.Username, Realm: p.Realm, APIKeyID: p.APIKeyID, Action: string(action), Indices: indices,
		RemoteAddress: r.RemoteAddr, RequestID: RequestIDFrom(r.Context()), Method: r.Method, Path: r.URL.Path,
	}
	var fe *auth.ForbiddenError
	switch {
	case err == nil:
		e.Kind = audit.AccessGranted
	case errors.As(err, &fe):
		e.Kind, e.Reason = audit.AccessDenied, fe.Error()
	case errors.Is(err, auth.ErrForbidden):
		e.Kind, e.Reason = audit.AccessDenied, err.Error()
	default:
		return
	}
	m.logAudit(e)
}

func (m *Middleware) logAudit(e audit.Event) {
	if err := m.cfg.Audit.Log(e); err != nil {
		m.cfg.Logger.Error("authhttp: writing the audit log failed", "err", err)
	}
}
