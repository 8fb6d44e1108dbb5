package cluster

import (
	"fmt"
	"slices"

	"github.com/weftsearch/weft/cluster/state"
)

// checkInvariants checks what every state must keep, independently of the
// checks apply makes: no two copies of a shard on one node, at most one
// primary, allocation IDs unique within a shard, in-sync ⊆ started copies,
// consistent move links (at most one move per shard), primary term ≥ 1,
// copies only on known nodes; no alias named as an index, at most one
// write index per alias.
func checkInvariants(s *state.State) error {
	writers := map[string]string{}
	for name, ix := range s.Indices {
		for alias, a := range ix.Aliases {
			if _, ok := s.Indices[alias]; ok {
				return fmt.Errorf("alias %q of index %q is an index name", alias, name)
			}
			if a.IsWriteIndex != nil && *a.IsWriteIndex {
				if other, ok := writers[alias]; ok {
					return fmt.Errorf("alias %q has two write indices, %q and %q", alias, other, name)
				}
				writers[alias] = name
			}
		}
	}
	for name, ix := range s.Indices {
		if ix.Name != name {
			return fmt.Errorf("index %q is filed under %q", ix.Name, name)
		}
		if len(ix.Shards) != ix.NumberOfShards {
			return fmt.Errorf("index %q: %d shards in the table, number_of_shards %d", name, len(ix.Shards), ix.NumberOfShards)
		}
		for n, sh := range ix.Shards {
			if err := checkShard(s, &sh); err != nil {
				return fmt.Errorf("index %q shard %d: %w", name, n, err)
			}
		}
	}
	return nil
}

func checkShard(s *state.State, sh *state.Shard) error {
	if sh.PrimaryTerm < 1 {
		return fmt.Errorf("primary term %d", sh.PrimaryTerm)
	}
	nodes, ids := map[string]bool{}, map[string]state.Copy{}
	primaries, moves := 0, 0
	for _, c := range sh.Copies {
		if nodes[c.NodeID] {
			return fmt.Errorf("two copies on node %s", c.NodeID)
		}
		if _, ok := ids[c.AllocationID]; ok {
			return fmt.Errorf("allocation ID %s twice", c.AllocationID)
		}
		if _, ok := s.Nodes[c.NodeID]; !ok {
			return fmt.Errorf("copy %s on unknown node %s", c.AllocationID, c.NodeID)
		}
		nodes[c.NodeID], ids[c.AllocationID] = true, c
		if c.Primary {
			primaries++
		}
	}
	if primaries > 1 {
		return fmt.Errorf("%d primaries", primaries)
	}
	// In sync means "holds every acknowledged write"; a copy whose node
	// came back stays in sync while it reopens (initializing), so the
	// in-sync set is a subset of the assigned copies, started or not.
	for _, id := range sh.InSync {
		if _, ok := ids[id]; !ok {
			return fmt.Errorf("in-sync %s is not an assigned copy", id)
		}
	}
	if len(sh.InSync) != len(slices.Compact(slices.Sorted(slices.Values(sh.InSync)))) {
		return fmt.Errorf("in-sync set %v repeats an ID", sh.InSync)
	}
	for _, c := range sh.Copies {
		if c.RelocatingFrom != "" {
			moves++
			src, ok := ids[c.RelocatingFrom]
			if !ok || src.RelocatingTo != c.AllocationID || c.Primary || c.State != state.CopyInitializing {
				return fmt.Errorf("move target %s does not match its source", c.AllocationID)
			}
		}
		if c.RelocatingTo != "" {
			if dst, ok := ids[c.RelocatingTo]; !ok || dst.RelocatingFrom != c.AllocationID {
				return fmt.Errorf("move source %s does not match its target", c.AllocationID)
			}
		}
	}
	if moves > 1 {
		return fmt.Errorf("%d moves at once", moves)
	}
	return nil
}
