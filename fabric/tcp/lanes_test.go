package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// lanesPair serves echo, mBlock, mRecord and mCheck, and dials with calls
// from 1 KiB bulk, over up to bulk extra sockets, and smaller calls over up
// to lanes sockets.
func lanesPair(t *testing.T, bulk, lanes int) (*Listener, *Conn, *atomic.Bool) {
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
	cfg.BulkSockets, cfg.BulkThreshold, cfg.Lanes = bulk, 1<<10, lanes
	l, c := listenDial(t, testConfig(t), cfg, &m)
	return l, c, &recorded
}

// laneKinds are the two kinds of lanes, with a request size that goes to
// each (lanesPair's threshold is 1 KiB).
var laneKinds = []struct {
	name  string
	group int
	size  int
}{{"small", groupSmall, 100}, {"bulk", groupBulk, 4 << 10}}

// openLanes makes concurrent calls of size bytes until group g has n
// lanes open.
func openLanes(t *testing.T, c *Conn, g, size, n int) {
	payload := make([]byte, size)
	require.Eventually(t, func() bool {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _, _ = c.Call(context.Background(), mEcho, payload) })
		}
		wg.Wait()
		return len(c.lanes.group(g)) >= n
	}, 20*time.Second, time.Millisecond, "lanes never opened")
}

func sessions(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// spread makes 8 goroutines call 10 times each with payloads of size
// bytes, checks every reply, and returns how many of the connection's
// sockets (the first one and its lanes) carried requests.
func spread(t *testing.T, c *Conn, size int) int {
	socks := append([]*Conn{c}, c.lanes.all()...)
	before := make(map[*Conn]uint64)
	for _, ln := range socks {
		before[ln] = ln.sent.Load()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			p := bytes.Repeat([]byte{byte(w)}, size)
			for range 10 {
				reply, err := c.Call(context.Background(), mEcho, p)
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
	return carried
}

func TestBulkCallsSpreadOverSockets(t *testing.T) {
	l, c, _ := lanesPair(t, 3, 1)
	ctx := context.Background()
	small, err := c.Call(ctx, mEcho, []byte("small"))
	require.NoError(t, err)
	require.Equal(t, "small", string(small))
	require.Empty(t, c.lanes.all(), "a small call opens no lane")

	openLanes(t, c, groupBulk, 4<<10, 2)
	require.GreaterOrEqual(t, spread(t, c, 64<<10), 2, "bulk calls must use several sockets")
	lanes := len(c.lanes.group(groupBulk))
	require.LessOrEqual(t, lanes, 3, "Config.BulkSockets bounds the extra sockets")
	require.Empty(t, c.lanes.group(groupSmall), "Lanes 1 opens no small lane")
	require.Equal(t, 1+lanes, sessions(l), "the server sees one connection per socket")
	st := c.Stats()
	require.GreaterOrEqual(t, st.BytesSent, uint64(8*10*64<<10), "Stats counts the bulk sockets' bytes")
}

func TestSmallCallsSpreadOverLanes(t *testing.T) {
	l, c, _ := lanesPair(t, 0, 3)
	ctx := context.Background()
	for range 20 {
		_, err := c.Call(ctx, mEcho, []byte("one at a time"))
		require.NoError(t, err)
	}
	require.Empty(t, c.lanes.all(), "calls made one at a time share the first socket")

	openLanes(t, c, groupSmall, 100, 1)
	require.GreaterOrEqual(t, spread(t, c, 100), 2, "concurrent small calls must use several sockets")
	lanes := len(c.lanes.group(groupSmall))
	require.LessOrEqual(t, lanes, 2, "Config.Lanes bounds the sockets, the first included")
	require.Empty(t, c.lanes.group(groupBulk), "BulkSockets 0 opens no bulk socket")
	// BulkSockets 0: large calls share the lanes with small ones.
	require.GreaterOrEqual(t, spread(t, c, 64<<10), 2, "with BulkSockets 0, large calls go over the lanes")
	require.Equal(t, 1+len(c.lanes.group(groupSmall)), sessions(l), "the server sees one connection per socket")
	require.GreaterOrEqual(t, c.Stats().Calls, uint64(20+2*80))
}

// A Call made after a Send is served after the Send's handler returned,
// even when other sockets are open for it.
func TestCallAfterSendKeepsOrder(t *testing.T) {
	for _, k := range laneKinds {
		t.Run(k.name, func(t *testing.T) {
			_, c, recorded := lanesPair(t, 2, 3)
			openLanes(t, c, k.group, k.size, 1)
			ctx := context.Background()
			payload := make([]byte, k.size)
			for i := range 5 {
				recorded.Store(false)
				require.NoError(t, c.Send(ctx, mRecord, nil))
				_, err := c.Call(ctx, mCheck, payload)
				require.NoError(t, err, "round %d", i)
			}
		})
	}
}

func TestLaneFailureFailsConnection(t *testing.T) {
	for _, k := range laneKinds {
		t.Run(k.name, func(t *testing.T) {
			_, c, _ := lanesPair(t, 2, 3)
			openLanes(t, c, k.group, k.size, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			blocked := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mBlock, []byte("on the first socket"))
				blocked <- err
			}()
			require.Eventually(t, func() bool { return len(c.sem) == 1 }, 20*time.Second, time.Millisecond)
			c.lanes.group(k.group)[0].kill()
			select {
			case err := <-blocked:
				require.ErrorIs(t, err, fabric.ErrClosed)
			case <-ctx.Done():
				require.FailNow(t, fmt.Sprintf("a call on the first socket did not fail when a %s lane broke", k.name))
			}
			_, err := c.Call(ctx, mEcho, make([]byte, k.size))
			require.ErrorIs(t, err, fabric.ErrClosed)
		})
	}
}
