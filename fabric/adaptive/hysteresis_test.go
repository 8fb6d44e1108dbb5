package adaptive

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// idleConn stands for a healthy path; the selector never calls it here.
type idleConn struct{}

func (idleConn) Call(context.Context, fabric.Method, []byte) ([]byte, error) { return nil, nil }
func (idleConn) Send(context.Context, fabric.Method, []byte) error           { return nil }
func (idleConn) Stats() fabric.ConnStats                                     { return fabric.ConnStats{} }
func (idleConn) RemoteAddr() string                                          { return "idle" }
func (idleConn) Close() error                                                { return nil }

func selector(t *testing.T) *Conn {
	cfg := DefaultConfig().withDefaults()
	cfg.ExploreInterval = time.Nanosecond
	require.NoError(t, cfg.Validate())
	c := &Conn{cfg: cfg, epoch: time.Now()}
	for i := range 2 {
		c.paths = append(c.paths, &path{idx: i, conn: idleConn{}, baseRTT: 1e5, probeBW: 1})
	}
	for b := range nBuckets {
		c.choice[b], c.confirm[b] = 0, -1
	}
	return c
}

// drive sends n calls of bucket 0 through the selector, each taking the
// time rtt(path) says, as roundTrip would, and returns the switch count.
func drive(c *Conn, n int, rtt func(p int) time.Duration) uint64 {
	for range n {
		p, _ := c.choose(0, true)
		c.observe(p, 0, rtt(p.idx), c.clock())
		time.Sleep(time.Microsecond) // explores need time to pass
	}
	return c.paths[0].stats[0].switches + c.paths[1].stats[0].switches
}

// TestHysteresisHoldsOnNoisyEqualPaths feeds the selector two paths with
// the same mean and ±15% noise: it must never switch. Then one path gets
// twice as slow: it must switch exactly once and stay.
func TestHysteresisHoldsOnNoisyEqualPaths(t *testing.T) {
	c := selector(t)
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(mean time.Duration) time.Duration {
		return time.Duration(float64(mean) * (0.85 + 0.3*rng.Float64()))
	}
	equal := func(int) time.Duration { return noisy(time.Millisecond) }
	require.Zero(t, drive(c, 2000, equal), "noise within the margin must not switch paths")

	cur := c.choice[0]
	slowCur := func(p int) time.Duration {
		if p == cur {
			return noisy(2 * time.Millisecond)
		}
		return noisy(time.Millisecond)
	}
	require.Equal(t, uint64(1), drive(c, 2000, slowCur))
	require.Equal(t, 1-cur, c.choice[0], "the faster path is chosen")
}

// TestHysteresisNeedsConfirmation: when every path slows down at once (a
// load spike), only the current path is being measured; the selector
// samples the other before switching and, finding it slow too, stays.
func TestHysteresisNeedsConfirmation(t *testing.T) {
	c := selector(t)
	c.cfg.ExploreInterval = time.Hour // no routine explores: only confirmations
	fast := func(int) time.Duration { return time.Millisecond }
	require.Zero(t, drive(c, 50, fast))
	spike := func(int) time.Duration { return 3 * time.Millisecond }
	require.Zero(t, drive(c, 200, spike), "a spike on both paths must not switch")
	require.Equal(t, 0, c.choice[0])
}

// StripeAuto learns per load: striping that wins for a call made alone
// must not be used for calls made while other large calls are in flight
// when, there, whole calls are faster (two loopback paths on two cores).
func TestStripeAutoLearnsPerLoad(t *testing.T) {
	c := selector(t)
	b := bucketOf(16 << 20)
	// rtt is what each way takes at each load.
	rtt := func(load int, striped bool) time.Duration {
		switch {
		case load == loadAlone && striped:
			return 10 * time.Millisecond
		case load == loadAlone:
			return 20 * time.Millisecond
		case striped:
			return 500 * time.Millisecond
		default:
			return 250 * time.Millisecond
		}
	}
	run := func(load, n int) (striped int) {
		for range n {
			s := c.preferStripe(b, load)
			if s {
				striped++
			}
			c.observeStripe(b, load, s, rtt(load, s))
		}
		return striped
	}
	run(loadAlone, 2*stripeWarmup)
	run(loadBusy, 2*stripeWarmup)
	c.cfg.ExploreInterval = time.Hour // no trials of the losing way from here on
	require.Equal(t, 20, run(loadAlone, 20), "alone, striping is faster")
	require.Zero(t, run(loadBusy, 20), "busy, whole calls are faster")
	require.True(t, c.stripe[b][loadAlone].on)
	require.False(t, c.stripe[b][loadBusy].on)
}

// TestBucketStatMedian: the estimate is the median of the latest window
// samples, whatever came before them.
func TestBucketStatMedian(t *testing.T) {
	var st bucketStat
	rng := rand.New(rand.NewPCG(3, 4))
	var all []float64
	for i := range 3 * window {
		d := time.Duration(1 + rng.IntN(1000))
		st.add(d, int64(i))
		all = append(all, float64(d))
		recent := slices.Clone(all[max(0, len(all)-window):])
		slices.Sort(recent)
		k := len(recent)
		require.Equal(t, (recent[(k-1)/2]+recent[k/2])/2, st.rtt, "after %d samples", i+1)
	}
	for range window/2 - 1 {
		st.add(time.Hour, 0) // a stall shorter than half the window
	}
	require.Less(t, st.rtt, float64(time.Millisecond), "a burst of stalls under half the window does not move the median")
}

// TestExploreBacksOffFromAClearlySlowerPath: explores of a path that keeps
// being worse by more than the margin come ever less often (up to
// maxExploreBackoff × ExploreInterval); once one finds it close again,
// they return to ExploreInterval.
func TestExploreBacksOffFromAClearlySlowerPath(t *testing.T) {
	c := selector(t)
	c.cfg.ExploreInterval = time.Microsecond
	slow1 := func(p int) time.Duration {
		if p == 1 {
			return 4 * time.Millisecond
		}
		return time.Millisecond
	}
	drive(c, 2000, slow1)
	require.Equal(t, 0, c.choice[0])
	require.Equal(t, int64(maxExploreBackoff*time.Microsecond), c.exploreGap[0], "explores of the slow path back off to the bound")

	same := func(int) time.Duration { return time.Millisecond }
	require.Eventually(t, func() bool {
		drive(c, 50, same)
		return c.exploreGap[0] == int64(time.Microsecond)
	}, 10*time.Second, time.Microsecond, "an explore that finds the path close again resets the backoff")
}

// TestZeroConfigExplores: a zero ExploreInterval takes the default, as
// every zero field does (the node and fabricbench pass Config{Logger: …});
// a negative one turns explores off.
func TestZeroConfigExplores(t *testing.T) {
	require.Equal(t, DefaultConfig().ExploreInterval, Config{}.withDefaults().ExploreInterval)
	off := Config{ExploreInterval: -1}.withDefaults()
	require.NoError(t, off.Validate())
	require.Negative(t, off.ExploreInterval)
}

// TestLearnsOnePathAtATime: a bucket's first calls go to each path in
// turn, learnSamples+1 in a row, so no path is measured only cold.
func TestLearnsOnePathAtATime(t *testing.T) {
	c := selector(t)
	var got []int
	for range 2 * (learnSamples + 1) {
		p, _ := c.choose(0, true)
		got = append(got, p.idx)
		c.observe(p, 0, time.Millisecond, c.clock())
	}
	want := append(slices.Repeat([]int{0}, learnSamples+1), slices.Repeat([]int{1}, learnSamples+1)...)
	require.Equal(t, want, got)
	require.Equal(t, uint64(learnSamples), c.paths[0].stats[0].n, "the first round trip of each path is not counted")
	require.Equal(t, uint64(learnSamples), c.paths[1].stats[0].n)
}
