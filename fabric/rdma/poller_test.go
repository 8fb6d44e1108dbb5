//go:build linux && cgo && rdma

package rdma

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// The poller's busy spin after the last completion is bounded by wall-clock
// time (Config.SpinTime), not by a count of empty polls: every spin that
// ended in a sleep lasted at least SpinTime, however many polls that took on
// this device, and an idle poller does go to sleep. SpinTime here is far
// longer than any fixed count of polls would last (2000 empty polls, the old
// bound, took a few milliseconds under QEMU TCG and well under one on a
// NIC), so a count-bounded poller gives up early and fails the test.
func TestPollerSpinIsBoundedByTime(t *testing.T) {
	env := rdmaEnv(t)
	const spin = 150 * time.Millisecond
	client, server, c, ctx := echoPair(t, env, func(c *Config) { c.SpinTime = spin }, nil)
	for round := range 3 { // traffic, then idle until both pollers sleep
		r, err := c.Call(ctx, fabric.MethodUserBase, []byte("ping"))
		require.NoError(t, err)
		require.Equal(t, "ping", string(r))
		sleeps := client.pollSleeps.Load()
		require.Eventually(t, func() bool { return client.pollSleeps.Load() > sleeps }, 30*time.Second, 10*time.Millisecond,
			"round %d: the idle client poller never went to sleep", round)
	}
	for name, tr := range map[string]*Transport{"client": client, "server": server} {
		require.Positive(t, tr.pollSleeps.Load(), "%s poller never slept", name)
		shortest := time.Duration(tr.shortestSpin.Load())
		require.GreaterOrEqual(t, shortest, spin, "%s poller gave up spinning before SpinTime", name)
		last, polls := tr.lastSpin.Load(), tr.lastSpinPolls.Load()
		t.Logf("%s poller: %d sleeps, shortest spin %v; the latest %v in %d empty polls (%.0f ns a poll)", name,
			tr.pollSleeps.Load(), shortest, time.Duration(last), polls, float64(last)/float64(max(polls, 1)))
	}
}
