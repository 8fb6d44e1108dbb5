// Package dispatch runs a fabric.Handler for the requests of one server-side
// connection: one goroutine per request, cancellation by request id, the
// ordering rule of fabric.Conn.Send (a one-way message is served after every
// request that arrived before it has started, and before any request that
// arrives after it starts), the built-in answer to fabric.MethodPing, panic
// recovery, and waiting for every handler on close. Transports (mem, tcp,
// rdma) share it so that they serve requests the same way.
package dispatch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/callctx"
)

// RespondFunc sends the outcome of one request back to the caller. It is
// called from the request's goroutine after the handler returns, once per
// request, one-way requests included (so the transport can return flow
// control credit). It must not return before it is done reading reply: the
// handler's reply may alias the request payload, which is released after
// RespondFunc returns.
type RespondFunc func(id uint64, oneWay bool, reply []byte, err error)

// Dispatcher serves the requests of one connection. Dispatch and Cancel are
// called by the connection's single reader goroutine, in arrival order;
// Close and Wait may be called from any goroutine.
type Dispatcher struct {
	h          fabric.Handler
	peer       string
	respond    RespondFunc
	release    func(*[]byte)
	stopParent func() bool // ends the watch of New's parent
	wg         sync.WaitGroup
	epoch      time.Time // handler run times are measured from it

	mu      sync.Mutex
	closed  bool
	running map[uint64]*request
	// barrier is closed when the handler of the most recent one-way request
	// has returned; later requests wait for it, so one-way messages are
	// served one at a time, in order, and a Call that follows a Send from
	// the same goroutine sees its effect. nil when none is pending.
	barrier chan struct{}
}

// New returns a Dispatcher for requests from peer. Handler contexts end
// when Close is called or parent ends; they carry none of parent's values
// or deadline. Each is its request's own (fabric/internal/callctx), not a
// child of a context shared by the connection, whose lock every request
// would take to register and unregister. release, if not nil, gets each
// request's buffer back once the request is answered and every loan of it
// to the handler (fabric.Lender) has been returned.
func New(parent context.Context, h fabric.Handler, peer string, respond RespondFunc, release func(*[]byte)) *Dispatcher {
	d := &Dispatcher{
		h:       h,
		peer:    peer,
		respond: respond,
		release: release,
		epoch:   time.Now(),
		running: make(map[uint64]*request),
	}
	if parent.Done() != nil {
		d.stopParent = context.AfterFunc(parent, d.Close)
	}
	return d
}

// Dispatch starts serving one request on a new goroutine. payload must
// stay valid until the request is answered. buf, when not nil, is the
// buffer holding payload, which the transport gives up until the release
// function given to New gets it back: then the handler is offered to keep
// payload longer (fabric.Request.Lender). When buf is nil, payload may be
// reused as soon as the request is answered and no loan is offered.
// It does not block on the handler, nor on respond. After Close, and for
// a request whose id is already running (which it answers itself, with
// CodeBadRequest, on another goroutine), it drops the request, giving buf
// to release before it returns: the caller must not hold a lock that
// release takes.
func (d *Dispatcher) Dispatch(id uint64, method fabric.Method, payload []byte, oneWay bool, buf *[]byte) {
	if t, ok := d.Accept(id, method, payload, oneWay, buf); ok {
		go t.serve()
	}
}

// serve runs t on the goroutine Dispatch started for it.
func (t Task) serve() {
	GrowStack()
	t.Run()
}

// GrowStack grows the calling goroutine's stack to 16 KiB while it is
// nearly empty; a transport calls it first on a goroutine it starts for
// one request (Dispatch does). A goroutine starts with a small stack that
// the runtime copies to one twice the size each time a call needs more;
// a deep handler (the adaptive server's envelope and session, the user's
// handler, then the socket write of the reply) paid two or three such
// copies of a full stack per request. One frame this large makes the
// runtime grow the stack in one step, with almost nothing on it to copy.
//
//go:noinline
func GrowStack() {
	var frame [growFrame]byte
	keepFrame(&frame)
}

// growFrame is the frame GrowStack needs: with the frames below it, more
// than 8 KiB, so the stack grows to 16 KiB.
const growFrame = 7 << 10

//go:noinline
func keepFrame(*[growFrame]byte) {}

// Task is an accepted request waiting to be served by Run.
type Task struct {
	r    *request
	wait chan struct{} // the previous one-way request's done, or nil
	done chan struct{} // closed when this one-way request is served
}

// Accept registers a request like Dispatch but leaves running it to the
// caller: when ok, the caller must call t.Run exactly once, on any
// goroutine (a transport's reader may run it itself after handing reading
// to a fresh goroutine). When !ok the request was dropped or answered.
func (d *Dispatcher) Accept(id uint64, method fabric.Method, payload []byte, oneWay bool, buf *[]byte) (t Task, ok bool) {
	r := &request{Request: fabric.Request{Method: method, Payload: payload, Peer: d.peer, OneWay: oneWay}, d: d, id: id, buf: buf}
	r.refs.Store(1)
	if buf != nil {
		r.Lender = r
	}
	d.mu.Lock()
	if d.closed { // the connection is going away
		d.mu.Unlock()
		d.done(buf)
		return Task{}, false
	}
	if _, dup := d.running[id]; dup {
		// Answered on a goroutine of its own, like any request: respond may
		// wait (for the peer's credits, or its socket), and the caller is
		// the connection's reader, which must not wait on the peer.
		d.wg.Add(1)
		d.mu.Unlock()
		d.done(buf)
		go func() {
			defer d.wg.Done()
			d.respond(id, oneWay, nil, fabric.Errorf(fabric.CodeBadRequest, "request id %d is already running on this connection", id))
		}()
		return Task{}, false
	}
	d.running[id] = r
	wait := d.barrier
	if wait != nil {
		select {
		case <-wait:
			wait = nil
			d.barrier = nil
		default:
		}
	}
	var done chan struct{}
	if oneWay {
		done = make(chan struct{})
		d.barrier = done
	}
	d.wg.Add(1)
	d.mu.Unlock()
	return Task{r: r, wait: wait, done: done}, true
}

// Run serves the task: it waits for earlier one-way requests, calls the
// handler and responds. It returns how long the handler ran (not counting
// the wait or the response), so a transport can tell quick methods from
// slow ones.
func (t Task) Run() (handler time.Duration) {
	r := t.r
	d := r.d
	defer d.wg.Done()
	if t.wait != nil {
		select {
		case <-t.wait:
		case <-r.Done():
		}
	}
	start := time.Since(d.epoch) // one monotonic clock read, where time.Now takes two
	var reply []byte
	var err error
	if r.Method == fabric.MethodPing {
		reply = r.Payload
	} else {
		reply, err = d.call(&r.Ctx, &r.Request)
	}
	handler = time.Since(d.epoch) - start
	if t.done != nil {
		close(t.done)
	}
	d.mu.Lock()
	delete(d.running, r.id)
	d.mu.Unlock()
	r.End(nil)
	d.respond(r.id, r.OneWay, reply, err)
	r.unref()
	return handler
}

// request is a handler's Request, its context, and the loan of its memory
// (see fabric.Lender): the buffer goes back to the transport when the
// dispatcher has responded and the loan, if any, has been returned. One
// allocation per request holds all three.
type request struct {
	fabric.Request
	callctx.Ctx
	d    *Dispatcher
	id   uint64
	buf  *[]byte
	refs atomic.Int32 // one for the dispatcher until it has responded, one for a loan
	lent atomic.Bool
}

// Lend implements fabric.Lender.
func (r *request) Lend() {
	if r.lent.CompareAndSwap(false, true) {
		r.refs.Add(1)
	}
}

// Return implements fabric.Lender.
func (r *request) Return() {
	if r.lent.CompareAndSwap(true, false) {
		r.unref()
	}
}

func (r *request) unref() {
	if r.refs.Add(-1) == 0 {
		r.d.done(r.buf)
	}
}

func (d *Dispatcher) done(buf *[]byte) {
	if buf != nil && d.release != nil {
		d.release(buf)
	}
}

func (d *Dispatcher) call(ctx context.Context, req *fabric.Request) (reply []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			reply, err = nil, fabric.Errorf(fabric.CodeInternal, "handler for method %d panicked: %v", req.Method, p)
		}
	}()
	return d.h.ServeFabric(ctx, req)
}

// Cancel cancels the handler context of request id, if it is running.
func (d *Dispatcher) Cancel(id uint64) {
	d.mu.Lock()
	r := d.running[id]
	d.mu.Unlock()
	if r != nil {
		r.End(nil)
	}
}

// Running returns how many requests are being served.
func (d *Dispatcher) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.running)
}

// Close cancels every handler context and drops requests that arrive
// after it. It does not wait; see Wait. It is idempotent.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	running := make([]*request, 0, len(d.running))
	for _, r := range d.running {
		running = append(running, r)
	}
	d.mu.Unlock()
	if d.stopParent != nil {
		d.stopParent()
	}
	for _, r := range running {
		r.End(nil)
	}
}

// Wait blocks until every handler has returned and responded, or ctx ends.
func (d *Dispatcher) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dispatch: %d handlers from %s still running: %w", d.Running(), d.peer, ctx.Err())
	}
}
