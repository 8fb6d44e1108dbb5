package ctl

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressPrinter shows a running load: a one-line bar redrawn in place on a
// terminal, or a plain line every interval otherwise (logs, CI). Its methods
// are called by one goroutine at a time (Load serialises Progress calls).
type progressPrinter struct {
	w        io.Writer
	terminal bool
	total    int64 // input size in bytes; 0 if unknown (a pipe)
	interval time.Duration
	last     time.Time
	drawn    bool
}

func (p *progressPrinter) update(pr Progress) {
	now := time.Now()
	if !p.terminal && now.Sub(p.last) < p.interval {
		return
	}
	if p.terminal && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	rate := 0.0
	if pr.Elapsed > 0 {
		rate = float64(pr.Docs) / pr.Elapsed.Seconds()
	}
	if !p.terminal {
		pct := ""
		if p.total > 0 {
			pct = fmt.Sprintf(" (%.0f%% of input)", 100*float64(pr.InputBytes)/float64(p.total))
		}
		fmt.Fprintf(p.w, "bulk: %d docs indexed, %d failed%s, %.0f docs/s\n", pr.Docs, pr.Failed, pct, rate)
		return
	}
	const width = 30
	bar := strings.Repeat("·", width)
	pct := ""
	if p.total > 0 {
		frac := min(float64(pr.InputBytes)/float64(p.total), 1)
		n := int(frac * width)
		bar = strings.Repeat("█", n) + strings.Repeat("·", width-n)
		pct = fmt.Sprintf(" %3.0f%%", 100*frac)
	}
	fmt.Fprintf(p.w, "\r[%s]%s %d docs, %d failed, %.0f docs/s ", bar, pct, pr.Docs, pr.Failed, rate)
	p.drawn = true
}

// done ends the bar's line so that what follows starts on a fresh one.
func (p *progressPrinter) done() {
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device (a terminal), the
// standard library's way without a terminal package.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
