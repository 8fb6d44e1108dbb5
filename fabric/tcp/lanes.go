package tcp

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A connection's calls travel over one or more sockets to the same peer,
// its lanes, each a *Conn of its own with its own reader, writer, window
// and server-side session, whose failure fails the connection (see
// Conn.failPending):
//
//   - the first socket, opened by Dial, carries every Send, and every Call
//     made while a Send awaits its handler (Send's ordering rule);
//   - up to Config.Lanes-1 small lanes share calls below
//     Config.BulkThreshold with the first socket: such a call goes to the
//     one with the fewest calls in flight, and when even that one is busy
//     another is opened, so that concurrent calls get sockets of their own,
//     each read by its caller and served on its server's reader goroutine,
//     as a lone call is, with no goroutine hand-off;
//   - up to Config.BulkSockets bulk lanes carry the calls of at least
//     Config.BulkThreshold bytes, each on the one with the fewest in
//     flight, so that large transfers move through the kernel side by side
//     and small calls do not queue behind them.
//
// Lanes are opened on demand, one after another in the background; calls
// use the open ones meanwhile.
type lanes struct {
	t      *Transport
	ctx    context.Context // ends when the connection fails: stops a dial
	cancel context.CancelFunc
	wg     sync.WaitGroup // the dialling goroutines and the closing one

	// open holds each group's open lanes, replaced (never modified) under
	// mu, so that routing a call takes no lock.
	open [groups]atomic.Pointer[[]*Conn]

	mu        sync.Mutex
	dialing   [groups]bool
	closed    bool
	nextTryAt [groups]time.Time // after a failed dial, the earliest next one
}

// Lane groups.
const (
	groupSmall = iota
	groupBulk
	groups
)

// dialRetry is how long a group waits after a failed dial of a lane
// before trying again; calls use the open lanes meanwhile.
const dialRetry = time.Second

func newLanes(t *Transport) *lanes {
	ctx, cancel := context.WithCancel(context.Background())
	return &lanes{t: t, ctx: ctx, cancel: cancel}
}

// group returns the open lanes of group g.
func (ls *lanes) group(g int) []*Conn {
	if p := ls.open[g].Load(); p != nil {
		return *p
	}
	return nil
}

// all returns every open lane beyond the first socket; ls may be nil.
func (ls *lanes) all() []*Conn {
	if ls == nil {
		return nil
	}
	return slices.Concat(ls.group(groupSmall), ls.group(groupBulk))
}

// route returns the socket for a call of n request bytes (see lanes).
func (c *Conn) route(n int) *Conn {
	ls := c.lanes
	if ls == nil || c.sendsOut.Load() > 0 {
		return c
	}
	if n >= c.cfg.BulkThreshold && c.cfg.BulkSockets > 0 {
		// The first bulk call starts opening all the bulk lanes: a peer
		// that gets one bulk call usually gets more, often many at once.
		best, _ := leastLoaded(nil, ls.group(groupBulk))
		if len(ls.group(groupBulk)) < c.cfg.BulkSockets {
			c.openLane(groupBulk)
		}
		if best == nil {
			return c
		}
		return best
	}
	if c.cfg.Lanes <= 1 {
		return c
	}
	small := ls.group(groupSmall)
	best, busy := leastLoaded(c, small)
	if busy > 0 && len(small) < c.cfg.Lanes-1 {
		c.openLane(groupSmall)
	}
	return best
}

// leastLoaded returns, of first (when not nil) and others, the socket with
// the fewest calls in flight, and that number; the first found wins ties.
func leastLoaded(first *Conn, others []*Conn) (*Conn, int) {
	best, load := first, 0
	if first != nil {
		load = len(first.sem)
	}
	for _, ln := range others {
		if n := len(ln.sem); best == nil || n < load {
			best, load = ln, n
		}
	}
	return best, load
}

// openLane starts opening lanes of group g in the background unless that
// is under way, the group is full (a caller's unlocked look at it may be
// stale by now: a dial may have finished since), the connection failed, or
// a dial failed less than dialRetry ago.
func (c *Conn) openLane(g int) {
	ls := c.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.dialing[g] || ls.closed || len(ls.group(g)) >= c.maxLanes(g) || time.Now().Before(ls.nextTryAt[g]) {
		return
	}
	ls.dialing[g] = true
	ls.wg.Add(1)
	go c.dialLanes(g)
}

// maxLanes is how many lanes group g may hold beyond the first socket.
func (c *Conn) maxLanes(g int) int {
	if g == groupSmall {
		return c.cfg.Lanes - 1
	}
	return c.cfg.BulkSockets
}

// dialLanes dials lanes of group g: one for a small lane, until
// Config.BulkSockets are open for bulk ones; it stops early when a dial
// fails or the connection does.
func (c *Conn) dialLanes(g int) {
	ls := c.lanes
	defer ls.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(ls.ctx, c.cfg.HandshakeTimeout)
		ln, err := ls.t.dial(ctx, c.remote, c)
		cancel()
		ls.mu.Lock()
		switch {
		case err != nil:
			ls.dialing[g] = false
			ls.nextTryAt[g] = time.Now().Add(dialRetry)
			ls.mu.Unlock()
			c.log.Debug("fabric lane not opened; calls use the open sockets", "remote", c.remote, "err", err)
			return
		case ls.closed:
			ls.dialing[g] = false
			ls.mu.Unlock()
			_ = ln.Close()
			return
		}
		open := append(slices.Clone(ls.group(g)), ln)
		ls.open[g].Store(&open)
		if g == groupSmall || len(open) >= c.maxLanes(g) {
			ls.dialing[g] = false
			ls.mu.Unlock()
			return
		}
		ls.mu.Unlock()
	}
}

// shut fails every lane when the connection failed with cause. The lanes
// are failed on another goroutine: a lane whose own failure brought the
// connection down is still inside its fail.
func (ls *lanes) shut(cause error) {
	ls.cancel()
	ls.mu.Lock()
	ls.closed = true
	open := ls.all()
	ls.mu.Unlock()
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		for _, ln := range open {
			ln.fail(fmt.Errorf("connection failed: %v", cause))
		}
	}()
}
