package adaptive

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCallCtx(t *testing.T) {
	t.Run("cancel ends Done, Err and derived contexts", func(t *testing.T) {
		var c callCtx
		require.NoError(t, c.Err())
		done := c.Done()
		child, cancelChild := context.WithTimeout(&c, time.Hour)
		defer cancelChild()
		c.cancel()
		c.cancel() // idempotent
		<-done
		require.ErrorIs(t, c.Err(), context.Canceled)
		select {
		case <-child.Done():
		case <-time.After(10 * time.Second):
			require.FailNow(t, "a context derived from the handler's was not cancelled with it")
		}
		require.ErrorIs(t, child.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(&c), context.Canceled)
	})
	t.Run("Done after cancel is closed", func(t *testing.T) {
		var c callCtx
		c.cancel()
		<-c.Done()
		_, ok := c.Deadline()
		require.False(t, ok)
		require.Nil(t, c.Value("k"))
	})
	t.Run("deriving contexts starts no goroutine", func(t *testing.T) {
		var c callCtx
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		for range 100 {
			_, cancel := context.WithCancel(&c)
			cancels = append(cancels, cancel)
		}
		require.Less(t, runtime.NumGoroutine()-before, 10, "one goroutine per derived context")
		for _, cancel := range cancels {
			cancel() // stops their registrations
		}
		c.mu.Lock()
		require.Empty(t, c.funcs, "cancelled children must unregister")
		c.mu.Unlock()
	})
	t.Run("the carrier is watched only once the handler looks", func(t *testing.T) {
		srv := newServer(DefaultConfig().withDefaults(), &bufPool{}, nil)
		defer func() { srv.close(); srv.wait() }()
		sess := &session{entries: map[uint64]*entry{}}
		carrier, endCarrier := context.WithCancel(context.Background())
		e := &entry{}
		e.carrier, e.srv, e.sess, e.entry = carrier, srv, sess, e
		e.waiters = 1
		c := &e.callCtx
		c.mu.Lock()
		require.Nil(t, c.stop, "no watch before the handler looks")
		c.mu.Unlock()
		require.NoError(t, e.Err())
		c.mu.Lock()
		require.NotNil(t, c.stop, "Err starts the watch")
		c.mu.Unlock()
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
