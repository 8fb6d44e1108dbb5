package coord

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

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
		return PIT{}, fmt.Errorf("%w: malformed point in time id: use the id of an open point in time, unchanged", vocab.ErrInvalidRequest)
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

// OpenPIT opens a point in time over the named indices: one active copy of
// every shard (this node's when it has one) pinned for keepAlive. A shard
// with no active copy (ErrUnavailable), or whose node holds as many points
// in time as search.max_open_pit_context allows (ErrTooManyPITContexts),
// fails the whole request, and the contexts already opened are closed
// again.
func (c *Coordinator) OpenPIT(ctx context.Context, names []string, keepAlive time.Duration) (PIT, error) {
	return c.openPIT(ctx, names, keepAlive, vocab.ContextPIT)
}

// openPIT opens a point in time whose contexts the nodes count as kind: a
// point in time's own, or a scroll's.
func (c *Coordinator) openPIT(ctx context.Context, names []string, keepAlive time.Duration, kind vocab.ContextKind) (PIT, error) {
	if keepAlive <= 0 || keepAlive > vocab.MaxKeepAlive {
		return PIT{}, fmt.Errorf("%w: keep alive for a point in time or scroll [%v] must be positive and at most %v (search.max_keep_alive)", vocab.ErrInvalidRequest, keepAlive, vocab.MaxKeepAlive)
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
			var pick state.Copy
			found := false
			for _, cp := range ix.Shards[num].Copies {
				if !v.Active(cp) || cp.RelocatingFrom != "" {
					continue
				}
				if !found || cp.NodeID == c.meta.LocalNode() {
					pick, found = cp, true
				}
			}
			if !found {
				c.releasePIT(ctx, pit)
				return PIT{}, fmt.Errorf("%w: [%s][%d] has no active copy to open a point in time on", vocab.ErrUnavailable, n, num)
			}
			id, err := c.openContext(ctx, v, ix.UUID, num, pick, keepAlive, kind)
			if err != nil {
				c.releasePIT(ctx, pit)
				return PIT{}, err
			}
			pit.Shards = append(pit.Shards, PITShard{Index: n, UUID: ix.UUID, Shard: num, Node: pick.NodeID, Alloc: pick.AllocationID, Ctx: id})
		}
	}
	if len(pit.Shards) == 0 {
		return PIT{}, fmt.Errorf("%w: a point in time needs at least one index", vocab.ErrInvalidRequest)
	}
	return pit, nil
}

func (c *Coordinator) openContext(ctx context.Context, v *state.State, uuid string, num int, cp state.Copy, keep time.Duration, kind vocab.ContextKind) (string, error) {
	node, err := c.copiesOn(v, cp.NodeID)
	if err != nil {
		return "", err
	}
	return node.OpenContext(ctx, shard.Header{Cluster: v.ClusterUUID, Index: uuid, Shard: num, Alloc: cp.AllocationID}, keep, kind)
}

// releaseTimeout bounds how long releasing the contexts of a point in time
// that could not be used waits for their nodes.
const releaseTimeout = 10 * time.Second

// releasePIT closes the contexts of a point in time a failed request
// opened, even when the request's ctx has ended (a client that went away
// must not leave its contexts holding slots until they expire); what it
// cannot close expires with its keep-alive.
func (c *Coordinator) releasePIT(ctx context.Context, pit PIT) {
	if len(pit.Shards) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := c.ClosePIT(ctx, pit); err != nil {
		c.logger.Warn("coord: releasing the contexts of a point in time", "shards", len(pit.Shards), "err", err)
	}
}

// ClosePIT closes the point in time's contexts on the nodes that hold
// them, and reports how many were open. A context it cannot reach does not
// stop it closing the others; their errors come back joined.
func (c *Coordinator) ClosePIT(ctx context.Context, pit PIT) (int, error) {
	v, err := c.readView()
	if err != nil {
		return 0, err
	}
	freed := 0
	var errs []error
	for _, s := range pit.Shards {
		node, h, err := c.contextOf(v, s)
		if err == nil {
			var open bool
			open, err = node.CloseContext(ctx, h, s.Ctx)
			if open {
				freed++
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("closing the context of [%s][%d] on node %s: %w", s.Index, s.Shard, s.Node, err))
		}
	}
	return freed, errors.Join(errs...)
}

// ClaimScroll takes the cursor of a scroll over pit for its next page;
// CommitScroll must follow (with the new cursor, or the same to give the
// page up).
func (c *Coordinator) ClaimScroll(ctx context.Context, pit PIT) (vocab.ScrollCursor, error) {
	v, err := c.readView()
	if err != nil {
		return vocab.ScrollCursor{}, err
	}
	node, h, err := c.contextOf(v, pit.Shards[0])
	if err != nil {
		return vocab.ScrollCursor{}, err
	}
	return node.ClaimScroll(ctx, h, pit.Shards[0].Ctx)
}

// CommitScroll stores a scroll's cursor after a page.
func (c *Coordinator) CommitScroll(ctx context.Context, pit PIT, cur vocab.ScrollCursor) error {
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
func (c *Coordinator) contextOf(v *state.State, s PITShard) (shard.Copies, shard.Header, error) {
	node, err := c.copiesOn(v, s.Node)
	return node, shard.Header{Cluster: v.ClusterUUID, Index: s.UUID, Shard: s.Shard, Alloc: s.Alloc}, err
}

// pitSearchers searches the point in time's contexts: a pinned view of
// this node's copy in place, another node's through its context. A shard
// whose index is gone from the view fails. Their statistics are never
// kept (statsCache): a pinned view's contents are no generation of its
// copy's.
func (c *Coordinator) pitSearchers(v *state.State, pit PIT, keep time.Duration, srch *esdsl.Search) ([]ShardSearcher, []ShardFailure) {
	var out []ShardSearcher
	var failures []ShardFailure
	rs := newRemoteSearch(v, pit.Indices(), srch)
	rs.header.KeepAlive = keep
	for _, s := range pit.Shards {
		name := fmt.Sprintf("%s/%d", s.Index, s.Shard)
		ix, ok := v.IndexByUUID(s.UUID)
		if !ok {
			failures = append(failures, ShardFailure{Index: s.Index, Shard: s.Shard, Node: s.Node, Err: shard.MissingContext(s.Ctx)})
			continue
		}
		if s.Node == c.meta.LocalNode() {
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
				Err: fmt.Errorf("%w: the context is on node %s, and this node has no fabric", vocab.ErrUnavailable, s.Node)})
			continue
		}
		out = append(out, &remoteSearcher{c: c, rs: rs, name: name, index: s.Index, num: s.Shard, uuid: s.UUID,
			mappingVersion: ix.MappingVersion, pitCtx: s.Ctx,
			copies: []state.Copy{{AllocationID: s.Alloc, NodeID: s.Node, State: state.CopyStarted}}})
	}
	rs.shards = len(out)
	return out, failures
}
