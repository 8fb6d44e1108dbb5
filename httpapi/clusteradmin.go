package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/internal/bytesize"
	"github.com/weftsearch/weft/vocab"
)

// ClusterAdmin is what the cluster endpoints need from the node beyond the
// engine's view of the shard table: the Raft status, the cluster settings
// and shard moves. The node implements it over package cluster. Every
// method may be called concurrently.
type ClusterAdmin interface {
	// Raft describes this node's Raft state.
	Raft() state.RaftInfo
	// Settings returns the persistent cluster settings.
	Settings() state.Settings
	// PutSettings replaces them (through the Raft leader).
	PutSettings(ctx context.Context, s state.Settings) error
	// Move starts moving the copy of index's shard held by node from to
	// node to (names or IDs); the move completes in the background.
	Move(ctx context.Context, index string, shard int, from, to string) error
	// DiskUsage returns the nodes' last disk usage as this node heard it,
	// by node ID (a node that reports none is missing).
	DiskUsage() map[string]state.DiskUsage
}

// The cluster settings Weft has besides those of clusterSettings.
const (
	excludeNameSetting  = "cluster.routing.allocation.exclude._name"
	recoveryRateSetting = "indices.recovery.max_bytes_per_sec"
)

// persistent renders the settings that are set, as GET _cluster/settings
// and _cluster/state show them.
func persistentSettings(c state.Settings) map[string]any {
	out := map[string]any{}
	if len(c.ExcludeNames) > 0 {
		out[excludeNameSetting] = strings.Join(c.ExcludeNames, ",")
	}
	if c.RecoveryMaxBytesPerSec != nil {
		out[recoveryRateSetting] = fmt.Sprintf("%db", *c.RecoveryMaxBytesPerSec)
	}
	for k, v := range c.Values {
		out[k] = v
	}
	return out
}

// set applies one setting of a PUT _cluster/settings body (raw is its JSON
// value; null resets it) and returns the value to echo. c.Values must not
// be shared with the committed settings. Transient settings are kept like
// persistent ones (Elasticsearch 8 deprecates the difference).
func setClusterSetting(c *state.Settings, key string, raw json.RawMessage) (any, error) {
	reset := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	if spec, ok := clusterSettings[key]; ok {
		if reset {
			delete(c.Values, key)
			return nil, nil
		}
		stored, echo, err := spec.parse(key, raw)
		if err != nil {
			return nil, err
		}
		if c.Values == nil {
			c.Values = map[string]string{}
		}
		c.Values[key] = stored
		return echo, nil
	}
	var str string
	if !reset {
		if err := json.Unmarshal(raw, &str); err != nil {
			var n json.Number
			if key != recoveryRateSetting || json.Unmarshal(raw, &n) != nil {
				return nil, illegalArgument("[%s] must be a string or null", key)
			}
			str = n.String()
		}
	}
	switch key {
	case excludeNameSetting:
		c.ExcludeNames = nil
		for _, n := range strings.Split(str, ",") {
			if n = strings.TrimSpace(n); n != "" {
				c.ExcludeNames = append(c.ExcludeNames, n)
			}
		}
	case recoveryRateSetting:
		c.RecoveryMaxBytesPerSec = nil
		if !reset {
			n, err := bytesize.Parse(str)
			if err != nil {
				return nil, illegalArgument("failed to parse setting [%s] with value [%s] as a size in bytes: use e.g. 40mb, or 0 for no limit", key, str)
			}
			c.RecoveryMaxBytesPerSec = &n
		}
	default:
		known := append(slices.Sorted(maps.Keys(clusterSettings)), excludeNameSetting, recoveryRateSetting)
		return nil, illegalArgument("persistent setting [%s], not recognized; Weft supports %v", key, known)
	}
	if reset {
		return nil, nil
	}
	return str, nil
}

// clusterSettings are the cluster settings besides excludeNameSetting and
// recoveryRateSetting, kept in state.Settings.Values. Each is honoured:
//   - search.default_allow_partial_results: false makes a search that
//     lost a shard fail instead of answering with partial results (the
//     default of a search's allow_partial_search_results);
//   - action.destructive_requires_name: false lets DELETE /{index} take
//     wildcards and _all;
//   - search.max_open_scroll_context, search.max_open_pit_context: how
//     many reader contexts of scrolls and of points in time each data node
//     holds open (one per shard copy it pins); it refuses more with 429;
//   - cluster.routing.allocation.disk.threshold_enabled and
//     cluster.routing.allocation.disk.watermark.{low,high,flood_stage}:
//     the disk watermarks the leader allocates by and sets the flood
//     stage block by (state.DiskWatermarks; checked together by
//     checkDiskWatermarks).
var clusterSettings = map[string]clusterSettingSpec{
	"search.default_allow_partial_results": {def: "true", parse: boolSetting},
	"action.destructive_requires_name":     {def: "true", parse: boolSetting},
	vocab.MaxOpenScrollContextSetting:      {def: strconv.Itoa(vocab.DefaultMaxOpenScrollContext), parse: countSetting},
	vocab.MaxOpenPITContextSetting:         {def: strconv.Itoa(vocab.DefaultMaxOpenPITContext), parse: countSetting},
	state.DiskThresholdEnabledSetting:      {def: "true", parse: boolSetting},
	state.DiskLowSetting:                   {def: state.DefaultDiskLow, parse: watermarkSetting},
	state.DiskHighSetting:                  {def: state.DefaultDiskHigh, parse: watermarkSetting},
	state.DiskFloodStageSetting:            {def: state.DefaultDiskFloodStage, parse: watermarkSetting},
}

// clusterSettingSpec is a setting of clusterSettings: its default, and how
// a PUT's JSON value becomes the stored string and the value echoed.
type clusterSettingSpec struct {
	def   string
	parse func(key string, raw json.RawMessage) (stored string, echo any, err error)
}

func boolSetting(key string, raw json.RawMessage) (string, any, error) {
	v, err := boolValue(raw, key)
	if err != nil {
		return "", nil, err
	}
	return strconv.FormatBool(v), v, nil
}

// countSetting reads a count: a non-negative integer, as a JSON number or
// a string.
func countSetting(key string, raw json.RawMessage) (string, any, error) {
	str := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	n, err := strconv.ParseInt(str, 10, 32)
	if err != nil {
		return "", nil, illegalArgument("Failed to parse value [%s] for setting [%s]: use a whole number of at least 0", str, key)
	}
	if n < 0 {
		return "", nil, illegalArgument("Failed to parse value [%s] for setting [%s] must be >= 0", str, key)
	}
	stored := strconv.FormatInt(n, 10)
	return stored, stored, nil
}

// watermarkSetting reads a disk watermark: a percentage, a ratio or a byte
// value of free space, as a JSON string (or number, for a ratio).
func watermarkSetting(key string, raw json.RawMessage) (string, any, error) {
	str := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	if _, err := state.ParseWatermark(str); err != nil {
		return "", nil, illegalArgument("failed to parse setting [%s]: %v", key, err)
	}
	return str, str, nil
}

// checkDiskWatermarks refuses settings whose three disk watermarks, each
// valid alone, do not fit together (the kinds mixed, or out of order).
func checkDiskWatermarks(c state.Settings) error {
	get := func(key string) string {
		if v, ok := c.Values[key]; ok {
			return v
		}
		return clusterSettings[key].def
	}
	if _, err := state.ParseDiskWatermarks(get(state.DiskLowSetting), get(state.DiskHighSetting), get(state.DiskFloodStageSetting)); err != nil {
		return illegalArgument("%v", err)
	}
	return nil
}

// clusterSetting returns a setting of clusterSettings: the committed value,
// else the default (also when the node has no cluster administration).
func (s *Server) clusterSetting(key string) string {
	if s.cfg.Cluster != nil {
		if v, ok := s.cfg.Cluster.Settings().Values[key]; ok {
			return v
		}
	}
	return clusterSettings[key].def
}

func (s *Server) destructiveRequiresName() bool {
	return s.clusterSetting("action.destructive_requires_name") != "false"
}

// errNoCluster answers the cluster admin endpoints on an API built without
// Config.Cluster.
var errNoCluster = &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception",
	Reason: "this node has no cluster administration (httpapi.Config.Cluster is nil)"}

// masterID is the ID of the node that leads Raft, "" if unknown.
func (s *Server) masterID() string {
	if s.cfg.Cluster == nil {
		return ""
	}
	return s.cfg.Cluster.Raft().LeaderID
}

// handleRaft serves GET /_weft/raft: this node's Raft status.
func (s *Server) handleRaft(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Cluster == nil {
		return errNoCluster
	}
	info := s.cfg.Cluster.Raft()
	v, err := s.eng.ClusterView()
	name := func(id string) string {
		if err == nil && v.NodeName(id) != "" {
			return v.NodeName(id)
		}
		return id
	}
	names := func(ids []string) []string {
		out := make([]string, 0, len(ids))
		for _, id := range ids {
			out = append(out, name(id))
		}
		slices.Sort(out)
		return out
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"node_id": info.NodeID, "state": info.State, "term": info.Term,
		"leader_id": info.LeaderID, "leader_name": info.LeaderName, "voters": names(info.Voters), "non_voters": names(info.Nonvoters),
		"applied_index": info.AppliedIndex, "commit_index": info.CommitIndex, "last_index": info.LastIndex})
	return nil
}

// liveNodes returns the view's live nodes sorted by name.
func liveNodes(v *state.State) []*state.Node {
	var out []*state.Node
	for _, n := range v.Nodes {
		if n.Live {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// handleCatNodes serves GET /_cat/nodes: one row per live node.
func (s *Server) handleCatNodes(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	shards := map[string]int{}
	for _, ix := range v.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				shards[c.NodeID]++
			}
		}
	}
	master := s.masterID()
	t := catTable{cols: []string{"id", "name", "ip", "http_address", "fabric_address", "node.role", "master", "shards"}}
	for _, n := range liveNodes(v) {
		m := "-"
		if n.ID == master {
			m = "*"
		}
		fabric := n.FabricAddr
		if fabric == "" {
			fabric = "-"
		}
		t.rows = append(t.rows, []string{n.ID, n.Name, hostOf(n.HTTPAddr), n.HTTPAddr, fabric, "dim", m, strconv.Itoa(shards[n.ID])})
	}
	return s.writeCat(w, r, t)
}

// handleCatAllocation serves GET /_cat/allocation[/{node}]: per live node
// (by name or ID, a comma list), its copies and its data directory's disk
// as the node last gossiped it (empty cells when it reported none); then,
// as Elasticsearch, a row UNASSIGNED with the copies no node holds.
func (s *Server) handleCatAllocation(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	var disk map[string]state.DiskUsage
	if s.cfg.Cluster != nil {
		disk = s.cfg.Cluster.DiskUsage()
	}
	unit := r.URL.Query().Get("bytes")
	if _, err := byteSize(0, unit); err != nil {
		return err
	}
	want := map[string]bool{}
	if p := r.PathValue("node"); p != "" && p != "_all" {
		for _, n := range strings.Split(p, ",") {
			want[n] = true
		}
	}
	shards, unassigned := map[string]int{}, 0
	for _, ix := range v.Indices {
		for _, sh := range ix.Shards {
			held := 0
			for _, c := range sh.Copies {
				shards[c.NodeID]++
				if c.RelocatingFrom == "" {
					held++
				}
			}
			unassigned += max(0, ix.NumberOfReplicas+1-held)
		}
	}
	size := func(n uint64) string { out, _ := byteSize(int64(min(n, math.MaxInt64)), unit); return out }
	t := catTable{cols: []string{"shards", "disk.used", "disk.avail", "disk.total", "disk.percent", "host", "ip", "node"},
		aliases: map[string]string{"s": "shards", "du": "disk.used", "diskUsed": "disk.used", "da": "disk.avail", "diskAvail": "disk.avail",
			"dt": "disk.total", "diskTotal": "disk.total", "dp": "disk.percent", "diskPercent": "disk.percent", "h": "host", "n": "node"}}
	for _, n := range liveNodes(v) {
		if len(want) > 0 && !want[n.Name] && !want[n.ID] {
			continue
		}
		row := []string{strconv.Itoa(shards[n.ID]), "", "", "", "", hostOf(n.HTTPAddr), hostOf(n.HTTPAddr), n.Name}
		if u, ok := disk[n.ID]; ok && u.Known() {
			row[1], row[2], row[3] = size(u.UsedBytes), size(u.FreeBytes()), size(u.TotalBytes)
			row[4] = strconv.Itoa(int(u.Percent()))
		}
		t.rows = append(t.rows, row)
	}
	if unassigned > 0 && len(want) == 0 {
		t.rows = append(t.rows, []string{strconv.Itoa(unassigned), "", "", "", "", "", "", "UNASSIGNED"})
	}
	return s.writeCat(w, r, t)
}

// handleCatShards serves GET /_cat/shards[/{index}]: one row per copy.
func (s *Server) handleCatShards(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	names, err := s.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return err
	}
	unit := r.URL.Query().Get("bytes")
	stats := s.eng.CopyStats(r.Context())
	t := catTable{cols: []string{"index", "shard", "prirep", "state", "docs", "store", "ip", "node", "id", "term"}}
	for _, name := range names {
		ix := v.Indices[name]
		for num := range ix.Shards {
			sh := &ix.Shards[num]
			for _, c := range sh.Copies {
				prirep := "r"
				if c.Primary {
					prirep = "p"
				}
				docs, store := "", ""
				if st, ok := stats[c.AllocationID]; ok {
					docs = strconv.FormatUint(st.Docs, 10)
					if store, err = byteSize(st.StoreSizeBytes, unit); err != nil {
						return err
					}
				}
				var host, nodeName string
				if n, ok := v.Nodes[c.NodeID]; ok {
					host, nodeName = hostOf(n.HTTPAddr), n.Name
				}
				t.rows = append(t.rows, []string{name, strconv.Itoa(num), prirep, copyState(v, c), docs, store,
					host, nodeName, c.AllocationID, strconv.FormatUint(sh.PrimaryTerm, 10)})
			}
			if missing := ix.NumberOfReplicas - replicaCount(sh); missing > 0 {
				for range missing {
					t.rows = append(t.rows, []string{name, strconv.Itoa(num), "r", "UNASSIGNED", "", "", "", "", "", strconv.FormatUint(sh.PrimaryTerm, 10)})
				}
			}
		}
	}
	return s.writeCat(w, r, t)
}

// handleCatRecovery serves GET /_cat/recovery[/{index}]: the recoveries of
// shard copies (from the primary's files or log), latest first;
// ?active_only=true keeps those in progress.
func (s *Server) handleCatRecovery(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolve(r.Context(), r.PathValue("index"))
	if err != nil {
		return err
	}
	activeOnly, err := boolParam(r, "active_only", false)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	unit := r.URL.Query().Get("bytes")
	t := catTable{cols: []string{"index", "shard", "time", "type", "stage", "source_node", "target_node",
		"bytes_recovered", "bytes_total", "bytes_percent", "translog_ops_recovered", "start_seq"}}
	for _, rec := range s.eng.Recoveries(r.Context()) {
		if !want[rec.Index] || (activeOnly && (rec.Stage == "done" || rec.Stage == "failed")) {
			continue
		}
		end := rec.Stopped
		if end.IsZero() {
			end = s.now()
		}
		done, err := byteSize(rec.BytesDone, unit)
		if err != nil {
			return err
		}
		total, _ := byteSize(rec.BytesTotal, unit)
		pct := "0.0%"
		if rec.BytesTotal > 0 {
			pct = strconv.FormatFloat(100*float64(rec.BytesDone)/float64(rec.BytesTotal), 'f', 1, 64) + "%"
		}
		typ := "peer"
		if rec.Mode == vocab.RecoveryOps {
			typ = "peer (operations)"
		} else if rec.Mode == vocab.RecoveryFiles {
			typ = "peer (files)"
		}
		t.rows = append(t.rows, []string{rec.Index, strconv.Itoa(rec.Shard), end.Sub(rec.Started).Round(time.Millisecond).String(), typ, rec.Stage,
			rec.SourceNode, rec.TargetNode, done, total, pct, strconv.FormatInt(rec.OpsDone, 10), strconv.FormatUint(rec.StartSeq, 10)})
	}
	return s.writeCat(w, r, t)
}

// copyState names a copy's state as Elasticsearch's _cat/shards does.
func copyState(v *state.State, c state.Copy) string {
	switch {
	case !v.NodeLive(c.NodeID):
		return "UNASSIGNED"
	case c.RelocatingTo != "" && (c.State == state.CopyStarted):
		return "RELOCATING"
	case (c.State == state.CopyStarted):
		return "STARTED"
	}
	return "INITIALIZING"
}

func replicaCount(sh *state.Shard) int {
	n := 0
	for _, c := range sh.Copies {
		if !c.Primary && c.RelocatingFrom == "" {
			n++
		}
	}
	return n
}

// handleNodes serves GET /_nodes[/{node_id}]: the live nodes' addresses;
// node_id is a comma-separated list of node IDs, names, _local, _master
// or _all.
func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	want, metrics := nodesInfoSelection(r.PathValue("node_id"), r.PathValue("metric"))
	selected := func(n *state.Node) bool {
		if len(want) == 0 {
			return true
		}
		for _, w := range want {
			if w == "_all" || w == n.ID || w == n.Name || (w == "_local" && n.ID == s.cfg.NodeID) || (w == "_master" && n.ID == s.masterID()) {
				return true
			}
		}
		return false
	}
	nodes := map[string]any{}
	for _, n := range liveNodes(v) {
		if !selected(n) {
			continue
		}
		info := map[string]any{
			"name": n.Name, "host": hostOf(n.HTTPAddr), "ip": hostOf(n.HTTPAddr), "version": Version,
			"roles":             []string{"data", "ingest", "master"},
			"transport_address": n.FabricAddr,
			"attributes":        map[string]any{"weft.fabric": n.FabricAddr},
		}
		if metrics["_all"] || metrics["http"] {
			info["http"] = map[string]any{"publish_address": n.HTTPAddr}
		}
		nodes[n.ID] = info
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"_nodes":       map[string]int{"total": len(nodes), "successful": len(nodes), "failed": 0},
		"cluster_name": s.cfg.ClusterName,
		"nodes":        nodes,
	})
	return nil
}

// nodesInfoMetrics are the metrics of the nodes info API
// (Elasticsearch's), which tell a path's metrics from node ids.
var nodesInfoMetrics = map[string]bool{"settings": true, "os": true, "process": true, "jvm": true, "thread_pool": true,
	"transport": true, "http": true, "remote_cluster_server": true, "plugins": true, "ingest": true, "aggregations": true,
	"indices": true, "_all": true, "_none": true}

// nodesInfoSelection reads the node ids and metrics of GET
// /_nodes[/{node_id}[/{metric}]] by Elasticsearch's rule: a lone path
// part made only of metric names (GET /_nodes/http) is metrics of every
// node, anything else node ids. No node ids is every node; no metrics is
// every metric.
func nodesInfoSelection(ids, metric string) (want []string, metrics map[string]bool) {
	metrics = map[string]bool{}
	if ids != "" && metric == "" {
		parts := strings.Split(ids, ",")
		onlyMetrics := true
		for _, p := range parts {
			onlyMetrics = onlyMetrics && nodesInfoMetrics[p]
		}
		if onlyMetrics {
			ids, metric = "", ids
		}
	}
	if ids != "" {
		want = strings.Split(ids, ",")
	}
	if metric == "" {
		metric = "_all"
	}
	for _, m := range strings.Split(metric, ",") {
		metrics[m] = true
	}
	return want, metrics
}

// handleClusterState serves GET /_cluster/state: the committed metadata,
// routing table and nodes, in Elasticsearch's shape.
func (s *Server) handleClusterState(w http.ResponseWriter, r *http.Request) error {
	v, err := s.eng.ClusterView()
	if err != nil {
		return err
	}
	nodes := map[string]any{}
	for _, n := range liveNodes(v) {
		nodes[n.ID] = map[string]any{"name": n.Name, "transport_address": n.FabricAddr, "http_address": n.HTTPAddr}
	}
	metaIndices := map[string]any{}
	routing := map[string]any{}
	for name, ix := range v.Indices {
		primaryTerms := map[string]uint64{}
		inSync := map[string][]string{}
		shards := map[string]any{}
		for num := range ix.Shards {
			sh := &ix.Shards[num]
			key := strconv.Itoa(num)
			primaryTerms[key] = sh.PrimaryTerm
			inSync[key] = append([]string{}, sh.InSync...)
			var copies []any
			for _, c := range sh.Copies {
				entry := map[string]any{"state": copyState(v, c), "primary": c.Primary, "node": c.NodeID, "shard": num,
					"index": name, "allocation_id": map[string]string{"id": c.AllocationID}, "relocating_node": nil}
				if c.RelocatingTo != "" {
					if t, ok := sh.Copy(c.RelocatingTo); ok {
						entry["relocating_node"] = t.NodeID
					}
				}
				copies = append(copies, entry)
			}
			shards[key] = copies
		}
		settings := map[string]any{"index": map[string]any{
			"number_of_shards": strconv.Itoa(ix.NumberOfShards), "number_of_replicas": strconv.Itoa(ix.NumberOfReplicas),
			"uuid": ix.UUID, "creation_date": strconv.FormatInt(ix.CreationDateMS, 10), "provided_name": name,
		}}
		metaIndices[name] = map[string]any{"state": "open", "settings": settings, "mappings": json.RawMessage(ix.Mapping),
			"mapping_version": ix.MappingVersion, "aliases": []string{}, "primary_terms": primaryTerms, "in_sync_allocations": inSync}
		routing[name] = map[string]any{"shards": shards}
	}
	persistent := map[string]any{}
	if s.cfg.Cluster != nil {
		persistent = persistentSettings(s.cfg.Cluster.Settings())
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"cluster_name": s.cfg.ClusterName, "cluster_uuid": v.ClusterUUID, "version": v.Version,
		"master_node": s.masterID(), "nodes": nodes,
		"metadata": map[string]any{"cluster_uuid": v.ClusterUUID, "indices": metaIndices,
			"persistent_settings": persistent},
		"routing_table": map[string]any{"indices": routing},
	})
	return nil
}

// rerouteBody is the body of POST /_cluster/reroute. Weft supports the
// move command.
type rerouteBody struct {
	Commands []map[string]json.RawMessage `json:"commands"`
}

type moveCommand struct {
	Index    string `json:"index"`
	Shard    *int   `json:"shard"`
	FromNode string `json:"from_node"`
	ToNode   string `json:"to_node"`
}

// handleReroute serves POST /_cluster/reroute with move commands; each
// starts a move that the cluster completes in the background.
func (s *Server) handleReroute(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Cluster == nil {
		return errNoCluster
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req rerouteBody
	if err := decodeStrict(body, &req); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the reroute body: %v", err)
	}
	if dry, err := boolParam(r, "dry_run", false); err != nil {
		return err
	} else if dry {
		// Elasticsearch simulates the commands on a copy of the state; the
		// checks here run on the leader as the move is committed.
		return illegalArgument("[dry_run] is not supported: Weft checks a move only as it commits it")
	}
	if len(req.Commands) == 0 {
		return illegalArgument("no reroute commands; send {\"commands\":[{\"move\":{\"index\":…,\"shard\":…,\"from_node\":…,\"to_node\":…}}]}")
	}
	var moves []moveCommand
	for i, c := range req.Commands {
		if len(c) != 1 || c["move"] == nil {
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			return illegalArgument("reroute command %d: only [move] is supported, got %v", i, keys)
		}
		var m moveCommand
		if err := decodeStrict(c["move"], &m); err != nil {
			return badRequest("x_content_parse_exception", "reroute command %d: %v", i, err)
		}
		if m.Index == "" || m.Shard == nil || m.FromNode == "" || m.ToNode == "" {
			return illegalArgument("reroute command %d: move needs index, shard, from_node and to_node", i)
		}
		moves = append(moves, m)
	}
	for _, m := range moves {
		if err := s.cfg.Cluster.Move(r.Context(), m.Index, *m.Shard, m.FromNode, m.ToNode); err != nil {
			return err
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true})
	return nil
}

// handleGetClusterSettings serves GET /_cluster/settings.
func (s *Server) handleGetClusterSettings(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Cluster == nil {
		return errNoCluster
	}
	out := map[string]any{"persistent": persistentSettings(s.cfg.Cluster.Settings()), "transient": map[string]any{}}
	if flagParam(r, "include_defaults") {
		defaults := map[string]any{}
		for k, spec := range clusterSettings {
			defaults[k] = spec.def
		}
		out["defaults"] = defaults
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// handlePutClusterSettings serves PUT /_cluster/settings: the allocation
// exclusion by node name (a comma list) and the recovery throttle (a byte
// size), persistent or transient (both are kept in the cluster's
// metadata); null resets one.
func (s *Server) handlePutClusterSettings(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Cluster == nil {
		return errNoCluster
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req struct {
		Persistent map[string]json.RawMessage `json:"persistent"`
		Transient  map[string]json.RawMessage `json:"transient"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the cluster settings body: %v", err)
	}
	cur := s.cfg.Cluster.Settings()
	cur.Values = maps.Clone(cur.Values)
	changed := []map[string]any{{}, {}}
	for i, part := range []map[string]json.RawMessage{req.Persistent, req.Transient} {
		for k, raw := range flattenSettings(part) {
			v, err := setClusterSetting(&cur, k, raw)
			if err != nil {
				return err
			}
			changed[i][k] = v
		}
	}
	if err := checkDiskWatermarks(cur); err != nil {
		return err
	}
	if err := s.cfg.Cluster.PutSettings(r.Context(), cur); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"acknowledged": true, "persistent": changed[0], "transient": changed[1]})
	return nil
}

// flattenSettings turns nested settings objects into dotted keys.
func flattenSettings(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	var walk func(prefix string, m map[string]json.RawMessage)
	walk = func(prefix string, m map[string]json.RawMessage) {
		for k, v := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			var inner map[string]json.RawMessage
			if len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &inner) == nil {
				walk(key, inner)
				continue
			}
			out[key] = v
		}
	}
	walk("", m)
	return out
}
