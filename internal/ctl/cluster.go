package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// RaftStatus is GET /_weft/raft.
type RaftStatus struct {
	NodeID       string   `json:"node_id"`
	State        string   `json:"state"`
	Term         uint64   `json:"term"`
	LeaderID     string   `json:"leader_id"`
	LeaderName   string   `json:"leader_name"`
	Voters       []string `json:"voters"`
	NonVoters    []string `json:"non_voters"`
	AppliedIndex uint64   `json:"applied_index"`
	CommitIndex  uint64   `json:"commit_index"`
	LastIndex    uint64   `json:"last_index"`
}

// NodeRow is one row of GET /_cat/nodes?format=json.
type NodeRow struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	HTTPAddress   string `json:"http_address"`
	FabricAddress string `json:"fabric_address"`
	Master        string `json:"master"`
	Shards        string `json:"shards"`
}

// ShardRow is one row of GET /_cat/shards?format=json.
type ShardRow struct {
	Index  string `json:"index"`
	Shard  string `json:"shard"`
	PriRep string `json:"prirep"`
	State  string `json:"state"`
	Docs   string `json:"docs"`
	Store  string `json:"store"`
	Node   string `json:"node"`
	ID     string `json:"id"`
	Term   string `json:"term"`
}

// RecoveryRow is one row of GET /_cat/recovery?format=json.
type RecoveryRow struct {
	Index        string `json:"index"`
	Shard        string `json:"shard"`
	Type         string `json:"type"`
	Stage        string `json:"stage"`
	TargetNode   string `json:"target_node"`
	BytesPercent string `json:"bytes_percent"`
	Ops          string `json:"translog_ops_recovered"`
}

// ShardsView is what `cluster shards` shows: the copies, with the progress
// of those recovering.
type ShardsView struct {
	Shards     []ShardRow    `json:"shards"`
	Recoveries []RecoveryRow `json:"recoveries"`
}

// ClusterStatus is what `cluster status` shows: health and Raft.
type ClusterStatus struct {
	Health Health     `json:"health"`
	Raft   RaftStatus `json:"raft"`
}

// jsonFormat asks a _cat endpoint for JSON.
var jsonFormat = url.Values{"format": {"json"}}

// Raft returns GET /_weft/raft.
func (c *Client) Raft(ctx context.Context) (RaftStatus, []byte, error) {
	var r RaftStatus
	raw, err := c.getRaw(ctx, "/_weft/raft", nil, &r)
	return r, raw, err
}

// Nodes returns GET /_cat/nodes.
func (c *Client) Nodes(ctx context.Context) ([]NodeRow, []byte, error) {
	var rows []NodeRow
	raw, err := c.getRaw(ctx, "/_cat/nodes", jsonFormat, &rows)
	return rows, raw, err
}

// Shards returns GET /_cat/shards[/{index}].
func (c *Client) Shards(ctx context.Context, index string) ([]ShardRow, []byte, error) {
	path := "/_cat/shards"
	if index != "" {
		path += "/" + url.PathEscape(index)
	}
	var rows []ShardRow
	raw, err := c.getRaw(ctx, path, jsonFormat, &rows)
	return rows, raw, err
}

// ShardsWithRecoveries returns the shard table and the recoveries in progress.
func (c *Client) ShardsWithRecoveries(ctx context.Context, index string) (ShardsView, []byte, error) {
	var sv ShardsView
	var err error
	if sv.Shards, _, err = c.Shards(ctx, index); err != nil {
		return sv, nil, err
	}
	path := "/_cat/recovery"
	if index != "" {
		path += "/" + url.PathEscape(index)
	}
	if _, err = c.getRaw(ctx, path, url.Values{"format": {"json"}, "active_only": {"true"}}, &sv.Recoveries); err != nil {
		return sv, nil, err
	}
	raw, err := json.Marshal(sv)
	return sv, raw, err
}

// Status returns the cluster's health and this node's Raft status.
func (c *Client) Status(ctx context.Context) (ClusterStatus, []byte, error) {
	var st ClusterStatus
	var err error
	if st.Health, _, err = c.Health(ctx); err != nil {
		return st, nil, err
	}
	if st.Raft, _, err = c.Raft(ctx); err != nil {
		return st, nil, err
	}
	raw, err := json.Marshal(st)
	return st, raw, err
}

// ExcludedNodes returns cluster.routing.allocation.exclude._name.
func (c *Client) ExcludedNodes(ctx context.Context) ([]string, error) {
	var s struct {
		Persistent map[string]string `json:"persistent"`
	}
	if _, err := c.getRaw(ctx, "/_cluster/settings", nil, &s); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range strings.Split(s.Persistent["cluster.routing.allocation.exclude._name"], ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetExcludedNodes replaces cluster.routing.allocation.exclude._name.
func (c *Client) SetExcludedNodes(ctx context.Context, names []string) error {
	var v any = strings.Join(names, ",")
	if len(names) == 0 {
		v = nil
	}
	body, err := json.Marshal(map[string]any{"persistent": map[string]any{"cluster.routing.allocation.exclude._name": v}})
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, http.MethodPut, "/_cluster/settings", nil, body, "application/json")
	return err
}

// MoveShard asks the cluster to move index's shard from one node to another.
func (c *Client) MoveShard(ctx context.Context, index string, shard int, from, to string) error {
	body, err := json.Marshal(map[string]any{"commands": []any{map[string]any{"move": map[string]any{
		"index": index, "shard": shard, "from_node": from, "to_node": to}}}})
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, http.MethodPost, "/_cluster/reroute", nil, body, "application/json")
	return err
}

func clusterCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster (status, nodes, shards, Raft) and drain nodes",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("cluster wants a subcommand: status, nodes, shards, raft or drain (got %q)", args)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show health, node count, shard counts and the Raft leader",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Status, func(w io.Writer, st ClusterStatus) error {
				h, r := st.Health, st.Raft
				_, err := fmt.Fprintf(w, "%s: %s, %d node(s); shards: %d active (%d primary), %d initializing, %d relocating, %d unassigned\nleader: %s (term %d); this node: %s\n",
					h.ClusterName, h.Status, h.NumberOfNodes, h.ActiveShards, h.ActivePrimaryShards, h.InitializingShards, h.RelocatingShards, h.UnassignedShards,
					dash(r.LeaderName), r.Term, r.State)
				return err
			})
		},
	}
	nodes := &cobra.Command{
		Use:   "nodes",
		Short: "List the live nodes: name, ID, addresses, shards, the Raft leader (*)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Nodes, printNodes)
		},
	}
	shards := &cobra.Command{
		Use:   "shards [INDEX]",
		Short: "List every shard copy: primary or replica, state, documents, size, node",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			index := ""
			if len(args) == 1 {
				index = args[0]
			}
			fetch := func(c *Client, ctx context.Context) (ShardsView, []byte, error) {
				return c.ShardsWithRecoveries(ctx, index)
			}
			return show(cmd.Context(), g, stdio.Stdout, fetch, printShards)
		},
	}
	raft := &cobra.Command{
		Use:   "raft",
		Short: "Show this node's Raft: state, term, leader, voters and non-voters, log indexes",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Raft, func(w io.Writer, r RaftStatus) error {
				_, err := fmt.Fprintf(w, "state: %s\nterm: %d\nleader: %s (%s)\nvoters: %s\nnon-voters: %s\napplied/commit/last index: %d/%d/%d\n",
					r.State, r.Term, dash(r.LeaderName), dash(r.LeaderID), dash(strings.Join(r.Voters, ", ")), dash(strings.Join(r.NonVoters, ", ")),
					r.AppliedIndex, r.CommitIndex, r.LastIndex)
				return err
			})
		},
	}
	var undo bool
	var wait time.Duration
	drain := &cobra.Command{
		Use:   "drain NODE",
		Short: "Move every shard copy off a node (cluster.routing.allocation.exclude._name)",
		Long: "drain adds NODE to cluster.routing.allocation.exclude._name, so the cluster moves every copy\n" +
			"off it and allocates none to it; with --wait it waits until the node holds no copy (then it may\n" +
			"be stopped). --undo takes NODE off the list again.",
		Args: exactArgs(1, "the NODE name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			names, err := c.ExcludedNodes(ctx)
			if err != nil {
				return err
			}
			node := args[0]
			if undo {
				names = slices.DeleteFunc(names, func(n string) bool { return n == node })
			} else if !slices.Contains(names, node) {
				names = append(names, node)
			}
			if err := c.SetExcludedNodes(ctx, names); err != nil {
				return err
			}
			if undo {
				_, err = fmt.Fprintf(stdio.Stdout, "node %s may hold copies again\n", node)
				return err
			}
			if wait <= 0 {
				_, err = fmt.Fprintf(stdio.Stdout, "draining node %s (searchctl cluster shards shows the moves)\n", node)
				return err
			}
			return waitDrained(ctx, c, node, wait, stdio.Stdout)
		},
	}
	drain.Flags().BoolVar(&undo, "undo", false, "let NODE hold copies again")
	drain.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until NODE holds no copy")
	cmd.AddCommand(status, nodes, shards, raft, drain)
	return cmd
}

// waitDrained polls the shard table until node holds no copy.
func waitDrained(ctx context.Context, c *Client, node string, wait time.Duration, w io.Writer) error {
	deadline := time.Now().Add(wait)
	for {
		rows, _, err := c.Shards(ctx, "")
		if err != nil {
			return err
		}
		left := 0
		for _, r := range rows {
			if r.Node == node {
				left++
			}
		}
		if left == 0 {
			_, err := fmt.Fprintf(w, "node %s holds no shard copy; it may be stopped\n", node)
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s still holds %d shard copies after %v", node, left, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func shardCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shard",
		Short: "Move shard copies between nodes",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("shard wants a subcommand: move (got %q)", args)
		},
	}
	move := &cobra.Command{
		Use:   "move INDEX SHARD FROM_NODE TO_NODE",
		Short: "Move a shard copy from one node to another (_cluster/reroute)",
		Args:  exactArgs(4, "INDEX SHARD FROM_NODE TO_NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			num, err := strconv.Atoi(args[1])
			if err != nil || num < 0 {
				return usagef("SHARD %q is not a shard number", args[1])
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.MoveShard(cmd.Context(), args[0], num, args[2], args[3]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "moving [%s][%d] from %s to %s (searchctl cluster shards shows it)\n", args[0], num, args[2], args[3])
			return err
		},
	}
	cmd.AddCommand(move)
	return cmd
}

func printNodes(w io.Writer, rows []NodeRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tHTTP\tFABRIC\tSHARDS\tLEADER")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.ID, r.HTTPAddress, dash(r.FabricAddress), r.Shards, map[bool]string{true: "*", false: ""}[r.Master == "*"])
	}
	return tw.Flush()
}

func printShards(w io.Writer, sv ShardsView) error {
	progress := map[string]string{}
	for _, r := range sv.Recoveries {
		progress[r.Index+"/"+r.Shard+"/"+r.TargetNode] = fmt.Sprintf("%s %s, %s bytes, %s ops", r.Type, r.Stage, r.BytesPercent, r.Ops)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tSHARD\tP/R\tSTATE\tDOCS\tSTORE\tNODE\tTERM\tALLOCATION\tRECOVERY")
	for _, r := range sv.Shards {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, r.Shard, r.PriRep, r.State, dash(r.Docs), dash(r.Store), dash(r.Node), r.Term, dash(r.ID),
			dash(progress[r.Index+"/"+r.Shard+"/"+r.Node]))
	}
	return tw.Flush()
}
