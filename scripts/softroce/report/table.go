package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// fabricOrder puts the fabric transports first, in the order the issue reads.
var fabricOrder = map[string]int{"raw": 0, "grpc": 1, "tcp": 2, "rdma": 3, "adaptive": 4}

func transportLess(a, b string) bool {
	oa, okA := fabricOrder[a]
	ob, okB := fabricOrder[b]
	switch {
	case okA && okB:
		return oa < ob
	case okA != okB:
		return okA
	}
	return a < b
}

type key struct {
	transport string
	inflight  int
}

// writeTable prints, at each size: round-trip p50 at one call in flight next
// to perftest's latency (as a round trip), bandwidth at every in-flight count
// next to ib_write_bw, and the ratios the RDMA issue sets targets for; then
// each recovery next to fabricbench's bandwidth of its path.
func writeTable(w io.Writer, rows []result, recov []RecoveryRow, device, accel string) {
	byKey := map[key]map[int]result{}
	sizeSet := map[int]bool{}
	for _, r := range rows {
		k := key{r.Transport, r.InFlight}
		if byKey[k] == nil {
			byKey[k] = map[int]result{}
		}
		byKey[k][r.Size] = r
		sizeSet[r.Size] = true
	}
	sizes := make([]int, 0, len(sizeSet))
	for s := range sizeSet {
		sizes = append(sizes, s)
	}
	sort.Ints(sizes)
	var fabric []key
	for k := range byKey {
		if !strings.HasPrefix(k.transport, "perftest-") {
			fabric = append(fabric, k)
		}
	}
	sort.Slice(fabric, func(i, j int) bool {
		if fabric[i].transport != fabric[j].transport {
			return transportLess(fabric[i].transport, fabric[j].transport)
		}
		return fabric[i].inflight < fabric[j].inflight
	})
	get := func(transport string, inflight, size int) (result, bool) {
		for k, m := range byKey {
			if k.transport == transport && (inflight == 0 || k.inflight == inflight) {
				if r, ok := m[size]; ok && r.Error == "" {
					return r, true
				}
			}
		}
		return result{}, false
	}

	fmt.Fprintf(w, "Soft-RoCE guest results: device %s, accelerator %s", device, accel)
	if accel == "tcg" {
		fmt.Fprint(w, " (QEMU emulation: the figures measure the emulator, compare columns only with each other)")
	}
	fmt.Fprint(w, "\n\n")

	// Latency: one call in flight.
	fmt.Fprintln(w, "Round trip p50, µs, 1 call in flight (perftest: 2 x one-way t_typical)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var latCols []string
	for _, k := range fabric {
		if k.inflight == 1 {
			latCols = append(latCols, k.transport)
		}
	}
	fmt.Fprint(tw, "size\t")
	for _, c := range latCols {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprint(tw, "perftest-send-lat\tperftest-write-lat\t\n")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", sizeName(s))
		for _, c := range append(latCols, "perftest-send-lat", "perftest-write-lat") {
			fmt.Fprintf(tw, "%s\t", cell(byKey, c, 1, s, func(r result) string { return us(r.RTTP50ns) }))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()

	// Bandwidth: every in-flight count.
	fmt.Fprintln(w, "\nBandwidth, MB/s (10^6 B/s, one direction), by calls in flight (perftest: ib_write_bw average, TX depth up to 128)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\t")
	for _, k := range fabric {
		fmt.Fprintf(tw, "%s@%d\t", k.transport, k.inflight)
	}
	// One perftest column whatever its TX depth (perftest lowers it to the
	// iteration count; results.json keeps it as inflight).
	fmt.Fprintln(tw, "perftest-write-bw\t")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", sizeName(s))
		for _, k := range fabric {
			fmt.Fprintf(tw, "%s\t", cell(byKey, k.transport, k.inflight, s, func(r result) string {
				return mbps(r.MBPerS)
			}))
		}
		if r, ok := get("perftest-write-bw", 0, s); ok {
			fmt.Fprintf(tw, "%s\t\n", mbps(r.MBPerS))
		} else {
			fmt.Fprint(tw, "-\t\n")
		}
	}
	tw.Flush()

	// Ratios the issue sets targets for (reported, not asserted).
	fmt.Fprintln(w, "\nRatios (targets from the RDMA issue: rdma RTT <= 1.3 x send-lat at 64 B; rdma bandwidth >= 0.9 x write-bw at 1 MiB; adaptive within 1.1 x of the better path)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\trdma RTT / send-lat RTT\trdma best MB/s / write-bw\tadaptive RTT / best RTT\tadaptive best MB/s / best path\t\n")
	for _, s := range sizes {
		ratio := func(a, b float64, okA, okB bool) string {
			if !okA || !okB || b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		rdma, okR := get("rdma", 1, s)
		send, okS := get("perftest-send-lat", 1, s)
		bestRDMA, okRB := best(byKey, "rdma", s)
		wbw, okW := get("perftest-write-bw", 0, s)
		ad, okA := get("adaptive", 1, s)
		tcp, okT := get("tcp", 1, s)
		bestRTT, okBR := math.Inf(1), false
		for _, r := range []struct {
			r  result
			ok bool
		}{{rdma, okR}, {tcp, okT}} {
			if r.ok && float64(r.r.RTTP50ns) < bestRTT {
				bestRTT, okBR = float64(r.r.RTTP50ns), true
			}
		}
		adBW, okABW := best(byKey, "adaptive", s)
		tcpBW, okTBW := best(byKey, "tcp", s)
		pathBW := math.Max(bestRDMA, tcpBW)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", sizeName(s),
			ratio(float64(rdma.RTTP50ns), float64(send.RTTP50ns), okR, okS),
			ratio(bestRDMA, wbw.MBPerS, okRB, okW),
			ratio(float64(ad.RTTP50ns), bestRTT, okA, okBR),
			ratio(adBW, pathBW, okABW, okRB || okTBW))
	}
	tw.Flush()
	writeRecovery(w, recov, byKey)
}

// writeRecovery prints each peer recovery next to fabricbench's bandwidth
// of the same transport at the recovery's chunk size and window (else its
// best over the in-flight counts measured), and their ratio (the replica
// issue's goal: 0.8).
func writeRecovery(w io.Writer, recov []RecoveryRow, byKey map[key]map[int]result) {
	if len(recov) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPeer recovery, file-based (node.test %s: %s chunks, %d in flight; rdma and tcp pinned, adaptive free), vs fabricbench's MB/s of the path at %s, %d in flight (else its best) (goal: recovery >= 0.8 x raw)\n",
		recoveryBenchmark, sizeName(recoveryChunk), recoveryWindow, sizeName(recoveryChunk), recoveryWindow)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "run\tbytes\tMB/s\twall MB/s\ton rdma\tfabricbench MB/s@in flight\trecovery / fabricbench\t\n")
	for _, r := range recov {
		rawCell, ratio := "-", "-"
		if raw, inflight, ok := recoveryReference(byKey, r.Path); ok {
			rawCell, ratio = fmt.Sprintf("%s@%d", mbps(raw), inflight), fmt.Sprintf("%.2f", r.MBPerS/raw)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t\n", strings.TrimPrefix(r.Run, recoveryBenchmark+"/"), fmt.Sprintf("%.1fMiB", float64(r.Bytes)/(1<<20)),
			mbps(r.MBPerS), mbps(r.WallMBPerS), 100*r.RDMAShare, rawCell, ratio)
	}
	tw.Flush()
	if recov[0].Load != "" {
		fmt.Fprintf(w, "(the shard: %s)\n", recov[0].Load)
	}
}

// recoveryReference is fabricbench's MB/s of transport at the recovery's
// chunk size with the recovery's window in flight, or else its best over
// the in-flight counts measured, with that count.
func recoveryReference(byKey map[key]map[int]result, transport string) (mbPerS float64, inflight int, ok bool) {
	for k, m := range byKey {
		r, found := m[recoveryChunk]
		if k.transport != transport || !found || r.Error != "" || r.MBPerS <= 0 {
			continue
		}
		switch {
		case k.inflight == recoveryWindow:
			return r.MBPerS, k.inflight, true
		case inflight != recoveryWindow && r.MBPerS > mbPerS:
			mbPerS, inflight, ok = r.MBPerS, k.inflight, true
		}
	}
	return mbPerS, inflight, ok
}

// best is the highest MB/s of transport at size over its in-flight counts.
func best(byKey map[key]map[int]result, transport string, size int) (float64, bool) {
	v, ok := 0.0, false
	for k, m := range byKey {
		if k.transport != transport {
			continue
		}
		if r, found := m[size]; found && r.Error == "" && r.MBPerS > v {
			v, ok = r.MBPerS, true
		}
	}
	return v, ok
}

// cell formats one table cell: "-" when not measured, "err" when the point failed.
func cell(byKey map[key]map[int]result, transport string, inflight, size int, f func(result) string) string {
	m := byKey[key{transport, inflight}]
	r, ok := m[size]
	switch {
	case !ok:
		return "-"
	case r.Error != "":
		return "err"
	}
	return f(r)
}

// mbps keeps three significant digits below 1 MB/s, where small messages are.
func mbps(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func us(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(ns)/1e3)
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
