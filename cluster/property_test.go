package cluster

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/weftsearch/weft/cluster/state"
	"pgregory.net/rapid"
)

// model drives random command sequences through apply and checks the
// invariants after every step, plus the ones over history: primary terms
// never fall and grow by at most one per command, a new primary was an
// in-sync active copy (or the target of a move, or the first primary of a
// shard that never held data), and an allocation ID once gone never comes
// back.
type model struct {
	s       *state.State
	now     int64
	ids     int
	retired map[string]bool // allocation IDs that were and are no more
}

func (m *model) newID() string {
	m.ids++
	return fmt.Sprintf("id%d", m.ids)
}

// step applies cmd; refusals are fine (random commands are often wrong),
// but a refused command must change nothing and an accepted one must keep
// every invariant.
func (m *model) step(t *rapid.T, cmd Command) error {
	cmd.V = CommandVersion
	prev := m.s
	next, err := apply(prev, prev.Version+1, cmd)
	if err != nil {
		return err
	}
	if err := checkInvariants(next); err != nil {
		t.Fatalf("%s %+v broke an invariant: %v", cmd.Type, cmd, err)
	}
	m.checkHistory(t, prev, next, cmd)
	m.s = next
	return nil
}

func (m *model) checkHistory(t *rapid.T, prev, next *state.State, cmd Command) {
	ids := func(s *state.State) map[string]bool {
		out := map[string]bool{}
		for _, ix := range s.Indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					out[ix.UUID+"/"+c.AllocationID] = true
				}
			}
		}
		return out
	}
	before, after := ids(prev), ids(next)
	for id := range after {
		if m.retired[id] {
			t.Fatalf("%s brought back allocation ID %s", cmd.Type, id)
		}
	}
	for id := range before {
		if !after[id] {
			m.retired[id] = true
		}
	}
	for name, ix := range next.Indices {
		old, ok := prev.Indices[name]
		if !ok || old.UUID != ix.UUID {
			continue
		}
		for n := range ix.Shards {
			was, is := &old.Shards[n], &ix.Shards[n]
			if is.PrimaryTerm < was.PrimaryTerm || is.PrimaryTerm > was.PrimaryTerm+1 {
				t.Fatalf("%s moved shard %d's primary term from %d to %d", cmd.Type, n, was.PrimaryTerm, is.PrimaryTerm)
			}
			p, ok := is.Primary()
			oldP, hadP := was.Primary()
			if !ok || (hadP && oldP.AllocationID == p.AllocationID) {
				continue
			}
			before, existed := was.Copy(p.AllocationID)
			switch {
			case existed && before.RelocatingFrom != "" && before.RelocatingFrom == oldP.AllocationID:
				// a move of the primary completed
			case existed && was.IsInSync(p.AllocationID) && prev.Active(before):
				if is.PrimaryTerm != was.PrimaryTerm+1 {
					t.Fatalf("%s promoted %s without a new term", cmd.Type, p.AllocationID)
				}
			case !existed && !hadP && !was.Started:
				// the first primary of a shard that never held data
			default:
				t.Fatalf("%s made %s primary of shard %d: it was not an in-sync active copy", cmd.Type, p.AllocationID, n)
			}
		}
	}
}

// pick returns a random element of a non-empty sorted list, or "".
func pick(t *rapid.T, label string, list []string) string {
	if len(list) == 0 {
		return ""
	}
	return rapid.SampledFrom(list).Draw(t, label)
}

func (m *model) nodeIDs() []string { return slices.Sorted(maps.Keys(m.s.Nodes)) }

// copies lists every copy as (index, shard, copy).
type copyRef struct {
	ix *state.Index
	n  int
	c  state.Copy
}

func (m *model) copies(keep func(state.Copy) bool) []copyRef {
	var out []copyRef
	for _, name := range slices.Sorted(maps.Keys(m.s.Indices)) {
		ix := m.s.Indices[name]
		for n, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if keep(c) {
					out = append(out, copyRef{ix, n, c})
				}
			}
		}
	}
	return out
}

func pickCopy(t *rapid.T, refs []copyRef) (copyRef, bool) {
	if len(refs) == 0 {
		return copyRef{}, false
	}
	return refs[rapid.IntRange(0, len(refs)-1).Draw(t, "copy")], true
}

func (m *model) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"join": func(t *rapid.T) {
			id := rapid.SampledFrom([]string{"n1", "n2", "n3", "n4", "n5"}).Draw(t, "node")
			_ = m.step(t, Command{Type: CmdUpsertNode, UpsertNode: &UpsertNode{Node: state.Node{ID: id, Name: "name-" + id}}})
		},
		"leave": func(t *rapid.T) {
			if id := pick(t, "node", m.nodeIDs()); id != "" {
				_ = m.step(t, Command{Type: CmdNodeLeft, NodeLeft: &NodeLeft{NodeID: id, AtMS: m.now}})
			}
		},
		"time": func(t *rapid.T) { m.now += rapid.Int64Range(1, 3000).Draw(t, "ms") },
		"create": func(t *rapid.T) {
			ix := &state.Index{
				Name: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "index"), UUID: m.newID(),
				NumberOfShards:   rapid.IntRange(1, 4).Draw(t, "shards"),
				NumberOfReplicas: rapid.IntRange(0, 2).Draw(t, "replicas"),
				DelayedTimeoutMS: rapid.Int64Range(0, 5000).Draw(t, "delay"),
			}
			initialCopies(m.s, ix, m.newID)
			_ = m.step(t, Command{Type: CmdCreateIndex, CreateIndex: &CreateIndex{Index: *ix}})
		},
		"delete": func(t *rapid.T) {
			if name := pick(t, "index", slices.Sorted(maps.Keys(m.s.Indices))); name != "" {
				_ = m.step(t, Command{Type: CmdDeleteIndex, DeleteIndex: &DeleteIndex{Name: name, UUID: m.s.Indices[name].UUID}})
			}
		},
		"replicas": func(t *rapid.T) {
			if name := pick(t, "index", slices.Sorted(maps.Keys(m.s.Indices))); name != "" {
				r := rapid.IntRange(0, 3).Draw(t, "replicas")
				_ = m.step(t, Command{Type: CmdUpdateIndexSettings, UpdateIndexSettings: &UpdateIndexSettings{Index: name, UUID: m.s.Indices[name].UUID, NumberOfReplicas: &r}})
			}
		},
		"alias": func(t *rapid.T) {
			var actions []state.AliasAction
			for range rapid.IntRange(1, 2).Draw(t, "actions") {
				name := pick(t, "index", slices.Sorted(maps.Keys(m.s.Indices)))
				if name == "" {
					return
				}
				// Mostly additions of a few names (one of them an index
				// name, to be refused).
				a := state.AliasAction{Type: rapid.SampledFrom([]state.AliasActionType{state.AliasAdd, state.AliasAdd, state.AliasAdd, state.AliasRemove, state.AliasRemoveIndex}).Draw(t, "action"),
					Index: name, UUID: m.s.Indices[name].UUID, Alias: rapid.SampledFrom([]string{"x", "x", "y", "a"}).Draw(t, "alias"),
					MustExist: rapid.IntRange(0, 3).Draw(t, "must exist") == 0}
				if rapid.IntRange(0, 2).Draw(t, "writer") > 0 {
					w := rapid.IntRange(0, 2).Draw(t, "is write index") > 0
					a.Spec.IsWriteIndex = &w
				}
				actions = append(actions, a)
			}
			_ = m.step(t, Command{Type: CmdUpdateAliases, UpdateAliases: &UpdateAliases{Actions: actions}})
		},
		"close": func(t *rapid.T) {
			if name := pick(t, "index", slices.Sorted(maps.Keys(m.s.Indices))); name != "" {
				_ = m.step(t, Command{Type: CmdSetIndexClosed, SetIndexClosed: &SetIndexClosed{Index: name, UUID: m.s.Indices[name].UUID, Closed: rapid.Bool().Draw(t, "closed")}})
			}
		},
		"exclude": func(t *rapid.T) {
			var names []string
			for _, id := range m.nodeIDs() {
				if rapid.IntRange(0, 3).Draw(t, "exclude "+id) == 0 {
					names = append(names, "name-"+id)
				}
			}
			_ = m.step(t, Command{Type: CmdSetSettings, SetSettings: &SetSettings{Settings: state.Settings{ExcludeNames: names}}})
		},
		"allocate": func(t *rapid.T) {
			for _, cmd := range Plan(m.s, nil, m.now, m.newID) {
				if err := m.step(t, cmd); err != nil {
					t.Fatalf("Plan's %s %+v was refused: %v", cmd.Type, cmd, err)
				}
			}
		},
		"settle": func(t *rapid.T) { m.settle(t) },
		"start": func(t *rapid.T) {
			if r, ok := pickCopy(t, m.copies(func(c state.Copy) bool { return c.State == state.CopyInitializing })); ok {
				_ = m.step(t, Command{Type: CmdStartCopy, StartCopy: &StartCopy{IndexUUID: r.ix.UUID, Shard: r.n, AllocationID: r.c.AllocationID}})
			}
		},
		"fail": func(t *rapid.T) {
			if r, ok := pickCopy(t, m.copies(func(state.Copy) bool { return true })); ok {
				remove := rapid.Bool().Draw(t, "remove")
				_ = m.step(t, Command{Type: CmdFailCopy, FailCopy: &FailCopy{IndexUUID: r.ix.UUID, Shard: r.n, AllocationID: r.c.AllocationID, Remove: remove}})
			}
		},
		"move": func(t *rapid.T) {
			if r, ok := pickCopy(t, m.copies(func(c state.Copy) bool { return c.State == state.CopyStarted })); ok {
				to := pick(t, "to", m.nodeIDs())
				_ = m.step(t, Command{Type: CmdMoveCopy, MoveCopy: &MoveCopy{IndexUUID: r.ix.UUID, Shard: r.n, AllocationID: r.c.AllocationID, ToNode: to, TargetAllocationID: m.newID()}})
			}
		},
		"cancel": func(t *rapid.T) {
			if r, ok := pickCopy(t, m.copies(func(c state.Copy) bool { return c.RelocatingFrom != "" })); ok {
				_ = m.step(t, Command{Type: CmdCancelMove, CancelMove: &CancelMove{IndexUUID: r.ix.UUID, Shard: r.n, TargetAllocationID: r.c.AllocationID}})
			}
		},
		// An allocation ID a copy of the shard has: apply must refuse it
		// (the leader makes every other one a fresh UUID, which the
		// history check above holds it to).
		"reuse": func(t *rapid.T) {
			r, ok := pickCopy(t, m.copies(func(state.Copy) bool { return true }))
			if !ok {
				return
			}
			sh := r.ix.Shards[r.n]
			id := sh.Copies[rapid.IntRange(0, len(sh.Copies)-1).Draw(t, "taken id")].AllocationID
			if m.step(t, Command{Type: CmdAllocateCopy, AllocateCopy: &AllocateCopy{IndexUUID: r.ix.UUID, Shard: r.n,
				Copy: state.Copy{AllocationID: id, NodeID: pick(t, "node", m.nodeIDs()), State: state.CopyInitializing}}}) == nil {
				t.Fatalf("allocation ID %s was given twice", id)
			}
		},
	}
}

func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{s: &state.State{}, now: 1, retired: map[string]bool{}}
		t.Repeat(m.actions())
	})
}

// TestPropertyAllocatorConverges: from any state the random commands reach,
// applying Plan while every node starts what it is given reaches a fixed
// point in a bounded number of rounds, and there every shard that can
// serve has its replicas and the live nodes are balanced.
func TestPropertyAllocatorConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{s: &state.State{}, now: 1, retired: map[string]bool{}}
		actions := m.actions()
		names := slices.Sorted(maps.Keys(actions))
		for range rapid.IntRange(0, 60).Draw(t, "steps") {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
		}
		const rounds = 200
		for round := 0; m.settle(t); round++ {
			if round == rounds {
				t.Fatalf("no fixed point after %d rounds; still planning %+v", rounds, Plan(m.s, nil, m.now, m.newID))
			}
		}
		checkFixedPoint(t, m.s)
	})
}

// settle is one round of a working cluster: the leader applies Plan, the
// live nodes start what they were given (primaries first, then the copies
// that recover from them), and time passes beyond every delayed timeout.
// It reports whether anything changed.
func (m *model) settle(t *rapid.T) bool {
	changed := false
	for _, cmd := range Plan(m.s, nil, m.now, m.newID) {
		if err := m.step(t, cmd); err != nil {
			t.Fatalf("Plan's %s %+v was refused: %v", cmd.Type, cmd, err)
		}
		changed = true
	}
	for _, primaries := range []bool{true, false} {
		for _, r := range m.copies(func(c state.Copy) bool { return c.State == state.CopyInitializing && c.Primary == primaries }) {
			if m.s.NodeLive(r.c.NodeID) && m.step(t, Command{Type: CmdStartCopy, StartCopy: &StartCopy{IndexUUID: r.ix.UUID, Shard: r.n, AllocationID: r.c.AllocationID}}) == nil {
				changed = true
			}
		}
	}
	m.now += 10_000
	return changed
}

func checkFixedPoint(t *rapid.T, s *state.State) {
	p := newPlanner(s, 0, nil)
	eligible := p.eligible()
	red := false
	for _, ix := range s.Indices {
		for n, sh := range ix.Shards {
			primary, ok := sh.Primary()
			if !ok || !s.Active(primary) {
				red = true
				continue
			}
			replicas := 0
			for _, c := range sh.Copies {
				if !c.Primary {
					replicas++
				}
				if s.NodeLive(c.NodeID) && c.State != state.CopyStarted {
					t.Fatalf("index %q shard %d: copy %s on a live node is still initializing", ix.Name, n, c.AllocationID)
				}
			}
			free := slices.ContainsFunc(eligible, func(id string) bool { return !holds(&sh, id) })
			if replicas > ix.NumberOfReplicas || (replicas < ix.NumberOfReplicas && free) {
				t.Fatalf("index %q shard %d: %d replicas for number_of_replicas %d (a free node: %v)", ix.Name, n, replicas, ix.NumberOfReplicas, free)
			}
		}
	}
	if red || len(eligible) < 2 {
		return
	}
	lo, hi := p.counts[eligible[0]], p.counts[eligible[0]]
	for _, id := range eligible {
		lo, hi = min(lo, p.counts[id]), max(hi, p.counts[id])
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced at the fixed point: copies per eligible node %v", p.counts)
	}
}
