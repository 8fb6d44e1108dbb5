package shard

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// recoveryThrottle is a node's one limit on the recovery files it sends,
// like Elasticsearch's RecoverySettings rate limiter: every file stream the
// node serves takes its bytes from the same limiter, so concurrent
// recoveries share indices.recovery.max_bytes_per_sec between them rather
// than each getting the whole rate. The rate is read from the setting at
// every chunk, so a change applies to the streams already running from
// their next chunk on. Safe for concurrent use.
type recoveryThrottle struct {
	setting func() int64 // bytes per second now; 0 is no limit
	chunk   int          // the largest burst

	mu  sync.Mutex
	bps int64 // what lim is set to
	lim *rate.Limiter

	admitted atomic.Int64 // bytes let through, for tests and stats
}

func newRecoveryThrottle(setting func() int64, chunk int) *recoveryThrottle {
	return &recoveryThrottle{setting: setting, chunk: chunk, lim: rate.NewLimiter(rate.Inf, chunk)}
}

// limiter returns the node's limiter set to the current setting, or nil
// when the setting is 0. The burst is a chunk, or a second's worth of
// bytes when that is less, so the limit holds over short spans too.
func (t *recoveryThrottle) limiter() *rate.Limiter {
	bps := t.setting()
	t.mu.Lock()
	defer t.mu.Unlock()
	if bps != t.bps {
		t.bps = bps
		if bps > 0 {
			t.lim.SetLimit(rate.Limit(bps))
			t.lim.SetBurst(int(min(int64(t.chunk), bps)))
		} else {
			t.lim.SetLimit(rate.Inf)
		}
	}
	if bps <= 0 {
		return nil
	}
	return t.lim
}

// reader returns r with its reads taken from the node's limit; a read
// waits (until ctx ends) for the bytes it returns.
func (t *recoveryThrottle) reader(ctx context.Context, r io.Reader) io.Reader {
	return &throttledReader{t: t, r: r, ctx: ctx}
}

type throttledReader struct {
	t   *recoveryThrottle
	r   io.Reader
	ctx context.Context
}

func (tr *throttledReader) Read(p []byte) (int, error) {
	lim := tr.t.limiter()
	if lim != nil && len(p) > lim.Burst() {
		p = p[:lim.Burst()]
	}
	n, err := tr.r.Read(p)
	// The burst may have shrunk since p was cut (the setting changed):
	// wait in pieces that fit it.
	for left := n; left > 0 && lim != nil; {
		k := min(left, lim.Burst())
		if werr := lim.WaitN(tr.ctx, k); werr != nil {
			tr.t.admitted.Add(int64(n - left))
			return n - left, werr
		}
		left -= k
	}
	tr.t.admitted.Add(int64(n))
	return n, err
}
