package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
)

// Points in time, as Elasticsearch's: opening one pins one active copy of
// every shard of the indices (index.Index.Pin) in a reader context on that
// copy's node, kept while it is used within its keep-alive. Searches with
// the point in time go to exactly those contexts, so every page sees the
// same documents whatever is written meanwhile. The point in time's id
// names its contexts (node, copy, context id per shard), so any node can
// coordinate its searches. A scroll is a point in time plus a cursor — the
// sort keys the last page ended at — kept in the context of its first
// shard ("home"), so that the same scroll id continues where the last page
// ended from whichever node it is sent to, and never serves a page twice.

// readerContexts are this node's pinned views of its copies, by context
// id, and how many of each kind it holds against the kind's limit. Safe
// for concurrent use.
type readerContexts struct {
	mu   sync.Mutex
	byID map[string]*readerContext
	// held counts the contexts of each kind, and the slots reserved for
	// contexts being opened (reserve).
	held [vocab.NumContextKinds]int
}

type readerContext struct {
	alloc     string
	kind      vocab.ContextKind
	view      *index.Index
	keepAlive time.Duration
	expires   time.Time
	cursor    vocab.ScrollCursor
	claimed   bool // a scroll page is being served from cursor
}

func newReaderContexts() *readerContexts {
	return &readerContexts{byID: map[string]*readerContext{}}
}

func newContextID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func MissingContext(id string) error {
	return fmt.Errorf("%w: No search context found for id [%s]: it expired or was closed", vocab.ErrContextMissing, id)
}

// reserve takes a slot for a context of kind about to be opened, unless
// the node already holds limit of them (ErrTooManyScrollContexts,
// ErrTooManyPITContexts). The caller fills the slot (open) or gives it
// back (unreserve). At the limit, the contexts of kind past their
// keep-alive are released first: the reaper (sweep) runs only every few
// seconds, and an expired context must not hold a slot.
func (r *readerContexts) reserve(kind vocab.ContextKind, limit int, now time.Time) error {
	r.mu.Lock()
	var gone []*readerContext
	if r.held[kind] >= limit {
		gone = r.dropLocked(func(rc *readerContext) bool { return rc.kind == kind && now.After(rc.expires) })
	}
	ok := r.held[kind] < limit
	if ok {
		r.held[kind]++
	}
	r.mu.Unlock()
	release(gone)
	if !ok {
		return vocab.TooManyContexts(kind, limit)
	}
	return nil
}

// unreserve gives back a slot reserve took and open did not fill.
func (r *readerContexts) unreserve(kind vocab.ContextKind) {
	r.mu.Lock()
	r.held[kind]--
	r.mu.Unlock()
}

// open fills a slot reserve took with view, kept for keep.
func (r *readerContexts) open(alloc string, kind vocab.ContextKind, view *index.Index, keep time.Duration) string {
	id := newContextID()
	r.mu.Lock()
	r.byID[id] = &readerContext{alloc: alloc, kind: kind, view: view, keepAlive: keep, expires: time.Now().Add(keep)}
	r.mu.Unlock()
	return id
}

// use returns a context's view and extends its keep-alive (to keep, when
// positive).
func (r *readerContexts) use(id string, keep time.Duration) (*index.Index, error) {
	keep = min(keep, vocab.MaxKeepAlive)
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.byID[id]
	if !ok {
		return nil, MissingContext(id)
	}
	if keep > 0 {
		rc.keepAlive = keep
	}
	rc.expires = time.Now().Add(rc.keepAlive)
	return rc.view, nil
}

// close releases a context; false when there was none.
func (r *readerContexts) close(id string) bool {
	r.mu.Lock()
	rc, ok := r.byID[id]
	if ok {
		delete(r.byID, id)
		r.held[rc.kind]--
	}
	r.mu.Unlock()
	if ok {
		_ = rc.view.Release()
	}
	return ok
}

// claim takes a scroll's cursor for one page; a second claim before
// commit is refused (a scroll serves one page at a time).
func (r *readerContexts) claim(id string) (vocab.ScrollCursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.byID[id]
	if !ok {
		return vocab.ScrollCursor{}, MissingContext(id)
	}
	if rc.claimed {
		return vocab.ScrollCursor{}, fmt.Errorf("%w: the scroll is serving another page; send its next request after this one's reply", vocab.ErrVersionConflict)
	}
	rc.claimed = true
	rc.expires = time.Now().Add(rc.keepAlive)
	return rc.cursor, nil
}

// commit stores a scroll's cursor and releases the claim.
func (r *readerContexts) commit(id string, cur vocab.ScrollCursor) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.byID[id]
	if !ok {
		return MissingContext(id)
	}
	rc.cursor, rc.claimed = cur, false
	return nil
}

// sweep releases the contexts past their keep-alive, and those whose copy
// this node no longer has.
func (r *readerContexts) sweep(now time.Time, has func(alloc string) bool) {
	r.mu.Lock()
	gone := r.dropLocked(func(rc *readerContext) bool { return now.After(rc.expires) || !has(rc.alloc) })
	r.mu.Unlock()
	release(gone)
}

// dropLocked removes the contexts drop picks and returns them, for
// release once r.mu is unlocked.
func (r *readerContexts) dropLocked(drop func(*readerContext) bool) []*readerContext {
	var gone []*readerContext
	for id, rc := range r.byID {
		if drop(rc) {
			gone = append(gone, rc)
			delete(r.byID, id)
			r.held[rc.kind]--
		}
	}
	return gone
}

func release(gone []*readerContext) {
	for _, rc := range gone {
		_ = rc.view.Release()
	}
}

func (r *readerContexts) closeAll() {
	r.sweep(time.Now(), func(string) bool { return false })
}

// count is the number of open contexts of kind (with the slots reserved
// for contexts being opened).
func (r *readerContexts) count(kind vocab.ContextKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[kind]
}

// OpenContext implements Copies: it pins the local copy h.Alloc's current
// contents in a reader context of kind for keep, unless this node already
// holds as many contexts of kind as the cluster setting allows
// (contextLimit).
func (s *Store) OpenContext(_ context.Context, h Header, keep time.Duration, kind vocab.ContextKind) (string, error) {
	if !kind.Valid() {
		return "", fmt.Errorf("%w: unknown reader context kind %d", vocab.ErrInvalidRequest, kind)
	}
	idx, err := s.Readable(h.Alloc)
	if err != nil {
		return "", err
	}
	if err := s.pits.reserve(kind, s.contextLimit(kind), time.Now()); err != nil {
		return "", err
	}
	view, err := idx.Pin()
	if err != nil {
		s.pits.unreserve(kind)
		return "", err
	}
	return s.pits.open(h.Alloc, kind, view, keep), nil
}

// contextLimit is how many reader contexts of kind this node may hold: the
// committed cluster setting (search.max_open_scroll_context,
// search.max_open_pit_context), else its default. It is read at every
// open, so a change applies to the next one; contexts already open stay.
func (s *Store) contextLimit(kind vocab.ContextKind) int {
	key, def := kind.LimitSetting()
	if v := s.meta.State(); v != nil {
		if raw, ok := v.Settings.Values[key]; ok {
			if n, err := strconv.Atoi(raw); err == nil && n >= 0 {
				return n
			}
		}
	}
	return def
}
