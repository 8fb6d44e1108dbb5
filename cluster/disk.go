package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weftsearch/weft/cluster/state"
)

// Disk usage travels in gossip metadata, not in Raft: every node reads its
// own filesystem every Timing.DiskInterval and, when the reading moved by
// more than diskGranularity of the disk, gossips it (memberlist's
// UpdateNode: 20 bytes more in the metadata, one broadcast). The leader
// reads every member's last figure when it plans (Plan's disk argument)
// and proposes only what follows from it — a move, or the flood stage
// block — so the Raft log records decisions, never the readings that
// change every few seconds; any node can show the readings
// (_cat/allocation) from its own gossip table.

// diskGranularity is the share of a disk the usage must move by before it
// is gossiped again (0.1%: 1 GB of a 1 TB disk).
const diskGranularity = 1000

// readDisk reads this node's disk usage (an error is logged and reads as
// unknown).
func (c *Cluster) readDisk() state.DiskUsage {
	read := c.cfg.DiskUsage
	if read == nil {
		read = func() (state.DiskUsage, error) { return statfsUsage(c.cfg.DataDir) }
	}
	u, err := read()
	if err != nil {
		c.refuseDisk(err)
		return state.DiskUsage{}
	}
	if u.UsedBytes > u.TotalBytes {
		u.UsedBytes = u.TotalBytes
	}
	return u
}

func (c *Cluster) refuseDisk(err error) {
	c.diskMu.Lock()
	defer c.diskMu.Unlock()
	if msg := err.Error(); msg != c.diskErr {
		c.diskErr = msg
		c.log.Warn("cluster: the disk usage is unknown; the disk watermarks do not apply to this node", "err", err)
	}
}

// diskMoved reports whether a new reading differs enough from the last
// one gossiped to be gossiped again.
func diskMoved(prev, next state.DiskUsage) bool {
	if prev.TotalBytes != next.TotalBytes {
		return true
	}
	d := max(prev.UsedBytes, next.UsedBytes) - min(prev.UsedBytes, next.UsedBytes)
	return d > next.TotalBytes/diskGranularity
}

// diskLoop reads the disk every DiskInterval and publishes a reading that
// moved: to gossip and to this node's leader loop.
func (c *Cluster) diskLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.Timing.DiskInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		u := c.readDisk()
		if !diskMoved(*c.disk.Load(), u) {
			continue
		}
		c.disk.Store(&u)
		if c.ms != nil {
			c.ms.setDisk(u)
		}
		c.diskChanged.Signal()
	}
}

// DiskUsage returns the last disk usage of every node gossip knows alive
// (this node's own reading included), by node ID; a node that reports none
// is missing.
func (c *Cluster) DiskUsage() map[string]state.DiskUsage {
	out := map[string]state.DiskUsage{}
	if !c.isStarted() {
		return out
	}
	if c.ms != nil {
		for _, m := range c.ms.Members() {
			if isAlive(m) && m.Disk.Known() {
				out[m.ID] = m.Disk
			}
		}
	}
	if u := *c.disk.Load(); u.Known() {
		out[c.cfg.NodeID] = u
	}
	return out
}

// FloodStageBlocks returns the index settings changes the flood stage asks
// for: the read_only_allow_delete block on every index with a copy on a
// node past the flood stage watermark that lacks it, and its removal from
// every index that has it and no copy on a node past the high watermark
// (as Elasticsearch, whoever set it; a node whose usage is unknown is past
// nothing). With the disk threshold disabled it asks for nothing.
func FloodStageBlocks(s *state.State, disk map[string]state.DiskUsage) []Command {
	wm := s.Settings.DiskWatermarks()
	if !wm.Enabled {
		return nil
	}
	var out []Command
	for _, name := range slices.Sorted(maps.Keys(s.Indices)) {
		ix := s.Indices[name]
		flooded, high := "", false
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				u := disk[c.NodeID]
				if wm.FloodStage.Exceeded(u) && flooded == "" {
					flooded = c.NodeID
				}
				high = high || wm.High.Exceeded(u)
			}
		}
		var value json.RawMessage
		switch blocked := ix.ReadOnlyAllowDelete(); {
		case flooded != "" && !blocked:
			value = json.RawMessage(`"true"`)
		case !high && blocked:
			value = json.RawMessage(`null`)
		default:
			continue
		}
		out = append(out, Command{V: CommandVersion, Type: CmdUpdateIndexSettings, UpdateIndexSettings: &UpdateIndexSettings{
			Index: ix.Name, UUID: ix.UUID, Settings: map[string]json.RawMessage{state.ReadOnlyAllowDeleteSetting: value},
		}})
	}
	return out
}

// floodStage proposes what FloodStageBlocks says, logging each change.
func (l *leaderLoop) floodStage(ctx context.Context, disk map[string]state.DiskUsage) {
	for _, cmd := range FloodStageBlocks(l.c.State(), disk) {
		if ctx.Err() != nil || l.propose(ctx, cmd) != nil {
			return
		}
		u := cmd.UpdateIndexSettings
		if string(u.Settings[state.ReadOnlyAllowDeleteSetting]) == "null" {
			l.c.log.Info("cluster: disk usage fell below the high watermark; released the read_only_allow_delete block", "index", u.Index)
		} else {
			l.c.log.Warn(fmt.Sprintf("cluster: a node holding index [%s] is past the flood stage disk watermark; the index is read-only (deletes of the index allowed) until every node holding it is below the high watermark", u.Index))
		}
	}
}
