package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// bootstrap writes the first Raft configuration.
func (c *Cluster) bootstrap(servers []raft.Server) error {
	err := c.rn.r.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil // state appeared meanwhile: a leader added this node
	}
	if err != nil {
		return fmt.Errorf("cluster: bootstrapping Raft: %w", err)
	}
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = string(s.ID)
	}
	c.log.Info("cluster: bootstrapped the first Raft configuration", "voters", ids)
	return nil
}

// bootstrapWhenSeen waits until gossip shows a live member for every name
// in InitialNodes, none of them part of a cluster yet, and bootstraps the
// configuration of exactly those; it gives up when this node gets Raft
// state another way (a leader added it) or ctx ends.
func (c *Cluster) bootstrapWhenSeen(ctx context.Context) {
	const poll = 100 * time.Millisecond
	t := time.NewTicker(poll)
	defer t.Stop()
	changed, unwatch := c.ms.changed.Watch()
	defer unwatch()
	lastWhy := ""
	for {
		if c.hasConfiguration() {
			return
		}
		servers, why := initialServers(c.ms.Members(), c.cfg.InitialNodes)
		if why == "" {
			if err := c.bootstrap(servers); err != nil {
				c.log.Error(err.Error())
			}
			return
		}
		if why != lastWhy {
			c.log.Info("cluster: not bootstrapping yet: "+why, "initial_nodes", c.cfg.InitialNodes)
			lastWhy = why
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
	}
}

// hasConfiguration reports whether Raft has a configuration (bootstrapped,
// restored, or received from a leader).
func (c *Cluster) hasConfiguration() bool {
	f := c.rn.r.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// initialServers returns the first configuration: the live members named
// in names, by node ID order (so every initial node computes the same), or
// why not yet.
func initialServers(members []Member, names []string) ([]raft.Server, string) {
	var servers []raft.Server
	var missing []string
	for _, name := range names {
		var found []Member
		for _, m := range members {
			if m.Name == name && m.Status == "alive" {
				found = append(found, m)
			}
		}
		switch {
		case len(found) == 0:
			missing = append(missing, name)
		case len(found) > 1:
			return nil, fmt.Sprintf("two live nodes are called %q", name)
		case found[0].ClusterUUID != "":
			return nil, fmt.Sprintf("initial node %q already belongs to cluster %s; this node waits to be added by its leader", name, found[0].ClusterUUID)
		default:
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(found[0].ID), Address: raft.ServerAddress(found[0].RaftAddr)})
		}
	}
	if len(missing) > 0 {
		return nil, "waiting for initial nodes " + strings.Join(missing, ", ")
	}
	slices.SortFunc(servers, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return servers, ""
}
