package clusterbench

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunSmall runs every part once at its smallest against real
// searchnode processes on loopback (one lone node and one three-node tcp
// cluster): each setup and client count gets timed queries, the
// coordinator's fabric counters grow with the fan-out, bulk with a
// replica lands, and the replica of the recovery index is built by a
// file-based recovery of at least the loaded _source volume. It checks
// that figures are produced and hang together, never how fast anything is.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	work := t.TempDir()
	bin := filepath.Join(work, "searchnode")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/searchnode")
	build.Dir = "../.."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cfg := DefaultConfig()
	cfg.Corpus, cfg.MappingFile, cfg.QueriesFile = sampleCorpus, "../../testdata/sample/emails.mapping.json", sampleQueries
	cfg.Docs, cfg.Generated, cfg.Rounds, cfg.Duration = 80, 4, 3, 30*time.Second
	cfg.Clients, cfg.Window, cfg.Windows = []int{1, 2}, 50*time.Millisecond, 1
	cfg.BatchSize = 40
	cfg.Transports = []string{TransportTCP}
	cfg.RecoveryBytes, cfg.RecoveryDocBytes, cfg.RecoveryReps, cfg.RawDuration = 256<<10, 64<<10, 1, 20*time.Millisecond
	cfg.Searchnode, cfg.WorkDir = bin, filepath.Join(work, "run")
	res, err := Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)

	require.Equal(t, 80, res.Docs)
	require.Equal(t, Processors(clusterNodes), res.NodeProcessors)
	require.Equal(t, 26+4, res.Queries)
	setups := []string{"1 node, 1 shard", "1 node, 6 shards", "3 nodes tcp, 6 shards"}
	require.Len(t, res.Bulk, len(setups))
	for i, b := range res.Bulk {
		require.Equal(t, setups[i], b.Setup)
		require.Positive(t, b.DocsPerSec, b.Setup)
	}
	require.Len(t, res.Search, 2*len(setups))
	for _, s := range res.Search {
		require.Positive(t, s.Latency.N, "%s at %d clients", s.Setup, s.Clients)
		require.Positive(t, s.QPS, "%s at %d clients", s.Setup, s.Clients)
		if s.Clients == 1 {
			require.Equal(t, cfg.Rounds, s.Latency.N, s.Setup)
		}
	}
	require.Len(t, res.FanOut, 1)
	f := res.FanOut[0]
	require.Equal(t, cfg.Rounds, f.Queries)
	require.Positive(t, f.FabricBytes, "the fan-out crossed the fabric")
	require.Positive(t, f.SourceBytes)
	require.Less(t, f.RemoteSourceBytes, f.SourceBytes, "the coordinator holds shards too")
	require.Len(t, f.Heaviest, 5)
	require.GreaterOrEqual(t, f.Heaviest[0].FabricBytes, f.Heaviest[4].FabricBytes)

	require.Len(t, res.Replicas, 1)
	require.Positive(t, res.Replicas[0].R0DocsPerSec)
	require.Positive(t, res.Replicas[0].R1DocsPerSec)

	rec := res.Recovery
	require.NotNil(t, rec)
	require.Equal(t, 4, rec.Docs)
	require.False(t, rec.LoadCut)
	require.Len(t, rec.Runs, 1)
	require.Equal(t, "peer (files)", rec.Runs[0].Type)
	require.GreaterOrEqual(t, rec.Runs[0].Bytes, rec.SourceBytes, "the replica got the primary's files, _source and all")
	require.Len(t, rec.Raw, 2*len(rawSizes), "raw and tcp at each size")
	require.Len(t, rec.DiskMBPerS, 1)
	require.Positive(t, rec.DiskMBPerS[0])
	require.Len(t, res.Goals, 4, "p50, fan-out, replicas and recovery goals")
}
