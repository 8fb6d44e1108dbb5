package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/shard"
)

// clusterAdmin serves the API's cluster administration (Raft status,
// cluster settings, shard moves) from the node's cluster.
type clusterAdmin struct{ c *cluster.Cluster }

var _ httpapi.ClusterAdmin = clusterAdmin{}

// Raft describes this node's Raft, with node names for IDs.
func (a clusterAdmin) Raft() httpapi.RaftStatus {
	r := a.c.Raft()
	st := a.c.State()
	name := func(id string) string {
		if n, ok := st.Nodes[id]; ok && n.Name != "" {
			return n.Name
		}
		return id
	}
	out := httpapi.RaftStatus{NodeID: a.c.LocalNodeID(), State: r.State, Term: r.Term, LeaderID: r.LeaderID, LeaderName: r.LeaderName,
		AppliedIndex: r.AppliedIndex, CommitIndex: r.CommitIndex, LastIndex: r.LastIndex, Voters: []string{}, NonVoters: []string{}}
	for _, id := range r.Voters {
		out.Voters = append(out.Voters, name(id))
	}
	for _, id := range r.Nonvoters {
		out.NonVoters = append(out.NonVoters, name(id))
	}
	slices.Sort(out.Voters)
	slices.Sort(out.NonVoters)
	return out
}

// Settings returns the committed cluster settings.
func (a clusterAdmin) Settings() httpapi.ClusterSettings {
	st := a.c.State().Settings
	return httpapi.ClusterSettings{ExcludeNames: st.ExcludeNames, Values: st.Values, RecoveryMaxBytesPerSec: st.RecoveryMaxBytesPerSec}
}

// PutSettings commits new cluster settings; the leader starts draining
// newly excluded nodes.
func (a clusterAdmin) PutSettings(ctx context.Context, s httpapi.ClusterSettings) error {
	_, err := a.c.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdSetSettings,
		SetSettings: &cluster.SetSettings{Settings: cluster.Settings{ExcludeNames: s.ExcludeNames, Values: s.Values, RecoveryMaxBytesPerSec: s.RecoveryMaxBytesPerSec}}})
	return adminErr(err)
}

// Move starts moving the copy of index's shard on node from (name or ID)
// to node to.
func (a clusterAdmin) Move(ctx context.Context, index string, num int, from, to string) error {
	st := a.c.State()
	ix, ok := st.Indices[index]
	if !ok {
		return fmt.Errorf("%w: no such index [%s]", shard.ErrIndexNotFound, index)
	}
	if num < 0 || num >= len(ix.Shards) {
		return fmt.Errorf("%w: [%s] has no shard %d", shard.ErrInvalidRequest, index, num)
	}
	src, ok := nodeID(st, from)
	if !ok {
		return fmt.Errorf("%w: unknown node [%s]", shard.ErrInvalidRequest, from)
	}
	dst, ok := nodeID(st, to)
	if !ok {
		return fmt.Errorf("%w: unknown node [%s]", shard.ErrInvalidRequest, to)
	}
	var alloc string
	for _, c := range ix.Shards[num].Copies {
		if c.NodeID == src {
			alloc = c.AllocationID
		}
	}
	if alloc == "" {
		return fmt.Errorf("%w: [%s][%d] has no copy on node [%s]", shard.ErrInvalidRequest, index, num, from)
	}
	_, err := a.c.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdMoveCopy,
		MoveCopy: &cluster.MoveCopy{IndexUUID: ix.UUID, Shard: num, AllocationID: alloc, ToNode: dst}})
	return adminErr(err)
}

// nodeID resolves a node name or ID.
func nodeID(st *cluster.State, nameOrID string) (string, bool) {
	if _, ok := st.Nodes[nameOrID]; ok {
		return nameOrID, true
	}
	if n, ok := st.NodeByName(nameOrID); ok {
		return n.ID, true
	}
	return "", false
}

// adminErr maps the cluster's refusals to the API's statuses.
func adminErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrInvalidCommand), errors.Is(err, cluster.ErrStale):
		return fmt.Errorf("%w: %v", shard.ErrInvalidRequest, err)
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotReady):
		return fmt.Errorf("%w: %v", shard.ErrClusterBlocked, err)
	case errors.Is(err, cluster.ErrIndexNotFound):
		return fmt.Errorf("%w: %v", shard.ErrIndexNotFound, err)
	}
	return err
}
