package enginebench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
)

// TestMain lets Run and the worker tests start this test binary as the raw
// worker, as the enginebench command starts itself.
func TestMain(m *testing.M) {
	if code, ok := RawWorkerMain(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// loadedRawIndex indexes the first n sample documents into a raw bleve
// index in a fresh directory, as Run does, and returns it open.
func loadedRawIndex(t *testing.T, n int) (*rawIndex, string, []Doc) {
	t.Helper()
	docs, err := LoadDocs(sampleCorpus, n)
	require.NoError(t, err)
	raw, err := os.ReadFile(sampleMapping)
	require.NoError(t, err)
	m, err := index.ParseMapping(raw)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "raw")
	ri, err := openRaw(dir, m.BleveMapping(), true)
	require.NoError(t, err)
	_, err = ri.load(context.Background(), docs, 100)
	require.NoError(t, err)
	require.NoError(t, ri.persist(context.Background(), m.BleveMapping(), docs))
	return ri, dir, docs
}

// requireExited checks that the worker's process is gone (waited for, so
// no longer signalable).
func requireExited(t *testing.T, w *rawWorker) {
	t.Helper()
	require.NotNil(t, w.cmd.ProcessState, "the worker was not waited for")
	require.ErrorIs(t, syscall.Kill(w.cmd.Process.Pid, 0), syscall.ESRCH, "the worker process %d is still there", w.cmd.Process.Pid)
}

// TestRawWorkerAnswersLikeInProcess loads raw bleve in this process, takes
// its answers to every kind of query, closes it and checks that the worker
// opening the same directory gives exactly the same answers (ids, scores,
// totals), then exits when its input closes.
func TestRawWorkerAnswersLikeInProcess(t *testing.T) {
	ri, dir, docs := loadedRawIndex(t, 150)
	qs, err := MakeQueries(docs, 20, 3)
	require.NoError(t, err)
	ctx := context.Background()
	want := map[QueryKind][]answer{}
	for kind, list := range qs {
		for _, q := range list {
			a, err := ri.search(ctx, q, 10)
			require.NoError(t, err)
			want[kind] = append(want[kind], a)
		}
	}
	require.NoError(t, ri.Close())

	exe, err := os.Executable()
	require.NoError(t, err)
	w, err := startRawWorker(ctx, exe, dir)
	require.NoError(t, err)
	require.Equal(t, uint64(len(docs)), w.docs)
	for kind, list := range qs {
		for i, q := range list {
			d, got, err := w.search(q, 10)
			require.NoError(t, err)
			require.Positive(t, d, "the worker reports the search's duration")
			require.Equal(t, want[kind][i], got, "%s query %q", kind, q.Terms)
		}
	}
	before, err := w.numGC()
	require.NoError(t, err)
	for range 50 {
		_, _, err := w.search(qs[KindPhrase][0], 10)
		require.NoError(t, err)
	}
	after, err := w.numGC()
	require.NoError(t, err)
	require.GreaterOrEqual(t, after, before)

	require.NoError(t, w.Close())
	requireExited(t, w)
	require.NoError(t, w.Close(), "Close again gives the same result")
}

func TestRawWorkerFailuresSurfaceItsStandardError(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("missing index", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope")
		w, err := startRawWorker(ctx, exe, missing)
		require.Nil(t, w)
		require.ErrorContains(t, err, "read hello")
		require.ErrorContains(t, err, "exit status 1")
		require.ErrorContains(t, err, "enginebench raw worker: raw index: stat "+missing)
	})
	t.Run("bad query", func(t *testing.T) {
		ri, dir, docs := loadedRawIndex(t, 60)
		require.NoError(t, ri.Close())
		qs, err := MakeQueries(docs, 1, 1)
		require.NoError(t, err)
		w, err := startRawWorker(ctx, exe, dir)
		require.NoError(t, err)
		for _, tt := range []struct {
			q    Query
			size int
			want string
		}{
			{Query{Kind: KindBoolean}, 10, "boolean query has 0 terms, want 3"},
			{Query{Kind: "fuzzy", Terms: []string{"a"}}, 10, `query kind "fuzzy"`},
			{Query{Kind: KindTerm, Terms: []string{"a"}}, 0, "asks for 0 hits"},
		} {
			_, _, err = w.search(tt.q, tt.size)
			require.ErrorContains(t, err, tt.want)
		}
		// A search that fails is answered; the worker goes on.
		require.Equal(t, uint64(len(docs)), w.docs)
		_, a, err := w.search(qs[KindTerm][0], 10)
		require.NoError(t, err)
		require.NotZero(t, a.Total)
		require.NoError(t, w.Close())
		requireExited(t, w)
	})
	t.Run("undecodable request", func(t *testing.T) {
		ri, dir, _ := loadedRawIndex(t, 20)
		require.NoError(t, ri.Close())
		w, err := startRawWorker(ctx, exe, dir)
		require.NoError(t, err)
		_, err = w.in.Write([]byte("{nope\n"))
		require.NoError(t, err)
		err = w.Close()
		require.ErrorContains(t, err, "exit status 1")
		require.ErrorContains(t, err, "enginebench raw worker: decode request")
		requireExited(t, w)
	})
	t.Run("cancelled context kills it", func(t *testing.T) {
		ri, dir, _ := loadedRawIndex(t, 20)
		require.NoError(t, ri.Close())
		cctx, cancel := context.WithCancel(ctx)
		w, err := startRawWorker(cctx, exe, dir)
		require.NoError(t, err)
		cancel()
		<-w.done
		_, _, err = w.search(Query{Kind: KindTerm, Terms: []string{"the"}}, 10)
		require.ErrorContains(t, err, "killed")
		requireExited(t, w)
	})
}

func TestRunRefusesToRunInsideAWorker(t *testing.T) {
	t.Setenv(RawWorkerEnv, t.TempDir())
	cfg := DefaultConfig()
	cfg.Corpus, cfg.MappingFile = sampleCorpus, sampleMapping
	_, err := Run(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "RawWorkerMain")
}
