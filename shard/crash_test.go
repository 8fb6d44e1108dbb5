package shard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
	"go.uber.org/goleak"
)

const crashChildEnv = "WEFT_SHARD_CRASH_CHILD_DIR"

func crashDoc(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"document number %d of the crash test"}`, n, n))
}

// crashChild runs in a child process: it writes bulks forever, printing
// "ACK n" once the bulk holding documents up to n has been acknowledged.
func crashChild() {
	dir := os.Getenv(crashChildEnv)
	meta := coordtest.NewMemCluster(crashTB{}, filepath.Join(dir, "test-meta.json"), "n1").Node("n1")
	st, err := shard.OpenStore(filepath.Join(dir, "shards"), coordtest.NodeConfig(), meta, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	m := coord.NewCoordinator(st, coordtest.CoordConfig(coordtest.NodeConfig()), slog.New(slog.DiscardHandler))
	m.Start()
	ctx := context.Background()
	if _, err := m.Index("c"); err != nil {
		if err := m.CreateIndex(ctx, "c", coord.IndexSettings{NumberOfShards: 3}, nil); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	for n := 0; ; {
		ops := make([]vocab.Op, 25)
		for k := range ops {
			ops[k] = vocab.Op{Type: vocab.OpIndex, Index: "c", ID: strconv.Itoa(n), Source: crashDoc(n)}
			n++
		}
		res, err := m.Bulk(ctx, ops, coord.WriteOptions{Refresh: coord.RefreshFalse})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		for _, r := range res {
			if r.Err != nil {
				fmt.Println("ERR", r.Err)
				os.Exit(1)
			}
		}
		fmt.Fprintf(out, "ACK %d\n", n-1)
		_ = out.Flush()
	}
}

// crashTB lets the child process use the test helpers that take a
// testing.TB: a failure prints ERR and exits.
type crashTB struct{ testing.TB }

func (crashTB) Helper() {}
func (crashTB) Errorf(format string, args ...any) {
	fmt.Printf("ERR "+format+"\n", args...)
	os.Exit(1)
}
func (crashTB) FailNow() { os.Exit(1) }

// TestKillAfterAcknowledgedBulkLosesNothing kills a writing process with
// SIGKILL (no Close, no flush) and finds every acknowledged document after
// reopening: the shard logs are replayed into the indexes.
func TestKillAfterAcknowledgedBulkLosesNothing(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	acked := -1
	for sc.Scan() {
		line := sc.Text()
		require.False(t, strings.HasPrefix(line, "ERR"), line)
		if n, ok := strings.CutPrefix(line, "ACK "); ok {
			acked, err = strconv.Atoi(n)
			require.NoError(t, err)
			if acked >= 300 {
				break
			}
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, 300)

	m := coordtest.OpenManager(t, dir)
	defer m.Close()
	ctx := context.Background()
	for n := 0; n <= acked; n++ {
		d, err := m.Get(ctx, "c", strconv.Itoa(n), "")
		require.NoError(t, err, "acknowledged document %d lost", n)
		require.JSONEq(t, string(crashDoc(n)), string(d.Source))
	}
	inf, err := m.Index("c")
	require.NoError(t, err)
	require.GreaterOrEqual(t, inf.DocsCount, uint64(acked+1))
	q := bleve.NewMatchQuery("crash")
	q.SetField("text")
	res, err := m.SearchBleve(ctx, []string{"c"}, bleve.NewSearchRequest(q))
	require.NoError(t, err)
	require.Equal(t, inf.DocsCount, res.Total, "replayed documents are searchable")
}

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
