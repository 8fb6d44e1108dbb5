package shardlog

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/internal/vfs"
)

// Crash tests: the log runs on a MemFS that stops at a chosen operation (the
// machine dies there), then the MemFS loses what a power cut loses, and the
// reopened log must hold every acknowledged record, in order, and nothing
// after a gap.

var errPowerCut = errors.New("power cut")

const crashSegSize = 256 // a few records a segment, so that segments rotate

// crashHistory is what a workload did before the machine stopped.
type crashHistory struct {
	acked     uint64 // highest seq whose Append returned nil (acks are in seq order)
	attempted uint64 // highest seq handed to Append
	floor     uint64 // Trim's persisted seq: records up to it may be gone
}

// stopAt stops the machine at operation k (counted from now): it and every
// later one fail, a write at k after writing part of its bytes.
func stopAt(m *vfs.MemFS, k int) {
	base := m.Ops()
	m.SetFaults(func(op vfs.Op) vfs.Fault {
		if op.Index < base+k {
			return vfs.Fault{}
		}
		return vfs.Fault{Err: errPowerCut, Written: 17, Halt: true}
	})
}

// crashWorkload appends seqs after the log's last in batches of varied
// size, trims once, closes and reopens the log once, and stops at the first
// error; then its process dies. With reopen false it only appends.
func crashWorkload(fsys vfs.FS, dir string, h *crashHistory, reopen bool, logger *slog.Logger) {
	l, err := Open(fsys, dir, crashSegSize, logger)
	if err != nil {
		return
	}
	defer func() { kill(l) }() // the process dies at the end
	seq := l.LastSeq()
	for k, n := range []uint64{1, 2, 1, 3, 1, 1, 4, 1, 2, 1, 1, 3, 1} {
		if reopen && k == 7 {
			if l.Close() != nil {
				return
			}
			if l, err = Open(fsys, dir, crashSegSize, logger); err != nil {
				l = nil
				return
			}
		}
		if reopen && k == 9 && h.acked > 3 {
			h.floor = h.acked - 3 // a failing Trim may have removed some
			if l.Trim(h.floor) != nil {
				return
			}
		}
		h.attempted = max(h.attempted, seq+n)
		if l.Append(recs(seq+1, seq+n)) != nil {
			return
		}
		seq += n
		h.acked = seq
	}
}

// checkRecovered reopens the log and checks it against h: the records are
// rec(seq) in increasing order, contiguous above the trim floor from
// floor+1, up to at least every acknowledged seq and at most the last one
// attempted. It returns the last seq found.
func checkRecovered(t *testing.T, fsys vfs.FS, dir string, h crashHistory, what string) uint64 {
	t.Helper()
	l, err := Open(fsys, dir, crashSegSize, slog.New(slog.DiscardHandler))
	require.NoError(t, err, what)
	defer l.Close()
	var last uint64
	for _, r := range replayAll(t, l, 0) {
		require.Equal(t, rec(r.Seq), r, what)
		require.Greater(t, r.Seq, last, "%s: out of order", what)
		if r.Seq > h.floor+1 {
			require.Equal(t, last+1, r.Seq, "%s: a gap before seq %d", what, r.Seq)
		}
		last = r.Seq
	}
	require.GreaterOrEqual(t, last, h.acked, "%s: acknowledged records lost", what)
	require.LessOrEqual(t, last, h.attempted, what)
	return last
}

// countOps runs the workload without faults and returns how many
// operations it does.
func countOps(t *testing.T, reopen bool) int {
	m, dir := memLogDir(t)
	base := m.Ops()
	var h crashHistory
	crashWorkload(m, dir, &h, reopen, slog.New(slog.DiscardHandler))
	require.EqualValues(t, 22, h.acked, "the workload runs to its end without faults")
	return m.Ops() - base
}

// stoppedAt runs the workload (with its reopen and trim) on a new MemFS
// until the machine stops at operation k, and clears the fault.
func stoppedAt(t *testing.T, k int) (*vfs.MemFS, string, crashHistory) {
	m, dir := memLogDir(t)
	stopAt(m, k)
	var h crashHistory
	crashWorkload(m, dir, &h, true, slog.New(slog.DiscardHandler))
	m.SetFaults(nil)
	return m, dir, h
}

// TestLogCrashAtEveryStep stops the machine at every operation of the
// workload and cuts the power; nothing unsynced survives.
func TestLogCrashAtEveryStep(t *testing.T) {
	n := countOps(t, true)
	for k := 0; k <= n; k++ {
		m, dir, h := stoppedAt(t, k)
		m.Crash()
		checkRecovered(t, m, dir, h, fmt.Sprintf("power cut at operation %d of %d", k, n))
	}
}

// TestLogKillThenCrashAtEveryStep kills the process at every operation
// (the page cache survives), restarts it to append more, and then cuts the
// power: what the new process acknowledged on top of the dead one's files
// must survive, so the open must make those files and their directory
// entries durable first.
func TestLogKillThenCrashAtEveryStep(t *testing.T) {
	n := countOps(t, true)
	for k := 0; k <= n; k++ {
		m, dir, h := stoppedAt(t, k)
		acked := h.acked
		crashWorkload(m, dir, &h, false, slog.New(slog.DiscardHandler))
		require.Greater(t, h.acked, acked, "the restarted process appends")
		h.attempted = h.acked
		m.Crash()
		checkRecovered(t, m, dir, h, fmt.Sprintf("kill at operation %d of %d, restart, power cut", k, n))
	}
}

// TestLogTornCrashAtEveryStep cuts the power at every operation with the
// disk holding a random part of what was not synced, pages out of order
// included — or kills the process there and cuts the power at one of the
// first operations of the restarted one: the open never reports
// corruption, and loses nothing acknowledged.
func TestLogTornCrashAtEveryStep(t *testing.T) {
	n := countOps(t, true)
	for k := 0; k <= n; k++ {
		for seed := range uint64(6) {
			m, dir, h := stoppedAt(t, k)
			rng := rand.New(rand.NewPCG(uint64(k), seed))
			what := fmt.Sprintf("torn power cut at operation %d of %d, seed %d", k, n, seed)
			if seed%2 == 1 {
				j := rng.IntN(24)
				stopAt(m, j)
				crashWorkload(m, dir, &h, false, slog.New(slog.DiscardHandler))
				m.SetFaults(nil)
				what = fmt.Sprintf("kill at operation %d of %d, restart, torn power cut at its operation %d, seed %d", k, n, j, seed)
			}
			m.CrashTorn(rng, 16)
			last := checkRecovered(t, m, dir, h, what)

			// The recovered log takes appends, and a kill and a second torn
			// power cut lose none of them either.
			h.acked, h.attempted = last, last
			crashWorkload(m, dir, &h, false, slog.New(slog.DiscardHandler))
			m.CrashTorn(rand.New(rand.NewPCG(uint64(k), seed+100)), 16)
			checkRecovered(t, m, dir, h, what+", then appends and another")
		}
	}
}

// TestLogConcurrentCrash: writers share fsyncs (group commit) until the
// machine stops at a random operation, or until a random fsync fails with
// a writeback error (which loses its pages); after the power cut the log
// holds every acknowledged record and is a prefix of what was in the file.
func TestLogConcurrentCrash(t *testing.T) {
	const writers = 6
	for round := range 60 {
		m, dir := memLogDir(t)
		l := openLog(t, m, dir, 512)
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		if round%2 == 0 {
			stopAt(m, 10+rng.IntN(150))
		} else {
			failing, syncs := 1+rng.IntN(12), 0
			m.SetFaults(func(op vfs.Op) vfs.Fault {
				if op.Kind == vfs.OpSync {
					if syncs++; syncs == failing {
						return vfs.Fault{Err: errors.New("input/output error")}
					}
				}
				return vfs.Fault{}
			})
		}
		var next atomic.Uint64
		var mu sync.Mutex
		acked := map[uint64]bool{}
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					s := next.Add(1)
					if l.Append([]Record{rec(s)}) != nil {
						return
					}
					mu.Lock()
					acked[s] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		m.SetFaults(nil)
		var written []uint64 // the records in the files, in file order
		names, err := m.List(dir)
		require.NoError(t, err)
		for _, name := range names {
			_, err := scanSegment(m, dir+"/"+name, func(r *Record) error {
				written = append(written, r.Seq)
				return nil
			})
			require.NoError(t, err)
		}
		m.Crash()

		l = openLog(t, m, dir, 512)
		var got []uint64
		for _, r := range replayAll(t, l, 0) {
			require.Equal(t, rec(r.Seq), r)
			got = append(got, r.Seq)
		}
		require.NoError(t, l.Close())
		require.LessOrEqual(t, len(got), len(written))
		require.Equal(t, written[:len(got)], got, "round %d: the log after the crash is a prefix of the file before it", round)
		for s := range acked {
			require.Contains(t, got, s, "round %d: acknowledged seq %d lost", round, s)
		}
	}
}

// TestLogFailsForGood: after a failed or short write or a failed fsync, that
// Append and every later one fail with ErrFailed, the log touches the
// disk no more, says so with its directory, and every record acknowledged
// before is there after a reopen — with or without a power cut.
func TestLogFailsForGood(t *testing.T) {
	eio := errors.New("input/output error")
	tests := []struct {
		name  string
		fault func(op vfs.Op) vfs.Fault
		// The failed Append's record is whole in the page cache, so a
		// reopen without a power cut may find it (it was never
		// acknowledged, so either is right).
		inCache bool
	}{
		{"failed write", func(op vfs.Op) vfs.Fault {
			if op.Kind == vfs.OpWrite {
				return vfs.Fault{Err: eio}
			}
			return vfs.Fault{}
		}, false},
		{"short write", func(op vfs.Op) vfs.Fault {
			if op.Kind == vfs.OpWrite {
				return vfs.Fault{Err: eio, Written: 20}
			}
			return vfs.Fault{}
		}, false},
		{"failed fsync", func(op vfs.Op) vfs.Fault {
			if op.Kind == vfs.OpSync {
				return vfs.Fault{Err: eio}
			}
			return vfs.Fault{}
		}, true},
		{"failed directory fsync of a new segment", func(op vfs.Op) vfs.Fault {
			if op.Kind == vfs.OpSyncDir {
				return vfs.Fault{Err: eio}
			}
			return vfs.Fault{}
		}, false},
	}
	for _, tc := range tests {
		for _, powerCut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/power cut %v", tc.name, powerCut), func(t *testing.T) {
				m, dir := memLogDir(t)
				logger, logs := bufferLogger()
				l, err := Open(m, dir, 200, logger)
				require.NoError(t, err)
				for s := uint64(1); s <= 3; s++ {
					require.NoError(t, l.Append([]Record{rec(s)}))
				}
				once := true
				m.SetFaults(func(op vfs.Op) vfs.Fault {
					if f := tc.fault(op); f.Err != nil && once {
						once = false
						return f
					}
					return vfs.Fault{}
				})
				var s uint64 = 4
				for ; ; s++ {
					if err = l.Append([]Record{rec(s)}); err != nil {
						break
					}
					require.Less(t, s, uint64(100), "the fault never came")
				}
				require.ErrorIs(t, err, ErrFailed)
				require.ErrorIs(t, err, eio)
				ops := m.Ops()
				for range 3 {
					s++
					require.ErrorIs(t, l.Append([]Record{rec(s)}), ErrFailed, "nothing after a failure is acknowledged")
				}
				require.Equal(t, ops, m.Ops(), "a failed log neither writes nor retries an fsync")
				require.Contains(t, logs.String(), "shard log failed")
				require.Contains(t, logs.String(), "dir="+dir)
				require.NoError(t, l.Close())

				m.SetFaults(nil)
				if powerCut {
					m.Crash()
				}
				h := crashHistory{acked: s - 4, attempted: s - 3}
				last := checkRecovered(t, m, dir, h, tc.name)
				if powerCut || !tc.inCache {
					require.Equal(t, h.acked, last, "the failed append is not in the log")
				}
			})
		}
	}
}

// TestLogErrorsNameTheFault: the failure's error says what failed where.
func TestLogErrorsNameTheFault(t *testing.T) {
	m, dir := memLogDir(t)
	l := openLog(t, m, dir, 1<<20)
	m.SetFaults(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite {
			return vfs.Fault{Err: errors.New("no space left on device"), Written: 5}
		}
		return vfs.Fault{}
	})
	err := l.Append([]Record{rec(1)})
	require.ErrorIs(t, err, ErrFailed)
	msg := err.Error()
	for _, want := range []string{dir, segPath(dir, 1), "at byte 0", "(5 written)", "no space left on device"} {
		require.True(t, strings.Contains(msg, want), "%q lacks %q", msg, want)
	}
	require.NoError(t, l.Close())
}

// TestLogNoAckAfterFailedGroupFsync: two writers' records wait for one
// fsync, which fails; the second writer must not fsync again and be
// acknowledged — Linux may report that retry a success after dropping the
// pages — and after a power cut neither record is there.
func TestLogNoAckAfterFailedGroupFsync(t *testing.T) {
	m, dir := memLogDir(t)
	l := openLog(t, m, dir, 1<<20)
	require.NoError(t, l.Append([]Record{rec(1)}))
	written := l.written
	release := make(chan struct{})
	var once sync.Once
	l.beforeSync = func() { once.Do(func() { <-release }) }
	failed := false
	m.SetFaults(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpSync && !failed {
			failed = true
			return vfs.Fault{Err: errors.New("input/output error")}
		}
		return vfs.Fault{}
	})
	waitWritten := func(past uint64) uint64 {
		for {
			l.mu.Lock()
			w := l.written
			l.mu.Unlock()
			if w > past {
				return w
			}
			runtime.Gosched()
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- l.Append([]Record{rec(2)}) }()
	written = waitWritten(written)
	// The first writer holds its fsync until the second has written.
	go func() { errs <- l.Append([]Record{rec(3)}) }()
	waitWritten(written)
	close(release)
	for range 2 {
		require.ErrorIs(t, <-errs, ErrFailed)
	}
	kill(l)
	m.Crash()
	require.Equal(t, uint64(1), checkRecovered(t, m, dir, crashHistory{acked: 1, attempted: 3}, "failed group fsync"))
}

// TestLogOpenMakesWhatItReadsDurable: a killed process left a record in
// the page cache; the restarted one reads it and writes a sync mark after
// it, and the power goes before that write is fsynced. Over many torn
// power cuts the open never finds the mark vouching for bytes the disk
// lacks: the open fsynced them first.
func TestLogOpenMakesWhatItReadsDurable(t *testing.T) {
	for seed := range uint64(64) {
		m, dir := memLogDir(t)
		l := openLog(t, m, dir, 1<<20)
		require.NoError(t, l.Append([]Record{rec(1)}))
		stopAt(m, 1) // the write of record 2 runs, the machine stops in its fsync
		require.Error(t, l.Append([]Record{rec(2)}))
		kill(l)
		m.SetFaults(nil)

		l = openLog(t, m, dir, 1<<20)
		require.Equal(t, uint64(2), l.LastSeq(), "the restarted process reads record 2 from the page cache")
		stopAt(m, 1) // mark and record 3 are written, the fsync never happens
		require.Error(t, l.Append([]Record{rec(3)}))
		kill(l)
		m.SetFaults(nil)
		m.CrashTorn(rand.New(rand.NewPCG(seed, 3)), 16)
		checkRecovered(t, m, dir, crashHistory{acked: 1, attempted: 3}, fmt.Sprintf("seed %d", seed))
	}
}

// TestLogCreatedDirectoriesSurviveAPowerCut: a log opened where neither
// its directory nor the one above exists creates both; a record it
// acknowledged survives a power cut, so each new directory's entry was
// made durable too.
func TestLogCreatedDirectoriesSurviveAPowerCut(t *testing.T) {
	m, _ := memLogDir(t) // /data exists, durably
	dir := "/data/copy/shard/log"
	l := openLog(t, m, dir, 1<<20)
	require.NoError(t, l.Append([]Record{rec(1)}))
	kill(l)
	m.Crash()
	checkRecovered(t, m, dir, crashHistory{acked: 1, attempted: 1}, "power cut after the first record")
}
