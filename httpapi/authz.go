package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/security/auth/authhttp"
	"github.com/weftsearch/weft/vocab"
)

// Authorization, with Elasticsearch's rules (issue 17, item 5). Every route
// has a rule (routeRules): a cluster action checked before the handler
// runs, or an index action that the handler's index resolution checks on
// the concrete indices, after alias and wildcard resolution, with
// wildcards expanded only to the indices the principal may see; or the
// handler decides itself (per bulk item, per msearch entry, the security
// APIs). A route without a rule makes New fail, and an index or handler
// route that answers 2xx without having made a decision is logged as a
// bug.

// ruleKind says who authorizes a route.
type ruleKind int

const (
	// clusterRule: auth.CheckCluster before the handler runs.
	clusterRule ruleKind = iota + 1
	// indexRule: the handler's resolution (resolve, resolveReq,
	// singleIndex, authorize) checks the action on concrete indices.
	indexRule
	// selfRule: the handler authorizes with authorizeAction or the
	// security checks; action names the route in the audit log only.
	selfRule
)

// routeRule is how a route is authorized.
type routeRule struct {
	kind   ruleKind
	action auth.Action
}

func cluster(a auth.Action) routeRule { return routeRule{kind: clusterRule, action: a} }
func indices(a auth.Action) routeRule { return routeRule{kind: indexRule, action: a} }
func self(a auth.Action) routeRule    { return routeRule{kind: selfRule, action: a} }

// guard is a request's authorization state, in its context when security
// is on. decided is shared by the copies withAction makes.
type guard struct {
	p       auth.Principal
	action  auth.Action
	kind    ruleKind
	r       *http.Request
	decided *bool
}

type guardKey struct{}

func guardFrom(ctx context.Context) *guard {
	g, _ := ctx.Value(guardKey{}).(*guard)
	return g
}

// withAction returns ctx whose resolution checks action instead of the
// route's: the source of a reindex is read, the search half of a
// by-query request too.
func withAction(ctx context.Context, action auth.Action) context.Context {
	g := guardFrom(ctx)
	if g == nil {
		return ctx
	}
	c := *g
	c.action, c.kind = action, indexRule
	return context.WithValue(ctx, guardKey{}, &c)
}

// principalOf returns the request's principal; ok is false with security
// off.
func principalOf(ctx context.Context) (auth.Principal, bool) {
	if g := guardFrom(ctx); g != nil {
		return g.p, true
	}
	return auth.Principal{}, false
}

// authorizeRoute runs the route's rule before its handler. It returns the
// request to hand on (carrying the guard), or an error to answer.
func (s *Server) authorizeRoute(r *http.Request, rule routeRule) (*http.Request, error) {
	if s.sec == nil {
		return r, nil
	}
	p, ok := authhttp.PrincipalFrom(r.Context())
	if !ok {
		// The middleware runs before the mux: this is a wiring bug.
		return r, errors.New("httpapi: request reached a handler without a principal")
	}
	decided := false
	g := &guard{p: p, action: rule.action, kind: rule.kind, r: r, decided: &decided}
	if rule.kind == clusterRule {
		err := auth.CheckCluster(p, rule.action)
		s.sec.mw.Audit(r, p, rule.action, nil, err)
		if err != nil {
			return r, err
		}
		decided = true
	}
	return r.WithContext(context.WithValue(r.Context(), guardKey{}, g)), nil
}

// checkDecided logs a route whose handler answered 2xx without an
// authorization decision: a handler that skipped its checks.
func (s *Server) checkDecided(r *http.Request, status int) {
	g := guardFrom(r.Context())
	if g == nil || *g.decided || status >= 300 {
		return
	}
	s.log.Error("httpapi: BUG: a request was served without an authorization decision; fix the handler", "method", r.Method, "pattern", r.Pattern, "action", g.action)
	if s.onUndecided != nil {
		s.onUndecided(r.Pattern)
	}
}

// authorize checks the route's index action on the concrete indices.
func (s *Server) authorize(ctx context.Context, names []string) error {
	g := guardFrom(ctx)
	if g == nil {
		return nil
	}
	return s.authorizeAction(ctx, g.action, names)
}

// authorizeAction checks action on the concrete indices (none: the
// principal has it on some index). It is the one place an index decision
// is made and audited.
func (s *Server) authorizeAction(ctx context.Context, action auth.Action, names []string) error {
	g := guardFrom(ctx)
	if g == nil {
		return nil
	}
	*g.decided = true
	err := auth.CheckIndices(g.p, action, names)
	s.sec.mw.Audit(g.r, g.p, action, names, err)
	return err
}

// authorizeCluster checks a cluster action for a handler that decides
// itself (the security APIs).
func (s *Server) authorizeCluster(ctx context.Context, check func(auth.Principal) error, action auth.Action) error {
	g := guardFrom(ctx)
	if g == nil {
		return nil
	}
	*g.decided = true
	err := check(g.p)
	s.sec.mw.Audit(g.r, g.p, action, nil, err)
	return err
}

// visibility is the ResolveOptions.Visible of ctx's index action: nil when
// there is nothing to filter.
func visibility(ctx context.Context) func(string) bool {
	g := guardFrom(ctx)
	if g == nil || g.kind == clusterRule {
		return nil
	}
	p, action := g.p, g.action
	return func(ix string) bool { return p.Permission.AllowsIndex(action, ix) }
}

// authorizeResolved decides a resolution of expr: the concrete indices it
// gave, or, when it failed (a missing or closed name), the explicit names
// of expr, so that a name the principal may not touch is a 403 whether or
// not it exists, and a 404 tells nothing about indices it may not see.
func (s *Server) authorizeResolved(ctx context.Context, expr string, concrete []string, rerr error) error {
	g := guardFrom(ctx)
	if g == nil || g.kind == clusterRule {
		return rerr
	}
	if rerr != nil {
		if errors.Is(rerr, state.ErrIndexNotFound) || errors.Is(rerr, vocab.ErrIndexClosed) || errors.Is(rerr, vocab.ErrInvalidRequest) {
			if names := explicitNames(expr); len(names) > 0 {
				if err := s.authorize(ctx, names); err != nil {
					return err
				}
			}
		}
		return rerr
	}
	return s.authorize(ctx, concrete)
}

// explicitNames are the names of expr that are neither wildcards nor
// exclusions.
func explicitNames(expr string) []string {
	var out []string
	for _, p := range splitComma(expr) {
		if !isWildcard(p) && !strings.HasPrefix(p, "-") {
			out = append(out, p)
		}
	}
	return out
}

// writeAction is the index action of a write.
func writeAction(t vocab.OpType) auth.Action {
	switch t {
	case vocab.OpCreate:
		return auth.ActionCreateDoc
	case vocab.OpUpdate:
		return auth.ActionUpdateDoc
	case vocab.OpDelete:
		return auth.ActionDeleteDoc
	}
	return auth.ActionIndexDoc
}

// authorizeWrite checks one document write (a single-document request or a
// bulk item) on the index it lands in: an alias's write index, or the
// named index; writing to an index that does not exist yet creates it, so
// that also needs ActionAutoCreateIndex there (Elasticsearch's
// auto_configure or create_index), except for a delete, which creates
// nothing.
func (s *Server) authorizeWrite(ctx context.Context, op vocab.Op) error {
	g := guardFrom(ctx)
	if g == nil {
		return nil
	}
	action := writeAction(op.Type)
	v, err := s.eng.ClusterView()
	if err != nil {
		*g.decided = true
		return err
	}
	ix, _, err := coord.SingleIndex(v, op.Index, op.Routing, true)
	switch {
	case err == nil:
		return s.authorizeAction(ctx, action, []string{ix.Name})
	case errors.Is(err, state.ErrIndexNotFound):
		if err := s.authorizeAction(ctx, action, []string{op.Index}); err != nil {
			return err
		}
		if op.Type == vocab.OpDelete || op.RequireAlias {
			return nil // the engine answers 404
		}
		return s.authorizeAction(ctx, auth.ActionAutoCreateIndex, []string{op.Index})
	default:
		// An alias without a write index, a closed index: the engine
		// refuses the write with this error; refuse a name the
		// principal may not touch first.
		if err := s.authorizeAction(ctx, action, []string{op.Index}); err != nil {
			return err
		}
		return err
	}
}

// errNoPrincipal is a security API called with security off.
var errNoPrincipal = fmt.Errorf("%w: security is not enabled on this node; start it with --security", coord.ErrNotSupported)
