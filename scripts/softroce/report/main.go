// Command report turns what the Soft-RoCE guest wrote (scripts/softroce/run.sh)
// into build/softroce/results.json — JSON lines: fabricbench's rows,
// perftest's and, when the guest ran it, the peer recovery benchmark's
// (recovery.txt), each labelled with the RDMA device and the accelerator —
// and results.txt, a table that puts TCP, RDMA, adaptive and perftest side
// by side at each size, and each recovery next to fabricbench's bandwidth
// of its path at the recovery's chunk size.
//
// Usage (run.sh calls it):
//
//	go run ./scripts/softroce/report -dir build/softroce/guest-out \
//	    -device rxe0 -accel tcg -json results.json -table results.txt
//
// It fails when the guest produced no benchmark rows at all, or when a file
// it reads is malformed; a perftest run that failed is reported and skipped.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "build/softroce/guest-out", "directory the guest wrote its results to")
	device := flag.String("device", "rxe0", "RDMA device the figures were taken on (label)")
	accel := flag.String("accel", "tcg", "QEMU accelerator the guest ran under: tcg or kvm (label)")
	jsonPath := flag.String("json", "build/softroce/results.json", "JSON lines output")
	tablePath := flag.String("table", "build/softroce/results.txt", "table output")
	flag.Parse()
	if err := run(*dir, *device, *accel, *jsonPath, *tablePath, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(dir, device, accel, jsonPath, tablePath string, warn io.Writer) error {
	rows, err := collect(dir, device, accel, warn)
	if err != nil {
		return err
	}
	recov, err := readRecovery(filepath.Join(dir, "recovery.txt"), device, accel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(rows) == 0 && len(recov) == 0 {
		return fmt.Errorf("no benchmark results in %s (neither fabricbench.jsonl rows, perftest/*.txt results nor recovery.txt)", dir)
	}
	var js bytes.Buffer
	for _, r := range rows {
		js.Write(r.raw)
		js.WriteByte('\n')
	}
	rj, err := recoveryJSON(recov)
	if err != nil {
		return err
	}
	js.Write(rj)
	if err := os.WriteFile(jsonPath, js.Bytes(), 0o644); err != nil {
		return err
	}
	var tb bytes.Buffer
	writeTable(&tb, rows, recov, device, accel)
	return os.WriteFile(tablePath, tb.Bytes(), 0o644)
}

// result is a row as the table needs it plus its JSON line as written.
type result struct {
	Row
	Error string
	raw   json.RawMessage
}

// collect reads fabricbench.jsonl and perftest/*.txt under dir.
func collect(dir, device, accel string, warn io.Writer) ([]result, error) {
	var out []result
	fb, err := readFabricbench(filepath.Join(dir, "fabricbench.jsonl"), device, accel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out = append(out, fb...)
	// The recovery benchmark's reference: fabricbench at its chunk and window.
	ref, err := readFabricbench(filepath.Join(dir, "recovery-fabricbench.jsonl"), device, accel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out = append(out, ref...)
	files, err := filepath.Glob(filepath.Join(dir, "perftest", "ib_*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".txt")
		if strings.HasSuffix(base, ".server") {
			continue
		}
		tool, _, ok := strings.Cut(base, "-")
		if !ok {
			continue
		}
		r, err := readPerftest(f, tool)
		if errors.Is(err, errNoResult) {
			fmt.Fprintf(warn, "report: %v; left out\n", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		r.Device, r.Accelerator = device, accel
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, result{Row: r, raw: raw})
	}
	return out, nil
}

func readPerftest(path, tool string) (Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return Row{}, err
	}
	defer f.Close()
	r, err := parsePerftest(tool, f)
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", path, err)
	}
	// The guest writes the client's wall-clock seconds beside its output.
	if w, err := os.ReadFile(strings.TrimSuffix(path, ".txt") + ".wall"); err == nil && tool == "ib_write_bw" {
		if s, err := strconv.ParseFloat(strings.TrimSpace(string(w)), 64); err == nil && s > 0 {
			r.WallMBPerS = round3(float64(r.Size) * float64(r.Calls) / s / 1e6)
		}
	}
	return r, nil
}

// readFabricbench reads fabricbench's -json output: one object per line with
// at least transport and size. Each line is kept whole, plus device and
// accelerator.
func readFabricbench(path, device, accel string) ([]result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []result
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil {
			return nil, fmt.Errorf("%s line %d is not a JSON object: %w", path, n, err)
		}
		var r result
		if err := json.Unmarshal(line, &r.Row); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(line, &e) // fields were already checked as an object
		r.Error = e.Error
		if r.Transport == "" || r.Size <= 0 {
			return nil, fmt.Errorf("%s line %d lacks transport or a positive size: %s", path, n, line)
		}
		fields["device"], _ = json.Marshal(device)
		fields["accelerator"], _ = json.Marshal(accel)
		if r.raw, err = json.Marshal(fields); err != nil {
			return nil, err
		}
		r.Device, r.Accelerator = device, accel
		out = append(out, r)
	}
	return out, sc.Err()
}
