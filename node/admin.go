package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/httpapi"
	"github.com/weftsearch/weft/vocab"
)

// clusterAdmin serves the API's cluster administration (Raft status,
// cluster settings, shard moves) from the node's cluster.
type clusterAdmin struct{ c *cluster.Cluster }

var _ httpapi.ClusterAdmin = clusterAdmin{}

// Raft describes this node's Raft.
func (a clusterAdmin) Raft() state.RaftInfo { return a.c.Raft() }

// DiskUsage returns the nodes' disk usage as this node's gossip heard it.
func (a clusterAdmin) DiskUsage() map[string]state.DiskUsage { return a.c.DiskUsage() }

// Settings returns the committed cluster settings.
func (a clusterAdmin) Settings() state.Settings { return a.c.State().Settings }

// PutSettings commits new cluster settings; the leader starts draining
// newly excluded nodes.
func (a clusterAdmin) PutSettings(ctx context.Context, s state.Settings) error {
	_, err := a.c.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdSetSettings,
		SetSettings: &cluster.SetSettings{Settings: s}})
	return adminErr(err)
}

// Move starts moving the copy of index's shard on node from (name or ID)
// to node to.
func (a clusterAdmin) Move(ctx context.Context, index string, num int, from, to string) error {
	st := a.c.State()
	ix, ok := st.Indices[index]
	if !ok {
		return fmt.Errorf("%w: no such index [%s]", state.ErrIndexNotFound, index)
	}
	if num < 0 || num >= len(ix.Shards) {
		return fmt.Errorf("%w: [%s] has no shard %d", vocab.ErrInvalidRequest, index, num)
	}
	src, ok := nodeID(st, from)
	if !ok {
		return fmt.Errorf("%w: unknown node [%s]", vocab.ErrInvalidRequest, from)
	}
	dst, ok := nodeID(st, to)
	if !ok {
		return fmt.Errorf("%w: unknown node [%s]", vocab.ErrInvalidRequest, to)
	}
	var alloc string
	for _, c := range ix.Shards[num].Copies {
		if c.NodeID == src {
			alloc = c.AllocationID
		}
	}
	if alloc == "" {
		return fmt.Errorf("%w: [%s][%d] has no copy on node [%s]", vocab.ErrInvalidRequest, index, num, from)
	}
	_, err := a.c.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdMoveCopy,
		MoveCopy: &cluster.MoveCopy{IndexUUID: ix.UUID, Shard: num, AllocationID: alloc, ToNode: dst}})
	return adminErr(err)
}

// nodeID resolves a node name or ID.
func nodeID(st *state.State, nameOrID string) (string, bool) {
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
		return fmt.Errorf("%w: %v", vocab.ErrInvalidRequest, err)
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotReady):
		return fmt.Errorf("%w: %v", vocab.ErrClusterBlocked, err)
	case errors.Is(err, state.ErrIndexNotFound):
		return fmt.Errorf("%w: %v", state.ErrIndexNotFound, err)
	}
	return err
}
