package shard

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
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

// MaxKeepAlive bounds a reader context's keep-alive, as Elasticsearch's
// search.max_keep_alive default does.
const MaxKeepAlive = 24 * time.Hour

// PITShard is one shard's pinned copy.
type PITShard struct {
	Index string `json:"i"`
	UUID  string `json:"u"`
	Shard int    `json:"s"`
	Node  string `json:"n"`
	Alloc string `json:"a"`
	Ctx   string `json:"c"`
}

// PIT is a point in time: one pinned copy of every shard of its indices.
type PIT struct {
	Shards []PITShard `json:"s"`
}

// Encode returns the point in time's id.
func (p PIT) Encode() string {
	raw, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// DecodePIT reads a point in time's id; a malformed one is ErrInvalidRequest.
func DecodePIT(id string) (PIT, error) {
	var p PIT
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil || len(p.Shards) == 0 {
		return PIT{}, fmt.Errorf("%w: malformed point in time id: use the id of an open point in time, unchanged", ErrInvalidRequest)
	}
	return p, nil
}

// Indices are the point in time's index names, sorted.
func (p PIT) Indices() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range p.Shards {
		if !seen[s.Index] {
			seen[s.Index] = true
			out = append(out, s.Index)
		}
	}
	sort.Strings(out)
	return out
}

// ScrollCursor is where a scroll's last page ended: the page number and
// the raw sort keys of its last hit (nil before the first page).
type ScrollCursor struct {
	Page  int      `json:"p"`
	After [][]byte `json:"a,omitempty"`
}

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
	cursor    ScrollCursor
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
	return fmt.Errorf("%w: No search context found for id [%s]: it expired or was closed", ErrContextMissing, id)
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
	keep = min(keep, MaxKeepAlive)
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
func (r *readerContexts) claim(id string) (ScrollCursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.byID[id]
	if !ok {
		return ScrollCursor{}, MissingContext(id)
	}
	if rc.claimed {
		return ScrollCursor{}, fmt.Errorf("%w: the scroll is serving another page; send its next request after this one's reply", ErrVersionConflict)
	}
	rc.claimed = true
	rc.expires = time.Now().Add(rc.keepAlive)
	return rc.cursor, nil
}

// commit stores a scroll's cursor and releases the claim.
func (r *readerContexts) commit(id string, cur ScrollCursor) error {
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

// OpenContexts is the number of reader contexts open on this node.
func (c *Coordinator) OpenContexts() int { return c.store.OpenContextCount() }

// OpenPIT opens a point in time over the named indices: one active copy of
// every shard (this node's when it has one) pinned for keepAlive. A shard
// with no active copy fails the whole request (ErrUnavailable), and the
// contexts already opened are closed again.
func (c *Coordinator) OpenPIT(ctx context.Context, names []string, keepAlive time.Duration) (PIT, error) {
	if keepAlive <= 0 || keepAlive > MaxKeepAlive {
		return PIT{}, fmt.Errorf("%w: keep alive for a point in time or scroll [%v] must be positive and at most %v (search.max_keep_alive)", ErrInvalidRequest, keepAlive, MaxKeepAlive)
	}
	v, err := c.readView()
	if err != nil {
		return PIT{}, err
	}
	var pit PIT
	for _, n := range names {
		ix, err := v.Index(n)
		if err != nil {
			return PIT{}, err
		}
		for num := range ix.Shards {
			var pick CopyView
			found := false
			for _, cp := range ix.Shards[num].Copies {
				if !v.Active(cp) || cp.RelocatingFrom != "" {
					continue
				}
				if !found || cp.NodeID == v.LocalNode {
					pick, found = cp, true
				}
			}
			if !found {
				_, _ = c.ClosePIT(ctx, pit)
				return PIT{}, fmt.Errorf("%w: [%s][%d] has no active copy to open a point in time on", ErrUnavailable, n, num)
			}
			id, err := c.openContext(ctx, v, ix.UUID, num, pick, keepAlive)
			if err != nil {
				_, _ = c.ClosePIT(ctx, pit)
				return PIT{}, err
			}
			pit.Shards = append(pit.Shards, PITShard{Index: n, UUID: ix.UUID, Shard: num, Node: pick.NodeID, Alloc: pick.AllocationID, Ctx: id})
		}
	}
	if len(pit.Shards) == 0 {
		return PIT{}, fmt.Errorf("%w: a point in time needs at least one index", ErrInvalidRequest)
	}
	return pit, nil
}

func (c *Coordinator) openContext(ctx context.Context, v *View, uuid string, num int, cp CopyView, keep time.Duration) (string, error) {
	node, err := c.copiesOn(v, cp.NodeID)
	if err != nil {
		return "", err
	}
	return node.OpenContext(ctx, Header{Cluster: v.ClusterUUID, Index: uuid, Shard: num, Alloc: cp.AllocationID}, keep)
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

// ClosePIT closes the point in time's contexts on the nodes that hold
// them, and reports how many were open.
func (c *Coordinator) ClosePIT(ctx context.Context, pit PIT) (int, error) {
	v, err := c.readView()
	if err != nil {
		return 0, err
	}
	freed := 0
	for _, s := range pit.Shards {
		node, h, err := c.contextOf(v, s)
		if err != nil {
			return freed, err
		}
		open, err := node.CloseContext(ctx, h, s.Ctx)
		if err != nil {
			return freed, err
		}
		if open {
			freed++
		}
	}
	return freed, nil
}

// ClaimScroll takes the cursor of a scroll over pit for its next page;
// CommitScroll must follow (with the new cursor, or the same to give the
// page up).
func (c *Coordinator) ClaimScroll(ctx context.Context, pit PIT) (ScrollCursor, error) {
	v, err := c.readView()
	if err != nil {
		return ScrollCursor{}, err
	}
	node, h, err := c.contextOf(v, pit.Shards[0])
	if err != nil {
		return ScrollCursor{}, err
	}
	return node.ClaimScroll(ctx, h, pit.Shards[0].Ctx)
}

// CommitScroll stores a scroll's cursor after a page.
func (c *Coordinator) CommitScroll(ctx context.Context, pit PIT, cur ScrollCursor) error {
	v, err := c.readView()
	if err != nil {
		return err
	}
	node, h, err := c.contextOf(v, pit.Shards[0])
	if err != nil {
		return err
	}
	return node.CommitScroll(ctx, h, pit.Shards[0].Ctx, cur)
}

// contextOf returns the node and the header of a point in time's shard
// context.
func (c *Coordinator) contextOf(v *View, s PITShard) (Copies, Header, error) {
	node, err := c.copiesOn(v, s.Node)
	return node, Header{Cluster: v.ClusterUUID, Index: s.UUID, Shard: s.Shard, Alloc: s.Alloc}, err
}

// pitSearchers searches the point in time's contexts: a pinned view of
// this node's copy in place, another node's through its context. A shard
// whose index is gone from the view fails. Their statistics are never
// kept (statsCache): a pinned view's contents are no generation of its
// copy's.
func (c *Coordinator) pitSearchers(v *View, pit PIT, keep time.Duration, srch *esdsl.Search) ([]ShardSearcher, []ShardFailure) {
	var out []ShardSearcher
	var failures []ShardFailure
	rs := newRemoteSearch(v, pit.Indices(), srch)
	rs.header.KeepAlive = keep
	for _, s := range pit.Shards {
		name := fmt.Sprintf("%s/%d", s.Index, s.Shard)
		ix, ok := v.IndexByUUID(s.UUID)
		if !ok {
			failures = append(failures, ShardFailure{Index: s.Index, Shard: s.Shard, Node: s.Node, Err: MissingContext(s.Ctx)})
			continue
		}
		if s.Node == v.LocalNode {
			view, err := c.store.PinnedContext(s.Ctx, keep)
			if err != nil {
				failures = append(failures, ShardFailure{Index: s.Index, Shard: s.Shard, Node: s.Node, Err: err})
				continue
			}
			out = append(out, newLocalSearcher(name, "", view, srch, s.Index, s.Shard))
			continue
		}
		if c.peers == nil {
			failures = append(failures, ShardFailure{Index: s.Index, Shard: s.Shard, Node: s.Node,
				Err: fmt.Errorf("%w: the context is on node %s, and this node has no fabric", ErrUnavailable, s.Node)})
			continue
		}
		out = append(out, &remoteSearcher{c: c, rs: rs, name: name, index: s.Index, num: s.Shard, uuid: s.UUID,
			mappingVersion: ix.MappingVersion, pitCtx: s.Ctx,
			copies: []CopyView{{AllocationID: s.Alloc, NodeID: s.Node, Started: true}}})
	}
	rs.shards = len(out)
	return out, failures
}
