package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shardapi"
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
// id. Safe for concurrent use.
type readerContexts struct {
	mu   sync.Mutex
	byID map[string]*readerContext
}

type readerContext struct {
	alloc     string
	view      *index.Index
	keepAlive time.Duration
	expires   time.Time
	cursor    shardapi.ScrollCursor
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
	return fmt.Errorf("%w: No search context found for id [%s]: it expired or was closed", shardapi.ErrContextMissing, id)
}

func (r *readerContexts) open(alloc string, view *index.Index, keep time.Duration) string {
	id := newContextID()
	r.mu.Lock()
	r.byID[id] = &readerContext{alloc: alloc, view: view, keepAlive: keep, expires: time.Now().Add(keep)}
	r.mu.Unlock()
	return id
}

// use returns a context's view and extends its keep-alive (to keep, when
// positive).
func (r *readerContexts) use(id string, keep time.Duration) (*index.Index, error) {
	keep = min(keep, shardapi.MaxKeepAlive)
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
	delete(r.byID, id)
	r.mu.Unlock()
	if ok {
		_ = rc.view.Release()
	}
	return ok
}

// claim takes a scroll's cursor for one page; a second claim before
// commit is refused (a scroll serves one page at a time).
func (r *readerContexts) claim(id string) (shardapi.ScrollCursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.byID[id]
	if !ok {
		return shardapi.ScrollCursor{}, MissingContext(id)
	}
	if rc.claimed {
		return shardapi.ScrollCursor{}, fmt.Errorf("%w: the scroll is serving another page; send its next request after this one's reply", shardapi.ErrVersionConflict)
	}
	rc.claimed = true
	rc.expires = time.Now().Add(rc.keepAlive)
	return rc.cursor, nil
}

// commit stores a scroll's cursor and releases the claim.
func (r *readerContexts) commit(id string, cur shardapi.ScrollCursor) error {
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
	var gone []*readerContext
	for id, rc := range r.byID {
		if now.After(rc.expires) || !has(rc.alloc) {
			gone = append(gone, rc)
			delete(r.byID, id)
		}
	}
	r.mu.Unlock()
	for _, rc := range gone {
		_ = rc.view.Release()
	}
}

func (r *readerContexts) closeAll() {
	r.sweep(time.Now(), func(string) bool { return false })
}

// count is the number of open contexts (_stats' open_contexts).
func (r *readerContexts) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// OpenContext implements Copies: it pins the local copy h.Alloc's current
// contents in a reader context for keep.
func (s *Store) OpenContext(_ context.Context, h Header, keep time.Duration) (string, error) {
	idx, err := s.Readable(h.Alloc)
	if err != nil {
		return "", err
	}
	view, err := idx.Pin()
	if err != nil {
		return "", err
	}
	return s.pits.open(h.Alloc, view, keep), nil
}
