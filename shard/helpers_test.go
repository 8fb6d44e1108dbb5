package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/index"
)

// testLogger sends the manager's logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testConfig() Config {
	c := DefaultConfig()
	c.LogSegmentBytes = 64 << 10
	return c
}

func openManager(t *testing.T, dir string) *Manager {
	t.Helper()
	m, err := Open(dir, testConfig(), testLogger(t))
	require.NoError(t, err)
	return m
}

// sampleDocs loads testdata/sample/emails.ndjson: id and source per line.
func sampleDocs(t testing.TB) (ids []string, sources []json.RawMessage) {
	t.Helper()
	f, err := os.Open("../testdata/sample/emails.ndjson")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d struct {
			ID string `json:"id"`
		}
		line := append([]byte(nil), sc.Bytes()...)
		require.NoError(t, json.Unmarshal(line, &d))
		ids = append(ids, d.ID)
		sources = append(sources, line)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, ids)
	return ids, sources
}

func sampleMapping(t testing.TB) *index.Mapping {
	t.Helper()
	raw, err := os.ReadFile("../testdata/sample/emails.mapping.json")
	require.NoError(t, err)
	mp, err := index.ParseMapping(raw)
	require.NoError(t, err)
	return mp
}

func bulkIndex(t *testing.T, m *Manager, name string, ids []string, sources []json.RawMessage) {
	t.Helper()
	ops := make([]Op, len(ids))
	for k := range ids {
		ops[k] = Op{Type: OpIndex, Index: name, ID: ids[k], Source: sources[k]}
	}
	res, err := m.Bulk(context.Background(), ops, RefreshFalse)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, r.ID)
	}
}
