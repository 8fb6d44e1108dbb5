package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/weftsearch/weft/cluster/state"
)

// MaxMovesPerNode caps the moves a node takes part in at once (as source
// or target), so that draining or rebalancing never floods one node with
// recoveries.
const MaxMovesPerNode = 2

// Plan returns what the leader should do next to bring the shard table
// closer to what the state asks for, one step per shard: it is a pure
// function of the state and the time (nowMS, unix ms, for delayed
// reallocation), and newID makes allocation IDs. The commands touch
// distinct shards, so they apply in order without refusing each other on
// the state they were planned from; the leader applies them and plans
// again, until Plan returns nothing. In order of precedence, per shard:
//
//   - a move whose target, source or primary is on a node that is not live
//     is cancelled;
//   - a primary on a node that is not live is failed when an in-sync
//     started copy on a live node can take over (FailCopy promotes it); a
//     new primary that never started is failed and then allocated again;
//     otherwise the shard waits, red, for the node to return;
//   - a shard without a primary that never started gets one;
//   - a replica whose node has been gone longer than the index's
//     DelayedTimeoutMS is removed, then replicas beyond NumberOfReplicas
//     are removed and missing ones allocated (only once the primary has
//     started);
//   - a started copy on an excluded node is moved off it, and so is one
//     on a node past the high disk watermark (one move off such a node at
//     a time: the next waits for a new reading of its disk).
//
// When nothing else is to be done and no copy is initializing or moving,
// one copy moves from the node with the most copies to the one with the
// fewest if they differ by more than one, so the cluster converges and
// never flaps. New copies go to the live, non-excluded node with the
// fewest copies (all indices counted) that holds no copy of the shard;
// ties go to the lowest node ID.
//
// disk is the nodes' last disk usage by node ID (DiskUsage; nil or a
// missing node: unknown, which no watermark applies to). With the disk
// threshold enabled (state.Settings.DiskWatermarks), no copy goes to a
// node past the high watermark, and none but the first primary of a shard
// that never started goes to a node past the low watermark (as
// Elasticsearch, so that a new index is never red for want of a node
// merely fuller than the others).
func Plan(s *state.State, disk map[string]state.DiskUsage, nowMS int64, newID func() string) []Command {
	p := newPlanner(s, nowMS, newID)
	p.disk, p.wm = disk, s.Settings.DiskWatermarks()
	for _, name := range slices.Sorted(maps.Keys(s.Indices)) {
		ix := s.Indices[name]
		for n := range ix.Shards {
			p.shard(ix, n, &ix.Shards[n])
		}
	}
	if len(p.out) == 0 && !p.busy {
		p.rebalance()
	}
	return p.out
}

type planner struct {
	s      *state.State
	now    int64
	newID  func() string
	counts map[string]int // copies per node, all indices
	moves  map[string]int // moves per node, as source or target
	busy   bool           // a copy is initializing or moving
	disk   map[string]state.DiskUsage
	wm     state.DiskWatermarks
	out    []Command
}

// pastLow and pastHigh report whether the node's disk is past the low or
// high watermark (false with the disk threshold disabled, or unknown).
func (p *planner) pastLow(id string) bool  { return p.wm.Enabled && p.wm.Low.Exceeded(p.disk[id]) }
func (p *planner) pastHigh(id string) bool { return p.wm.Enabled && p.wm.High.Exceeded(p.disk[id]) }

func newPlanner(s *state.State, nowMS int64, newID func() string) *planner {
	p := &planner{s: s, now: nowMS, newID: newID, counts: make(map[string]int), moves: make(map[string]int)}
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				p.counts[c.NodeID]++
				if c.RelocatingFrom != "" || c.RelocatingTo != "" {
					p.moves[c.NodeID]++
				}
			}
		}
	}
	return p
}

func (p *planner) live(nodeID string) bool { return p.s.NodeLive(nodeID) }

func (p *planner) shard(ix *state.Index, n int, sh *state.Shard) {
	primary, hasPrimary := sh.Primary()
	if p.cancelMove(ix, n, sh, primary) {
		return
	}
	switch {
	case hasPrimary && !p.live(primary.NodeID):
		p.primaryGone(ix, n, sh, primary)
		return
	case !hasPrimary:
		if !sh.Started {
			p.allocate(ix, n, sh, true)
		}
		return
	case primary.State != state.CopyStarted:
		p.busy = true
		return
	}
	if p.replicas(ix, n, sh) {
		return
	}
	p.drain(ix, n, sh)
}

// cancelMove cancels a move that cannot finish; it reports whether the
// shard is moving (and so takes no other step now).
func (p *planner) cancelMove(ix *state.Index, n int, sh *state.Shard, primary state.Copy) bool {
	i := slices.IndexFunc(sh.Copies, func(c state.Copy) bool { return c.RelocatingFrom != "" })
	if i < 0 {
		return false
	}
	target := sh.Copies[i]
	source, _ := sh.Copy(target.RelocatingFrom)
	for _, node := range []string{target.NodeID, source.NodeID, primary.NodeID} {
		if !p.live(node) {
			p.emit(Command{Type: CmdCancelMove, CancelMove: &CancelMove{
				IndexUUID: ix.UUID, Shard: n, TargetAllocationID: target.AllocationID,
				Reason: fmt.Sprintf("node %s left", node),
			}})
			p.moves[target.NodeID]--
			p.moves[source.NodeID]--
			return true
		}
	}
	p.busy = true
	return true
}

func (p *planner) primaryGone(ix *state.Index, n int, sh *state.Shard, primary state.Copy) {
	switch {
	case p.s.Promotable(sh, primary.AllocationID):
		p.emit(Command{Type: CmdFailCopy, FailCopy: &FailCopy{
			IndexUUID: ix.UUID, Shard: n, AllocationID: primary.AllocationID,
			Reason: fmt.Sprintf("primary's node %s left", primary.NodeID),
		}})
	case primary.State == state.CopyInitializing && !sh.Started:
		p.emit(Command{Type: CmdFailCopy, FailCopy: &FailCopy{
			IndexUUID: ix.UUID, Shard: n, AllocationID: primary.AllocationID, Remove: true,
			Reason: fmt.Sprintf("new primary's node %s left before it started", primary.NodeID),
		}})
		p.counts[primary.NodeID]--
	}
}

// replicas removes replicas that are gone for good or too many and
// allocates missing ones; it reports whether it took a step (or must wait).
func (p *planner) replicas(ix *state.Index, n int, sh *state.Shard) bool {
	var replicas []state.Copy
	for _, c := range sh.Copies {
		if !c.Primary && c.RelocatingFrom == "" {
			replicas = append(replicas, c)
		}
	}
	for _, c := range replicas {
		node := p.s.Nodes[c.NodeID]
		if node != nil && !node.Live && p.now-node.LeftAtMS >= ix.DelayedTimeoutMS {
			p.remove(ix, n, c, fmt.Sprintf("node %s left more than %d ms ago", c.NodeID, ix.DelayedTimeoutMS))
			return true
		}
	}
	if len(replicas) > ix.NumberOfReplicas {
		// The least useful goes first: on a node that is gone, then
		// initializing, then the last allocated.
		newestFirst := slices.Clone(replicas)
		slices.Reverse(newestFirst)
		worst := slices.MaxFunc(newestFirst, func(a, b state.Copy) int {
			return cmp.Or(cmp.Compare(b2i(!p.live(a.NodeID)), b2i(!p.live(b.NodeID))),
				cmp.Compare(b2i(a.State != state.CopyStarted), b2i(b.State != state.CopyStarted)))
		})
		p.remove(ix, n, worst, fmt.Sprintf("number_of_replicas is %d", ix.NumberOfReplicas))
		return true
	}
	if len(replicas) < ix.NumberOfReplicas && p.allocate(ix, n, sh, false) {
		return true
	}
	if slices.ContainsFunc(replicas, func(c state.Copy) bool { return c.State != state.CopyStarted }) {
		p.busy = true
		return true
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *planner) remove(ix *state.Index, n int, c state.Copy, reason string) {
	p.emit(Command{Type: CmdFailCopy, FailCopy: &FailCopy{
		IndexUUID: ix.UUID, Shard: n, AllocationID: c.AllocationID, Remove: true, Reason: reason,
	}})
	p.counts[c.NodeID]--
}

// allocate adds a new copy on the best node, if there is one.
func (p *planner) allocate(ix *state.Index, n int, sh *state.Shard, primary bool) bool {
	node := p.best(sh, false, primary && !sh.Started)
	if node == "" {
		return false
	}
	p.emit(Command{Type: CmdAllocateCopy, AllocateCopy: &AllocateCopy{
		IndexUUID: ix.UUID, Shard: n,
		Copy: state.Copy{AllocationID: p.newID(), NodeID: node, Primary: primary, State: state.CopyInitializing},
	}})
	p.counts[node]++
	return true
}

// drain moves a started copy off an excluded node, or off a node past the
// high disk watermark that no copy is moving off yet.
func (p *planner) drain(ix *state.Index, n int, sh *state.Shard) {
	for _, c := range sh.Copies {
		node := p.s.Nodes[c.NodeID]
		if node == nil || !node.Live || p.moves[c.NodeID] >= MaxMovesPerNode {
			continue
		}
		if !p.s.Settings.Excluded(node.Name) && (!p.pastHigh(c.NodeID) || p.moves[c.NodeID] > 0) {
			continue
		}
		if to := p.best(sh, true, false); to != "" {
			p.move(ix, n, c, to)
			return
		}
	}
}

func (p *planner) move(ix *state.Index, n int, c state.Copy, to string) {
	p.emit(Command{Type: CmdMoveCopy, MoveCopy: &MoveCopy{
		IndexUUID: ix.UUID, Shard: n, AllocationID: c.AllocationID, ToNode: to, TargetAllocationID: p.newID(),
	}})
	p.counts[to]++
	p.moves[to]++
	p.moves[c.NodeID]++
}

// eligible lists the live, non-excluded nodes, by ID.
func (p *planner) eligible() []string {
	var ids []string
	for id, n := range p.s.Nodes {
		if n.Live && !p.s.Settings.Excluded(n.Name) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// best returns the eligible node with the fewest copies that holds no
// copy of the shard, is not past the high disk watermark nor, unless the
// copy is the first primary of a shard that never started (newPrimary),
// past the low one (and, for a move, takes part in fewer than
// MaxMovesPerNode moves), or "".
func (p *planner) best(sh *state.Shard, moving, newPrimary bool) string {
	best := ""
	for _, id := range p.eligible() {
		if holds(sh, id) || (moving && p.moves[id] >= MaxMovesPerNode) || !p.diskAccepts(id, newPrimary) {
			continue
		}
		if best == "" || p.counts[id] < p.counts[best] {
			best = id
		}
	}
	return best
}

// diskAccepts reports whether the disk watermarks let a new copy go to the
// node.
func (p *planner) diskAccepts(id string, newPrimary bool) bool {
	return !p.pastHigh(id) && (newPrimary || !p.pastLow(id))
}

func holds(sh *state.Shard, nodeID string) bool {
	return slices.ContainsFunc(sh.Copies, func(c state.Copy) bool { return c.NodeID == nodeID })
}

// rebalance moves one started copy from a fuller node to an emptier one
// when their copy counts differ by more than one.
func (p *planner) rebalance() {
	nodes := p.eligible()
	byCount := func(desc bool) []string {
		sorted := slices.Clone(nodes)
		slices.SortStableFunc(sorted, func(a, b string) int {
			if desc {
				return cmp.Compare(p.counts[b], p.counts[a])
			}
			return cmp.Compare(p.counts[a], p.counts[b])
		})
		return sorted
	}
	for _, from := range byCount(true) {
		for _, to := range byCount(false) {
			if p.counts[from]-p.counts[to] <= 1 {
				break
			}
			if !p.diskAccepts(to, false) {
				continue
			}
			if p.rebalanceOne(from, to) {
				return
			}
		}
	}
}

func (p *planner) rebalanceOne(from, to string) bool {
	for _, name := range slices.Sorted(maps.Keys(p.s.Indices)) {
		ix := p.s.Indices[name]
		for n := range ix.Shards {
			sh := &ix.Shards[n]
			if primary, ok := sh.Primary(); !ok || !p.s.Active(primary) || holds(sh, to) {
				continue
			}
			for _, c := range sh.Copies {
				if c.NodeID == from && c.State == state.CopyStarted {
					p.move(ix, n, c, to)
					return true
				}
			}
		}
	}
	return false
}

func (p *planner) emit(c Command) {
	c.V = CommandVersion
	p.out = append(p.out, c)
}

// initialCopies fills a new index's shard table: one initializing primary
// per shard, each on the eligible node with the fewest copies, primary
// term 1. It runs in the FSM, which knows no disk usage: a primary placed
// on a node past the high watermark is moved off by Plan once it started. With no eligible node the shards get no copy yet (Plan
// allocates them once a node is there).
func initialCopies(s *state.State, ix *state.Index, newID func() string) {
	p := newPlanner(s, 0, newID)
	ix.Shards = make([]state.Shard, ix.NumberOfShards)
	for n := range ix.Shards {
		sh := &ix.Shards[n]
		sh.PrimaryTerm = 1
		if node := p.best(sh, false, true); node != "" {
			sh.Copies = []state.Copy{{AllocationID: newID(), NodeID: node, Primary: true, State: state.CopyInitializing}}
			p.counts[node]++
		}
	}
}
