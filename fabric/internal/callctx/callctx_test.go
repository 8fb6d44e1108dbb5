package callctx

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCtx(t *testing.T) {
	t.Run("End ends Done, Err and derived contexts", func(t *testing.T) {
		var c Ctx
		require.NoError(t, c.Err())
		done := c.Done()
		child, cancelChild := context.WithTimeout(&c, time.Hour)
		defer cancelChild()
		c.End(nil)
		c.End(nil) // idempotent
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
	t.Run("Done after End is closed", func(t *testing.T) {
		var c Ctx
		c.End(nil)
		<-c.Done()
		_, ok := c.Deadline()
		require.False(t, ok)
		require.Nil(t, c.Value("k"))
	})
	t.Run("deriving contexts starts no goroutine", func(t *testing.T) {
		var c Ctx
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
	t.Run("the watcher hears every look until the end, under the lock", func(t *testing.T) {
		var c Ctx
		w := &countingWatcher{c: &c}
		c.SetWatcher(w)
		require.Zero(t, w.looks, "no look before the handler looks")
		_ = c.Err()
		_ = c.Done()
		stop := c.AfterFunc(func() {})
		require.Equal(t, 3, w.looks)
		ran := false
		c.End(func() { ran = true })
		require.True(t, ran, "End's function runs")
		_ = c.Err()
		require.Equal(t, 3, w.looks, "no look reported once ended")
		require.False(t, stop(), "the function started when the context ended")
	})
}

type countingWatcher struct {
	c     *Ctx
	looks int
}

func (w *countingWatcher) Looked() {
	if w.c.mu.TryLock() {
		panic("Looked called without the context's lock")
	}
	w.looks++
}
