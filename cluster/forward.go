package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/fabric"
)

// methodPropose carries a proposal from a follower to the leader.
const methodPropose = fabric.MethodClusterBase + 0

// proposalVersion is the version of the forwarding envelope.
const proposalVersion = 1

// proposal is what a follower sends the leader: the command, who sends it
// and the cluster it believes it is part of ("" before it knows).
type proposal struct {
	V           int             `json:"v"`
	From        string          `json:"from"`
	ClusterUUID string          `json:"cluster_uuid,omitempty"`
	Command     json.RawMessage `json:"command"`
}

// proposalReply is the leader's answer to a proposal that committed;
// errors travel as fabric error codes (see errors.go).
type proposalReply struct {
	V      int    `json:"v"`
	Result Result `json:"result"`
}

// decodeProposal parses a forwarded proposal; it faces the network, so
// any input gives a proposal with a well-formed command or an error.
func decodeProposal(b []byte) (proposal, Command, error) {
	var p proposal
	if err := json.Unmarshal(b, &p); err != nil {
		return p, Command{}, fmt.Errorf("%w: cannot decode a forwarded proposal: %v", ErrInvalidCommand, err)
	}
	if p.V != proposalVersion {
		return p, Command{}, fmt.Errorf("%w: proposal envelope version %d (this node knows %d)", ErrUnknownCommand, p.V, proposalVersion)
	}
	cmd, err := DecodeCommand(p.Command)
	return p, cmd, err
}

// forward sends a proposal to the leader and returns its answer, with the
// leader's sentinel errors restored.
func (c *Cluster) forward(ctx context.Context, leaderID string, cmd Command) (Result, error) {
	data, err := cmd.Encode()
	if err != nil {
		return Result{}, err
	}
	body, err := json.Marshal(proposal{V: proposalVersion, From: c.cfg.NodeID, ClusterUUID: c.State().ClusterUUID, Command: data})
	if err != nil {
		return Result{}, fmt.Errorf("cluster: encoding a proposal: %w", err)
	}
	reply, err := c.cfg.Peers.Call(ctx, leaderID, methodPropose, body)
	if err != nil {
		return Result{}, fromRemote(err)
	}
	var r proposalReply
	if err := json.Unmarshal(reply, &r); err != nil || r.V != proposalVersion {
		return Result{}, fmt.Errorf("cluster: leader %s answered a proposal with an unreadable reply (version %d): %v", leaderID, r.V, err)
	}
	return r.Result, nil
}

// serveProposal is the leader's end of forwarding: the same path as a
// local Propose, once.
func (c *Cluster) serveProposal(ctx context.Context, req *fabric.Request) ([]byte, error) {
	p, cmd, err := decodeProposal(req.Payload)
	if err != nil {
		return nil, toRemote(err)
	}
	if !c.isStarted() {
		return nil, toRemote(ErrClosed)
	}
	if ours := c.State().ClusterUUID; p.ClusterUUID != "" && ours != "" && p.ClusterUUID != ours {
		return nil, toRemote(fmt.Errorf("%w: node %s proposes for cluster %s to a leader of cluster %s", ErrClusterMismatch, p.From, p.ClusterUUID, ours))
	}
	if c.rn.r.State() != raft.Leader {
		return nil, toRemote(fmt.Errorf("%w: %s", errNotLeader, c.cfg.NodeName))
	}
	res, err := c.proposeLocal(ctx, cmd)
	if err != nil {
		return nil, toRemote(err)
	}
	return json.Marshal(proposalReply{V: proposalVersion, Result: res})
}
