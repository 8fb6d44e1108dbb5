package httpapi

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/security/auth"
	"github.com/weftsearch/weft/vocab"
)

// Scrolls and points in time belong to the principal that opened them, as
// in Elasticsearch. The node that opens one records its owner here, in
// memory; a request of another principal that names it is answered as if
// the context did not exist (404 search_context_missing_exception). An id
// this node did not open (opened through another node, or before a
// restart) has no record: it is then authorized only by the read privilege
// on the indices it covers, which every use also checks. Records expire
// after the longest keep-alive a context may have without being used.

// maxOwnedContexts bounds the table; beyond it the records nearest to
// expiry are dropped first.
const maxOwnedContexts = 100_000

// contextOwners maps a point in time (by its shard contexts) to the
// principal that opened it. It is safe for concurrent use.
type contextOwners struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]ownerRecord
}

type ownerRecord struct {
	owner   string
	expires time.Time
}

func newContextOwners(now func() time.Time) *contextOwners {
	return &contextOwners{now: now, m: map[string]ownerRecord{}}
}

// pitKey identifies a point in time by its shard contexts, whatever the
// scroll state encoded around it.
func pitKey(p coord.PIT) string {
	ids := make([]string, 0, len(p.Shards))
	for _, sh := range p.Shards {
		ids = append(ids, sh.Node+"/"+sh.Ctx)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// ownerID names a principal: a user of a realm, or one API key.
func ownerID(p auth.Principal) string {
	if p.IsAPIKey() {
		return "api_key\x00" + p.APIKeyID
	}
	return p.Realm + "\x00" + p.Username
}

// record makes p the owner of pit.
func (c *contextOwners) record(pit coord.PIT, p auth.Principal) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxOwnedContexts {
		for k, rec := range c.m {
			if !now.Before(rec.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m { // still full: drop any
			if len(c.m) < maxOwnedContexts {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[pitKey(pit)] = ownerRecord{owner: ownerID(p), expires: now.Add(vocab.MaxKeepAlive)}
}

// allowed reports whether p may use pit: it has no record here, or p
// opened it. A use extends the record.
func (c *contextOwners) allowed(pit coord.PIT, p auth.Principal) bool {
	key := pitKey(pit)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.m[key]
	if !ok || !now.Before(rec.expires) {
		delete(c.m, key)
		return true
	}
	if rec.owner != ownerID(p) {
		return false
	}
	rec.expires = now.Add(vocab.MaxKeepAlive)
	c.m[key] = rec
	return true
}

// forget drops pit's record (it was closed).
func (c *contextOwners) forget(pit coord.PIT) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, pitKey(pit))
}

// recordOwner makes the request's principal the owner of pit (security
// on).
func (s *Server) recordOwner(ctx context.Context, pit coord.PIT) {
	if p, ok := principalOf(ctx); ok {
		s.sec.owners.record(pit, p)
	}
}

// forgetOwner drops pit's owner record (it is being closed).
func (s *Server) forgetOwner(pit coord.PIT) {
	if s.sec != nil {
		s.sec.owners.forget(pit)
	}
}

// authorizePIT checks a use of an open point in time or scroll: the
// principal must own it (if this node knows its owner) and may read its
// indices. Another principal's context is answered as missing.
func (s *Server) authorizePIT(ctx context.Context, pit coord.PIT, action auth.Action) error {
	p, ok := principalOf(ctx)
	if !ok {
		return nil
	}
	if !s.sec.owners.allowed(pit, p) {
		g := guardFrom(ctx)
		*g.decided = true
		err := &auth.ForbiddenError{Action: action, Scope: auth.ScopeIndices, Username: p.Username, APIKeyID: p.APIKeyID, Roles: p.Roles,
			Reason: "the search context belongs to another user"}
		s.sec.mw.Audit(g.r, p, action, pit.Indices(), err)
		return errForeignContext
	}
	return s.authorizeAction(ctx, action, pit.Indices())
}

// errForeignContext is another principal's scroll or point in time: as
// missing, so its existence is not confirmed.
var errForeignContext = &apiError{Status: 404, Type: "search_context_missing_exception",
	Reason: "No search context found for id; a scroll or point in time is usable only by the user that opened it"}
