package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// recoveryBenchmark is node.test's benchmark of peer recovery over the
// fabric (node/recovery_rdma_test.go), one sub-benchmark per path.
const recoveryBenchmark = "BenchmarkPeerRecovery"

// recoveryChunk and recoveryWindow are what a file-based recovery streams
// with (shard's recoveryFileChunk, fabric.DefaultStreamWindow): the
// fabricbench size it is compared with, and how many chunks are in flight.
const (
	recoveryChunk  = 1 << 20
	recoveryWindow = 4
)

// RecoveryRow is one recovery of results.json: a sub-benchmark of
// BenchmarkPeerRecovery with the fabric pinned to Path ("rdma", "tcp") or
// unpinned ("adaptive").
type RecoveryRow struct {
	Transport string `json:"transport"` // "recovery"
	Path      string `json:"path"`
	Run       string `json:"run"` // the benchmark's name, e.g. BenchmarkPeerRecovery/rdma#01-2
	Size      int    `json:"size"`
	InFlight  int    `json:"inflight"`
	Bytes     int64  `json:"bytes"`
	// MBPerS is bytes_total over the _cat/recovery time; WallMBPerS over
	// the time from the settings change to done.
	MBPerS     float64 `json:"mb_per_s"`
	WallMBPerS float64 `json:"wall_mb_per_s"`
	// RDMAShare is the share of the primary's path bytes sent on RDMA.
	RDMAShare float64 `json:"rdma_share"`
	// Load is the benchmark's recovery-load line: how the shard was loaded.
	Load        string `json:"load,omitempty"`
	Device      string `json:"device"`
	Accelerator string `json:"accelerator"`
}

// readRecovery reads node.test's benchmark output (go test's format) and
// returns a row per BenchmarkPeerRecovery sub-benchmark, in order.
func readRecovery(path, device, accel string) ([]RecoveryRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := parseRecovery(f, path)
	for i := range rows {
		rows[i].Device, rows[i].Accelerator = device, accel
	}
	return rows, err
}

func parseRecovery(r io.Reader, name string) ([]RecoveryRow, error) {
	var out []RecoveryRow
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, rec
		case *benchfmt.Result:
			base, parts := rec.Name.Parts()
			if "Benchmark"+string(base) != recoveryBenchmark || len(parts) < 1 {
				continue
			}
			path, _, _ := strings.Cut(strings.TrimPrefix(string(parts[0]), "/"), "#")
			row := RecoveryRow{Transport: "recovery", Path: path, Run: "Benchmark" + rec.Name.String(),
				Size: recoveryChunk, InFlight: recoveryWindow, Load: rec.GetConfig("recovery-load")}
			var bytes float64
			for _, want := range []struct {
				unit string
				dst  *float64
			}{{"MB/s", &row.MBPerS}, {"wall-MB/s", &row.WallMBPerS}, {"bytes", &bytes}, {"rdma-share", &row.RDMAShare}} {
				v, ok := origValue(rec, want.unit)
				if !ok {
					return nil, fmt.Errorf("%s: %s reports no %s", name, row.Run, want.unit)
				}
				*want.dst = v
			}
			row.Bytes = int64(bytes)
			row.MBPerS, row.WallMBPerS, row.RDMAShare = round3(row.MBPerS), round3(row.WallMBPerS), round3(row.RDMAShare)
			out = append(out, row)
		}
	}
	return out, br.Err()
}

// origValue is a result's value in unit as the benchmark printed it
// (benchfmt tidies MB/s into B/s).
func origValue(r *benchfmt.Result, unit string) (float64, bool) {
	for _, v := range r.Values {
		if v.OrigUnit == unit {
			return v.OrigValue, true
		}
		if v.OrigUnit == "" && v.Unit == unit {
			return v.Value, true
		}
	}
	return 0, false
}

// recoveryJSON is the rows as JSON lines.
func recoveryJSON(rows []RecoveryRow) ([]byte, error) {
	var b bytes.Buffer
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
