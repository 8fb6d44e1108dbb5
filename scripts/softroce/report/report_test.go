package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The testdata files are client outputs of perftest 4.5 (Debian 12) taken in
// the Soft-RoCE guest under TCG.
func TestParsePerftest(t *testing.T) {
	tests := []struct {
		name string
		tool string
		file string
		want Row
	}{
		{
			name: "send_lat gives twice the one-way typical as the round trip",
			tool: "ib_send_lat", file: "ib_send_lat-64.txt",
			want: Row{
				Transport: "perftest-send-lat", Size: 64, InFlight: 1, Calls: 1000,
				RTTP50ns: 42100, RTTP99ns: 19755440, OneWayTypicalNs: 21050,
				RTTSource: "2 x perftest t_typical (one-way); p99 = 2 x 99% percentile",
			},
		},
		{
			name: "write_lat at 64 KiB",
			tool: "ib_write_lat", file: "ib_write_lat-65536.txt",
			want: Row{
				Transport: "perftest-write-lat", Size: 65536, InFlight: 1, Calls: 300,
				RTTP50ns: 4027360, RTTP99ns: 15062080, OneWayTypicalNs: 2013680,
				RTTSource: "2 x perftest t_typical (one-way); p99 = 2 x 99% percentile",
			},
		},
		{
			name: "write_bw converts MiB/s to MB/s and takes the TX depth as in flight",
			tool: "ib_write_bw", file: "ib_write_bw-1048576.txt",
			want: Row{
				Transport: "perftest-write-bw", Size: 1048576, InFlight: 128, Calls: 200,
				MBPerS: 32.139, PerftestMiBPerS: 30.65,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			defer f.Close()
			got, err := parsePerftest(tc.tool, f)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParsePerftestRejects(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		input   string
		wantErr string
	}{
		{
			name: "a failed run has no result line", tool: "ib_send_lat",
			input:   " Couldn't connect to 10.77.0.1:18515\nUnable to open file descriptor for socket connection",
			wantErr: "no valid result line",
		},
		{
			name: "inf from perftest's cycle conversion is no valid result", tool: "ib_send_lat",
			input:   " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n 1048576 50          inf            inf          inf      \t       inf         \t-nan   \t\tinf     \t\tinf\n",
			wantErr: `column 5 is "inf": no valid result line`,
		},
		{
			name: "an unknown tool", tool: "ib_read_lat", input: "",
			wantErr: `perftest tool "ib_read_lat" is not one of`,
		},
		{
			name: "a result that is not a number", tool: "ib_write_bw",
			input:   " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536 100 1.0 x 0.1\n",
			wantErr: `column 4 is "x", not a number`,
		},
		{
			name: "a latency line with too few columns", tool: "ib_write_lat",
			input:   " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n 64 1000 1.0 2.0 1.5\n",
			wantErr: "5 columns, want at least 8",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePerftest(tc.tool, strings.NewReader(tc.input))
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestRunWritesLabelledRowsAndTable(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "perftest"), 0o755))
	for _, f := range []string{"ib_send_lat-64.txt", "ib_write_bw-1048576.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "perftest", f), b, 0o644))
	}
	// A failed perftest run is left out with a warning, not an error.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "perftest", "ib_write_lat-64.txt"), []byte("Couldn't connect\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "perftest", "ib_write_bw-1048576.wall"), []byte("10.0\n"), 0o644))
	fb := `{"transport":"tcp","size":64,"inflight":1,"calls":10,"rtt_p50_ns":30000,"rtt_p99_ns":90000,"mb_per_s":2.1,"cpu_s_per_gb":9}
{"transport":"rdma","size":64,"inflight":1,"calls":10,"rtt_p50_ns":50000,"rtt_p99_ns":90000,"mb_per_s":1.3,"cpu_s_per_gb":9}
{"transport":"adaptive","size":64,"inflight":1,"calls":10,"rtt_p50_ns":33000,"rtt_p99_ns":90000,"mb_per_s":1.9,"cpu_s_per_gb":9}
{"transport":"rdma","size":1048576,"inflight":16,"calls":10,"rtt_p50_ns":1,"rtt_p99_ns":1,"mb_per_s":29.0,"cpu_s_per_gb":9}
{"transport":"adaptive","size":1048576,"inflight":16,"calls":0,"error":"boom"}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fabricbench.jsonl"), []byte(fb), 0o644))

	jsonPath, tablePath := filepath.Join(dir, "results.json"), filepath.Join(dir, "results.txt")
	var warn bytes.Buffer
	require.NoError(t, run(dir, "rxe0", "tcg", jsonPath, tablePath, &warn))
	require.Contains(t, warn.String(), "perftest/ib_write_lat-64.txt: ib_write_lat: no valid result line; left out")

	js, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(js)), "\n")
	require.Len(t, lines, 7)
	transports := map[string]int{}
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		require.Equal(t, "rxe0", m["device"], l)
		require.Equal(t, "tcg", m["accelerator"], l)
		transports[m["transport"].(string)]++
		if m["transport"] == "tcp" {
			require.InDelta(t, 9.0, m["cpu_s_per_gb"], 1e-9, "fabricbench fields are kept")
		}
		if m["transport"] == "perftest-write-bw" {
			require.InDelta(t, 1048576*200/10.0/1e6, m["wall_mb_per_s"], 1e-3)
		}
	}
	require.Equal(t, map[string]int{"tcp": 1, "rdma": 2, "adaptive": 2, "perftest-send-lat": 1, "perftest-write-bw": 1}, transports)

	table, err := os.ReadFile(tablePath)
	require.NoError(t, err)
	t.Log("\n" + string(table))
	require.Contains(t, string(table), "device rxe0, accelerator tcg")
	// rdma 50 µs against 2 x 21.05 µs; rdma 29 MB/s against 32.139 MB/s;
	// adaptive 33 µs against the better path (tcp) 30 µs.
	require.Regexp(t, `64B\s+30\.0\s+50\.0\s+33\.0\s+42\.1\s+-`, string(table))
	require.Regexp(t, `64B\s+1\.19\s+-\s+1\.10\s+`, string(table))
	require.Regexp(t, `1MiB\s+-\s+0\.90\s+-\s+-`, string(table))
	require.Regexp(t, `1MiB(\s+-)+\s+29\.0\s+-\s+err\s+32\.1`, string(table))
}

func TestRunFailsWithoutResults(t *testing.T) {
	dir := t.TempDir()
	err := run(dir, "rxe0", "tcg", filepath.Join(dir, "r.json"), filepath.Join(dir, "r.txt"), &bytes.Buffer{})
	require.ErrorContains(t, err, "no benchmark results")
}

func TestRunRejectsMalformedFabricbenchLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fabricbench.jsonl"), []byte("{\"transport\":\"tcp\",\"size\":64}\nnot json\n"), 0o644))
	err := run(dir, "rxe0", "tcg", filepath.Join(dir, "r.json"), filepath.Join(dir, "r.txt"), &bytes.Buffer{})
	require.ErrorContains(t, err, "line 2 is not a JSON object")
}

// TestRunAddsRecoveryRows: BenchmarkPeerRecovery's output (go test's
// benchmark format, testdata/recovery.txt) becomes a results.json row per
// sub-benchmark and a table row beside fabricbench's best bandwidth of the
// same transport at 1 MiB.
func TestRunAddsRecoveryRows(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "recovery.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "recovery.txt"), b, 0o644))
	fb := `{"transport":"rdma","size":1048576,"inflight":1,"calls":10,"mb_per_s":9.0}
{"transport":"rdma","size":1048576,"inflight":16,"calls":10,"mb_per_s":10.0}
{"transport":"tcp","size":1048576,"inflight":1,"calls":10,"mb_per_s":45.0}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fabricbench.jsonl"), []byte(fb), 0o644))
	ref := `{"transport":"tcp","size":1048576,"inflight":4,"calls":10,"mb_per_s":40.0}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "recovery-fabricbench.jsonl"), []byte(ref), 0o644))
	jsonPath, tablePath := filepath.Join(dir, "results.json"), filepath.Join(dir, "results.txt")
	require.NoError(t, run(dir, "rxe0", "tcg", jsonPath, tablePath, &bytes.Buffer{}))

	js, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var recov []RecoveryRow
	for _, l := range strings.Split(strings.TrimSpace(string(js)), "\n") {
		var r RecoveryRow
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		if r.Transport == "recovery" {
			recov = append(recov, r)
		}
	}
	const load = "256 documents, 64 MiB of text, in 20.5 s (3.3 MB/s)"
	require.Equal(t, []RecoveryRow{
		{Transport: "recovery", Path: "rdma", Run: "BenchmarkPeerRecovery/rdma-2", Size: 1 << 20, InFlight: 4, Bytes: 67203070,
			MBPerS: 8, WallMBPerS: 7.1, RDMAShare: 0.999, Load: load, Device: "rxe0", Accelerator: "tcg"},
		{Transport: "recovery", Path: "tcp", Run: "BenchmarkPeerRecovery/tcp-2", Size: 1 << 20, InFlight: 4, Bytes: 67200811,
			MBPerS: 20, WallMBPerS: 18.3, Load: load, Device: "rxe0", Accelerator: "tcg"},
		{Transport: "recovery", Path: "adaptive", Run: "BenchmarkPeerRecovery/adaptive-2", Size: 1 << 20, InFlight: 4, Bytes: 67200811,
			MBPerS: 19.5, WallMBPerS: 17.6, RDMAShare: 0.012, Load: load, Device: "rxe0", Accelerator: "tcg"},
	}, recov)

	table, err := os.ReadFile(tablePath)
	require.NoError(t, err)
	t.Log("\n" + string(table))
	// rdma: 8 MB/s against the better of rdma@1 and rdma@16 (10); tcp: 20
	// against tcp@4 (the recovery's window, from recovery-fabricbench.jsonl:
	// 40) rather than the faster tcp@1; adaptive: no fabricbench row.
	require.Regexp(t, `rdma-2\s+64\.1MiB\s+8\.0\s+7\.1\s+100%\s+10\.0@16\s+0\.80`, string(table))
	require.Regexp(t, `tcp-2\s+64\.1MiB\s+20\.0\s+18\.3\s+0%\s+40\.0@4\s+0\.50`, string(table))
	require.Regexp(t, `adaptive-2\s+64\.1MiB\s+19\.5\s+17\.6\s+1%\s+-\s+-`, string(table))
	require.Contains(t, string(table), "(the shard: "+load+")")
}

func TestParseRecoveryNeedsEveryMetric(t *testing.T) {
	_, err := parseRecovery(strings.NewReader("BenchmarkPeerRecovery/rdma-2 1 100 ns/op 8.0 MB/s 5 bytes\n"), "recovery.txt")
	require.ErrorContains(t, err, "BenchmarkPeerRecovery/rdma-2 reports no wall-MB/s")
}
