package enginebench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// WriteTable prints r as the table docs/benchmarks-engine.md shows.
func WriteTable(w io.Writer, r *Result) error {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "Weft engine benchmark: %d docs (%.1f MB), batches of %d (%d in flight over HTTP), top %d hits\n",
		r.Docs, float64(r.CorpusBytes)/1e6, r.BatchSize, r.Concurrency, r.Size)
	fmt.Fprintf(w, "%s\n\n", r.Machine)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bulk indexing\tdocs/s\tHTTP ÷ this\t")
	fmt.Fprintf(tw, "raw bleve, default batches\t%.0f\t%.2f×\t\n", r.Bulk.RawDocsPerSec, r.Bulk.Ratio)
	fmt.Fprintf(tw, "raw bleve, unsafe_batch\t%.0f\t%.2f×\t\n", r.Bulk.RawUnsafeDocsPerSec, r.Bulk.RatioUnsafe)
	fmt.Fprintf(tw, "HTTP _bulk + _refresh\t%.0f\t\t\n", r.Bulk.HTTPDocsPerSec)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "target HTTP ≥ 0.80× raw bleve (default batches): %s\n\n", met(r.Bulk.TargetMet))

	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency (µs)\tn\tp50\tp99\tmean\t")
	fmt.Fprintf(tw, "empty round trip (GET / on the node, all rounds)\t%d\t%.0f\t%.0f\t%.0f\t\n", r.EmptyRTT.N, r.EmptyRTT.P50, r.EmptyRTT.P99, r.EmptyRTT.Mean)
	fmt.Fprintf(tw, "bare net/http round trip (reference)\t%d\t%.0f\t%.0f\t%.0f\t\n", r.BareRTT.N, r.BareRTT.P50, r.BareRTT.P99, r.BareRTT.Mean)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query (µs)\tn\traw p50\traw p99\tHTTP p50\tHTTP p99\tempty p50\tp50 budget\ttarget\tsame totals\tsame top ids\tsame scores\tGCs client\tGCs raw\t")
	for _, q := range r.Queries {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t%d/%d\t%d/%d\t%d/%d\t%d\t%d\t\n",
			q.Kind, q.HTTP.N, q.Raw.P50, q.Raw.P99, q.HTTP.P50, q.HTTP.P99, q.Empty.P50, q.BudgetUS, met(q.TargetMet),
			q.SameTotals, q.Distinct, q.SameTopIDs, q.Distinct, q.SameScores, q.Distinct, q.ClientGCs, q.RawGCs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "each round runs a raw query (in the raw worker process, timed there), the same query over HTTP and an empty round trip;\n"+
		"p50 budget = (raw p50 + empty p50) × 1.1; same … = distinct queries whose totals, top-hit id sets, top-hit scores agree;\n"+
		"GCs = garbage collections during the kind's rounds in this process (the HTTP client) and in the raw worker")
	for _, q := range r.Queries {
		if q.FirstMismatch != "" {
			fmt.Fprintf(w, "first %s mismatch: %s\n", q.Kind, q.FirstMismatch)
		}
	}
	return err
}

// WriteJSONFile writes v (a run's result), indented, to path.
func WriteJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
