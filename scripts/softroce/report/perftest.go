package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Row is one result line of results.json. fabricbench rows keep every field
// fabricbench printed and gain Device and Accelerator; perftest rows are
// built from perftest's report with the same field names, so one table can
// put them side by side.
type Row struct {
	Transport string `json:"transport"`
	Size      int    `json:"size"`
	// InFlight is 1 for perftest's latency tests and its TX depth for
	// ib_write_bw.
	InFlight int `json:"inflight"`
	// Calls is perftest's iteration count.
	Calls    int   `json:"calls"`
	RTTP50ns int64 `json:"rtt_p50_ns,omitempty"`
	RTTP99ns int64 `json:"rtt_p99_ns,omitempty"`
	// RTTSource says how the round trip was derived: perftest's *_lat tests
	// report one-way latency (half a ping-pong), so the round trip is twice it.
	RTTSource string `json:"rtt_source,omitempty"`
	// OneWayTypicalNs is perftest's t_typical as printed.
	OneWayTypicalNs int64 `json:"one_way_typical_ns,omitempty"`
	// MBPerS is in fabricbench's unit (10^6 bytes per second, one direction);
	// perftest prints MiB/s, kept as printed in PerftestMiBPerS.
	MBPerS          float64 `json:"mb_per_s,omitempty"`
	PerftestMiBPerS float64 `json:"perftest_mib_per_s,omitempty"`
	// WallMBPerS is size × iterations over the wall-clock time of the whole
	// client run (set-up included): a lower bound that does not depend on
	// perftest's cycle-counter conversion, which an emulator can distort.
	WallMBPerS  float64 `json:"wall_mb_per_s,omitempty"`
	Device      string  `json:"device"`
	Accelerator string  `json:"accelerator"`
}

// Perftest tools the guest runs, with the transport name their rows get.
var perftestTransports = map[string]string{
	"ib_send_lat":  "perftest-send-lat",
	"ib_write_lat": "perftest-write-lat",
	"ib_write_bw":  "perftest-write-bw",
}

// errNoResult is returned when a perftest output holds no result line
// (the run failed; its text says why), or one with inf or nan in it (perftest
// could not convert its cycle counts, seen under TCG on a loaded host).
var errNoResult = errors.New("no valid result line")

// parsePerftest reads the client output of one perftest run of tool
// (ib_send_lat, ib_write_lat or ib_write_bw) and returns its row, without
// Device and Accelerator.
func parsePerftest(tool string, r io.Reader) (Row, error) {
	transport, ok := perftestTransports[tool]
	if !ok {
		return Row{}, fmt.Errorf("perftest tool %q is not one of ib_send_lat, ib_write_lat, ib_write_bw", tool)
	}
	row := Row{Transport: transport, InFlight: 1}
	var header []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "TX depth" && tool == "ib_write_bw" {
			if n, err := strconv.Atoi(strings.Fields(v)[0]); err == nil {
				row.InFlight = n
			}
		}
		if strings.HasPrefix(line, "#bytes") {
			header = strings.Fields(line)
			continue
		}
		if header == nil || line == "" || strings.HasPrefix(line, "-") {
			continue
		}
		vals := strings.Fields(line)
		if len(vals) < 2 {
			continue
		}
		if err := fillRow(&row, tool, header, vals); err != nil {
			return Row{}, fmt.Errorf("%s result line %q: %w", tool, line, err)
		}
		return row, nil
	}
	if err := sc.Err(); err != nil {
		return Row{}, err
	}
	return Row{}, fmt.Errorf("%s: %w", tool, errNoResult)
}

// fillRow sets row's fields from one result line, vals, under header (the
// "#bytes ..." line split into words; bw headers have words like "BW
// average[MB/sec]" split in two, so columns are found by position).
func fillRow(row *Row, tool string, header, vals []string) error {
	num := func(i int) (float64, error) {
		if i >= len(vals) {
			return 0, fmt.Errorf("%d columns, want at least %d", len(vals), i+1)
		}
		f, err := strconv.ParseFloat(vals[i], 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return 0, fmt.Errorf("column %d is %q: %w", i+1, vals[i], errNoResult)
		}
		if err != nil || f < 0 {
			return 0, fmt.Errorf("column %d is %q, not a number", i+1, vals[i])
		}
		return f, nil
	}
	size, err := num(0)
	if err != nil {
		return err
	}
	iters, err := num(1)
	if err != nil {
		return err
	}
	row.Size, row.Calls = int(size), int(iters)
	if tool == "ib_write_bw" {
		// #bytes #iterations BW-peak BW-average MsgRate
		avg, err := num(3)
		if err != nil {
			return err
		}
		row.PerftestMiBPerS = avg
		row.MBPerS = round3(avg * (1 << 20) / 1e6)
		return nil
	}
	// #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9 (µs)
	if len(header) < 8 || header[4] != "t_typical[usec]" {
		return fmt.Errorf("unexpected latency header %q", strings.Join(header, " "))
	}
	typ, err := num(4)
	if err != nil {
		return err
	}
	p99, err := num(7)
	if err != nil {
		return err
	}
	row.OneWayTypicalNs = int64(math.Round(typ * 1e3))
	row.RTTP50ns = 2 * row.OneWayTypicalNs
	row.RTTP99ns = int64(math.Round(2 * p99 * 1e3))
	row.RTTSource = "2 x perftest t_typical (one-way); p99 = 2 x 99% percentile"
	return nil
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
