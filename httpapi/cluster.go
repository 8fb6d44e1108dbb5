package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// health summarises the indexes expr names (all when empty) at level
// ("cluster", "indices" or "shards").
func (s *Server) health(ctx context.Context, expr, level string) (coord.Health, error) {
	names, err := s.resolve(ctx, expr)
	if err != nil {
		return coord.Health{}, err
	}
	h, err := s.eng.Health(names, level)
	h.ClusterName = s.cfg.ClusterName
	return h, err
}

// healthWaitStep is how often a health request that waits looks again.
const healthWaitStep = 50 * time.Millisecond

// handleClusterHealth serves GET /_cluster/health[/{index}]. With
// wait_for_status, wait_for_nodes, wait_for_active_shards,
// wait_for_no_relocating_shards or wait_for_no_initializing_shards it waits, up to ?timeout (30s by
// default), until the cluster reaches them — also while this node knows no
// leader (after the leader died, until the next is elected) — and answers
// 408 with timed_out if it does not, as Elasticsearch does.
func (s *Server) handleClusterHealth(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	want := q.Get("wait_for_status")
	if _, ok := state.HealthAtLeast(state.HealthGreen, want); want != "" && !ok {
		return illegalArgument("unknown cluster health status [%s]; use green, yellow or red", want)
	}
	nodesOK, err := parseWaitForNodes(q.Get("wait_for_nodes"))
	if err != nil {
		return err
	}
	level := q.Get("level")
	switch level {
	case "", "cluster", "indices", "shards":
	default:
		return illegalArgument("level must be one of [cluster, indices, shards], got [%s]", level)
	}
	shardsOK, err := healthShardWaits(r)
	if err != nil {
		return err
	}
	timeout := 30 * time.Second
	if v := q.Get("timeout"); v != "" {
		if timeout, err = parseTimeValue(v); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(timeout)
	waits := want != "" || q.Get("wait_for_nodes") != "" || q.Has("wait_for_active_shards") ||
		q.Has("wait_for_no_relocating_shards") || q.Has("wait_for_no_initializing_shards")
	for {
		h, err := s.health(r.Context(), r.PathValue("index"), level)
		blocked := err != nil && waits && errors.Is(err, vocab.ErrClusterBlocked) && time.Now().Before(deadline)
		if err != nil && !blocked {
			return err
		}
		met := err == nil && (want == "" || atLeast(h.Status, want)) && nodesOK(h.NumberOfNodes) && shardsOK(h)
		if !blocked && (met || !time.Now().Before(deadline)) {
			status := http.StatusOK
			if !met {
				h.TimedOut, status = true, http.StatusRequestTimeout
			}
			s.writeJSON(w, r, status, h)
			return nil
		}
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(min(healthWaitStep, time.Until(deadline))):
		}
	}
}

// healthShardWaits reads the health waits on shards: wait_for_active_shards
// (a number, or all: every copy the indexes should have),
// wait_for_no_relocating_shards and wait_for_no_initializing_shards.
func healthShardWaits(r *http.Request) (func(coord.Health) bool, error) {
	q := r.URL.Query()
	active := 0 // 0: no wait; -1: all
	switch v := q.Get("wait_for_active_shards"); v {
	case "", "0":
	case "all":
		active = -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, illegalArgument("failed to parse [wait_for_active_shards] value [%s]; use a number of shard copies or all", v)
		}
		active = n
	}
	noRelocating, err := boolParam(r, "wait_for_no_relocating_shards", false)
	if err != nil {
		return nil, err
	}
	noInitializing, err := boolParam(r, "wait_for_no_initializing_shards", false)
	if err != nil {
		return nil, err
	}
	return func(h coord.Health) bool {
		switch {
		case active == -1 && (h.InitializingShards > 0 || h.UnassignedShards > 0):
			return false
		case active > 0 && h.ActiveShards < active:
			return false
		case noRelocating && h.RelocatingShards > 0:
			return false
		case noInitializing && h.InitializingShards > 0:
			return false
		}
		return true
	}, nil
}

// atLeast reports whether health have is want or better.
func atLeast(have, want string) bool {
	ok, _ := state.HealthAtLeast(have, want)
	return ok
}

// parseWaitForNodes reads wait_for_nodes: N, >=N, <=N, >N or <N.
func parseWaitForNodes(v string) (func(int) bool, error) {
	if v == "" {
		return func(int) bool { return true }, nil
	}
	for _, op := range []struct {
		prefix string
		ok     func(have, want int) bool
	}{
		{">=", func(h, w int) bool { return h >= w }}, {"<=", func(h, w int) bool { return h <= w }},
		{">", func(h, w int) bool { return h > w }}, {"<", func(h, w int) bool { return h < w }},
		{"", func(h, w int) bool { return h == w }},
	} {
		num, ok := strings.CutPrefix(v, op.prefix)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			break
		}
		return func(have int) bool { return op.ok(have, n) }, nil
	}
	return nil, illegalArgument("failed to parse [wait_for_nodes] value [%s]; use N, >=N, <=N, >N or <N", v)
}

// parseTimeValue parses an Elasticsearch time value such as 30s, 1m, 500ms.
func parseTimeValue(v string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			if n, err := strconv.ParseInt(num, 10, 64); err == nil && n >= 0 {
				return time.Duration(n) * u.unit, nil
			}
		}
	}
	return 0, illegalArgument("failed to parse time value [%s]; use a number with a unit such as 30s, 1m or 500ms", v)
}

// catTable is the reply of a _cat endpoint: named columns of string cells.
type catTable struct {
	cols []string
	rows [][]string
	// aliases are other names ?h and ?s take for columns ("i" for
	// index), as Elasticsearch's; extra are columns shown only when ?h
	// names them.
	aliases map[string]string
	extra   map[string]bool
}

// column returns the position of a column named by its name or an alias.
func (t catTable) column(name string) (int, bool) {
	if a, ok := t.aliases[name]; ok {
		name = a
	}
	for i, c := range t.cols {
		if c == name {
			return i, true
		}
	}
	return 0, false
}

// catLayout is what a _cat request asks of its reply's layout: the query
// parameters writeCat reads, as given (checked against the table later).
type catLayout struct {
	help    bool   // ?help: list the columns instead of the rows
	columns string // ?h: the columns to show, by name or alias, comma-separated
	sortBy  string // ?s: col or col:desc, comma-separated, first key first
	format  string // ?format: "", text, txt or json
	verbose bool   // ?v: a header line above text rows
}

// parseCatLayout reads r's layout parameters. It fails on nothing: the
// names and the format are checked by the steps that use them, so a
// request with several faults reports the column first, then the sort
// key, then the format.
func parseCatLayout(r *http.Request) catLayout {
	q := r.URL.Query()
	return catLayout{help: flagParam(r, "help"), columns: q.Get("h"), sortBy: q.Get("s"), format: q.Get("format"), verbose: flagParam(r, "v")}
}

// writeCat answers in the format asked: aligned text (header line with ?v) or
// format=json (an array of objects with string values); ?h picks columns,
// ?s sorts (col or col:desc), ?help lists the columns. It sorts t.rows in
// place. ?bytes is the handlers' to apply when they make the cells.
func (s *Server) writeCat(w http.ResponseWriter, r *http.Request, t catTable) error {
	l := parseCatLayout(r)
	if l.help {
		writeCatHelp(w, t)
		return nil
	}
	names, sel, err := t.selectColumns(l.columns)
	if err != nil {
		return err
	}
	keys, err := t.sortKeys(l.sortBy)
	if err != nil {
		return err
	}
	sortCatRows(t.rows, keys)
	switch l.format {
	case "json":
		s.writeJSON(w, r, http.StatusOK, catJSON(t.rows, names, sel))
		return nil
	case "", "text", "txt":
		writeCatText(w, t.rows, names, sel, l.verbose)
		return nil
	default:
		return illegalArgument("unsupported _cat format [%s]; use text or json", l.format)
	}
}

// writeCatHelp writes ?help's reply: a text line per column with its
// aliases, in the table's column order.
func writeCatHelp(w http.ResponseWriter, t catTable) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	byCol := map[string][]string{}
	for a, c := range t.aliases {
		byCol[c] = append(byCol[c], a)
	}
	width := 0
	for _, c := range t.cols {
		width = max(width, len(c))
	}
	var b strings.Builder
	for _, c := range t.cols {
		sort.Strings(byCol[c])
		fmt.Fprintf(&b, "%-*s | %s | %s\n", width, c, strings.Join(byCol[c], ","), c)
	}
	_, _ = w.Write([]byte(b.String()))
}

// selectColumns resolves ?h (h, empty for the default) to the positions
// of the columns to show, in the order shown, and the name each column's
// cells go by: as ?h names it (an alias stays the alias), else the
// column's own. The default is every column but the extra ones. An
// unknown name is a 400.
func (t catTable) selectColumns(h string) (names []string, sel []int, err error) {
	names = append([]string(nil), t.cols...)
	sel = make([]int, 0, len(t.cols))
	if h == "" {
		for i, c := range t.cols {
			if !t.extra[c] {
				sel = append(sel, i)
			}
		}
		return names, sel, nil
	}
	for c := range strings.SplitSeq(h, ",") {
		c = strings.TrimSpace(c)
		i, ok := t.column(c)
		if !ok {
			return nil, nil, illegalArgument("unknown column [%s] in h; see ?help for the columns", c)
		}
		names[i] = c
		sel = append(sel, i)
	}
	return names, sel, nil
}

// catSortKey is one key of ?s: a column's position and its direction.
type catSortKey struct {
	col  int
	desc bool
}

// sortKeys parses ?s (spec; empty for none): comma-separated columns by
// name or alias, each optionally :desc. An unknown column is a 400.
func (t catTable) sortKeys(spec string) ([]catSortKey, error) {
	if spec == "" {
		return nil, nil
	}
	var keys []catSortKey
	for part := range strings.SplitSeq(spec, ",") {
		name, dir, _ := strings.Cut(strings.TrimSpace(part), ":")
		i, ok := t.column(name)
		if !ok {
			return nil, illegalArgument("unable to sort by unknown column [%s]", name)
		}
		keys = append(keys, catSortKey{i, dir == "desc"})
	}
	return keys, nil
}

// sortCatRows sorts rows in place, stably, by keys, first key first: two
// cells that both parse as numbers compare as numbers, others as strings.
// No keys leaves rows as they are.
func sortCatRows(rows [][]string, keys []catSortKey) {
	if len(keys) == 0 {
		return
	}
	sort.SliceStable(rows, func(a, b int) bool {
		for _, k := range keys {
			x, y := rows[a][k.col], rows[b][k.col]
			if x == y {
				continue
			}
			less := x < y
			if fx, err1 := strconv.ParseFloat(x, 64); err1 == nil {
				if fy, err2 := strconv.ParseFloat(y, 64); err2 == nil {
					less = fx < fy
				}
			}
			return less != k.desc
		}
		return false
	})
}

// catJSON is format=json's reply: an object per row with the selected
// cells under their names.
func catJSON(rows [][]string, names []string, sel []int) []map[string]string {
	out := make([]map[string]string, len(rows))
	for i, row := range rows {
		obj := make(map[string]string, len(sel))
		for _, c := range sel {
			obj[names[c]] = row[c]
		}
		out[i] = obj
	}
	return out
}

// writeCatText writes the text reply: the selected cells of each row
// padded to their column's widest cell (the last one unpadded), with a
// line of names first when verbose.
func writeCatText(w http.ResponseWriter, rows [][]string, names []string, sel []int, verbose bool) {
	widths := make([]int, len(names))
	for _, c := range sel {
		if verbose {
			widths[c] = len(names[c])
		}
		for _, row := range rows {
			widths[c] = max(widths[c], len(row[c]))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for j, c := range sel {
			if j > 0 {
				b.WriteByte(' ')
			}
			if j == len(sel)-1 {
				b.WriteString(cells[c])
			} else {
				fmt.Fprintf(&b, "%-*s", widths[c], cells[c])
			}
		}
		b.WriteByte('\n')
	}
	if verbose {
		line(names)
	}
	for _, row := range rows {
		line(row)
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write([]byte(b.String()))
}

// byteSize formats n as _cat does: with ?bytes=b|kb|mb|gb|tb a whole number in
// that unit, otherwise a human value such as 225b or 4.5kb.
func byteSize(n int64, unit string) (string, error) {
	units := []string{"b", "kb", "mb", "gb", "tb", "pb"}
	if unit != "" {
		for i, u := range units {
			if u == unit {
				return strconv.FormatInt(n/int64(math.Pow(1024, float64(i))), 10), nil
			}
		}
		return "", illegalArgument("unknown bytes unit [%s]; use one of %v", unit, units)
	}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	return s + units[i], nil
}

func (s *Server) handleCatIndices(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.infos(r.Context(), r.PathValue("index"), r.URL.Query())
	if err != nil {
		return err
	}
	unit := r.URL.Query().Get("bytes")
	t := catTable{cols: []string{"health", "status", "index", "uuid", "pri", "rep", "docs.count", "docs.deleted", "store.size", "pri.store.size", "dataset.size", "creation.date", "creation.date.string"},
		aliases: map[string]string{"h": "health", "s": "status", "i": "index", "idx": "index", "id": "uuid", "p": "pri", "shards.primary": "pri",
			"shardsPrimary": "pri", "r": "rep", "shards.replica": "rep", "shardsReplica": "rep", "dc": "docs.count", "docsCount": "docs.count",
			"dd": "docs.deleted", "docsDeleted": "docs.deleted", "ss": "store.size", "storeSize": "store.size", "cd": "creation.date",
			"cds": "creation.date.string"},
		extra: map[string]bool{"creation.date": true, "creation.date.string": true}}
	wantHealth := r.URL.Query().Get("health")
	if _, ok := state.HealthAtLeast(state.HealthGreen, wantHealth); wantHealth != "" && !ok {
		return illegalArgument("unknown health [%s]; use green, yellow or red", wantHealth)
	}
	for _, info := range infos {
		size, err := byteSize(info.StoreSizeBytes, unit)
		if err != nil {
			return err
		}
		healthStr := info.Health
		if wantHealth != "" && healthStr != wantHealth {
			continue
		}
		status := "open"
		if info.Closed {
			status = "close"
		}
		t.rows = append(t.rows, []string{healthStr, status, info.Name, info.UUID,
			strconv.Itoa(info.Settings.NumberOfShards), strconv.Itoa(info.Settings.NumberOfReplicas),
			strconv.FormatUint(info.DocsCount, 10), "0", size, size, size,
			strconv.FormatInt(info.CreationDate.UnixMilli(), 10), info.CreationDate.UTC().Format("2006-01-02T15:04:05.000Z")})
	}
	return s.writeCat(w, r, t)
}

// handleCatCount serves GET /_cat/count[/{index}]: the documents of the
// indices, counted by a search (what a refresh made visible).
func (s *Server) handleCatCount(w http.ResponseWriter, r *http.Request) error {
	names, err := s.resolveOpts(r.Context(), r.PathValue("index"), url.Values{})
	if err != nil {
		return err
	}
	srch, err := esdsl.ParseCount(nil, nil, s.eng.SearchFields(names))
	if err != nil {
		return err
	}
	res, err := s.eng.Search(r.Context(), names, srch)
	if err != nil {
		return err
	}
	now := s.now()
	t := catTable{cols: []string{"epoch", "timestamp", "count"},
		aliases: map[string]string{"t": "epoch", "time": "epoch", "ts": "timestamp", "hms": "timestamp", "hhmmss": "timestamp", "dc": "count", "docs.count": "count", "docsCount": "count"},
		rows:    [][]string{{strconv.FormatInt(now.Unix(), 10), now.UTC().Format("15:04:05"), strconv.FormatUint(res.Total, 10)}}}
	return s.writeCat(w, r, t)
}

func (s *Server) handleCatHealth(w http.ResponseWriter, r *http.Request) error {
	h, err := s.health(r.Context(), "", "cluster")
	if err != nil {
		return err
	}
	now := s.now()
	t := catTable{
		cols: []string{"epoch", "timestamp", "cluster", "status", "node.total", "node.data", "shards", "pri", "relo", "init", "unassign", "unassign.pri", "pending_tasks", "max_task_wait_time", "active_shards_percent"},
		rows: [][]string{{
			strconv.FormatInt(now.Unix(), 10), now.UTC().Format("15:04:05"), h.ClusterName, h.Status,
			strconv.Itoa(h.NumberOfNodes), strconv.Itoa(h.NumberOfDataNodes), strconv.Itoa(h.ActiveShards),
			strconv.Itoa(h.ActivePrimaryShards), strconv.Itoa(h.RelocatingShards), strconv.Itoa(h.InitializingShards),
			strconv.Itoa(h.UnassignedShards), strconv.Itoa(h.UnassignedPrimaryShards), "0", "-",
			strconv.FormatFloat(h.ActiveShardsPercentAsNumber, 'f', 1, 64) + "%",
		}},
	}
	return s.writeCat(w, r, t)
}

// namesThisNode reports whether a node-id selection of the nodes APIs (ids,
// names, _all, _local, _master) names this node.
func (s *Server) namesThisNode(ids []string) bool {
	for _, id := range ids {
		if id == "_all" || id == "_local" || id == s.cfg.NodeID || id == s.cfg.NodeName || (id == "_master" && s.masterID() == s.cfg.NodeID) {
			return true
		}
	}
	return false
}

// handleNodesStats serves the basics of GET /_nodes[/{node_id}]/stats: this
// node's document and store totals and the engine's indexing and search
// counters (no node when {node_id} does not name this node: Weft reports
// each node's statistics through that node).
func (s *Server) handleNodesStats(w http.ResponseWriter, r *http.Request) error {
	st := s.eng.Stats() // this node's copies only, as Elasticsearch reports a node
	var docs uint64
	var store int64
	for _, is := range st.Indices {
		docs += is.Docs
		store += is.StoreSizeBytes
	}
	host, _ := os.Hostname()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	node := map[string]any{
		"name":              s.cfg.NodeName,
		"host":              host,
		"roles":             []string{"data", "ingest", "master"},
		"timestamp":         s.now().UnixMilli(),
		"indices":           nodeIndicesStats(docs, store, st),
		"indexing_pressure": indexingPressureStats(st.IndexingPressure),
		"breakers":          s.breakerStats(),
		"process":           map[string]any{"timestamp": s.now().UnixMilli()},
		"os":                map[string]any{"available_processors": runtime.NumCPU(), "allocated_processors": runtime.GOMAXPROCS(0)},
		"runtime":           map[string]any{"goroutines": runtime.NumGoroutine(), "heap_alloc_in_bytes": mem.HeapAlloc, "sys_in_bytes": mem.Sys},
		"cluster_name":      s.cfg.ClusterName,
		"transport_address": "",
	}
	nodes, total := map[string]any{s.cfg.NodeID: node}, 1
	if ids := r.PathValue("node_id"); ids != "" && !s.namesThisNode(strings.Split(ids, ",")) {
		nodes, total = map[string]any{}, 0
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{
		"_nodes":       map[string]int{"total": total, "successful": total, "failed": 0},
		"cluster_name": s.cfg.ClusterName,
		"nodes":        nodes,
	})
	return nil
}

// nodeIndicesStats is the "indices" section of a node in _nodes/stats.
func nodeIndicesStats(docs uint64, store int64, st coord.NodeStats) map[string]any {
	var sum vocab.IndexNodeStats
	for _, s := range st.Indices {
		sum.IndexTotal += s.IndexTotal
		sum.IndexTimeNanos += s.IndexTimeNanos
		sum.DeleteTotal += s.DeleteTotal
		sum.SearchTotal += s.SearchTotal
		sum.SearchNanos += s.SearchNanos
		sum.LogFsyncs += s.LogFsyncs
	}
	return map[string]any{
		"docs":  map[string]any{"count": docs, "deleted": 0},
		"store": map[string]any{"size_in_bytes": store},
		"indexing": map[string]any{
			"index_total":          sum.IndexTotal,
			"index_time_in_millis": sum.IndexTimeNanos / 1e6,
			"delete_total":         sum.DeleteTotal,
		},
		"search": map[string]any{
			// The reader contexts this node holds, one per shard copy a
			// scroll or point in time pinned here (what
			// search.max_open_scroll_context and search.max_open_pit_context
			// bound).
			"open_contexts":         st.ScrollContexts + st.PITContexts,
			"scroll_current":        st.ScrollContexts,
			"point_in_time_current": st.PITContexts,
			"query_total":           sum.SearchTotal,
			"query_time_in_millis":  sum.SearchNanos / 1e6,
		},
		"translog": map[string]any{"fsyncs": sum.LogFsyncs},
	}
}
