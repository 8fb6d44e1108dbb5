package coord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// copiesOn returns the shard copies of node as this coordinator calls
// them: in place on its own node, over the fabric on another.
func (c *Coordinator) copiesOn(v *state.State, node string) (shard.Copies, error) {
	if node == c.meta.LocalNode() {
		return c.store, nil
	}
	if c.peers == nil {
		return nil, fmt.Errorf("%w: the copy is on node %s, and this node has no fabric", vocab.ErrUnavailable, node)
	}
	return shard.NewRemote(c.peers, node), nil
}

// Coordinator is the engine the HTTP API calls on every node. It resolves
// index names from the committed metadata, routes writes and realtime gets
// to each shard's primary — a local copy, or another node over the fabric
// — fans searches out to one copy of every shard, and runs the loop that
// reconciles the node's Store with the shard table. All methods are safe
// for concurrent use.
type Coordinator struct {
	cfg    Config
	meta   shard.Metadata
	store  *shard.Store
	peers  fabric.Caller // nil: a node without a fabric never routes elsewhere
	logger *slog.Logger
	ars    *copySelector
	stats  *statsCache // nil: none kept

	countersMu sync.Mutex
	counters   map[string]*indexCounters // by index name, this node's requests

	closeMu sync.Mutex
	closed  bool
}

// indexCounters count one index's requests coordinated by this node.
type indexCounters struct {
	indexTotal, indexNanos, delTotal, srchTotal, srchNanos atomic.Uint64
}

// IndexSettings are an index's settings and aliases. NumberOfShards is
// fixed at creation.
type IndexSettings struct {
	NumberOfShards   int `json:"number_of_shards"`
	NumberOfReplicas int `json:"number_of_replicas"`
	// Other are every other index setting, by flat key
	// ("index.refresh_interval"), JSON values as given: stored and
	// returned; the API honours those Weft has a meaning for.
	Other map[string]json.RawMessage `json:"-"`
	// Aliases are the index's aliases (given at creation; changed with
	// UpdateAliases).
	Aliases map[string]state.Alias `json:"-"`
}

// IndexInfo describes one index.
type IndexInfo struct {
	Name           string
	UUID           string
	Settings       IndexSettings
	Mapping        *index.Mapping // a copy; changing it changes nothing
	CreationDate   time.Time
	Closed         bool
	Health         string // green, yellow or red, from the shard table
	DocsCount      uint64 // documents in the primaries that answered
	StoreSizeBytes int64  // bytes of every copy that answered
}

// NodeStats are the node's index statistics: what this node coordinated,
// and the copies it holds.
type NodeStats struct {
	Indices map[string]vocab.IndexNodeStats
	// ScrollContexts and PITContexts are the reader contexts this node's
	// data node holds open for scrolls and points in time (one per shard
	// copy pinned here).
	ScrollContexts, PITContexts int
	// IndexingPressure is the node's accounting of the bytes of writes in
	// flight, by stage.
	IndexingPressure membudget.Stats
}

// primaryWait bounds how long a write or get waits for a shard's primary
// to become active, as Elasticsearch's default write timeout of 1m does.
const primaryWait = time.Minute

// NewCoordinator builds the engine over a store (and the store's metadata
// and peers). Start runs its reconcile loop.
func NewCoordinator(store *shard.Store, cfg Config, logger *slog.Logger) *Coordinator {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg, meta: store.Metadata(), store: store, peers: store.Peers(), logger: logger, ars: newCopySelector(),
		stats:    newStatsCache(cfg.SearchStatsCacheBytes),
		counters: map[string]*indexCounters{}}
	store.SetRequestCounters(c.counterStats)
	return c
}

// IndexingPressure is the node's accounting of the bytes of writes in
// flight (shared with its data node). Whoever takes a write from a client
// holds its bytes at the coordinating stage (membudget.Coordinating) until
// the write is answered; Bulk's groups for local primaries are counted at
// the primary stage without a second check, those for other nodes'
// primaries are checked there.
func (c *Coordinator) IndexingPressure() *membudget.IndexingPressure {
	return c.store.IndexingPressure()
}

// Start starts the local data node's reconcile loop (Store.Start).
func (c *Coordinator) Start() { c.store.Start() }

// Close refuses every later request and closes the local data node
// (Store.Close). Idempotent.
func (c *Coordinator) Close() error {
	c.closeMu.Lock()
	c.closed = true
	c.closeMu.Unlock()
	return c.store.Close()
}

func (c *Coordinator) countersFor(name string) *indexCounters {
	c.countersMu.Lock()
	defer c.countersMu.Unlock()
	ic := c.counters[name]
	if ic == nil {
		ic = &indexCounters{}
		c.counters[name] = ic
	}
	return ic
}

// view returns the committed view for writes and metadata changes:
// ErrClosed after Close, ErrClusterBlocked while the node is not Ready.
func (c *Coordinator) view() (*state.State, error) { return c.viewWhen(c.meta.Ready) }

// readView returns the view for reads: the last one while this node knows
// no leader (Metadata.Serving).
func (c *Coordinator) readView() (*state.State, error) { return c.viewWhen(c.meta.Serving) }

func (c *Coordinator) viewWhen(ok func() error) (*state.State, error) {
	c.closeMu.Lock()
	closed := c.closed
	c.closeMu.Unlock()
	if closed {
		return nil, vocab.ErrClosed
	}
	if err := ok(); err != nil {
		return nil, err
	}
	return c.meta.State(), nil
}

// ClusterView returns the committed view of the cluster's metadata, the
// last one while this node knows no leader (for reads: writes check Ready
// themselves); ErrClusterBlocked until the node has first joined a
// cluster (Metadata.Serving).
func (c *Coordinator) ClusterView() (*state.State, error) { return c.readView() }

// ValidateIndexName applies Elasticsearch's index name rules, and one of
// Weft's own: no control characters and no bytes that are not UTF-8
// (Elasticsearch's parsers refuse the second; the first are refused so
// that a name always prints, logs and round-trips through a URL as it was
// sent). Every name that creates something passes here: an index created
// or auto-created by a write, and an alias (checkAliasName). The reasons
// read as Elasticsearch's: "Invalid index name [x], must be lowercase".
func ValidateIndexName(name string) error {
	if why := nameRule(name); why != "" {
		return fmt.Errorf("%w: Invalid index name [%s], %s", vocab.ErrInvalidIndexName, Printable(name), why)
	}
	return nil
}

// nameRule says which rule of index and alias names name breaks, or "".
func nameRule(name string) string {
	if bad := BadText(name); bad != "" {
		return bad // first: the rules below read the name as text
	}
	switch {
	case name == "":
		return "must not be empty"
	case name == "." || name == "..":
		return "must not be '.' or '..'"
	case strings.ToLower(name) != name:
		return "must be lowercase"
	case strings.ContainsAny(name, "\\/*?\"<>| ,"):
		return "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]"
	case strings.Contains(name, "#"):
		return "must not contain '#'"
	case strings.Contains(name, ":"):
		return "must not contain ':'"
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return "must not start with '_', '-', or '+'"
	case len(name) > 255:
		return fmt.Sprintf("index name is too long, (%d > 255)", len(name))
	}
	return ""
}

// ValidateID refuses a document id with a control character or bytes
// that are not UTF-8 (BadText), as ErrInvalidRequest (400
// illegal_argument_exception). Every operation that names a document by
// id passes here: writes (Bulk, which every single-document write goes
// through), Get and Mget, so such an id is never stored and never looked
// up. The length limit (512 bytes) is Bulk's, as in Elasticsearch.
func ValidateID(id string) error {
	if why := BadText(id); why != "" {
		return fmt.Errorf("%w: id [%s] %s", vocab.ErrInvalidRequest, Printable(id), why)
	}
	return nil
}

// Printable is s for an error message: its bytes that are not UTF-8
// replaced with U+FFFD, so that the JSON reply carrying the message is
// valid (JSON escapes the control characters).
func Printable(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// BadText says why s may not be an index name or a document id, or "" when
// it may: the first control character (C0, DEL or C1, as unicode.IsControl
// says) or the first byte that does not start valid UTF-8, by offset.
func BadText(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Sprintf("must be valid UTF-8: invalid byte 0x%02x at offset %d", s[i], i)
			}
		case unicode.IsControl(r):
			return fmt.Sprintf("must not contain control characters: U+%04X at offset %d", r, i)
		}
	}
	return ""
}

// activeShardsWait bounds how long index creation waits for the new
// primaries to start (Elasticsearch's wait_for_active_shards=1 default).
const activeShardsWait = 30 * time.Second

// CreateIndex creates an index. Zero settings take the defaults (1 shard,
// 1 replica); a nil mapping is an empty dynamic one. It returns once the
// index is committed and, unless activeShardsWait passes first, its
// primaries have started.
func (c *Coordinator) CreateIndex(ctx context.Context, name string, s IndexSettings, mp *index.Mapping) error {
	if _, err := c.view(); err != nil {
		return err
	}
	if err := ValidateIndexName(name); err != nil {
		return err
	}
	if s.NumberOfShards == 0 {
		s.NumberOfShards = 1
	}
	if s.NumberOfShards < 1 || s.NumberOfShards > c.cfg.MaxShards {
		return fmt.Errorf("%w: number_of_shards %d must be between 1 and %d", vocab.ErrInvalidRequest, s.NumberOfShards, c.cfg.MaxShards)
	}
	if s.NumberOfReplicas < 0 {
		return fmt.Errorf("%w: number_of_replicas %d must be >= 0", vocab.ErrInvalidRequest, s.NumberOfReplicas)
	}
	if mp == nil {
		mp = index.NewDynamicMapping()
	}
	raw, err := json.Marshal(mp)
	if err != nil {
		return err
	}
	if err := checkNewNames(c.meta.State(), name, s.Aliases); err != nil {
		return err
	}
	if err := c.meta.CreateIndex(ctx, shard.IndexSpec{Name: name, NumberOfShards: s.NumberOfShards, NumberOfReplicas: s.NumberOfReplicas, Mapping: raw,
		Settings: s.Other, Aliases: s.Aliases}); err != nil {
		return err
	}
	c.logger.Info("index created", "index", name, "shards", s.NumberOfShards, "replicas", s.NumberOfReplicas)
	wctx, cancel := context.WithTimeout(ctx, activeShardsWait)
	defer cancel()
	if _, err := c.meta.AwaitState(wctx, func(v *state.State) bool {
		ix, ok := v.Indices[name]
		return ok && primariesActive(v, ix)
	}); err != nil && ctx.Err() == nil {
		c.logger.Warn("index created, but its primaries did not all start in time", "index", name, "wait", activeShardsWait)
	}
	return ctx.Err()
}

func primariesActive(v *state.State, ix *state.Index) bool {
	for k := range ix.Shards {
		p, ok := ix.Shards[k].Primary()
		if !ok || !v.Active(p) {
			return false
		}
	}
	return true
}

// DeleteIndex deletes an index and, on every node, its copies.
func (c *Coordinator) DeleteIndex(ctx context.Context, name string) error {
	v, err := c.view()
	if err != nil {
		return err
	}
	ix, err := v.Index(name)
	if err != nil {
		return err
	}
	if err := c.meta.DeleteIndex(ctx, name, ix.UUID); err != nil {
		return err
	}
	c.logger.Info("index deleted", "index", name)
	_, err = c.meta.AwaitState(ctx, func(v *state.State) bool {
		cur, ok := v.Indices[name]
		return !ok || cur.UUID != ix.UUID
	})
	return err
}

// Index describes one index, with document counts gathered from the nodes
// that hold its copies.
func (c *Coordinator) Index(name string) (IndexInfo, error) {
	v, err := c.readView()
	if err != nil {
		return IndexInfo{}, err
	}
	ix, err := v.Index(name)
	if err != nil {
		return IndexInfo{}, err
	}
	infos := c.describe(v, []*state.Index{ix})
	return infos[0], nil
}

// Indices describes every index, sorted by name.
func (c *Coordinator) Indices() []IndexInfo {
	v, err := c.readView()
	if err != nil {
		return nil
	}
	return c.describe(v, shard.SortedIndices(v))
}

// describe builds IndexInfos, asking every node holding copies for their
// counts (in parallel, briefly: a node that does not answer counts nothing).
func (c *Coordinator) describe(v *state.State, ixs []*state.Index) []IndexInfo {
	ctx, cancel := context.WithTimeout(context.Background(), statsWait)
	defer cancel()
	stats := c.gatherCopyStats(ctx, v)
	out := make([]IndexInfo, 0, len(ixs))
	for _, ix := range ixs {
		inf := IndexInfo{Name: ix.Name, UUID: ix.UUID, CreationDate: time.UnixMilli(ix.CreationDateMS).UTC(), Health: v.IndexHealth(ix), Closed: ix.Closed,
			Settings: IndexSettings{NumberOfShards: ix.NumberOfShards, NumberOfReplicas: ix.NumberOfReplicas, Other: ix.Settings, Aliases: ix.Aliases}}
		if m, ok := c.store.Mapping(ix); ok {
			inf.Mapping = m
		} else if m, err := index.ParseMapping(ix.Mapping); err == nil {
			inf.Mapping = m
		}
		for k := range ix.Shards {
			for _, cp := range ix.Shards[k].Copies {
				st, ok := stats[cp.AllocationID]
				if !ok {
					continue
				}
				if cp.Primary {
					inf.DocsCount += st.Docs
				}
				inf.StoreSizeBytes += st.StoreSizeBytes
			}
		}
		out = append(out, inf)
	}
	return out
}

// ResolveIndices expands an index expression: comma-separated names,
// aliases and wildcards ("logs-*"); "", "*" and "_all" mean every index,
// open or closed. A concrete name that does not exist is
// ErrIndexNotFound; a wildcard may match nothing.
func (c *Coordinator) ResolveIndices(expr string) ([]string, error) {
	r, err := c.Resolve(expr, ResolveOptions{AllowNoIndices: true, ExpandOpen: true, ExpandClosed: true})
	return r.Indices, err
}

// Resolve expands an index expression under a request's indices options
// (see View.Resolve). It reads without a Raft leader.
func (c *Coordinator) Resolve(expr string, o ResolveOptions) (Resolved, error) {
	v, err := c.readView()
	if err != nil {
		return Resolved{}, err
	}
	return Resolve(v, expr, o)
}

// PutMapping merges mp into the index's committed mapping (new fields only;
// a type change is index.ErrMappingConflict) and commits it, merging again
// when another change commits first. It returns once this node's view holds
// the change.
func (c *Coordinator) PutMapping(ctx context.Context, name string, mp *index.Mapping) error {
	for {
		v, err := c.view()
		if err != nil {
			return err
		}
		ix, err := v.Index(name)
		if err != nil {
			return err
		}
		merged, err := index.ParseMapping(ix.Mapping)
		if err != nil {
			return err
		}
		if err := merged.Merge(mp); err != nil {
			return err
		}
		raw, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		if string(raw) == string(ix.Mapping) {
			return nil
		}
		ver, err := c.meta.PutMapping(ctx, name, ix.UUID, raw, ix.MappingVersion)
		if errors.Is(err, state.ErrMappingVersion) {
			base := ix.MappingVersion
			if _, err := c.meta.AwaitState(ctx, func(v *state.State) bool {
				cur, ok := v.Indices[name]
				return !ok || cur.MappingVersion > base
			}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		_, err = c.meta.AwaitState(ctx, func(v *state.State) bool {
			cur, ok := v.Indices[name]
			return !ok || cur.MappingVersion >= ver
		})
		return err
	}
}

// SettingsUpdate is a change of an index's dynamic settings: the fields
// set are changed.
type SettingsUpdate struct {
	NumberOfReplicas *int
	// Other replaces stored settings by flat key; a JSON null removes one.
	Other map[string]json.RawMessage
}

// UpdateSettings changes an index's dynamic settings.
func (c *Coordinator) UpdateSettings(ctx context.Context, name string, u SettingsUpdate) error {
	if r := u.NumberOfReplicas; r != nil && *r < 0 {
		return fmt.Errorf("%w: number_of_replicas %d must be >= 0", vocab.ErrInvalidRequest, *r)
	}
	v, err := c.view()
	if err != nil {
		return err
	}
	ix, err := v.Index(name)
	if err != nil {
		return err
	}
	if r := u.NumberOfReplicas; r != nil {
		if err := c.meta.UpdateReplicas(ctx, name, ix.UUID, *r); err != nil {
			return err
		}
		if _, err := c.meta.AwaitState(ctx, func(v *state.State) bool {
			cur, ok := v.Indices[name]
			return !ok || cur.NumberOfReplicas == *r
		}); err != nil {
			return err
		}
	}
	if len(u.Other) == 0 {
		return nil
	}
	admin, err := c.admin()
	if err != nil {
		return err
	}
	if err := admin.UpdateIndexSettings(ctx, name, ix.UUID, u.Other); err != nil {
		return err
	}
	_, err = c.meta.AwaitState(ctx, func(v *state.State) bool {
		cur, ok := v.Indices[name]
		if !ok || cur.UUID != ix.UUID {
			return true
		}
		for k, val := range u.Other {
			got, has := cur.Settings[k]
			if isNull(val) == has || (has && !bytes.Equal(got, val)) {
				return false
			}
		}
		return true
	})
	return err
}

// Fields returns the merged mapping view of the named indexes (unknown
// names are skipped).
func (c *Coordinator) Fields(names []string) vocab.FieldTypes { return c.store.Fields(names) }

// counterStats are this node's request counters by index name.
func (c *Coordinator) counterStats() map[string]vocab.IndexNodeStats {
	out := map[string]vocab.IndexNodeStats{}
	c.countersMu.Lock()
	defer c.countersMu.Unlock()
	for name, ic := range c.counters {
		out[name] = vocab.IndexNodeStats{IndexTotal: ic.indexTotal.Load(), IndexTimeNanos: ic.indexNanos.Load(),
			DeleteTotal: ic.delTotal.Load(), SearchTotal: ic.srchTotal.Load(), SearchNanos: ic.srchNanos.Load()}
	}
	return out
}

// Stats returns per-index counters of this node: the requests it
// coordinated and the copies it holds.
func (c *Coordinator) Stats() NodeStats {
	out := NodeStats{Indices: c.counterStats(),
		ScrollContexts: c.store.OpenContextCount(vocab.ContextScroll), PITContexts: c.store.OpenContextCount(vocab.ContextPIT),
		IndexingPressure: c.store.IndexingPressure().Stats()}
	for name, cs := range c.store.CopyCounters() {
		st := out.Indices[name]
		st.Docs += cs.Docs
		st.StoreSizeBytes += cs.StoreSizeBytes
		st.LogFsyncs += cs.LogFsyncs
		out.Indices[name] = st
	}
	return out
}
