package tcp

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

const (
	mRecord = fabric.MethodUserBase + 10 // waits a little, then marks that it ran
	mCheck  = fabric.MethodUserBase + 11 // fails unless mRecord has run
)

// bulkPair serves echo, mRecord and mCheck, and dials with bulk calls from
// 1 KiB over up to lanes extra sockets.
func bulkPair(t *testing.T, lanes int) (*Listener, *Conn, *atomic.Bool) {
	var recorded atomic.Bool
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	m.HandleFunc(mBlock, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	m.HandleFunc(mRecord, func(context.Context, *fabric.Request) ([]byte, error) {
		time.Sleep(5 * time.Millisecond)
		recorded.Store(true)
		return nil, nil
	})
	m.HandleFunc(mCheck, func(context.Context, *fabric.Request) ([]byte, error) {
		if !recorded.Load() {
			return nil, fabric.Errorf(fabric.CodeUserBase, "served before the Send made ahead of it")
		}
		return nil, nil
	})
	cfg := testConfig(t)
	cfg.BulkSockets, cfg.BulkThreshold = lanes, 1<<10
	l, c := listenDial(t, testConfig(t), cfg, &m)
	return l, c, &recorded
}

// openLanes makes bulk calls until n bulk sockets are open.
func openLanes(t *testing.T, c *Conn, n int) {
	payload := make([]byte, 4<<10)
	require.Eventually(t, func() bool {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _, _ = c.Call(context.Background(), mEcho, payload) })
		}
		wg.Wait()
		return len(c.bulk.all()) >= n
	}, 20*time.Second, time.Millisecond, "bulk sockets never opened")
}

func TestBulkCallsSpreadOverSockets(t *testing.T) {
	l, c, _ := bulkPair(t, 3)
	ctx := context.Background()
	small, err := c.Call(ctx, mEcho, []byte("small"))
	require.NoError(t, err)
	require.Equal(t, "small", string(small))
	require.Empty(t, c.bulk.all(), "a small call opens no bulk socket")

	openLanes(t, c, 2)
	before := make(map[*Conn]uint64)
	for _, ln := range c.bulk.all() {
		before[ln] = ln.sent.Load()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			p := bytes.Repeat([]byte{byte(w)}, 64<<10)
			for range 10 {
				reply, err := c.Call(ctx, mEcho, p)
				if err == nil && !bytes.Equal(p, reply) {
					err = errors.New("damaged reply")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	carried := 0
	for ln, sent := range before {
		if ln.sent.Load() > sent {
			carried++
		}
	}
	require.GreaterOrEqual(t, carried, 2, "bulk calls must use several sockets")
	lanes := len(c.bulk.all())
	require.LessOrEqual(t, lanes, 3, "Config.BulkSockets bounds the extra sockets")
	l.mu.Lock()
	sessions := len(l.sessions)
	l.mu.Unlock()
	require.Equal(t, 1+lanes, sessions, "the server sees one connection per socket")
	st := c.Stats()
	require.GreaterOrEqual(t, st.BytesSent, uint64(8*10*64<<10), "Stats counts the bulk sockets' bytes")
}

// A Call made after a Send is served after the Send's handler returned,
// even when the Call is bulk and bulk sockets are open.
func TestBulkCallAfterSendKeepsOrder(t *testing.T) {
	_, c, recorded := bulkPair(t, 2)
	openLanes(t, c, 1)
	ctx := context.Background()
	big := make([]byte, 64<<10)
	for i := range 5 {
		recorded.Store(false)
		require.NoError(t, c.Send(ctx, mRecord, nil))
		_, err := c.Call(ctx, mCheck, big)
		require.NoError(t, err, "round %d", i)
	}
}

func TestBulkSocketFailureFailsConnection(t *testing.T) {
	_, c, _ := bulkPair(t, 2)
	openLanes(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	blocked := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, []byte("on the first socket"))
		blocked <- err
	}()
	require.Eventually(t, func() bool { return len(c.sem) == 1 }, 20*time.Second, time.Millisecond)
	c.bulk.all()[0].kill()
	select {
	case err := <-blocked:
		require.ErrorIs(t, err, fabric.ErrClosed)
	case <-ctx.Done():
		require.FailNow(t, "a call on the first socket did not fail when a bulk socket broke")
	}
	_, err := c.Call(ctx, mEcho, make([]byte, 4<<10))
	require.ErrorIs(t, err, fabric.ErrClosed)
}
