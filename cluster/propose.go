package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
)

// Propose commits cmd to the cluster state from any node: on a follower
// it is forwarded over the fabric to the leader (and again to the next
// one across leader changes while ctx lasts), completed there (CreateIndex
// gets its UUID, creation date, default delayed timeout and primary
// copies; AllocateCopy and MoveCopy their new allocation IDs; MoveCopy a
// target given by node name its node ID), logged and applied. It returns
// once the command is committed and applied on the leader, with
// Result.Version its log index (this node's State may still lag: Await
// Version >= it when needed). A command the state refuses returns the
// FSM's sentinel error (state.ErrIndexExists, state.ErrMappingVersion, ErrStale, …)
// on every node; when no leader answers before ctx ends (or, without a
// deadline, Timing.ProposeTimeout) it returns ErrNoLeader. IDs are filled
// in here, before the first attempt, so a retried proposal is the same
// command: one that was in fact committed by a leader that then failed is
// recognised and reported as done.
func (c *Cluster) Propose(ctx context.Context, cmd Command) (Result, error) {
	switch c.phase.Load() {
	case phaseNew:
		return Result{}, fmt.Errorf("%w: Propose before Start", ErrNotReady)
	case phaseClosed:
		return Result{}, ErrClosed
	}
	cmd, err := cmd.normalized()
	if err != nil {
		return Result{}, err
	}
	cmd = stampIDs(cmd)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timing.ProposeTimeout)
		defer cancel()
	}
	backoff := 20 * time.Millisecond
	for {
		res, err := c.proposeOnce(ctx, cmd)
		if err == nil || !retryable(err) {
			return res, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, fmt.Errorf("%w: %w (last attempt: %v)", ErrNoLeader, ctx.Err(), err)
		case <-c.done:
			t.Stop()
			return Result{}, ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (c *Cluster) proposeOnce(ctx context.Context, cmd Command) (Result, error) {
	if c.rn.r.State() == raft.Leader {
		return c.proposeLocal(ctx, cmd)
	}
	_, id := c.rn.r.LeaderWithID()
	if id == "" || string(id) == c.cfg.NodeID || c.cfg.Peers == nil {
		return Result{}, fmt.Errorf("%w: no leader known to %s", ErrNoLeader, c.cfg.NodeName)
	}
	return c.forward(ctx, string(id), cmd)
}

// retryable reports whether a proposal may be tried again (with the same
// or the next leader): everything but an answer from the state machine or
// a request the leader could not take.
func retryable(err error) bool {
	switch {
	case errors.Is(err, errNotLeader), errors.Is(err, ErrNoLeader), errors.Is(err, ErrNotReady),
		errors.Is(err, ErrClosed):
		return true
	case errors.Is(err, state.ErrIndexExists), errors.Is(err, state.ErrIndexNotFound), errors.Is(err, state.ErrMappingVersion),
		errors.Is(err, ErrStale), errors.Is(err, ErrInvalidCommand), errors.Is(err, ErrUnknownCommand),
		errors.Is(err, ErrClusterMismatch), errors.Is(err, ErrUserNotFound), errors.Is(err, ErrAlreadySet):
		return false
	}
	var re *fabric.RemoteError
	if errors.As(err, &re) {
		return re.Code == fabric.CodeUnavailable
	}
	return true // the fabric failed on the way: the leader died or moved
}

// proposeLocal runs a proposal on this node, which must be the leader:
// complete, log, wait until applied here.
func (c *Cluster) proposeLocal(ctx context.Context, cmd Command) (Result, error) {
	st := c.State()
	if st.ClusterUUID == "" && cmd.Type != CmdSetClusterUUID {
		return Result{}, fmt.Errorf("%w: the leader has not set the cluster UUID yet", ErrNotReady)
	}
	cmd, res := complete(cmd, st, time.Now())
	if committed(cmd, st) {
		res.Version = st.Version
		return res, nil
	}
	data, err := cmd.Encode()
	if err != nil {
		return Result{}, err
	}
	timeout := time.Until(deadline(ctx))
	f := c.rn.r.Apply(data, timeout)
	if err := waitFuture(ctx, f); err != nil {
		switch {
		case errors.Is(err, raft.ErrRaftShutdown):
			return Result{}, ErrClosed
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
			errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
			return Result{}, fmt.Errorf("%w: %v", errNotLeader, err)
		}
		return Result{}, err
	}
	if r, ok := f.Response().(fsmResult); ok {
		if r.err != nil {
			return Result{}, r.err
		}
		res = res.withApplied(r.res)
	}
	res.Version = f.Index()
	return res, nil
}

func deadline(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(time.Minute)
}

// stampIDs gives a command the fresh IDs it needs before it is first
// sent, so that every retry carries the same ones.
func stampIDs(cmd Command) Command {
	switch {
	case cmd.CreateIndex != nil && cmd.CreateIndex.Index.UUID == "":
		c := *cmd.CreateIndex
		c.Index.UUID = IndexUUID()
		cmd.CreateIndex = &c
	case cmd.AllocateCopy != nil && cmd.AllocateCopy.Copy.AllocationID == "":
		c := *cmd.AllocateCopy
		c.Copy.AllocationID = uuid.NewString()
		cmd.AllocateCopy = &c
	case cmd.MoveCopy != nil && cmd.MoveCopy.TargetAllocationID == "":
		c := *cmd.MoveCopy
		c.TargetAllocationID = uuid.NewString()
		cmd.MoveCopy = &c
	}
	return cmd
}

// complete fills in what the leader decides for a command, from the
// leader's state and clock, and the Result it will report.
func complete(cmd Command, st *state.State, now time.Time) (Command, Result) {
	cmd = stampIDs(cmd)
	var res Result
	switch {
	case cmd.CreateIndex != nil:
		c := *cmd.CreateIndex
		ix := &c.Index
		if ix.CreationDateMS == 0 {
			ix.CreationDateMS = now.UnixMilli()
		}
		if ix.DelayedTimeoutMS == 0 {
			ix.DelayedTimeoutMS = DefaultDelayedTimeoutMS
		}
		if len(ix.Shards) == 0 && ix.NumberOfShards > 0 && ix.NumberOfShards <= MaxShards {
			initialCopies(st, ix, uuid.NewString)
		}
		cmd.CreateIndex = &c
		res.IndexUUID = ix.UUID
	case cmd.AllocateCopy != nil:
		res.AllocationID = cmd.AllocateCopy.Copy.AllocationID
	case cmd.MoveCopy != nil:
		c := *cmd.MoveCopy
		if _, ok := st.Nodes[c.ToNode]; !ok {
			if n, ok := st.NodeByName(c.ToNode); ok {
				c.ToNode = n.ID
			}
		}
		cmd.MoveCopy = &c
		res.AllocationID = c.TargetAllocationID
	case cmd.NodeLeft != nil && cmd.NodeLeft.AtMS == 0:
		c := *cmd.NodeLeft
		c.AtMS = now.UnixMilli()
		cmd.NodeLeft = &c
	}
	return cmd, res
}

// committed reports whether a retried command is already in the state: an
// index of that name with its UUID, a copy with its new allocation ID.
func committed(cmd Command, st *state.State) bool {
	switch {
	case cmd.CreateIndex != nil:
		ix, ok := st.Indices[cmd.CreateIndex.Index.Name]
		return ok && ix.UUID == cmd.CreateIndex.Index.UUID
	case cmd.AllocateCopy != nil:
		return hasCopy(st, cmd.AllocateCopy.IndexUUID, cmd.AllocateCopy.Shard, cmd.AllocateCopy.Copy.AllocationID)
	case cmd.MoveCopy != nil:
		return hasCopy(st, cmd.MoveCopy.IndexUUID, cmd.MoveCopy.Shard, cmd.MoveCopy.TargetAllocationID)
	}
	return false
}

func hasCopy(st *state.State, indexUUID string, shard int, allocationID string) bool {
	ix, ok := st.IndexByUUID(indexUUID)
	if !ok || shard < 0 || shard >= len(ix.Shards) {
		return false
	}
	_, ok = ix.Shards[shard].Copy(allocationID)
	return ok
}

// IndexUUID returns a new index UUID in Elasticsearch's form: 16 random
// bytes, base64url without padding (22 characters), which clients and
// _cat/indices parsers expect.
func IndexUUID() string {
	u := uuid.New()
	return base64.RawURLEncoding.EncodeToString(u[:])
}
