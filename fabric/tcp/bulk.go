package tcp

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// bulk is a connection's extra sockets for bulk calls (Config.BulkSockets):
// each is a *Conn of its own to the same address, whose failure fails the
// connection (see Conn.failPending).
type bulk struct {
	t      *Transport
	ctx    context.Context // ends when the connection fails: stops a dial
	cancel context.CancelFunc
	wg     sync.WaitGroup // the dialling goroutine and the closing one

	mu        sync.Mutex
	lanes     []*Conn
	dialing   bool
	closed    bool
	nextTryAt time.Time // after a failed dial, the earliest next one
}

// dialRetry is how long a connection waits after a failed dial of a bulk
// socket before trying again; bulk calls use the open sockets meanwhile.
const dialRetry = time.Second

func newBulk(t *Transport) *bulk {
	ctx, cancel := context.WithCancel(context.Background())
	return &bulk{t: t, ctx: ctx, cancel: cancel}
}

// all returns the open bulk sockets; b may be nil.
func (b *bulk) all() []*Conn {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lanes
}

// route returns the socket for a call of n request bytes: the bulk socket
// with the fewest calls in flight when the call is bulk and no Send awaits
// its handler, else c itself. The first bulk call starts opening all
// Config.BulkSockets sockets, one after another in the background: a peer
// that gets one bulk call usually gets more, often many at once.
func (c *Conn) route(n int) *Conn {
	b := c.bulk
	if b == nil || n < c.cfg.BulkThreshold || c.sendsOut.Load() > 0 {
		return c
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *Conn
	for _, ln := range b.lanes {
		if best == nil || len(ln.sem) < len(best.sem) {
			best = ln
		}
	}
	if !b.dialing && !b.closed && len(b.lanes) < c.cfg.BulkSockets && !time.Now().Before(b.nextTryAt) {
		b.dialing = true
		b.wg.Add(1)
		go c.openBulk()
	}
	if best == nil {
		return c
	}
	return best
}

// openBulk dials bulk sockets until Config.BulkSockets are open, a dial
// fails or the connection does.
func (c *Conn) openBulk() {
	b := c.bulk
	defer b.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, c.cfg.HandshakeTimeout)
		ln, err := b.t.dial(ctx, c.remote, c)
		cancel()
		b.mu.Lock()
		switch {
		case err != nil:
			b.dialing = false
			b.nextTryAt = time.Now().Add(dialRetry)
			b.mu.Unlock()
			c.log.Debug("fabric bulk socket not opened; bulk calls use the open sockets", "remote", c.remote, "err", err)
			return
		case b.closed:
			b.dialing = false
			b.mu.Unlock()
			_ = ln.Close()
			return
		}
		b.lanes = append(b.lanes, ln)
		if len(b.lanes) >= c.cfg.BulkSockets {
			b.dialing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// shut fails every bulk socket when the connection failed with cause. The
// sockets are failed on another goroutine: a bulk socket whose own failure
// brought the connection down is still inside its fail.
func (b *bulk) shut(cause error) {
	b.cancel()
	b.mu.Lock()
	b.closed = true
	lanes := b.lanes
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for _, ln := range lanes {
			ln.fail(fmt.Errorf("connection failed: %v", cause))
		}
	}()
}
