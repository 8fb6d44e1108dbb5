package esyaml

import (
	"fmt"
	"io"
	"sort"
)

// Tally is the count of outcomes of one API directory (or of all).
type Tally struct {
	Pass, Fail, Skip int
}

// Rate is the share of run tests (not skipped) that passed, in percent.
func (t Tally) Rate() float64 {
	if t.Pass+t.Fail == 0 {
		return 0
	}
	return 100 * float64(t.Pass) / float64(t.Pass+t.Fail)
}

// Summarize counts results per API directory and in total.
func Summarize(results []Result) (map[string]Tally, Tally) {
	per := map[string]Tally{}
	var all Tally
	for _, r := range results {
		t := per[r.API]
		switch r.Status {
		case Pass:
			t.Pass++
			all.Pass++
		case Fail:
			t.Fail++
			all.Fail++
		case Skip:
			t.Skip++
			all.Skip++
		}
		per[r.API] = t
	}
	return per, all
}

// WriteReport writes one line per test, then the table per API directory
// and the total.
func WriteReport(w io.Writer, results []Result) {
	for _, r := range results {
		fmt.Fprintf(w, "%-4s %s :: %s", r.Status, r.File, r.Test)
		if r.Reason != "" {
			fmt.Fprintf(w, " -- %s", r.Reason)
		}
		fmt.Fprintln(w)
	}
	per, all := Summarize(results)
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\n%-28s %5s %5s %5s %7s\n", "api", "pass", "fail", "skip", "pass%")
	for _, n := range names {
		t := per[n]
		fmt.Fprintf(w, "%-28s %5d %5d %5d %6.1f%%\n", n, t.Pass, t.Fail, t.Skip, t.Rate())
	}
	fmt.Fprintf(w, "%-28s %5d %5d %5d %6.1f%%\n", "total", all.Pass, all.Fail, all.Skip, all.Rate())
}
