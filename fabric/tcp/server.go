package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/bufpool"
	"github.com/weftsearch/weft/fabric/internal/dispatch"
)

// Listener serves one address. It implements fabric.Listener.
type Listener struct {
	t  *Transport
	ln net.Listener
	h  fabric.Handler

	mu       sync.Mutex
	closed   bool
	sessions map[*session]struct{}
	opening  map[net.Conn]struct{} // accepted, still in handshake
	drainErr []error
	wg       sync.WaitGroup // accept loop and sessions
	once     sync.Once
}

var _ fabric.Listener = (*Listener)(nil)

// Addr returns the address peers dial, with the real port.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops accepting, breaks every connection (their callers' in-flight
// calls fail with fabric.ErrClosed), cancels the handlers' contexts and
// waits up to Config.DrainTimeout for them to return. It is idempotent;
// it returns an error naming the handlers still running at the deadline.
func (l *Listener) Close() error {
	l.once.Do(func() { l.stop(false) })
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.drainErr...)
}

// kill is Close without waiting and with connection resets: what peers see
// when this node dies. Used by tests that simulate peer death.
func (l *Listener) kill() { l.once.Do(func() { l.stop(true) }) }

func (l *Listener) stop(kill bool) {
	l.mu.Lock()
	l.closed = true
	ss := make([]*session, 0, len(l.sessions))
	for s := range l.sessions {
		ss = append(ss, s)
	}
	for nc := range l.opening {
		_ = nc.Close()
	}
	l.mu.Unlock()
	_ = l.ln.Close()
	for _, s := range ss {
		if kill {
			s.kill()
		} else {
			s.fail(fmt.Errorf("listener %s closed", l.Addr()))
		}
	}
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			l.t.log.Warn("fabric accept failed; retrying", "addr", l.Addr(), "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go l.serve(nc)
	}
}

// session is the server side of one connection.
type session struct {
	*link
	l  *Listener
	hb [headerSize]byte // the header being read, by whichever goroutine reads
	d  *dispatch.Dispatcher
	// running counts the requests accepted and not yet answered; the
	// reader waits on freed while it is above the window (see admit).
	running atomic.Int32
	freed   chan struct{}
	// state hands reading to a new goroutine when a handler served on the
	// reader goroutine runs too long (see watch): the reader's generation
	// (0 for the first, one more for each goroutine that took over) << 3,
	// stateLent while it runs a handler lent the read buffer (see
	// request), and its reader state. A reader whose state was taken
	// over sees another generation and leaves reading to its successor.
	state atomic.Uint64
	// inlineSeq counts handlers run on the reader goroutine; the watchdog
	// timer (armed while the session is busy) compares it between two
	// firings to find one that has run for a whole watchPeriod.
	inlineSeq atomic.Uint64
	watchSeq  atomic.Uint64
	watching  atomic.Bool
	watchdog  *time.Timer
	// slow marks methods (by method mod len) whose last handler ran longer
	// than inlineBudget: their requests get their own goroutine at once.
	slow [64]atomic.Bool
	// held is Config.ConnInFlightBytes: the declared sizes of this
	// connection's requests read into buffers of their own, from before
	// their payload is read until the buffer is released.
	held *budget
	body bodyReader
}

// Reader states, the low bits of session.state.
const (
	stateReading = iota // the reader goroutine reads
	stateInline         // it is running a handler
	stateKind    = 3
	stateLent    = 4 // the inline handler reads its payload in the read buffer
	stateGen     = 3 // shift of the generation
)

// inlineBudget is how long a method's handler may last to be served on the
// reader goroutine (which is already running, so a quick handler costs no
// goroutine switch and no wake-up of another thread). A method whose last
// handler took longer gets a goroutine per request until one is quick again.
const inlineBudget = 20 * time.Microsecond

// watchPeriod bounds how long a handler served on the reader goroutine can
// keep the connection's other frames waiting when it turns out slow: after
// one to two periods a new goroutine takes over reading. The watchdog is
// armed once per busy spell, not per request: arming a runtime timer per
// request wakes another thread each time, which costs more than the
// goroutine switch inline serving saves.
const watchPeriod = time.Millisecond

// watch runs on the watchdog timer. It hands reading to a new goroutine if
// the reader has been in the same handler since the previous firing, re-arms
// while the session is busy, and disarms once a whole period passed without
// a handler served inline.
func (s *session) watch() {
	seq, last := s.inlineSeq.Load(), s.watchSeq.Load()
	switch {
	case seq == last && s.state.Load()&stateKind == stateInline:
		s.takeOver()
	case seq == last:
		// Idle for a period: disarm. A handler that started inline just
		// now saw the watchdog armed; re-arm for it.
		s.watching.Store(false)
		if s.inlineSeq.Load() == seq || !s.watching.CompareAndSwap(false, true) {
			return
		}
	}
	s.watchSeq.Store(seq)
	s.watchdog.Reset(watchPeriod)
}

// takeOver hands reading to a new goroutine if the reader is still in a
// handler.
func (s *session) takeOver() {
	v := s.state.Load()
	if v&stateKind != stateInline {
		return
	}
	gen := v>>stateGen + 1
	//lint:ignore SA4016 stateReading is the zero kind, named so the state reads whole
	if !s.state.CompareAndSwap(v, gen<<stateGen|stateReading) {
		return
	}
	if v&stateLent != 0 {
		// The handler still reads its payload in the read buffer, which
		// holds nothing else: the new reader gets a fresh one.
		s.br = bufio.NewReaderSize(s.nc, readBufferSize)
	}
	s.l.wg.Add(1) // the inline goroutine is counted, so the group is not at zero
	go s.reading(gen)
}

// runTask serves t and records whether method's handler was quick.
func (s *session) runTask(t dispatch.Task, method fabric.Method) {
	s.slow[int(method)%len(s.slow)].Store(t.Run() > inlineBudget)
}

// runFresh is runTask on a goroutine started for t.
func (s *session) runFresh(t dispatch.Task, method fabric.Method) {
	dispatch.GrowStack()
	s.runTask(t, method)
}

// serve owns one accepted connection: handshake, reading requests, and on
// the way out waiting for its handlers.
func (l *Listener) serve(nc net.Conn) {
	defer l.wg.Done()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = nc.Close()
		return
	}
	l.opening[nc] = struct{}{}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.opening, nc)
		l.mu.Unlock()
	}()
	raw, _ := nc.(*net.TCPConn)
	l.t.tune(raw)
	if l.t.cfg.ServerTLS != nil {
		nc = tlsServer(nc, l.t.cfg.ServerTLS)
	}
	ln := newLink(&l.t.cfg, l.t.log, nc, raw, nc.RemoteAddr().String())
	deadline := time.Now().Add(l.t.cfg.HandshakeTimeout)
	name, err := tlsHandshake(nc, deadline, l.t.cfg.PeerIdentity)
	if err != nil {
		l.t.log.Info("fabric TLS handshake failed", "remote", ln.remote, "err", err)
		_ = nc.Close()
		return
	}
	if name != "" {
		ln.remote = name + "@" + ln.remote
	}
	if err := ln.handshake(false, deadline); err != nil {
		level := slog.LevelInfo
		if misbehaved(err) {
			level = slog.LevelWarn // a malformed or out-of-range hello
		}
		l.t.log.Log(context.Background(), level, "fabric handshake failed", "remote", ln.remote, "err", err)
		_ = nc.Close()
		return
	}
	s := &session{link: ln, l: l, freed: make(chan struct{}, 1), held: newBudget(l.t.cfg.ConnInFlightBytes)}
	s.body = bodyReader{charge: s.charge, refund: s.refund, arm: s.arm, disarm: s.disarm, progress: s.progress, stall: l.t.cfg.StallTimeout, eager: eagerPayload}
	s.watchdog = time.AfterFunc(time.Hour, s.watch)
	s.watchdog.Stop()
	s.d = dispatch.New(context.Background(), l.h, ln.remote, s.respond, s.release)
	ln.onFail = func(error) { s.d.Close() }
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = nc.Close()
		return
	}
	l.sessions[s] = struct{}{}
	l.mu.Unlock()

	s.start()
	s.readAndFinish(0)
}

// reading is the body of every reader goroutine after the first; gen is
// its generation (see session.state).
func (s *session) reading(gen uint64) {
	defer s.l.wg.Done()
	s.readAndFinish(gen)
}

// readAndFinish reads until the connection fails, then cleans up; or, when
// it handed reading to another goroutine and served a request, just returns.
func (s *session) readAndFinish(gen uint64) {
	handedOff, err := s.readLoop(gen)
	if handedOff {
		return
	}
	if misbehaved(err) {
		s.l.t.log.Warn("fabric peer disconnected", "remote", s.remote, "listener", s.l.Addr(), "reason", err)
	}
	s.fail(err)
	s.watchdog.Stop()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), s.l.t.cfg.DrainTimeout)
	err = s.d.Wait(ctx)
	cancel()
	l := s.l
	l.mu.Lock()
	delete(l.sessions, s)
	if err != nil {
		l.drainErr = append(l.drainErr, fmt.Errorf("tcp: listener %s: %w", l.Addr(), err))
	}
	l.mu.Unlock()
}

// readLoop reads frames until the connection fails (handedOff false, with
// the reason). A request whose frame is the last one buffered is served on
// this goroutine, which is already running, so a quick handler costs no
// goroutine switch; if the handler outlasts a watchdog period, a new
// goroutine takes over reading and readLoop returns handedOff true once the
// handler is done. Requests with more frames buffered behind them, and
// requests for a method whose last handler was slow, get their own
// goroutine while this one reads on. Exactly one goroutine reads at any
// time.
func (s *session) readLoop(gen uint64) (handedOff bool, err error) {
	for {
		h, err := s.readHeader(&s.hb, s.l.t.cfg.StallTimeout)
		if err != nil {
			return false, err
		}
		switch h.typ {
		case typeRequest, typeOneWay:
			t, ok, lent, err := s.request(&s.hb, h)
			if err != nil {
				return false, err
			}
			switch {
			case !ok:
				if lent {
					_, _ = s.br.Discard(int(h.length))
				}
			case !lent && (s.br.Buffered() > 0 || s.slow[int(h.method)%len(s.slow)].Load()):
				// More frames are waiting, or the method is slow: keep
				// reading while the handler runs.
				go s.runFresh(t, h.method)
			default:
				// Nothing more to read yet: serve this request on this
				// goroutine, which is already running. A handler that
				// outlasts a watchdog period has reading taken over by a
				// fresh goroutine (watch), so cancels, pings and other
				// requests are never stuck behind it for long.
				seq := s.inlineSeq.Add(1)
				inline := gen<<stateGen | stateInline
				if lent {
					inline |= stateLent
				}
				s.state.Store(inline)
				if !s.watching.Load() && s.watching.CompareAndSwap(false, true) {
					s.watchSeq.Store(seq)
					s.watchdog.Reset(watchPeriod)
				}
				s.runTask(t, h.method)
				//lint:ignore SA4016 stateReading is the zero kind, named so the state reads whole
				if !s.state.CompareAndSwap(inline, gen<<stateGen|stateReading) {
					return true, nil // another goroutine reads now
				}
				if lent {
					_, _ = s.br.Discard(int(h.length))
				}
			}
		case typeCancel:
			if err = noPayload(h); err == nil {
				s.d.Cancel(h.id)
			}
		case typePing:
			if err = noPayload(h); err == nil {
				s.post(typePong, h.id)
			}
		case typePong:
			err = noPayload(h)
		default:
			err = fmt.Errorf("%w: unexpected frame type %d from a client", ErrProtocol, h.typ)
		}
		if err != nil {
			return false, err
		}
	}
}

// request reads a request's payload and accepts it; ok says the returned
// task must be run. When the payload is the last thing in the read buffer
// and its method is quick, the handler is lent the read buffer itself, no
// copy (lent): the task must then be run inline, on the reader goroutine,
// and the payload discarded from the buffer once it returns (or at once
// when !ok). takeOver gives a new reader goroutine a fresh buffer, so the
// lent bytes stay put until the handler is done.
func (s *session) request(hb *[headerSize]byte, h header) (t dispatch.Task, ok, lent bool, err error) {
	var payload []byte
	var bp *[]byte
	n := int(h.length)
	switch {
	case n == 0:
		if err := checkCRC(hb, h, nil); err != nil {
			return t, false, false, err
		}
	case s.br.Buffered() == n && !s.slow[int(h.method)%len(s.slow)].Load():
		payload, _ = s.br.Peek(n) // cannot fail: n bytes are buffered
		payload = payload[:n:n]   // a handler's append must not reach the buffer
		s.received.Add(uint64(n))
		if err := checkCRC(hb, h, payload); err != nil {
			return t, false, false, err
		}
		lent = true
	default:
		if bp, err = s.readBody(hb, h); err != nil {
			return t, false, false, err
		}
		payload = *bp
	}
	if !s.admit() {
		if bp != nil {
			s.release(bp)
		}
		return t, false, false, s.err
	}
	t, ok = s.d.Accept(h.id, h.method, payload, h.typ == typeOneWay, bp)
	return t, ok, lent, nil
}

// readBody reads a request's payload into a buffer of its own and checks
// its CRC. The declared size is reserved against ConnInFlightBytes before
// anything is read or allocated, waiting for this connection's own
// handlers to free it if need be; the buffer is charged to InFlightBytes
// as it grows (bodyReader). On success the dispatcher releases the buffer
// (release); on error nothing stays held.
func (s *session) readBody(hb *[headerSize]byte, h header) (*[]byte, error) {
	n := int(h.length)
	if err := s.held.take(int64(n), 0, s.done, s.touch, s.cfg.KeepaliveInterval); err != nil {
		return nil, err
	}
	bp, err := s.body.read(s.br, n)
	if err != nil {
		s.held.give(int64(n))
		return nil, s.budgetError(err, h)
	}
	if err := checkCRC(hb, h, *bp); err != nil {
		s.release(bp)
		return nil, err
	}
	return bp, nil
}

// charge takes n bytes of buffer from the transport's InFlightBytes,
// waiting up to StallTimeout while they are not free (see Config).
func (s *session) charge(n int) error {
	return s.l.t.mem.take(int64(n), s.cfg.StallTimeout, s.done, s.touch, s.cfg.KeepaliveInterval)
}

// refund gives back to InFlightBytes what charge took for a buffer.
func (s *session) refund(n int) { s.l.t.mem.give(int64(n)) }

// release lets go of a request buffer that body.read returned: its
// capacity goes back to InFlightBytes, its length (the declared size) to
// ConnInFlightBytes, and the buffer to the pool. The dispatcher calls it
// once the request is answered and every loan of the payload returned.
func (s *session) release(bp *[]byte) {
	s.refund(cap(*bp))
	s.held.give(int64(len(*bp)))
	bufpool.Put(bp)
}

// arm sets the stall deadline for the next step of a payload.
func (s *session) arm() error { return s.nc.SetReadDeadline(time.Now().Add(s.cfg.StallTimeout)) }

// disarm clears the stall deadline once a payload is in.
func (s *session) disarm() error { return s.nc.SetReadDeadline(time.Time{}) }

// progress counts n payload bytes in and the peer as heard from.
func (s *session) progress(n int) {
	s.received.Add(uint64(n))
	s.touch()
}

// budgetError says which request waited for how much, when a wait for
// budget failed.
func (s *session) budgetError(err error, h header) error {
	if !errors.Is(err, errBudget) {
		return err
	}
	mem := s.l.t.mem
	return fmt.Errorf("%w: request %d of %d bytes waited StallTimeout %v for buffer memory, with %d of InFlightBytes %d in use by this transport's connections",
		err, h.id, h.length, s.cfg.StallTimeout, mem.used.Load(), mem.limit)
}

// misbehaved reports whether err, which closes an accepted connection,
// is the peer's doing (a malformed or oversized frame, a stall) or a
// budget wait that gave up, rather than a plain end of the connection:
// such closes are logged as warnings.
func misbehaved(err error) bool {
	return errors.Is(err, ErrProtocol) || errors.Is(err, errStalled) || errors.Is(err, errBudget)
}

// admit counts a request in, waiting while the window is full; false when
// the connection failed meanwhile. A client that respects the window never
// waits here; one that does not is slowed down by TCP flow control instead
// of exhausting memory. Only the goroutine reading calls it, so at most one
// waits: the count exceeds the window by at most one, and respond signals
// freed exactly when it brings the count back to the window from above.
// An atomic count, unlike a channel used as a semaphore, takes no lock per
// request.
func (s *session) admit() bool {
	if s.running.Add(1) <= int32(s.window) {
		return true
	}
	select {
	case <-s.freed:
		return true
	case <-s.done:
		return false
	}
}

// respond sends a handler's outcome and frees its window slot; it returns
// once the transport is done reading reply.
func (s *session) respond(id uint64, oneWay bool, reply []byte, err error) {
	if s.running.Add(-1) >= int32(s.window) {
		s.freed <- struct{}{} // admit waits for it
	}
	f := getFrame()
	switch {
	case oneWay:
		putHeader(&f.hdr, typeDone, 0, id, nil, s.crc)
	case err == nil && len(reply) > int(s.peerMax):
		err = fabric.Errorf(fabric.CodeInternal, "reply of %d bytes exceeds the caller's limit of %d bytes", len(reply), s.peerMax)
		fallthrough
	case err != nil:
		f.payload = encodeError(fabric.AsRemote(err))
		putHeader(&f.hdr, typeError, 0, id, f.payload, s.crc)
	default:
		f.payload = reply
		putHeader(&f.hdr, typeReply, 0, id, reply, s.crc)
	}
	queued, werr := s.send(f)
	if werr == nil && queued {
		<-f.written
	}
	putFrame(f)
}
