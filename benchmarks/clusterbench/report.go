package clusterbench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

// Goal is one target of the issues, evaluated on a run's figures.
type Goal struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	AtMost bool    `json:"at_most"` // Value must be <= Limit; else >=
	Met    bool    `json:"met"`
}

func goal(name string, value, limit float64, atMost bool) Goal {
	met := value >= limit
	if atMost {
		met = value <= limit
	}
	return Goal{Name: name, Value: value, Limit: limit, AtMost: atMost, Met: met}
}

// Goals evaluates the issues' targets on r's figures:
//   - issue 9: each three-node setup's p50 at one client ≤ 1.5× the one
//     node's with the same shards;
//   - issue 9: each three-node coordinator's fabric bytes per query ≤ 2×
//     the final page's _source bytes;
//   - issue 10: bulk docs/s with 1 replica ≥ 0.6× with 0, per transport;
//   - issue 10: recovery throughput (median of a transport's runs) ≥ 0.8×
//     fabricbench's raw TCP bandwidth at 1 MiB, one in flight (median of
//     its reps).
func Goals(r *Result) []Goal {
	out := []Goal{}
	base, ok := findSearch(r, oneNodeName(r.Shards), 1)
	for _, f := range r.FanOut {
		if s, found := findSearch(r, f.Setup, 1); ok && found && base.Latency.P50 > 0 {
			out = append(out, goal(fmt.Sprintf("query p50 at 1 client, %s ÷ %s", f.Setup, base.Setup), s.Latency.P50/base.Latency.P50, 1.5, true))
		}
	}
	for _, f := range r.FanOut {
		if fab, src, _ := f.PerQuery(); src > 0 {
			out = append(out, goal(fmt.Sprintf("fabric bytes per query ÷ final page _source bytes, %s", f.Setup), fab/src, 2, true))
		}
	}
	for _, rf := range r.Replicas {
		if rf.R0DocsPerSec > 0 {
			out = append(out, goal(fmt.Sprintf("bulk docs/s, 1 replica ÷ 0 replicas, 3 nodes %s", rf.Transport), rf.R1DocsPerSec/rf.R0DocsPerSec, 0.6, false))
		}
	}
	if rec := r.Recovery; rec != nil {
		if raw := rawMBPerS(rec.Raw, "raw", 1<<20); raw > 0 {
			for _, t := range recoveryTransports(rec) {
				out = append(out, goal(fmt.Sprintf("recovery MB/s over %s ÷ raw TCP MB/s (1 MiB, 1 in flight)", t), recoveryMBPerS(rec, t)/raw, 0.8, false))
			}
		}
	}
	return out
}

// oneNodeName is the setup the three-node ones are compared with.
func oneNodeName(shards int) string {
	if shards == 1 {
		return "1 node, 1 shard"
	}
	return fmt.Sprintf("1 node, %d shards", shards)
}

func findSearch(r *Result, setup string, clients int) (SearchFigure, bool) {
	for _, s := range r.Search {
		if s.Setup == setup && s.Clients == clients {
			return s, true
		}
	}
	return SearchFigure{}, false
}

// rawMBPerS is the median MB/s of fabricbench's transport at size, one in
// flight, over the reps; 0 when there is none.
func rawMBPerS(rs []fabricbench.Result, transport string, size int) float64 {
	var v []float64
	for _, r := range rs {
		if r.Transport == transport && r.Size == size && r.InFlight == 1 && r.Error == "" {
			v = append(v, r.MBPerS)
		}
	}
	return median(v)
}

// recoveryTransports lists the transports of rec's runs in first-seen order.
func recoveryTransports(rec *RecoveryResult) []string {
	var out []string
	for _, run := range rec.Runs {
		if !slices.Contains(out, run.Transport) {
			out = append(out, run.Transport)
		}
	}
	return out
}

// recoveryMBPerS is the median throughput of transport's recoveries.
func recoveryMBPerS(rec *RecoveryResult, transport string) float64 {
	var v []float64
	for _, run := range rec.Runs {
		if run.Transport == transport {
			v = append(v, run.MBPerS())
		}
	}
	return median(v)
}

// median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteTable prints r as docs/benchmarks-cluster.md shows it.
func WriteTable(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "Weft cluster benchmark: %d docs (%.1f MB), %d queries (%d from the file, %d generated), top %d hits with _source, %d shards\n",
		r.Docs, float64(r.CorpusBytes)/1e6, r.Queries, r.FileQueries, r.Queries-r.FileQueries, r.Size, r.Shards)
	procs := "every CPU each (the runtime's default)"
	if r.NodeProcessors > 0 {
		procs = fmt.Sprintf("--processors %d each", r.NodeProcessors)
	}
	fmt.Fprintf(w, "%s; all nodes on 127.0.0.1; three-node clusters: %s, the lone node: every CPU\n\n", r.Machine, procs)
	base := oneNodeName(r.Shards)
	var baseBulk float64
	for _, b := range r.Bulk {
		if b.Setup == base {
			baseBulk = b.DocsPerSec
		}
	}
	tables := []struct {
		empty bool
		write func(*tabwriter.Writer)
	}{
		{len(r.Bulk) == 0, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "bulk (batches interleaved)\tdocs/s\t÷ %s\t\n", base)
			for _, b := range r.Bulk {
				fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t\n", b.Setup, b.DocsPerSec, ratio(b.DocsPerSec, baseBulk))
			}
		}},
		{len(r.Search) == 0, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "queries\tclients\tn\tp50 µs\tp99 µs\tQPS\tp50 ÷ %s\t\n", base)
			clients := []int{}
			for _, s := range r.Search {
				if !slices.Contains(clients, s.Clients) {
					clients = append(clients, s.Clients)
				}
			}
			for _, c := range clients {
				b, _ := findSearch(r, base, c)
				for _, s := range r.Search {
					if s.Clients == c {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", s.Setup, s.Clients, s.Latency.N, s.Latency.P50, s.Latency.P99, s.QPS, ratio(s.Latency.P50, b.Latency.P50))
					}
				}
			}
		}},
		{len(r.FanOut) == 0, func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "fabric per query (coordinator)\tqueries\tfabric B\t_source B\tremote _source B\tfabric ÷ _source\tfabric ÷ remote\tidle B/s\t")
			for _, f := range r.FanOut {
				fab, src, rem := f.PerQuery()
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.0f\t\n", f.Setup, f.Queries, fab, src, rem, ratio(fab, src), ratio(fab, rem), f.IdleBytesPerSec)
			}
		}},
		{len(r.Replicas) == 0, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "bulk, 3 nodes, %d shards\treplicas 0 docs/s\treplicas 1 docs/s\t1 ÷ 0\t\n", r.Shards)
			for _, rf := range r.Replicas {
				fmt.Fprintf(tw, "3 nodes %s\t%.0f\t%.0f\t%.2f\t\n", rf.Transport, rf.R0DocsPerSec, rf.R1DocsPerSec, ratio(rf.R1DocsPerSec, rf.R0DocsPerSec))
			}
		}},
	}
	for _, t := range tables {
		if t.empty {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		t.write(tw)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if err := writeRecovery(w, r.Recovery); err != nil {
		return err
	}
	for _, f := range r.FanOut {
		if len(f.Heaviest) == 0 {
			continue
		}
		fmt.Fprintf(w, "heaviest queries on the fabric, %s (one run each): ", f.Setup)
		for i, q := range f.Heaviest {
			if i > 0 {
				fmt.Fprint(w, "; ")
			}
			fmt.Fprintf(w, "%s %d B (_source %d B)", q.Query, q.FabricBytes, q.SourceBytes)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "p50/p99 at 1 client: every setup runs each query in turn, round by round; QPS there is queries ÷ their summed time.\n"+
		"At more clients: timed windows, setups taking turns. fabric B: growth of the coordinator's outbound fabric\n"+
		"connections' bytes sent + received (/_weft/fabric/conns) over the one-client queries, per query; _source B: the\n"+
		"final page's _source bytes in the HTTP replies; remote: of hits whose shard's primary is on another node.")
	fmt.Fprintln(w)
	return writeGoals(w, r.Goals)
}

// writeRecovery prints the recovery part: each run and the raw points.
func writeRecovery(w io.Writer, rec *RecoveryResult) error {
	if rec == nil {
		return nil
	}
	throttle := "off"
	if rec.Throttle > 0 {
		throttle = fmt.Sprintf("%d B/s", rec.Throttle)
	}
	cut := ""
	if rec.LoadCut {
		cut = ", load cut by the time limit"
	}
	fmt.Fprintf(w, "recovery: 1 shard of %d docs × %d KiB (%.0f MB of _source, loaded in %.0f s%s), throttle %s\n",
		rec.Docs, rec.DocBytes>>10, float64(rec.SourceBytes)/1e6, rec.LoadSeconds, cut, throttle)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	raw, disk := rawMBPerS(rec.Raw, "raw", 1<<20), median(rec.DiskMBPerS)
	fmt.Fprintln(tw, "transport\trep\ttype\tbytes\tseconds\tMB/s\twall s\tstream MB/s\t÷ raw 1MiB\t÷ disk\t")
	for _, run := range rec.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.2f\t%.1f\t%.2f\t%.1f\t%.2f\t%.2f\t\n", run.Transport, run.Rep, run.Type, run.Bytes, run.Seconds, run.MBPerS(),
			run.WallSeconds, run.StreamMBPerS(), ratio(run.MBPerS(), raw), ratio(run.MBPerS(), disk))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measured between recoveries\tsize\tMB/s by rep\tmedian\t")
	for _, t := range []string{"raw", "tcp"} {
		for _, size := range rawSizes {
			var by []string
			for _, r := range rec.Raw {
				if r.Transport == t && r.Size == size {
					by = append(by, fmt.Sprintf("%.0f", r.MBPerS))
				}
			}
			if len(by) > 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t\n", t, fabricbench.FormatSize(size), strings.Join(by, " "), rawMBPerS(rec.Raw, t, size))
			}
		}
	}
	if len(rec.DiskMBPerS) > 0 {
		var by []string
		for _, v := range rec.DiskMBPerS {
			by = append(by, fmt.Sprintf("%.0f", v))
		}
		fmt.Fprintf(tw, "disk: write + fsync\t%.0f MB\t%s\t%.0f\t\n", float64(rec.SourceBytes)/1e6, strings.Join(by, " "), median(rec.DiskMBPerS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func writeGoals(w io.Writer, goals []Goal) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "goal\tvalue\ttarget\t")
	for _, g := range goals {
		op, met := "≥", "met"
		if g.AtMost {
			op = "≤"
		}
		if !g.Met {
			met = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s %.2f %s\t\n", g.Name, g.Value, op, g.Limit, met)
	}
	return tw.Flush()
}

// ReadJSONFile reads a result written by enginebench.WriteJSONFile and
// evaluates its goals again.
func ReadJSONFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Goals = Goals(&r)
	return &r, nil
}
