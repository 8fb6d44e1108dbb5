package adaptive

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weftsearch/weft/fabric"
)

// server is the one logical handler behind every path of a listener. It
// passes plain messages (one-way sends) straight to the user's handler and
// serves MethodEnvelope: exactly-once calls, striped requests and replies.
type server struct {
	cfg    Config
	bufs   *bufPool // the transport's: pooled copies of kept replies
	h      fabric.Handler
	ctx    context.Context // parent of every handler context
	cancel context.CancelFunc
	stopCh chan struct{}
	wg     sync.WaitGroup

	// sessions maps a session id to its *session: read by every message
	// without a lock, written when a session starts or ends.
	sessions sync.Map
	// tick counts the sweeper's rounds (every SessionTTL/4): a message
	// stamps its session with it, so the hot path reads no clock.
	tick atomic.Uint64
}

var _ fabric.Handler = (*server)(nil)

type session struct {
	seen atomic.Uint64 // server.tick at the latest message

	mu      sync.Mutex
	entries map[uint64]*entry
	order   []*entry // entries in arrival order, trimmed by the watermark
	low     uint64   // the client is finished with every id below
	asm     map[uint64]*assembly
	ended   bool     // no longer served: bye, expiry or the server's close
	bufs    *bufPool // the server's
}

// entry is one call of one session: running, finished, or cancelled
// before it arrived. It is also its handler's context (ctx.go). Fields
// below req are guarded by the session's mutex.
type entry struct {
	callCtx
	id  uint64
	req fabric.Request // the owner's; allocated with the entry

	finished bool
	acked    bool // the client has the reply; resp and reply were dropped
	// done is closed when the call finishes; made only when someone
	// waits for that (a re-send joining it, a fetch), see wait.
	done  chan struct{}
	resp  []byte // what the envelope call returns: reply kind + data
	reply []byte // a striped reply, served by fetches
	// resp's memory when it is not the entry's own: the path's request
	// memory, borrowed from lender, or a buffer of the server's pool.
	lender  fabric.Lender
	pooled  *[]byte
	err     error
	waiters int
	timer   *time.Timer
}

// closedChan is what wait returns for a finished entry.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns a channel closed when e finishes; called with the
// session's mutex held.
func (e *entry) wait() <-chan struct{} {
	if e.finished {
		return closedChan
	}
	if e.done == nil {
		e.done = make(chan struct{})
	}
	return e.done
}

// forget drops the reply e keeps for re-sends and fetches, giving its
// memory back; called with the session's mutex held.
func (sess *session) forget(e *entry) {
	e.resp, e.reply = nil, nil
	if e.lender != nil {
		e.lender.Return()
		e.lender = nil
	}
	if e.pooled != nil {
		sess.bufs.put(e.pooled)
		e.pooled = nil
	}
}

// finish marks e finished and wakes its waiters; called with the
// session's mutex held.
func (e *entry) finish() {
	e.finished = true
	if e.done != nil {
		close(e.done)
	}
}

// assembly collects the chunks of a striped request.
type assembly struct {
	buf     []byte
	have    map[uint64]bool
	got     uint64
	touched time.Time
}

func newServer(cfg Config, bufs *bufPool, h fabric.Handler) *server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{cfg: cfg, bufs: bufs, h: h, ctx: ctx, cancel: cancel, stopCh: make(chan struct{})}
	s.wg.Go(s.sweep)
	return s
}

// close cancels every handler context and stops the sweeper; wait waits
// for the sweeper.
func (s *server) close() {
	s.cancel()
	s.sessions.Range(func(_, v any) bool {
		sess := v.(*session)
		sess.end()
		return true
	})
	select {
	case <-s.stopCh:
	default:
		close(s.stopCh)
	}
}

func (s *server) wait() { s.wg.Wait() }

func (s *server) sweep() {
	t := time.NewTicker(s.cfg.SessionTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case now := <-t.C:
			tick := s.tick.Add(1)
			s.sessions.Range(func(id, v any) bool {
				sess := v.(*session)
				// Four rounds without a message: idle for SessionTTL
				// at least.
				idle := tick-sess.seen.Load() > 4
				sess.mu.Lock()
				for aid, a := range sess.asm {
					if idle || now.Sub(a.touched) > s.cfg.SessionTTL {
						delete(sess.asm, aid)
					}
				}
				sess.mu.Unlock()
				if idle && s.sessions.CompareAndDelete(id, sess) {
					sess.end()
				}
				return true
			})
		}
	}
}

// session returns session id, made on its first message, and stamps it
// as seen.
func (s *server) session(id uint64) *session {
	v, ok := s.sessions.Load(id)
	if !ok {
		v, _ = s.sessions.LoadOrStore(id, &session{entries: make(map[uint64]*entry), asm: make(map[uint64]*assembly), bufs: s.bufs})
	}
	sess := v.(*session)
	if tick := s.tick.Load(); sess.seen.Load() != tick {
		sess.seen.Store(tick)
	}
	return sess
}

// advance takes a message's watermark: every call below it is over for
// the client, so its entry and any partial striped request go. Called
// with the session's mutex held, in the same critical section as the
// message's own work (one lock per message: every call of a session
// contends for it).
func (sess *session) advance(watermark uint64) {
	if watermark <= sess.low {
		return
	}
	sess.low = watermark
	n := 0
	for n < len(sess.order) && sess.order[n].id < watermark {
		e := sess.order[n]
		sess.forget(e)
		delete(sess.entries, e.id)
		n++
	}
	sess.order = sess.order[n:]
	for aid := range sess.asm {
		if aid < watermark {
			delete(sess.asm, aid)
		}
	}
}

// ServeFabric implements fabric.Handler for every path.
func (s *server) ServeFabric(ctx context.Context, req *fabric.Request) ([]byte, error) {
	if req.Method != MethodEnvelope {
		return s.h.ServeFabric(ctx, req)
	}
	h, body, err := parseHeader(req.Payload)
	if err != nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "%v", err)
	}
	if h.Kind == kindBye {
		s.bye(h.Session)
		return nil, nil
	}
	sess := s.session(h.Session)
	if h.Kind == kindCall || h.Kind == kindExec {
		return s.run(ctx, sess, h, req.Peer, req.Lender, body)
	}
	sess.mu.Lock()
	sess.advance(h.Watermark)
	sess.mu.Unlock()
	switch h.Kind {
	case kindChunk:
		return nil, sess.addChunk(h, body)
	case kindFetch:
		return sess.fetch(ctx, h)
	case kindCancel:
		sess.cancelCall(h.ID)
		return nil, nil
	case kindRelease:
		sess.mu.Lock()
		if e := sess.entries[h.ID]; e != nil {
			e.reply = nil
		}
		sess.mu.Unlock()
		return nil, nil
	}
	return nil, fabric.Errorf(fabric.CodeBadRequest, "adaptive: envelope kind %d is not served", h.Kind)
}

func (s *server) bye(id uint64) {
	v, ok := s.sessions.LoadAndDelete(id)
	if !ok {
		return
	}
	v.(*session).end()
}

// end cancels the session's calls and drops their replies, once the
// session is out of the server's map (or the server closes).
func (sess *session) end() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.ended = true
	for _, e := range sess.entries {
		e.cancel()
		sess.forget(e)
	}
}

// run serves one call exactly once per (session, id): the first arrival
// runs the handler; a re-sent arrival joins it or gets its cached outcome.
// The first arrival of a call runs it with body; that of an exec runs the
// striped request it completes.
// A reply of StripeThreshold bytes or more is kept for fetches and
// announced with the codeStripedReply marker instead.
func (s *server) run(ctx context.Context, sess *session, h header, peer string, lender fabric.Lender, body []byte) ([]byte, error) {
	// Made before the lock, which every call of the session takes: an
	// allocation can assist the garbage collector for microseconds. Only a
	// re-send wastes it.
	fresh := &entry{id: h.ID, req: fabric.Request{Method: h.Method, Payload: body, Peer: peer}}
	sess.mu.Lock()
	sess.advance(h.Watermark)
	if a := sess.entries[h.Offset]; h.Offset != 0 && a != nil && a.finished {
		// The client holds that call's reply (see header.Offset): drop it
		// now rather than when the watermark passes it.
		sess.forget(a)
		a.acked = true
	}
	if h.ID < sess.low {
		sess.mu.Unlock()
		return nil, fabric.Errorf(fabric.CodeUnavailable, "adaptive: request %d arrived after its caller gave up on it", h.ID)
	}
	e := sess.entries[h.ID]
	owner := e == nil
	data := body
	if owner {
		if h.Kind == kindExec {
			var err error
			if data, err = sess.takeAssembly(h); err != nil {
				sess.mu.Unlock()
				return nil, err
			}
			fresh.req.Payload = data
		}
		// Not derived from s.ctx: a child of a shared parent costs a lock
		// on that parent per call. close cancels every entry instead.
		e = fresh
		e.carry(ctx, s, sess, e)
		sess.entries[h.ID] = e
		sess.order = append(sess.order, e)
		if s.ctx.Err() != nil {
			e.cancel() // arrived while the listener closes
		}
	}
	e.waiters++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	sess.mu.Unlock()
	if !owner {
		// A re-send: this path carries the call too, until it goes away.
		stop := context.AfterFunc(ctx, func() { s.leave(sess, e) })
		defer stop()
		sess.mu.Lock()
		done := e.wait()
		sess.mu.Unlock()
		select {
		case <-done:
			sess.mu.Lock()
			resp, err, acked := e.resp, e.err, e.acked
			if e.lender != nil || e.pooled != nil {
				// resp goes back to its owner when the client acknowledges
				// it, maybe before this path has sent it: send a copy.
				resp = slices.Clone(resp)
			}
			sess.mu.Unlock()
			if acked {
				// Only a stray duplicate gets here: the caller has the reply.
				return nil, fabric.Errorf(fabric.CodeUnavailable, "adaptive: request %d was answered and acknowledged", h.ID)
			}
			return s.outcome(ctx, resp, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	reply, err := s.call(e, &e.req)
	e.req.Payload = nil // the path's buffer is not ours to keep
	striped := err == nil && len(reply) >= s.cfg.StripeThreshold && !(h.Kind == kindCall && h.Length == inlineReply)
	// The reply is kept for re-sends (resp) or fetches (reply). One that
	// aliases the path's request buffer, valid only until we return, is
	// borrowed from the path when it lends it; else this path sends it
	// and a pooled copy is kept. Fetches may come on any path, so a
	// striped reply is the entry's own copy.
	var borrowed fabric.Lender
	var pooled *[]byte
	resp, sent := reply, reply
	if err == nil && h.Kind == kindCall && overlaps(reply, data) {
		switch {
		case striped:
			reply = slices.Clone(reply)
		case lender != nil:
			lender.Lend()
			borrowed = lender
		default:
			pooled = s.bufs.get(len(reply))
			copy(*pooled, reply)
			resp = *pooled
		}
	}
	if striped {
		resp, sent, err = nil, nil, stripedReply(len(reply))
	} else {
		reply = nil
	}
	sess.mu.Lock()
	e.resp, e.reply, e.err, e.lender, e.pooled = resp, reply, err, borrowed, pooled
	if sess.ended || s.ctx.Err() != nil {
		sess.forget(e) // nobody will ask again; the path still sends its reply
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.finish()
	sess.mu.Unlock()
	e.retire()
	return s.outcome(ctx, sent, err)
}

// outcome returns a call's result to its path, unless the listener is
// closing: then the handler's context was cancelled by Close, and its
// caller must see the connection fail (fabric.ErrClosed), not a handler
// error, so this waits for the path's listener to break the connection.
func (s *server) outcome(ctx context.Context, resp []byte, err error) ([]byte, error) {
	if s.ctx.Err() == nil {
		return resp, err
	}
	<-ctx.Done()
	return nil, fabric.ErrClosed
}

// call runs the user's handler, turning a panic into an error so joiners
// of the entry are never left waiting.
func (s *server) call(ctx context.Context, req *fabric.Request) (reply []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			reply, err = nil, fabric.Errorf(fabric.CodeInternal, "handler for method %d panicked: %v", req.Method, p)
		}
	}()
	return s.h.ServeFabric(ctx, req)
}

// leave runs when a path that carried e goes away (its caller cancelled or
// it broke). When no path carries e any more, the handler gets
// ResendGrace for a re-send to join before its context is cancelled.
func (s *server) leave(sess *session, e *entry) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	e.waiters--
	if e.waiters > 0 || e.finished {
		return
	}
	e.timer = time.AfterFunc(s.cfg.ResendGrace, func() {
		sess.mu.Lock()
		idle := e.waiters == 0
		sess.mu.Unlock()
		if idle {
			e.cancel()
		}
	})
}

func (sess *session) cancelCall(id uint64) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if e := sess.entries[id]; e != nil {
		e.cancel()
		return
	}
	if id < sess.low {
		return
	}
	// The cancel overtook its call (they run on separate goroutines): leave
	// a finished entry so the call, when it arrives, is not run.
	e := &entry{id: id, finished: true, err: fabric.Errorf(fabric.CodeUnavailable, "adaptive: request %d was cancelled", id)}
	e.cancel()
	sess.entries[id] = e
	sess.order = append(sess.order, e)
}

func (sess *session) addChunk(h header, body []byte) error {
	sess.mu.Lock()
	if h.ID < sess.low || sess.entries[h.ID] != nil {
		sess.mu.Unlock()
		return nil // already executed (a re-sent chunk) or abandoned
	}
	a := sess.asm[h.ID]
	if a == nil {
		a = &assembly{buf: make([]byte, h.Total), have: make(map[uint64]bool)}
		sess.asm[h.ID] = a
	}
	a.touched = time.Now()
	if uint64(len(a.buf)) != h.Total {
		sess.mu.Unlock()
		return fabric.Errorf(fabric.CodeBadRequest, "adaptive: chunk of request %d says %d bytes in all, earlier chunks said %d", h.ID, h.Total, len(a.buf))
	}
	if a.have[h.Offset] {
		sess.mu.Unlock()
		return nil // a re-sent chunk
	}
	a.have[h.Offset] = true
	sess.mu.Unlock()
	copy(a.buf[h.Offset:], body) // ranges of distinct chunks do not overlap
	sess.mu.Lock()
	a.got += uint64(len(body))
	sess.mu.Unlock()
	return nil
}

// takeAssembly hands over a complete striped request; called with sess.mu
// held.
func (sess *session) takeAssembly(h header) ([]byte, error) {
	a := sess.asm[h.ID]
	if a == nil || a.got != h.Total || uint64(len(a.buf)) != h.Total {
		got := uint64(0)
		if a != nil {
			got = a.got
		}
		return nil, fabric.Errorf(fabric.CodeBadRequest, "adaptive: striped request %d is incomplete: %d of %d bytes arrived", h.ID, got, h.Total)
	}
	delete(sess.asm, h.ID)
	return a.buf, nil
}

func (sess *session) fetch(ctx context.Context, h header) ([]byte, error) {
	sess.mu.Lock()
	e := sess.entries[h.ID]
	var done <-chan struct{}
	if e != nil {
		done = e.wait()
	}
	sess.mu.Unlock()
	if e == nil {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "adaptive: no reply for request %d: it was released or expired", h.ID)
	}
	select {
	case <-done: // fetches follow the exec that finished it
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sess.mu.Lock()
	reply := e.reply
	sess.mu.Unlock()
	end := h.Offset + uint64(h.Length)
	if reply == nil || end > uint64(len(reply)) {
		return nil, fabric.Errorf(fabric.CodeBadRequest, "adaptive: fetch of bytes [%d, %d) of request %d: reply has %d", h.Offset, end, h.ID, len(reply))
	}
	return reply[h.Offset:end], nil
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}
