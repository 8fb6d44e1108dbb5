package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/node/placement"
	"github.com/weftsearch/weft/shard"
)

// A wave 1 node kept each index's definition in
// DataDir/indices/indices/<uuid>/meta.json and its shards in
// <uuid>/<n>/{index,log}. A single node started on such a directory
// migrates it: every index is defined in the cluster's metadata with its
// UUID, creation date, settings and mapping, and each shard's directory
// becomes its primary copy's (named by the allocation ID the cluster gave
// it). Every step can be repeated, so a crash mid-way resumes on the next
// start. A node started with cluster flags on such a directory refuses to,
// rather than mix a single node's indexes into a cluster.

// legacyMeta is a wave 1 index definition.
type legacyMeta struct {
	Name     string `json:"name"`
	UUID     string `json:"uuid"`
	Settings struct {
		NumberOfShards   int `json:"number_of_shards"`
		NumberOfReplicas int `json:"number_of_replicas"`
	} `json:"settings"`
	Mapping      json.RawMessage `json:"mapping"`
	CreationDate time.Time       `json:"creation_date"`
}

func legacyRoot(dataDir string) string { return filepath.Join(dataDir, "indices", "indices") }

// checkLegacy refuses a wave 1 data directory on a node of a cluster.
func checkLegacy(cfg Config) error {
	if _, err := os.Stat(legacyRoot(cfg.DataDir)); err != nil || !cfg.Clustered() {
		return nil
	}
	return fmt.Errorf("node: %s holds the indexes of a single node of an earlier Weft (%s); start the node once without --gossip-addr, --raft-addr, --seeds and --initial-nodes to migrate them into a single-node cluster, or move that directory away",
		cfg.DataDir, legacyRoot(cfg.DataDir))
}

// migrateLegacy moves a wave 1 data directory into the single-node
// cluster; it runs once the cluster has elected itself.
func (n *Node) migrateLegacy(ctx context.Context, _ *placement.Adapter) error {
	root := legacyRoot(n.cfg.DataDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: reading %s: %w", root, err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			_ = os.RemoveAll(dir) // an unfinished deletion of wave 1
			continue
		}
		if err := n.migrateIndex(ctx, dir); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(n.cfg.DataDir, "indices")); err != nil {
		return fmt.Errorf("node: removing the migrated %s: %w", root, err)
	}
	return nil
}

// migrateIndex defines one wave 1 index in the cluster and moves its shard
// directories into place.
func (n *Node) migrateIndex(ctx context.Context, dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		n.log.Warn("removing a wave 1 index directory without a definition (its creation never finished)", "dir", dir)
		return os.RemoveAll(dir)
	}
	if err != nil {
		return fmt.Errorf("node: migrating %s: %w", dir, err)
	}
	var lm legacyMeta
	if err := json.Unmarshal(raw, &lm); err != nil || lm.Name == "" || lm.UUID == "" || lm.Settings.NumberOfShards < 1 {
		return fmt.Errorf("node: migrating %s: its meta.json is corrupt (%v); restore it or move the directory away", dir, err)
	}
	st := n.clu.State()
	ix, ok := st.Indices[lm.Name]
	if !ok {
		if _, err := n.clu.Propose(ctx, cluster.Command{V: cluster.CommandVersion, Type: cluster.CmdCreateIndex,
			CreateIndex: &cluster.CreateIndex{Index: state.Index{Name: lm.Name, UUID: lm.UUID, NumberOfShards: lm.Settings.NumberOfShards,
				NumberOfReplicas: lm.Settings.NumberOfReplicas, Mapping: lm.Mapping, CreationDateMS: lm.CreationDate.UnixMilli()}}}); err != nil {
			return fmt.Errorf("node: migrating index %s: %w", lm.Name, err)
		}
		if st, err = n.clu.Await(ctx, func(s *state.State) bool { _, ok := s.Indices[lm.Name]; return ok }); err != nil {
			return fmt.Errorf("node: migrating index %s: %w", lm.Name, err)
		}
		ix = st.Indices[lm.Name]
	}
	if ix.UUID != lm.UUID {
		return fmt.Errorf("node: cannot migrate wave 1 index %s (uuid %s): the cluster already has an index of that name with uuid %s; move %s away", lm.Name, lm.UUID, ix.UUID, dir)
	}
	shards := filepath.Join(n.cfg.DataDir, "shards")
	if err := os.MkdirAll(shards, 0o755); err != nil {
		return err
	}
	for num := range ix.Shards {
		p, ok := ix.Shards[num].Primary()
		if !ok {
			return fmt.Errorf("node: migrating index %s: shard %d has no primary in the cluster's shard table", lm.Name, num)
		}
		src := filepath.Join(dir, fmt.Sprint(num))
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue // moved already
		}
		if err := shard.AdoptCopy(src, filepath.Join(shards, p.AllocationID), p.AllocationID, lm.Name, lm.UUID, num); err != nil {
			return fmt.Errorf("node: migrating index %s shard %d: %w", lm.Name, num, err)
		}
	}
	n.log.Info("migrated a wave 1 index into the single-node cluster", "index", lm.Name, "uuid", lm.UUID, "shards", len(ix.Shards))
	return os.RemoveAll(dir)
}
