package shard

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// TestRecoveryThrottleIsSharedByTheNodesStreams: two streams read
// concurrently through one node's throttle together stay within the rate:
// the bytes let through never exceed one burst plus the rate times the
// time taken (a slower machine only loosens the bound). A limiter per
// stream lets through about twice that.
func TestRecoveryThrottleIsSharedByTheNodesStreams(t *testing.T) {
	const bps, chunk, each = 256 << 10, 64 << 10, 256 << 10
	th := newRecoveryThrottle(func() int64 { return bps }, chunk)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = io.CopyBuffer(io.Discard, th.reader(ctx, bytes.NewReader(make([]byte, each))), make([]byte, chunk))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, int64(2*each), th.admitted.Load())
	allowed := chunk + int64(elapsed.Seconds()*bps)
	require.LessOrEqual(t, th.admitted.Load(), allowed, "let through %d bytes in %v at %d bytes/s", th.admitted.Load(), elapsed, bps)
}

// TestRecoveryThrottleFollowsTheSetting: a stream already running reads
// at the setting in force at each chunk: limited, unlimited (0), and
// limited again with a burst that fits the new rate.
func TestRecoveryThrottleFollowsTheSetting(t *testing.T) {
	var setting atomic.Int64
	setting.Store(40 << 20)
	th := newRecoveryThrottle(setting.Load, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := th.reader(ctx, bytes.NewReader(make([]byte, 8<<20)))
	buf := make([]byte, 2<<20)

	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 1<<20, n, "a read is at most one burst")
	require.Equal(t, rate.Limit(40<<20), th.lim.Limit())

	setting.Store(0)
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 2<<20, n, "no limit: the whole buffer")
	require.Equal(t, rate.Inf, th.lim.Limit())

	setting.Store(100 << 10)
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 100<<10, n, "the burst is a second's worth below one chunk")
	require.Equal(t, rate.Limit(100<<10), th.lim.Limit())
	require.Equal(t, int64(1<<20+2<<20+100<<10), th.admitted.Load())
}
