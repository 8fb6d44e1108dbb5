package shard

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func rec(seq uint64) LogRecord {
	return LogRecord{Term: 1, Seq: seq, Version: int64(seq), ID: fmt.Sprintf("doc-%d", seq), Source: []byte(fmt.Sprintf(`{"n":%d}`, seq))}
}

func replayAll(t *testing.T, l *Log, after uint64) []LogRecord {
	t.Helper()
	var out []LogRecord
	require.NoError(t, l.Replay(after, func(r *LogRecord) error {
		out = append(out, *r)
		return nil
	}))
	return out
}

func TestLogAppendReplay(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, 1<<20)
	require.NoError(t, err)
	want := []LogRecord{rec(1), {Term: 2, Seq: 2, Version: 7, Delete: true, ID: "gone"}, rec(3)}
	require.NoError(t, l.Append(want[:2]))
	require.NoError(t, l.Append(want[2:]))
	require.NoError(t, l.Close())
	l, err = OpenLog(dir, 1<<20)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, want, replayAll(t, l, 0))
	require.Equal(t, want[2:], replayAll(t, l, 2))
	require.Equal(t, uint64(3), l.LastSeq())
}

// TestLogGroupCommit: 32 writers append at once; the first to fsync holds
// off until all have written, so a single fsync makes every record durable.
func TestLogGroupCommit(t *testing.T) {
	l, err := OpenLog(t.TempDir(), 1<<20)
	require.NoError(t, err)
	defer l.Close()
	const writers = 32
	var size uint64
	for k := range writers {
		r := rec(uint64(k + 1))
		size += uint64(len(r.appendTo(nil)))
	}
	var once sync.Once
	release := make(chan struct{})
	l.beforeSync = func() {
		once.Do(func() { <-release })
	}
	var wg sync.WaitGroup
	for k := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, l.Append([]LogRecord{rec(uint64(k + 1))}))
		}()
	}
	// Wait until every writer's bytes are in the file, then let the fsync go.
	for {
		l.mu.Lock()
		w := l.written
		l.mu.Unlock()
		if w == size {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	require.Equal(t, uint64(1), l.Fsyncs(), "one fsync for %d concurrent appends", writers)
	require.Len(t, replayAll(t, l, 0), writers)
}

func TestLogTornTail(t *testing.T) {
	tests := []struct {
		name string
		cut  func(t *testing.T, path string, lastStart int64)
	}{
		{"cut in header", func(t *testing.T, p string, last int64) { require.NoError(t, os.Truncate(p, last+3)) }},
		{"cut in payload", func(t *testing.T, p string, last int64) { require.NoError(t, os.Truncate(p, last+recHeader+5)) }},
		{"flipped byte", func(t *testing.T, p string, last int64) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			_, err = f.WriteAt([]byte{0xff}, last+recHeader+2)
			require.NoError(t, err)
		}},
		{"garbage appended", func(t *testing.T, p string, _ int64) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			defer f.Close()
			_, err = f.Write([]byte{9, 0, 0, 0, 1, 2})
			require.NoError(t, err)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := OpenLog(dir, 1<<20)
			require.NoError(t, err)
			for s := uint64(1); s <= 5; s++ {
				require.NoError(t, l.Append([]LogRecord{rec(s)}))
			}
			require.NoError(t, l.Close())
			path := filepath.Join(dir, fmt.Sprintf("%020d.wal", 1))
			var lastStart int64
			for s := uint64(1); s <= 4; s++ {
				r := rec(s)
				lastStart += int64(len(r.appendTo(nil)))
			}
			tc.cut(t, path, lastStart)

			l, err = OpenLog(dir, 1<<20)
			require.NoError(t, err, "a torn tail never fails the open")
			defer l.Close()
			got := replayAll(t, l, 0)
			require.GreaterOrEqual(t, len(got), 4)
			require.Equal(t, rec(4), got[3])
			// The log goes on after the truncation point.
			require.NoError(t, l.Append([]LogRecord{rec(6)}))
			got = replayAll(t, l, 0)
			require.Equal(t, rec(6), got[len(got)-1])
		})
	}
}

func TestLogCorruptEarlierSegmentFailsOpen(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, 4096)
	require.NoError(t, err)
	for s := uint64(1); s <= 200; s++ {
		require.NoError(t, l.Append([]LogRecord{rec(s)}))
	}
	require.Greater(t, l.Segments(), 1)
	require.NoError(t, l.Close())
	first := filepath.Join(dir, fmt.Sprintf("%020d.wal", 1))
	f, err := os.OpenFile(first, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff, 0xff}, 20)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = OpenLog(dir, 4096)
	require.ErrorContains(t, err, "is corrupt")
}

func TestLogTrim(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, 4096)
	require.NoError(t, err)
	defer l.Close()
	for s := uint64(1); s <= 300; s++ {
		require.NoError(t, l.Append([]LogRecord{rec(s)}))
	}
	before := l.Segments()
	require.Greater(t, before, 3)
	require.NoError(t, l.Trim(150))
	after := l.Segments()
	require.Less(t, after, before)
	got := replayAll(t, l, 150)
	require.Len(t, got, 150, "every record after the persisted seq survives trimming")
	require.Equal(t, uint64(151), got[0].Seq)
	// Segments wholly below the trim point are gone from disk too.
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	require.NoError(t, err)
	require.Len(t, files, after)
	require.NoError(t, l.Trim(300))
	require.Equal(t, 1, l.Segments(), "the segment being written is kept")
}

func FuzzScanSegment(f *testing.F) {
	var seed []byte
	for s := uint64(1); s <= 3; s++ {
		r := rec(s)
		seed = r.appendTo(seed)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "x.wal")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		valid, _ := scanSegment(p, func(*LogRecord) error { return nil })
		require.LessOrEqual(t, valid, int64(len(data)))
	})
}
