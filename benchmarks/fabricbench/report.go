package fabricbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultSizes are the payload sizes of the issue: 64 B to 64 MiB.
var DefaultSizes = []int{64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20}

// ParseSize reads "64", "1KiB", "16MiB", "1GiB" (also "k", "KB", "m", "MB"
// as binary units).
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			lower = strings.TrimSuffix(lower, u.suffix)
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(lower))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("fabricbench: size %q: want a byte count such as 64, 4KiB or 16MiB", s)
	}
	return n * mult, nil
}

// ParseSizes reads a comma list of sizes.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatSize prints 65536 as "64KiB".
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	default:
		return fmt.Sprintf("%dB", n)
	}
}

// WriteJSON writes r as one JSON object and a newline.
func WriteJSON(w io.Writer, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteTable writes results as an aligned table, with each row's RTT p50
// and bandwidth relative to the "raw" row of the same size, in-flight count
// and fan-out when one is present, under a line saying what processors the
// measuring process had (WriteMachine).
func WriteTable(w io.Writer, rs []Result) error {
	if err := WriteMachine(w, rs); err != nil {
		return err
	}
	type key struct{ size, inflight, peers int }
	raw := make(map[key]Result)
	for _, r := range rs {
		if r.Transport == "raw" && r.Error == "" {
			raw[key{r.Size, r.InFlight, r.peers()}] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tsize\tinflight\tpeers\tcalls\trtt p50\trtt p99\tMB/s\tCPU s/GB\tp50/raw\tMB/s/raw\t")
	var failed []Result
	for _, r := range rs {
		if r.Error != "" {
			failed = append(failed, r)
			continue
		}
		rel, relBW := "", ""
		if b, ok := raw[key{r.Size, r.InFlight, r.peers()}]; ok && b.RTTP50ns > 0 && b.MBPerS > 0 {
			rel = fmt.Sprintf("%.2f", float64(r.RTTP50ns)/float64(b.RTTP50ns))
			relBW = fmt.Sprintf("%.2f", r.MBPerS/b.MBPerS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%.0f\t%.3f\t%s\t%s\t\n", r.Transport, FormatSize(r.Size), r.InFlight, r.peers(), r.Calls,
			fmtDur(r.RTTP50ns), fmtDur(r.RTTP99ns), r.MBPerS, r.CPUSPerGB, rel, relBW)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Errors go below the table, once per transport and message, so a
	// transport that cannot run here does not break the columns.
	seen := make(map[string]bool)
	for _, r := range failed {
		k := r.Transport + "\x00" + r.Error
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, err := fmt.Fprintf(w, "%s: %s\n", r.Transport, r.Error); err != nil {
			return err
		}
	}
	return nil
}

func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// ReadJSON reads results written by WriteJSON, one object per line.
func ReadJSON(r io.Reader) ([]Result, error) {
	var out []Result
	dec := json.NewDecoder(r)
	for {
		var res Result
		if err := dec.Decode(&res); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("fabricbench: result %d: %w", len(out)+1, err)
		}
		out = append(out, res)
	}
}

// WriteTargets prints, per size, in-flight count and fan-out, the ratios
// the fabric issues set targets for: tcp RTT p50 against raw (issue 12:
// ≤ 1.15 at every size and in-flight count, and with the calls spread over
// several peers) and against grpc (≤ 0.85 everywhere), tcp bandwidth
// against raw (≥ 0.9 from 1 MiB), and adaptive's RTT p50 and bandwidth
// against the best single path measured (tcp, and rdma when present;
// target within 1.1×). Missing transports leave their columns empty. Like
// WriteTable it starts with the machine line.
func WriteTargets(w io.Writer, rs []Result) error {
	if err := WriteMachine(w, rs); err != nil {
		return err
	}
	type key struct {
		t                 string
		size, infl, peers int
	}
	m := make(map[key]Result)
	var points []key
	for _, r := range rs {
		if r.Error != "" {
			continue
		}
		k := key{r.Transport, r.Size, r.InFlight, r.peers()}
		if _, ok := m[key{"", r.Size, r.InFlight, r.peers()}]; !ok {
			m[key{"", r.Size, r.InFlight, r.peers()}] = Result{}
			points = append(points, key{"", r.Size, r.InFlight, r.peers()})
		}
		m[k] = r
	}
	ratio := func(a, b float64, ok bool) string {
		if !ok || b == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tinflight\tpeers\ttcp/raw p50\ttcp/grpc p50\ttcp/raw MB/s\tadaptive/best p50\tadaptive/best MB/s\t")
	for _, p := range points {
		get := func(t string) (Result, bool) { r, ok := m[key{t, p.size, p.infl, p.peers}]; return r, ok }
		tcp, okT := get("tcp")
		raw, okR := get("raw")
		grpc, okG := get("grpc")
		ad, okA := get("adaptive")
		best, okB := tcp, okT
		if rd, ok := get("rdma"); ok && (!okB || rd.RTTP50ns < best.RTTP50ns) {
			best, okB = rd, true
		}
		bestBW := best.MBPerS
		if rd, ok := get("rdma"); ok && rd.MBPerS > bestBW {
			bestBW = rd.MBPerS
		}
		if okT && tcp.MBPerS > bestBW {
			bestBW = tcp.MBPerS
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", FormatSize(p.size), p.infl, p.peers,
			ratio(float64(tcp.RTTP50ns), float64(raw.RTTP50ns), okT && okR),
			ratio(float64(tcp.RTTP50ns), float64(grpc.RTTP50ns), okT && okG),
			ratio(tcp.MBPerS, raw.MBPerS, okT && okR),
			ratio(float64(ad.RTTP50ns), float64(best.RTTP50ns), okA && okB),
			ratio(ad.MBPerS, bestBW, okA && okB))
	}
	return tw.Flush()
}

// WriteMachine writes one line saying with what processors the results
// were measured: GOMAXPROCS and the CPUs the process could use, each
// distinct pair with its number of points, or that the results (from
// before these were recorded) do not say.
func WriteMachine(w io.Writer, rs []Result) error {
	type procs struct{ gomaxprocs, cpus int }
	count := make(map[procs]int)
	var order []procs
	for _, r := range rs {
		if r.Error != "" {
			continue
		}
		k := procs{r.GOMAXPROCS, r.CPUs}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	var parts []string
	for _, k := range order {
		if k.gomaxprocs == 0 {
			parts = append(parts, fmt.Sprintf("not recorded (%d points)", count[k]))
			continue
		}
		parts = append(parts, fmt.Sprintf("GOMAXPROCS %d, %d CPUs (%d points)", k.gomaxprocs, k.cpus, count[k]))
	}
	if len(parts) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "machine: %s\n", strings.Join(parts, "; "))
	return err
}
