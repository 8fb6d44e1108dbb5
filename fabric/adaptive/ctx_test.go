package adaptive

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The generic behaviour of a handler's context is callctx's (its tests);
// here, what adaptive adds: watching the carrier path.
func TestCallCtx(t *testing.T) {
	t.Run("the carrier is watched only once the handler looks", func(t *testing.T) {
		srv := newServer(DefaultConfig().withDefaults(), &bufPool{}, nil)
		defer func() { srv.close(); srv.wait() }()
		sess := &session{entries: map[uint64]*entry{}}
		carrier, endCarrier := context.WithCancel(context.Background())
		e := &entry{}
		e.carry(carrier, srv, sess, e)
		e.waiters = 1
		c := &e.callCtx
		require.Nil(t, c.stop, "no watch before the handler looks")
		require.NoError(t, e.Err())
		require.NotNil(t, c.stop, "Err starts the watch")
		endCarrier()
		require.Eventually(t, func() bool {
			sess.mu.Lock()
			defer sess.mu.Unlock()
			return e.waiters == 0 && e.timer != nil
		}, 10*time.Second, time.Millisecond, "the carrier ending must start ResendGrace")
		e.retire()
		sess.mu.Lock()
		e.timer.Stop()
		sess.mu.Unlock()
	})
}
