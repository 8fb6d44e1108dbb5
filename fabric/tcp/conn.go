package tcp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weftsearch/weft/fabric"
)

// call is one outstanding Call or Send, recycled through callPool once the
// caller has its result and the writer has let go of its frame.
type call struct {
	f     frame
	done  chan struct{} // cap 1: the result is in reply/err
	reply []byte
	err   error
	// cancelled (guarded by Conn.pmu) marks a Call its caller gave up on:
	// it keeps its window slot until the server answers, and is not
	// recycled.
	cancelled bool
	// ctxDone is the Done channel of the caller's ctx while the caller
	// reads its own reply (guarded by Conn.pmu; see Conn.watch).
	ctxDone <-chan struct{}
}

var callPool = sync.Pool{New: func() any {
	return &call{f: frame{written: make(chan error, 1)}, done: make(chan struct{}, 1)}
}}

// oneWayMark stands in the pending table for a Send awaiting its done frame.
var oneWayMark = &call{}

// Conn is a client connection. It implements fabric.Conn: Call and Send
// are safe for concurrent use and multiplexed over one socket.
type Conn struct {
	*link
	sem chan struct{} // the in-flight window; one token per outstanding call

	pmu     sync.Mutex
	pending map[uint64]*call // nil once the connection failed
	nextID  uint64
	// The reader role (see reader.go), guarded by pmu.
	reader       int
	readerCall   *call // the caller reading, when reader == readerCaller
	interrupting bool  // a past read deadline is set to stop readerCall
	// The Done channel of the ctx of the latest caller to read, and the
	// ctx watched for good (see watch), guarded by pmu.
	lastDone, stickyDone <-chan struct{}
	stickyStop           func() bool
	rs                   readState
	bgKick               chan struct{}
	// own is the call whose caller holds the reader role and reads for it;
	// ownIn says its reply is in. Only the reader-role holder uses them:
	// the caller gets its own reply without a channel.
	own   *call
	ownIn bool

	calls, callErrs, sends atomic.Uint64
	readerDone             chan struct{}

	// sendsOut counts Sends whose done frame has not arrived: while there
	// are any, every call stays on this socket (Send's ordering rule).
	sendsOut atomic.Int64
	lanes    *lanes // the extra sockets (lanes.go); nil on a lane or when off
	parent   *Conn  // on a lane: the connection it belongs to
}

var (
	_ fabric.Conn         = (*Conn)(nil)
	_ fabric.VectorCaller = (*Conn)(nil)
)

func newConn(l *link, parent *Conn, ls *lanes) *Conn {
	c := &Conn{
		link: l, sem: make(chan struct{}, l.window), pending: make(map[uint64]*call),
		bgKick: make(chan struct{}, 1), readerDone: make(chan struct{}),
		parent: parent, lanes: ls,
	}
	l.onFail = c.failPending
	l.onPing = c.ensureReader
	l.start()
	go c.bgRead()
	return c
}

// RemoteAddr returns the dialled address.
func (c *Conn) RemoteAddr() string { return c.remote }

// Stats returns the connection's counters, its lanes' included.
func (c *Conn) Stats() fabric.ConnStats {
	st := fabric.ConnStats{
		Transport: "tcp", Calls: c.calls.Load(), CallErrors: c.callErrs.Load(), Sends: c.sends.Load(),
		BytesSent: c.sent.Load(), BytesReceived: c.received.Load(), InFlight: len(c.sem),
	}
	for _, ln := range c.lanes.all() {
		st.BytesSent += ln.sent.Load()
		st.BytesReceived += ln.received.Load()
		st.InFlight += len(ln.sem)
	}
	return st
}

// Close fails in-flight calls with fabric.ErrClosed, closes the sockets and
// waits for the connection's goroutines. It is idempotent.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("closed by caller"))
	<-c.readerDone
	c.wg.Wait()
	if c.lanes != nil {
		c.lanes.wg.Wait()
		for _, ln := range c.lanes.all() {
			_ = ln.Close()
		}
	}
	return nil
}

// failPending runs once when the socket fails: it answers the in-flight
// calls, and fails the lanes with it (or, on a lane, the connection it
// belongs to).
func (c *Conn) failPending(err error) {
	c.pmu.Lock()
	pending := c.pending
	c.pending = nil
	stopSticky := c.stickyStop
	c.stickyDone, c.stickyStop = nil, nil
	c.pmu.Unlock()
	if stopSticky != nil {
		stopSticky()
	}
	for _, cl := range pending {
		if cl == oneWayMark || cl.cancelled {
			continue
		}
		cl.err = err
		cl.done <- struct{}{}
	}
	if c.parent != nil {
		c.parent.fail(fmt.Errorf("lane failed: %v", err))
	}
	if c.lanes != nil {
		c.lanes.shut(err)
	}
}

// acquire takes a window slot, honouring ctx.
func (c *Conn) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.err
	}
}

func (c *Conn) release() { <-c.sem }

// register gives cl an id and enters it in the pending table. A Call
// (ctxDone is its ctx's Done channel) that finds nothing else outstanding
// and nobody reading takes the reader role at once (reading): with nothing
// else in flight only its own reply can come, so that it does not read
// while it writes its request holds nobody up, and it need not take the
// lock again to read.
func (c *Conn) register(cl *call, isCall bool, ctxDone <-chan struct{}) (id uint64, reading bool, err error) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		return 0, false, c.err
	}
	if isCall && c.reader == readerNone && len(c.pending) == 0 {
		c.reader, c.readerCall = readerCaller, cl
		cl.ctxDone = ctxDone
		reading = true
	}
	c.nextID++
	c.pending[c.nextID] = cl
	return c.nextID, reading, nil
}

func (c *Conn) forget(id uint64) {
	c.pmu.Lock()
	if c.pending != nil {
		delete(c.pending, id)
	}
	c.pmu.Unlock()
}

func (c *Conn) checkSize(n int) error {
	if n > int(c.peerMax) {
		return fmt.Errorf("tcp: payload of %d bytes exceeds %s's limit of %d bytes; use fabric.SendStream: %w",
			n, c.remote, c.peerMax, fabric.ErrTooLarge)
	}
	return nil
}

// Call sends payload to the peer's handler for method and waits for the
// reply, which the caller owns. payload is the caller's again once Call
// returns. It blocks while the window is full. When ctx ends, Call returns
// ctx.Err() at once unless its frame is being written at that moment: the
// write is finished first (a frame is never cut), which a dead peer bounds
// by Config.IdleTimeout.
func (c *Conn) Call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	c.calls.Add(1)
	reply, err := c.route(len(payload)).call(ctx, method, payload, nil)
	if err != nil {
		c.callErrs.Add(1)
	}
	return reply, err
}

// CallVector is Call with the payload given as pieces: the peer's handler
// receives their concatenation, but the pieces go to the socket as they
// are, each its own iovec of the frame's writev (no copy into one buffer).
// The pieces are read until CallVector returns and never kept or
// modified; empty pieces and an empty slice are allowed. Errors, window,
// cancellation and counters are exactly Call's.
func (c *Conn) CallVector(ctx context.Context, method fabric.Method, payload [][]byte) ([]byte, error) {
	c.calls.Add(1)
	var reply []byte
	var err error
	if len(payload) == 1 {
		reply, err = c.route(len(payload[0])).call(ctx, method, payload[0], nil)
	} else {
		if payload == nil {
			payload = [][]byte{}
		}
		reply, err = c.route(vecLen(payload)).call(ctx, method, nil, payload)
	}
	if err != nil {
		c.callErrs.Add(1)
	}
	return reply, err
}

// call runs a Call whose payload is payload, or the concatenation of vec
// when vec is not nil.
func (c *Conn) call(ctx context.Context, method fabric.Method, payload []byte, vec [][]byte) ([]byte, error) {
	n := len(payload)
	if vec != nil {
		n = vecLen(vec)
	}
	if err := c.checkSize(n); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	cl := callPool.Get().(*call)
	id, reading, err := c.register(cl, true, ctx.Done())
	if err != nil {
		c.release()
		callPool.Put(cl)
		return nil, err
	}
	if vec != nil {
		putHeaderVec(&cl.f.hdr, typeRequest, method, id, vec, c.crc)
	} else {
		putHeader(&cl.f.hdr, typeRequest, method, id, payload, c.crc)
	}
	cl.f.payload, cl.f.vec = payload, vec
	queued, err := c.send(&cl.f)
	if err != nil {
		// The link failed: failPending has answered (or will answer) cl.
		if reading {
			c.passRole()
		}
		<-cl.done
		return nil, err
	}
	if reading {
		return c.readOwn(ctx, cl, id, queued)
	}
	return c.await(ctx, cl, id, queued)
}

// finish hands the result to the caller and recycles cl.
func (c *Conn) finish(cl *call, queued bool) ([]byte, error) {
	reply, err := cl.reply, cl.err
	if queued {
		<-cl.f.written // the writer may still be finishing with the frame
	}
	cl.reply, cl.err, cl.f.payload, cl.f.vec, cl.ctxDone = nil, nil, nil, nil, nil
	callPool.Put(cl)
	return reply, err
}

// abandon ends a Call whose ctx ended: the caller gets ctx.Err() at once
// and the server is told to cancel. The payload is released before return.
func (c *Conn) abandon(ctx context.Context, cl *call, id uint64, queued bool) ([]byte, error) {
	c.pmu.Lock()
	if c.pending == nil || c.pending[id] != cl {
		// The reply (or the failure) is being delivered right now.
		c.pmu.Unlock()
		<-cl.done
		return c.finish(cl, queued)
	}
	cl.cancelled = true
	c.pmu.Unlock()
	if queued {
		if c.unqueue(&cl.f) {
			// Never sent: the server knows nothing of it.
			c.forget(id)
			c.release()
			return nil, ctx.Err()
		}
		<-cl.f.written
	}
	c.post(typeCancel, id)
	return nil, ctx.Err()
}

// Send delivers a one-way message and returns once it is written to the
// socket; the handler's reply is dropped. The message holds a window slot
// until its handler returns, so a slow receiver blocks Send.
func (c *Conn) Send(ctx context.Context, method fabric.Method, payload []byte) error {
	c.sends.Add(1)
	if err := c.checkSize(len(payload)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.acquire(ctx); err != nil {
		return err
	}
	id, _, err := c.register(oneWayMark, false, nil)
	if err != nil {
		c.release()
		return err
	}
	c.sendsOut.Add(1) // until its done frame
	f := getFrame()
	putHeader(&f.hdr, typeOneWay, method, id, payload, c.crc)
	f.payload = payload
	queued, err := c.send(f)
	if err != nil {
		return err
	}
	if queued {
		select {
		case err = <-f.written:
		case <-ctx.Done():
			if c.unqueue(f) {
				c.forget(id)
				c.sendsOut.Add(-1)
				c.release()
				putFrame(f)
				return ctx.Err()
			}
			err = <-f.written
		}
	}
	putFrame(f)
	if err == nil {
		c.ensureReader() // for the done frame
	}
	return err
}
