package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/weftsearch/weft/cluster/state"
)

// Bounds on what a command may define.
const (
	// MaxShards bounds Index.NumberOfShards.
	MaxShards = 1024
	// MaxReplicas bounds Index.NumberOfReplicas.
	MaxReplicas = 64
	// MaxNameBytes bounds index and node names and IDs.
	MaxNameBytes = 255
	// DefaultDelayedTimeoutMS is index.unassigned.node_left.delayed_timeout
	// when CreateIndex leaves it 0 (the leader fills it in).
	DefaultDelayedTimeoutMS = 60_000
)

// apply returns the state after cmd, committed at Raft log index version.
// It is a pure function: no clock, no randomness, no I/O, and s is never
// modified (what changes is copied). A refused command leaves the state as
// it was but for Version, and the error (wrapping one of the package's
// sentinels) is the same on every node.
func apply(s *state.State, version uint64, cmd Command) (*state.State, error) {
	next, _, err := applyCommand(s, version, cmd)
	return next, err
}

// applyCommand is apply that also reports what the command found
// (Result's Created, Found and API key lists); Version and the leader's
// fields are the caller's to fill.
func applyCommand(s *state.State, version uint64, cmd Command) (*state.State, Result, error) {
	next := draftAt(s, version)
	if err := cmd.checkShape(); err != nil {
		return next.State, Result{}, err
	}
	var err error
	var res Result
	switch cmd.Type {
	case CmdSetClusterUUID:
		err = next.setClusterUUID(cmd.SetClusterUUID)
	case CmdUpsertNode:
		err = next.upsertNode(cmd.UpsertNode)
	case CmdNodeLeft:
		err = next.nodeLeft(cmd.NodeLeft)
	case CmdCreateIndex:
		err = next.createIndex(cmd.CreateIndex)
	case CmdDeleteIndex:
		err = next.deleteIndex(cmd.DeleteIndex)
	case CmdPutMapping:
		err = next.putMapping(cmd.PutMapping)
	case CmdUpdateIndexSettings:
		err = next.updateIndexSettings(cmd.UpdateIndexSettings)
	case CmdAllocateCopy:
		err = next.allocateCopy(cmd.AllocateCopy)
	case CmdStartCopy:
		err = next.startCopy(cmd.StartCopy)
	case CmdFailCopy:
		err = next.failCopy(cmd.FailCopy)
	case CmdMoveCopy:
		err = next.moveCopy(cmd.MoveCopy)
	case CmdCancelMove:
		err = next.cancelMove(cmd.CancelMove)
	case CmdSetSettings:
		err = next.setSettings(cmd.SetSettings)
	case CmdUpdateAliases:
		err = next.updateAliases(cmd.UpdateAliases)
	case CmdSetIndexClosed:
		err = next.setIndexClosed(cmd.SetIndexClosed)
	default:
		res, err = next.applySecurity(cmd)
	}
	if err != nil {
		return draftAt(s, version).State, Result{}, fmt.Errorf("%s: %w", cmd.Type, err)
	}
	return next.State, res, nil
}

// draft is the next state while a command builds it: its methods are the
// FSM's steps, which change it by replacing what they change (maps and
// indices are shared with the state it was drafted from until then).
type draft struct{ *state.State }

// draftAt returns a shallow copy of s at version, to be changed.
func draftAt(s *state.State, version uint64) draft {
	n := *s
	n.Version = version
	return draft{&n}
}

func (s draft) putNode(n *state.Node) {
	m := maps.Clone(s.Nodes)
	if m == nil {
		m = make(map[string]*state.Node)
	}
	m[n.ID] = n
	s.Nodes = m
}

func (s draft) putIndex(ix *state.Index) {
	m := maps.Clone(s.Indices)
	if m == nil {
		m = make(map[string]*state.Index)
	}
	m[ix.Name] = ix
	s.Indices = m
}

// namedIndex finds an index named by a command: state.ErrIndexNotFound when the
// name is free, ErrStale when it belongs to another UUID.
func (s draft) namedIndex(name, uuid string) (*state.Index, error) {
	ix, ok := s.Indices[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", state.ErrIndexNotFound, name)
	}
	if ix.UUID != uuid {
		return nil, fmt.Errorf("%w: index %q is %s now, not %s", ErrStale, name, ix.UUID, uuid)
	}
	return ix, nil
}

// editIndex puts a copy of the index into s, for a command to change.
func (s draft) editIndex(ix *state.Index) *state.Index {
	c := *ix
	c.Shards = slices.Clone(ix.Shards)
	s.putIndex(&c)
	return &c
}

// editShard finds shard n of the index with the given UUID and puts a copy
// of it (copies and in-sync set included) into s, for a command to change.
func (s draft) editShard(uuid string, n int) (*state.Index, *state.Shard, error) {
	ix, ok := s.IndexByUUID(uuid)
	if !ok {
		return nil, nil, fmt.Errorf("%w: no index has UUID %q (deleted?)", ErrStale, uuid)
	}
	if n < 0 || n >= len(ix.Shards) {
		return nil, nil, fmt.Errorf("%w: index %q has no shard %d (it has %d)", ErrInvalidCommand, ix.Name, n, len(ix.Shards))
	}
	ix = s.editIndex(ix)
	sh := &ix.Shards[n]
	sh.Copies = slices.Clone(sh.Copies)
	sh.InSync = slices.Clone(sh.InSync)
	return ix, sh, nil
}

// editCopy is editShard for a command about one copy: it also finds the
// copy's position (ErrStale when it is gone).
func (s draft) editCopy(uuid string, n int, allocationID string) (*state.Shard, int, error) {
	_, sh, err := s.editShard(uuid, n)
	if err != nil {
		return nil, -1, err
	}
	i, err := copyAt(sh, allocationID)
	return sh, i, err
}

func checkName(what, name string) error {
	if name == "" || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: %s %q must have 1 to %d bytes", ErrInvalidCommand, what, name, MaxNameBytes)
	}
	return nil
}

func checkObject(what string, raw json.RawMessage) error {
	if !json.Valid(raw) || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return fmt.Errorf("%w: %s must be a JSON object", ErrInvalidCommand, what)
	}
	return nil
}

func (s draft) setClusterUUID(c *SetClusterUUID) error {
	switch {
	case c.UUID == "":
		return fmt.Errorf("%w: empty cluster UUID", ErrInvalidCommand)
	case s.ClusterUUID == "":
		s.ClusterUUID = c.UUID
	case s.ClusterUUID != c.UUID:
		return fmt.Errorf("%w: the cluster UUID is %s and never changes (asked: %s)", ErrClusterMismatch, s.ClusterUUID, c.UUID)
	}
	return nil
}

func (s draft) upsertNode(c *UpsertNode) error {
	n := c.Node
	if err := checkName("node ID", n.ID); err != nil {
		return err
	}
	if err := checkName("node name", n.Name); err != nil {
		return err
	}
	for _, o := range s.Nodes {
		if o.Live && o.Name == n.Name && o.ID != n.ID {
			return fmt.Errorf("%w: node name %q is taken by live node %s; node %s must use another --node-name", ErrInvalidCommand, n.Name, o.ID, n.ID)
		}
	}
	prev, known := s.Nodes[n.ID]
	n.Live, n.LeftAtMS = true, 0
	s.putNode(&n)
	if known && !prev.Live {
		s.reopenCopies(n.ID)
	}
	return nil
}

// reopenCopies marks the started copies of a node that comes back
// initializing: it reports each one started again once it has reopened it
// (a primary) or caught up with its primary (a replica), so nothing is
// routed to a copy the node has not opened yet.
func (s draft) reopenCopies(nodeID string) {
	for _, name := range slices.Sorted(maps.Keys(s.Indices)) {
		ix := s.Indices[name]
		touched := false
		for k := range ix.Shards {
			for _, c := range ix.Shards[k].Copies {
				if c.NodeID == nodeID && c.State == state.CopyStarted {
					touched = true
				}
			}
		}
		if !touched {
			continue
		}
		ix = s.editIndex(ix)
		for k := range ix.Shards {
			sh := &ix.Shards[k]
			sh.Copies = slices.Clone(sh.Copies)
			for j := range sh.Copies {
				if sh.Copies[j].NodeID == nodeID && sh.Copies[j].State == state.CopyStarted {
					sh.Copies[j].State = state.CopyInitializing
				}
			}
		}
	}
}

func (s draft) nodeLeft(c *NodeLeft) error {
	n, ok := s.Nodes[c.NodeID]
	switch {
	case !ok:
		return fmt.Errorf("%w: no node %q", ErrInvalidCommand, c.NodeID)
	case c.AtMS <= 0:
		return fmt.Errorf("%w: node_left at_ms %d must be positive", ErrInvalidCommand, c.AtMS)
	case !n.Live:
		return nil // already gone: keep the time it left first
	}
	left := *n
	left.Live, left.LeftAtMS = false, c.AtMS
	s.putNode(&left)
	return nil
}

func (s draft) createIndex(c *CreateIndex) error {
	ix := c.Index
	if err := checkName("index name", ix.Name); err != nil {
		return err
	}
	if err := checkName("index UUID", ix.UUID); err != nil {
		return err
	}
	if _, ok := s.Indices[ix.Name]; ok {
		return fmt.Errorf("%w: %q", state.ErrIndexExists, ix.Name)
	}
	if held := s.AliasIndices(ix.Name); len(held) > 0 {
		return fmt.Errorf("%w: index name %q is an alias of %v", ErrInvalidCommand, ix.Name, held)
	}
	if o, ok := s.IndexByUUID(ix.UUID); ok {
		return fmt.Errorf("%w: index UUID %s is already index %q's", ErrInvalidCommand, ix.UUID, o.Name)
	}
	switch {
	case ix.NumberOfShards < 1 || ix.NumberOfShards > MaxShards:
		return fmt.Errorf("%w: number_of_shards %d is outside [1, %d]", ErrInvalidCommand, ix.NumberOfShards, MaxShards)
	case ix.NumberOfReplicas < 0 || ix.NumberOfReplicas > MaxReplicas:
		return fmt.Errorf("%w: number_of_replicas %d is outside [0, %d]", ErrInvalidCommand, ix.NumberOfReplicas, MaxReplicas)
	case ix.DelayedTimeoutMS < 0:
		return fmt.Errorf("%w: delayed_timeout_ms %d is negative", ErrInvalidCommand, ix.DelayedTimeoutMS)
	case len(ix.Shards) != ix.NumberOfShards:
		return fmt.Errorf("%w: index %q has %d shards in its table for number_of_shards %d", ErrInvalidCommand, ix.Name, len(ix.Shards), ix.NumberOfShards)
	}
	if len(ix.Mapping) == 0 || string(ix.Mapping) == "null" {
		ix.Mapping = json.RawMessage(`{}`)
	}
	if err := checkObject("mapping", ix.Mapping); err != nil {
		return err
	}
	ix.Shards = slices.Clone(ix.Shards)
	for k := range ix.Shards {
		sh := &ix.Shards[k]
		if sh.PrimaryTerm != 1 || len(sh.InSync) != 0 || sh.Started || len(sh.Copies) > 1 {
			return fmt.Errorf("%w: shard %d of a new index must have primary term 1, at most one copy and nothing in sync", ErrInvalidCommand, k)
		}
		for _, cp := range sh.Copies {
			if !cp.Primary || cp.State != state.CopyInitializing || cp.RelocatingFrom != "" || cp.RelocatingTo != "" || cp.AllocationID == "" {
				return fmt.Errorf("%w: shard %d of a new index: its copy must be an initializing primary with an allocation ID", ErrInvalidCommand, k)
			}
			if err := s.checkTarget(cp.NodeID); err != nil {
				return err
			}
		}
		sh.Copies = slices.Clone(sh.Copies)
	}
	ix.Settings = maps.Clone(ix.Settings)
	ix.MappingVersion, ix.SettingsVersion = 1, 1
	aliases := ix.Aliases
	ix.Aliases = nil
	s.putIndex(&ix)
	for _, name := range slices.Sorted(maps.Keys(aliases)) {
		if err := s.addAlias(ix.Name, name, aliases[name]); err != nil {
			return err
		}
	}
	return nil
}

// checkTarget says whether a new copy may go to the node.
func (s draft) checkTarget(nodeID string) error {
	n, ok := s.Nodes[nodeID]
	switch {
	case !ok || !n.Live:
		return fmt.Errorf("%w: node %q is not a live node", ErrInvalidCommand, nodeID)
	case s.Settings.Excluded(n.Name):
		return fmt.Errorf("%w: node %q is excluded from allocation (cluster.routing.allocation.exclude._name)", ErrInvalidCommand, n.Name)
	}
	return nil
}

func (s draft) deleteIndex(c *DeleteIndex) error {
	if _, err := s.namedIndex(c.Name, c.UUID); err != nil {
		return err
	}
	m := maps.Clone(s.Indices)
	delete(m, c.Name)
	s.Indices = m
	return nil
}

func (s draft) putMapping(c *PutMapping) error {
	ix, err := s.namedIndex(c.Index, c.UUID)
	if err != nil {
		return err
	}
	if c.BaseVersion != ix.MappingVersion {
		return fmt.Errorf("%w: index %q is at mapping version %d, the change was made from %d", state.ErrMappingVersion, ix.Name, ix.MappingVersion, c.BaseVersion)
	}
	if err := checkObject("mapping", c.Mapping); err != nil {
		return err
	}
	ix = s.editIndex(ix)
	ix.Mapping = slices.Clone(c.Mapping)
	ix.MappingVersion++
	return nil
}

func (s draft) updateIndexSettings(c *UpdateIndexSettings) error {
	ix, err := s.namedIndex(c.Index, c.UUID)
	if err != nil {
		return err
	}
	if r := c.NumberOfReplicas; r != nil && (*r < 0 || *r > MaxReplicas) {
		return fmt.Errorf("%w: number_of_replicas %d is outside [0, %d]", ErrInvalidCommand, *r, MaxReplicas)
	}
	if d := c.DelayedTimeoutMS; d != nil && *d < 0 {
		return fmt.Errorf("%w: delayed_timeout_ms %d is negative", ErrInvalidCommand, *d)
	}
	for k, v := range c.Settings {
		if k == "" || !json.Valid(v) {
			return fmt.Errorf("%w: setting %q must have a name and a JSON value", ErrInvalidCommand, k)
		}
	}
	ix = s.editIndex(ix)
	if c.NumberOfReplicas != nil {
		ix.NumberOfReplicas = *c.NumberOfReplicas
	}
	if c.DelayedTimeoutMS != nil {
		ix.DelayedTimeoutMS = *c.DelayedTimeoutMS
	}
	if len(c.Settings) > 0 {
		ix.Settings = maps.Clone(ix.Settings)
		if ix.Settings == nil {
			ix.Settings = make(map[string]json.RawMessage)
		}
		for k, v := range c.Settings {
			if string(bytes.TrimSpace(v)) == "null" {
				delete(ix.Settings, k)
			} else {
				ix.Settings[k] = slices.Clone(v)
			}
		}
	}
	ix.SettingsVersion++
	return nil
}

func (s draft) allocateCopy(c *AllocateCopy) error {
	_, sh, err := s.editShard(c.IndexUUID, c.Shard)
	if err != nil {
		return err
	}
	cp := c.Copy
	switch {
	case cp.AllocationID == "":
		return fmt.Errorf("%w: a new copy needs an allocation ID", ErrInvalidCommand)
	case cp.State != state.CopyInitializing || cp.RelocatingFrom != "" || cp.RelocatingTo != "":
		return fmt.Errorf("%w: a new copy is initializing and not relocating", ErrInvalidCommand)
	}
	if err := s.checkNewCopy(sh, cp.AllocationID, cp.NodeID); err != nil {
		return err
	}
	if cp.Primary {
		if _, ok := sh.Primary(); ok {
			return fmt.Errorf("%w: shard %d already has a primary", ErrInvalidCommand, c.Shard)
		}
		if sh.Started {
			return fmt.Errorf("%w: shard %d has held data: a new empty primary would lose it", ErrInvalidCommand, c.Shard)
		}
	}
	sh.Copies = append(sh.Copies, cp)
	return nil
}

// checkNewCopy says whether a copy with the allocation ID may be added to
// the shard on the node.
func (s draft) checkNewCopy(sh *state.Shard, allocationID, nodeID string) error {
	if err := s.checkTarget(nodeID); err != nil {
		return err
	}
	for _, o := range sh.Copies {
		if o.AllocationID == allocationID {
			return fmt.Errorf("%w: allocation ID %s is taken", ErrInvalidCommand, allocationID)
		}
		if o.NodeID == nodeID {
			return fmt.Errorf("%w: node %q already holds copy %s of this shard", ErrInvalidCommand, nodeID, o.AllocationID)
		}
	}
	return nil
}

// copyAt returns the position of the copy in the shard, or ErrStale.
func copyAt(sh *state.Shard, allocationID string) (int, error) {
	i := slices.IndexFunc(sh.Copies, func(c state.Copy) bool { return c.AllocationID == allocationID })
	if i < 0 {
		return -1, fmt.Errorf("%w: no copy %s in this shard", ErrStale, allocationID)
	}
	return i, nil
}

// removeCopy drops the copy and its in-sync entry.
func removeCopy(sh *state.Shard, allocationID string) {
	sh.Copies = slices.DeleteFunc(sh.Copies, func(c state.Copy) bool { return c.AllocationID == allocationID })
	sh.InSync = slices.DeleteFunc(sh.InSync, func(id string) bool { return id == allocationID })
}

func addInSync(sh *state.Shard, allocationID string) {
	if !slices.Contains(sh.InSync, allocationID) {
		sh.InSync = append(sh.InSync, allocationID)
	}
}

func (s draft) startCopy(c *StartCopy) error {
	sh, i, err := s.editCopy(c.IndexUUID, c.Shard, c.AllocationID)
	if err != nil {
		return err
	}
	cp := sh.Copies[i]
	if cp.State == state.CopyStarted {
		return nil // started already: a retried report
	}
	switch {
	case cp.RelocatingFrom != "":
		j, err := copyAt(sh, cp.RelocatingFrom)
		if err != nil {
			return err
		}
		cp.Primary = sh.Copies[j].Primary
		cp.RelocatingFrom = ""
		removeCopy(sh, sh.Copies[j].AllocationID)
		i, _ = copyAt(sh, c.AllocationID)
		if cp.Primary {
			// The target takes over as primary under a new term, so that
			// nothing the old primary still sends is taken for its own.
			sh.PrimaryTerm++
		}
	case !cp.Primary:
		if p, ok := sh.Primary(); !ok || p.State != state.CopyStarted {
			return fmt.Errorf("%w: replica %s cannot start: shard %d has no started primary to recover from", ErrInvalidCommand, cp.AllocationID, c.Shard)
		}
	}
	cp.State = state.CopyStarted
	sh.Copies[i] = cp
	addInSync(sh, cp.AllocationID)
	if cp.Primary {
		sh.Started = true
	}
	return nil
}

func (s draft) failCopy(c *FailCopy) error {
	sh, i, err := s.editCopy(c.IndexUUID, c.Shard, c.AllocationID)
	if err != nil {
		return err
	}
	if c.PrimaryTerm != 0 && c.PrimaryTerm < sh.PrimaryTerm {
		return fmt.Errorf("%w: a primary of term %d cannot fail copy %s of shard %d, now at term %d", ErrStale, c.PrimaryTerm, c.AllocationID, c.Shard, sh.PrimaryTerm)
	}
	cp := sh.Copies[i]
	if cp.RelocatingTo != "" {
		removeCopy(sh, cp.RelocatingTo) // a move from a failed copy cannot finish
	}
	if cp.RelocatingFrom != "" {
		if j, err := copyAt(sh, cp.RelocatingFrom); err == nil {
			sh.Copies[j].RelocatingTo = ""
		}
	}
	if cp.Primary && !c.Remove && !s.Promotable(sh, cp.AllocationID) {
		// The only copy that has every acknowledged write: it stays the
		// primary and in sync, initializing, with the next primary term, so
		// that its node reopens it (a failed log is cut back to its last
		// acknowledged record) rather than the shard staying red for good.
		sh.Copies[i].State, sh.Copies[i].RelocatingTo = state.CopyInitializing, ""
		sh.PrimaryTerm++
		return nil
	}
	removeCopy(sh, cp.AllocationID)
	if !c.Remove {
		failed := cp
		failed.Primary, failed.State, failed.RelocatingFrom, failed.RelocatingTo = false, state.CopyInitializing, "", ""
		sh.Copies = append(sh.Copies, failed)
	}
	if cp.Primary {
		s.promote(sh)
	}
	return nil
}

// promote makes the first in-sync, started copy on a live node the
// shard's primary, with the next primary term; with none the shard stays
// without a primary.
func (s draft) promote(sh *state.Shard) {
	for k, cp := range sh.Copies {
		if sh.IsInSync(cp.AllocationID) && s.Active(cp) {
			sh.Copies[k].Primary = true
			sh.PrimaryTerm++
			return
		}
	}
}

func (s draft) moveCopy(c *MoveCopy) error {
	sh, i, err := s.editCopy(c.IndexUUID, c.Shard, c.AllocationID)
	if err != nil {
		return err
	}
	if sh.Copies[i].State != state.CopyStarted {
		return fmt.Errorf("%w: copy %s is not started; only a started copy moves", ErrInvalidCommand, c.AllocationID)
	}
	if relocating(sh) {
		return fmt.Errorf("%w: shard %d is moving already", ErrInvalidCommand, c.Shard)
	}
	if c.TargetAllocationID == "" {
		return fmt.Errorf("%w: a move needs a target allocation ID", ErrInvalidCommand)
	}
	if err := s.checkNewCopy(sh, c.TargetAllocationID, c.ToNode); err != nil {
		return err
	}
	sh.Copies[i].RelocatingTo = c.TargetAllocationID
	sh.Copies = append(sh.Copies, state.Copy{
		AllocationID:   c.TargetAllocationID,
		NodeID:         c.ToNode,
		State:          state.CopyInitializing,
		RelocatingFrom: c.AllocationID,
	})
	return nil
}

// relocating reports whether a move of the shard is under way.
func relocating(sh *state.Shard) bool {
	return slices.ContainsFunc(sh.Copies, func(c state.Copy) bool { return c.RelocatingFrom != "" })
}

func (s draft) cancelMove(c *CancelMove) error {
	sh, i, err := s.editCopy(c.IndexUUID, c.Shard, c.TargetAllocationID)
	if err != nil {
		return err
	}
	from := sh.Copies[i].RelocatingFrom
	if from == "" {
		return fmt.Errorf("%w: copy %s is not the target of a move", ErrInvalidCommand, c.TargetAllocationID)
	}
	removeCopy(sh, c.TargetAllocationID)
	if j, err := copyAt(sh, from); err == nil {
		sh.Copies[j].RelocatingTo = ""
	}
	return nil
}

func (s draft) setSettings(c *SetSettings) error {
	var names []string
	for _, n := range c.Settings.ExcludeNames {
		if err := checkName("excluded node name", n); err != nil {
			return err
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for k := range c.Settings.Values {
		if err := checkName("setting name", k); err != nil {
			return err
		}
	}
	if r := c.Settings.RecoveryMaxBytesPerSec; r != nil && *r < 0 {
		return fmt.Errorf("%w: recovery max bytes per second %d must be 0 (no limit) or positive", ErrInvalidCommand, *r)
	}
	s.Settings = state.Settings{ExcludeNames: names, Values: maps.Clone(c.Settings.Values), RecoveryMaxBytesPerSec: c.Settings.RecoveryMaxBytesPerSec}
	return nil
}

func (s draft) setIndexClosed(c *SetIndexClosed) error {
	ix, err := s.namedIndex(c.Index, c.UUID)
	if err != nil {
		return err
	}
	if ix.Closed != c.Closed {
		s.editIndex(ix).Closed = c.Closed
	}
	return nil
}
