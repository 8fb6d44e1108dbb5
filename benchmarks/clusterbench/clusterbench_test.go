package clusterbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/benchmarks/enginebench"
	"github.com/weftsearch/weft/benchmarks/fabricbench"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/fabric"
)

const (
	sampleCorpus  = "../../testdata/sample/emails.ndjson"
	sampleQueries = "../../testdata/sample/queries.json"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no size", func(c *Config) { c.Size = 0 }, "Size 0"},
		{"no shards", func(c *Config) { c.Shards = 0 }, "Shards 0"},
		{"zero clients", func(c *Config) { c.Clients = []int{1, 0} }, "client count 0"},
		{"no one-client rounds", func(c *Config) { c.Clients = []int{8} }, "must include 1"},
		{"unknown transport", func(c *Config) { c.Transports = []string{"udp"} }, `transport "udp"`},
		{"transport twice", func(c *Config) { c.Transports = []string{"tcp", "tcp"} }, "listed twice"},
		{"unknown part", func(c *Config) { c.Parts = []string{"search", "gc"} }, `part "gc"`},
		{"negative throttle", func(c *Config) { c.RecoveryThrottle = -1 }, "RecoveryThrottle -1"},
		{"no recovery docs", func(c *Config) { c.RecoveryDocBytes = 0 }, "RecoveryDocBytes 0"},
		{"nodes keep the runtime's processors", func(c *Config) { c.NodeProcessors = 0 }, ""},
		{"processors below share", func(c *Config) { c.NodeProcessors = -2 }, "NodeProcessors -2"},
		{"more processors than CPUs", func(c *Config) { c.NodeProcessors = runtime.NumCPU() + 1 }, "NodeProcessors"},
		{"recovery alone needs no one-client rounds", func(c *Config) { c.Parts, c.Clients = []string{PartRecovery}, []int{8} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestNodeArgsGiveProcessorsToClusterNodesOnly: the nodes of a
// three-node cluster get --processors (their share of the CPUs, or none
// when asked for the runtime's default); the lone node never does.
func TestNodeArgsGiveProcessorsToClusterNodesOnly(t *testing.T) {
	procsOf := func(cl *cluster) []string {
		var out []string
		for _, m := range cl.nodes {
			a := cl.args(m)
			i := slices.Index(a, "--processors")
			if i < 0 {
				out = append(out, "")
				continue
			}
			out = append(out, a[i+1])
		}
		return out
	}
	three, err := newCluster("searchnode", t.TempDir(), 3, TransportTCP, 0, Processors(3))
	require.NoError(t, err)
	share := strconv.Itoa(max(1, runtime.NumCPU()/3))
	require.Equal(t, []string{share, share, share}, procsOf(three))
	unset, err := newCluster("searchnode", t.TempDir(), 3, TransportTCP, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"", "", ""}, procsOf(unset))
	lone, err := newCluster("searchnode", t.TempDir(), 1, "", 0, Processors(3))
	require.NoError(t, err)
	require.Equal(t, []string{""}, procsOf(lone), "the lone node has every CPU")
}

func TestLoadQueries(t *testing.T) {
	docs, err := enginebench.LoadDocs(sampleCorpus, 0)
	require.NoError(t, err)
	qs, err := LoadQueries(sampleQueries, docs, 6, 1)
	require.NoError(t, err)
	require.Len(t, qs, 26+6)
	require.Equal(t, "bool min should", qs[0].Name, "the file's queries come first, sorted by name")
	for i, q := range qs[26:] {
		var m struct {
			Match struct {
				Body string `json:"body"`
			} `json:"match"`
		}
		require.NoError(t, json.Unmarshal(q.Query, &m), q.Name)
		require.Equal(t, "generated match "+m.Match.Body, q.Name)
		require.Len(t, strings.Fields(m.Match.Body), 1+i%2, "one word, then two, alternating")
	}
	again, err := LoadQueries(sampleQueries, docs, 6, 1)
	require.NoError(t, err)
	require.Equal(t, qs, again, "the same corpus and seed give the same queries")

	var body struct {
		Query  json.RawMessage `json:"query"`
		Size   int             `json:"size"`
		Source bool            `json:"_source"`
	}
	require.NoError(t, json.Unmarshal(searchBody(qs[0], 10), &body))
	require.JSONEq(t, string(qs[0].Query), string(body.Query))
	require.Equal(t, 10, body.Size)
	require.True(t, body.Source)

	dir := t.TempDir()
	for name, content := range map[string]string{"array": `[{"match_all":{}}]`, "two keys": `{"q":{"match_all":{},"term":{"a":"b"}}}`} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		_, err := LoadQueries(p, docs, 0, 1)
		require.Error(t, err, name)
	}
}

func TestReadPage(t *testing.T) {
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("doc-%d", i))
	}
	shardNode := map[int]string{0: "n1", 1: "n2", 2: "n3"}
	var hits []string
	var total, remote int64
	for _, id := range ids {
		src := `{"id":"` + id + `","body":"` + strings.Repeat("x", len(hits)*7) + `"}`
		hits = append(hits, `{"_index":"i","_id":"`+id+`","_score":1,"_source":`+src+`}`)
		total += int64(len(src))
		if shardNode[coord.ShardFor(id, "", 3)] != "n1" {
			remote += int64(len(src))
		}
	}
	reply := []byte(`{"took":1,"timed_out":false,"_shards":{"total":3,"successful":3,"failed":0},"hits":{"hits":[` + strings.Join(hits, ",") + `]}}`)
	p, err := readPage(reply, 3, shardNode, "n1")
	require.NoError(t, err)
	require.Equal(t, page{hits: len(ids), sourceBytes: total, remoteSource: remote}, p)
	require.Positive(t, remote)
	require.Less(t, remote, total, "some of the ids land on the coordinator's shard")

	lone, err := readPage(reply, 3, nil, "n1")
	require.NoError(t, err)
	require.Zero(t, lone.remoteSource, "a lone node has no remote hits")

	for name, bad := range map[string]string{
		"failed shard": `{"timed_out":false,"_shards":{"failed":1},"hits":{"hits":[]}}`,
		"timed out":    `{"timed_out":true,"_shards":{"failed":0},"hits":{"hits":[]}}`,
		"not json":     `<html>`,
	} {
		_, err := readPage([]byte(bad), 3, shardNode, "n1")
		require.Error(t, err, name)
	}
}

func TestGrown(t *testing.T) {
	st := func(s, r uint64) fabric.ConnStats { return fabric.ConnStats{BytesSent: s, BytesReceived: r} }
	before := counters{"a": st(100, 1000), "b": st(50, 50)}
	after := counters{"a": st(150, 1200), "b": st(10, 20), "c": st(5, 7)}
	// a grew by 50+200; b was replaced (counts went down): 10+20; c is new: 5+7.
	require.EqualValues(t, 250+30+12, grown(before, after, sentAndReceived))
	require.EqualValues(t, 50+10+5, grown(before, after, sent))
	require.Zero(t, grown(after, after, sentAndReceived))
}

func TestStreamWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int, b uint64) sample {
		return sample{at: t0.Add(time.Duration(ms) * time.Millisecond), bytes: b}
	}
	samples := []sample{at(0, 0), at(100, 10), at(200, 20), at(300, 5<<20), at(400, 15<<20), at(500, 20<<20), at(600, 20<<20+30), at(700, 20<<20+40)}
	b, d := streamWindow(samples, 1<<20)
	require.EqualValues(t, 20<<20-20, b, "from the reading before the first big step to the last big step")
	require.Equal(t, 300*time.Millisecond, d)

	b, d = streamWindow(samples[:3], 1<<20)
	require.Zero(t, b)
	require.Zero(t, d)
}

func TestMedian(t *testing.T) {
	require.Zero(t, median(nil))
	require.Equal(t, 3.0, median([]float64{5, 1, 3}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
}

func TestSyntheticBulk(t *testing.T) {
	const docBytes = 1000
	whole := syntheticBulk(7, 0, 4, docBytes)
	split := append(syntheticBulk(7, 0, 1, docBytes), syntheticBulk(7, 1, 3, docBytes)...)
	require.Equal(t, whole, split, "document i is the same whichever request carries it")
	require.NotEqual(t, whole, syntheticBulk(8, 0, 4, docBytes), "another seed, other documents")

	sc := bufio.NewScanner(bytes.NewReader(whole))
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.Len(t, lines, 8)
	for i := 0; i < len(lines); i += 2 {
		var action struct {
			Index struct {
				ID string `json:"_id"`
			} `json:"index"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &action))
		var doc struct {
			ID   string `json:"id"`
			Blob string `json:"blob"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[i+1]), &doc))
		require.Equal(t, action.Index.ID, doc.ID)
		require.Len(t, doc.Blob, docBytes)
	}
}

func TestNewRecovery(t *testing.T) {
	done := recoveryRow{Shard: "0", Time: "1.5s", Type: "peer (files)", Stage: "done", BytesTotal: "123"}
	old := recoveryRow{Shard: "0", Time: "2s", Type: "peer (files)", Stage: "done", BytesTotal: "99"}
	row, err := newRecovery([]recoveryRow{old}, []recoveryRow{done, old})
	require.NoError(t, err)
	require.Equal(t, done, row)

	_, err = newRecovery([]recoveryRow{old}, []recoveryRow{old})
	require.ErrorContains(t, err, "no new one")
	ops := done
	ops.Type = "peer (operations)"
	_, err = newRecovery(nil, []recoveryRow{ops})
	require.ErrorContains(t, err, "want a file-based one")
}

// sampleResult is a run's figures as Run fills them in.
func sampleResult() *Result {
	lat := func(p50 float64) enginebench.Latency {
		return enginebench.Latency{N: 100, P50: p50, P99: 3 * p50, Mean: p50}
	}
	r := &Result{Docs: 400, CorpusBytes: 500_000, Queries: 30, FileQueries: 26, Size: 10, Shards: 6, Machine: enginebench.Machine{GoVersion: "go1.26", NumCPU: 2, GOMAXPROCS: 2},
		Bulk: []BulkFigure{{Setup: "1 node, 1 shard", Docs: 400, DocsPerSec: 1200}, {Setup: "1 node, 6 shards", Docs: 400, DocsPerSec: 1000},
			{Setup: "3 nodes tcp, 6 shards", Docs: 400, DocsPerSec: 900}},
		Search: []SearchFigure{
			{Setup: "1 node, 1 shard", Clients: 1, Latency: lat(500), QPS: 1500},
			{Setup: "1 node, 6 shards", Clients: 1, Latency: lat(1000), QPS: 800},
			{Setup: "3 nodes tcp, 6 shards", Clients: 1, Latency: lat(1400), QPS: 600},
			{Setup: "3 nodes adaptive, 6 shards", Clients: 1, Latency: lat(1600), QPS: 550},
			{Setup: "1 node, 6 shards", Clients: 8, Latency: lat(5000), QPS: 1500},
			{Setup: "3 nodes tcp, 6 shards", Clients: 8, Latency: lat(9000), QPS: 900},
		},
		FanOut: []FanOutFigure{
			{Setup: "3 nodes tcp, 6 shards", Queries: 10, FabricBytes: 150_000, SourceBytes: 100_000, RemoteSourceBytes: 60_000,
				Heaviest: []QueryBytes{{Query: "prefix", FabricBytes: 40_000, SourceBytes: 8000}}},
			{Setup: "3 nodes adaptive, 6 shards", Queries: 10, FabricBytes: 250_000, SourceBytes: 100_000, RemoteSourceBytes: 60_000},
		},
		Replicas: []ReplicaFigure{{Transport: "tcp", Docs: 400, R0DocsPerSec: 1000, R1DocsPerSec: 700}},
		Recovery: &RecoveryResult{Docs: 4, DocBytes: 256 << 10, SourceBytes: 1 << 20, Runs: []RecoveryRun{
			{Transport: "tcp", Rep: 1, Type: "peer (files)", Bytes: 100e6, Seconds: 1, StreamBytes: 90e6, StreamSeconds: 0.5},
			{Transport: "tcp", Rep: 2, Type: "peer (files)", Bytes: 100e6, Seconds: 2},
			{Transport: "adaptive", Rep: 1, Type: "peer (files)", Bytes: 100e6, Seconds: 0.5},
		}, Raw: []fabricbench.Result{
			{Transport: "raw", Size: 1 << 20, InFlight: 1, MBPerS: 100},
			{Transport: "raw", Size: 1 << 20, InFlight: 1, MBPerS: 140},
			{Transport: "raw", Size: 16 << 20, InFlight: 1, MBPerS: 500},
			{Transport: "tcp", Size: 1 << 20, InFlight: 1, MBPerS: 90},
		}, DiskMBPerS: []float64{400, 200}},
	}
	r.Goals = Goals(r)
	return r
}

func TestGoals(t *testing.T) {
	got := map[string]Goal{}
	for _, g := range sampleResult().Goals {
		got[g.Name] = g
	}
	want := []struct {
		name  string
		value float64
		met   bool
	}{
		{"query p50 at 1 client, 3 nodes tcp, 6 shards ÷ 1 node, 6 shards", 1.4, true},
		{"query p50 at 1 client, 3 nodes adaptive, 6 shards ÷ 1 node, 6 shards", 1.6, false},
		{"fabric bytes per query ÷ final page _source bytes, 3 nodes tcp, 6 shards", 1.5, true},
		{"fabric bytes per query ÷ final page _source bytes, 3 nodes adaptive, 6 shards", 2.5, false},
		{"bulk docs/s, 1 replica ÷ 0 replicas, 3 nodes tcp", 0.7, true},
		// tcp: median of 100 and 50 MB/s = 75, over the raw median 120.
		{"recovery MB/s over tcp ÷ raw TCP MB/s (1 MiB, 1 in flight)", 75.0 / 120, false},
		{"recovery MB/s over adaptive ÷ raw TCP MB/s (1 MiB, 1 in flight)", 200.0 / 120, true},
	}
	require.Len(t, got, len(want))
	for _, w := range want {
		g, ok := got[w.name]
		require.True(t, ok, "missing goal %q", w.name)
		require.InDelta(t, w.value, g.Value, 1e-9, w.name)
		require.Equal(t, w.met, g.Met, w.name)
	}
}

func TestWriteTableJSONAndPlot(t *testing.T) {
	r := sampleResult()
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, r))
	text := out.String()
	for _, want := range []string{
		"400 docs (0.5 MB), 30 queries (26 from the file, 4 generated)",
		"3 nodes tcp, 6 shards        1  100    1400    4200   600                    1.40",
		"3 nodes tcp, 6 shards       10     15000      10000              6000              1.50             2.50",
		"3 nodes tcp               1000                700   0.70",
		"tcp    1  peer (files)  100000000     1.00  100.0    0.00        180.0        0.83    0.33",
		"disk: write + fsync   1 MB      400 200     300",
		"raw   1MiB      100 140     120",
		"prefix 40000 B (_source 8000 B)",
		"≤ 1.50 MISSED",
	} {
		require.Contains(t, text, want)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	require.NoError(t, enginebench.WriteJSONFile(path, r))
	back, err := ReadJSONFile(path)
	require.NoError(t, err)
	require.Equal(t, r, back)

	png := filepath.Join(dir, "r.png")
	require.NoError(t, Plot(png, r))
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "a PNG file")
}
