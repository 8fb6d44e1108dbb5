package tcp

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// frame is one outgoing frame: its header and the caller's payload, written
// together with one writev. A frame handed to link.send is read by the
// transport until the send returns unqueued or written is signalled.
type frame struct {
	hdr     [headerSize]byte
	payload []byte
	// vec, when not nil, is the payload in pieces (CallVector), each
	// written as its own iovec; payload is then nil.
	vec [][]byte
	// written receives the write's outcome when the frame went through the
	// queue; nil for fire-and-forget control frames (whose payload is nil).
	written chan error
}

// readBufferSize is the size of each socket's read buffer: one read system
// call takes in a 16 KiB frame and its header with room to spare.
const readBufferSize = 64 << 10

var framePool = sync.Pool{New: func() any { return &frame{written: make(chan error, 1)} }}

func getFrame() *frame { return framePool.Get().(*frame) }

// putFrame recycles f; its written channel must be empty.
func putFrame(f *frame) {
	f.payload, f.vec = nil, nil
	framePool.Put(f)
}

// link is the half of a connection both sides share: the socket, the
// writer (direct write from the caller when idle, else a queue drained by
// one goroutine into one writev), keepalive and failure.
type link struct {
	cfg    *Config
	log    *slog.Logger
	nc     net.Conn
	tcp    *net.TCPConn // the socket under TLS too, for linger
	br     *bufio.Reader
	bw     *bufio.Writer // TLS only: net.Buffers cannot writev through TLS
	remote string
	// peerMax is the largest payload the peer accepts; localMax ours.
	peerMax, localMax uint32
	crc               bool
	window            int // the smaller of both sides' MaxInFlight

	// wstate says who writes (see send): wBusy while a caller or the
	// writer goroutine owns the socket's write side, wQueued once frames
	// may wait in wq for that owner, wFailed after fail. A caller that
	// finds it zero writes with one compare-and-swap to take it and one to
	// give it back; wmu guards only the queue.
	wstate atomic.Uint32
	wmu    sync.Mutex
	wq     []*frame
	wspare []*frame
	werr   error
	kick   chan struct{}
	one    [1]*frame   // the direct writer's batch
	wbufs  net.Buffers // the current writev; a field so WriteTo does not allocate
	wfill  net.Buffers

	heard    atomic.Uint64 // frames (and large-payload steps) received; keepalive watches it
	sent     atomic.Uint64
	received atomic.Uint64

	done     chan struct{}
	failOnce sync.Once
	err      error // why the link failed; set before done is closed
	onFail   func(err error)
	onPing   func()         // after the keepalive queued a ping: someone must read the pong
	wg       sync.WaitGroup // writer and keepalive goroutines
	writes   atomic.Uint64  // write system calls (writev or TLS flush), for tests
}

func newLink(cfg *Config, log *slog.Logger, nc net.Conn, raw *net.TCPConn, remote string) *link {
	l := &link{
		cfg: cfg, log: log, nc: nc, tcp: raw, remote: remote,
		br:       bufio.NewReaderSize(nc, readBufferSize),
		localMax: uint32(cfg.MaxMessageSize),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if _, isTLS := nc.(*tls.Conn); isTLS {
		l.bw = bufio.NewWriterSize(nc, 64<<10)
	}
	l.touch()
	return l
}

// touch records that the peer was heard from. It reads no clock: the
// keepalive notices the count moving once per KeepaliveInterval.
func (l *link) touch() { l.heard.Add(1) }

// handshake exchanges hello frames: the client writes first. It runs
// before any other goroutine uses the link.
func (l *link) handshake(client bool, deadline time.Time) error {
	if err := l.nc.SetDeadline(deadline); err != nil {
		return err
	}
	mine := hello{maxMessage: l.localMax, window: uint32(l.cfg.MaxInFlight), wantCRC: l.cfg.Checksum}
	write := func() error {
		p := mine.encode()
		var hb [headerSize]byte
		putHeader(&hb, typeHello, 0, 0, p, true)
		_, err := l.nc.Write(append(hb[:], p...))
		return err
	}
	if client {
		if err := write(); err != nil {
			return fmt.Errorf("sending hello: %w", err)
		}
	}
	var hb [headerSize]byte
	h, p, err := readFrame(l.br, &hb, helloPayload, func(n int) []byte { return make([]byte, n) }, nil)
	if err != nil {
		return fmt.Errorf("reading hello: %w", err)
	}
	if h.typ != typeHello {
		return fmt.Errorf("%w: first frame has type %d, want hello", ErrProtocol, h.typ)
	}
	if h.method != 0 || h.id != 0 {
		return fmt.Errorf("%w: hello with method %d and id %d, want 0 and 0", ErrProtocol, h.method, h.id)
	}
	theirs, err := decodeHello(p)
	if err != nil {
		return err
	}
	if !client {
		if err := write(); err != nil {
			return fmt.Errorf("sending hello: %w", err)
		}
	}
	l.peerMax = theirs.maxMessage
	l.crc = mine.wantCRC || theirs.wantCRC
	l.window = min(l.cfg.MaxInFlight, int(theirs.window))
	return l.nc.SetDeadline(time.Time{})
}

// start runs the writer and keepalive goroutines; fail stops them.
func (l *link) start() {
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		l.writeLoop()
	}()
	go func() {
		defer l.wg.Done()
		l.keepalive()
	}()
}

// Write states, the bits of link.wstate.
const (
	wBusy   = 1 << iota // a caller or the writer goroutine is writing
	wQueued             // frames may wait in wq: the owner must look
	wFailed             // the link failed
)

// send writes f from the calling goroutine when no one else is writing,
// else queues it for the writer goroutine. queued reports which: when
// true, f.written (if set) is signalled once the writer is done with f.
func (l *link) send(f *frame) (queued bool, err error) {
	if !l.wstate.CompareAndSwap(0, wBusy) {
		return true, l.enqueue(f)
	}
	l.one[0] = f
	err = l.writeFrames(l.one[:])
	l.one[0] = nil
	if err != nil {
		l.fail(fmt.Errorf("writing to %s: %v", l.remote, err))
		return false, l.err
	}
	if !l.wstate.CompareAndSwap(wBusy, 0) {
		// Frames were queued behind this write: the writer goroutine
		// takes over the write side, wBusy and all.
		l.kickWriter()
	}
	return false, nil
}

// enqueue puts f in the queue for whoever owns the write side, becoming
// that owner for the writer goroutine when nobody does. It never writes
// itself.
func (l *link) enqueue(f *frame) error {
	l.wmu.Lock()
	if l.werr != nil {
		l.wmu.Unlock()
		return l.werr
	}
	l.wq = append(l.wq, f)
	kick := false
	for {
		st := l.wstate.Load()
		if st&wBusy != 0 {
			// Tell the owner, which looks at the queue before letting go.
			if st&wQueued != 0 || l.wstate.CompareAndSwap(st, st|wQueued) {
				break
			}
		} else if l.wstate.CompareAndSwap(st, st|wBusy|wQueued) {
			kick = true // the owner left: the writer goroutine takes over
			break
		}
	}
	l.wmu.Unlock()
	if kick {
		l.kickWriter()
	}
	return nil
}

func (l *link) kickWriter() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// unqueue removes f from the queue if the writer has not taken it yet.
func (l *link) unqueue(f *frame) bool {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	for i, q := range l.wq {
		if q == f {
			l.wq = append(l.wq[:i], l.wq[i+1:]...)
			l.wq = l.wq[:len(l.wq):len(l.wq)] // the tail slot must not alias
			return true
		}
	}
	return false
}

// post queues a fire-and-forget control frame for the writer goroutine.
// It never writes itself, so reader goroutines that post never block on a
// full socket: each side keeps reading, and the peers cannot deadlock
// writing to each other.
func (l *link) post(typ uint8, id uint64) {
	f := &frame{}
	putHeader(&f.hdr, typ, 0, id, nil, l.crc)
	_ = l.enqueue(f) // a failed link drops it
}

// writeLoop is the writer goroutine: kicked when it owns the write side
// (wBusy), it writes the queue in batches until the queue is empty, then
// lets go.
func (l *link) writeLoop() {
	for {
		select {
		case <-l.kick:
		case <-l.done:
			return
		}
		for {
			l.wmu.Lock()
			batch := l.wq
			if len(batch) == 0 || l.werr != nil {
				l.wstate.And(^uint32(wBusy | wQueued))
				l.wmu.Unlock()
				break
			}
			l.wq = l.wspare[:0]
			l.wstate.And(^uint32(wQueued)) // the batch is taken; enqueue sets it again
			l.wmu.Unlock()

			err := l.writeFrames(batch)
			if err != nil {
				err = fmt.Errorf("writing to %s: %v", l.remote, err)
				l.fail(err)
				err = l.err
			}
			for i, f := range batch {
				if f.written != nil {
					f.written <- err
				}
				batch[i] = nil
			}
			l.wmu.Lock()
			l.wspare = batch[:0]
			l.wmu.Unlock()
		}
	}
}

// writeFrames writes fs with one writev (or one TLS flush). Only the
// goroutine owning the write side (wBusy) calls it.
func (l *link) writeFrames(fs []*frame) error {
	var n int
	if l.bw != nil {
		for _, f := range fs {
			_, _ = l.bw.Write(f.hdr[:])
			_, _ = l.bw.Write(f.payload)
			n += len(f.payload)
			for _, p := range f.vec {
				_, _ = l.bw.Write(p)
				n += len(p)
			}
		}
		l.sent.Add(uint64(n))
		l.writes.Add(1)
		return l.bw.Flush()
	}
	bufs := l.wfill[:0]
	for _, f := range fs {
		bufs = append(bufs, f.hdr[:])
		if len(f.payload) > 0 {
			bufs = append(bufs, f.payload)
			n += len(f.payload)
		}
		for _, p := range f.vec {
			if len(p) > 0 {
				bufs = append(bufs, p)
				n += len(p)
			}
		}
	}
	l.wfill = bufs
	l.wbufs = bufs
	l.writes.Add(1)
	_, err := l.wbufs.WriteTo(l.nc)
	clear(bufs) // drop references to callers' payloads
	l.sent.Add(uint64(n))
	return err
}

func (l *link) keepalive() {
	t := time.NewTicker(l.cfg.KeepaliveInterval)
	defer t.Stop()
	heard, lastHeard := l.heard.Load(), time.Now()
	for {
		var now time.Time
		select {
		case <-l.done:
			return
		case now = <-t.C:
		}
		if n := l.heard.Load(); n != heard {
			heard, lastHeard = n, now
		}
		idle := now.Sub(lastHeard)
		if idle > l.cfg.IdleTimeout {
			l.fail(fmt.Errorf("nothing heard from %s for %v (IdleTimeout %v): peer presumed dead",
				l.remote, idle.Round(time.Millisecond), l.cfg.IdleTimeout))
			return
		}
		if idle >= l.cfg.KeepaliveInterval {
			l.post(typePing, 0)
			if l.onPing != nil {
				l.onPing()
			}
		}
	}
}

// fail breaks the link once: queued frames and, through onFail, in-flight
// calls get an error wrapping fabric.ErrClosed.
func (l *link) fail(cause error) {
	l.failOnce.Do(func() {
		l.err = fmt.Errorf("tcp: connection %s: %v: %w", l.remote, cause, fabric.ErrClosed)
		l.wmu.Lock()
		l.werr = l.err
		l.wstate.Or(wFailed)
		q := l.wq
		l.wq = nil
		l.wmu.Unlock()
		for _, f := range q {
			if f.written != nil {
				f.written <- l.err
			}
		}
		close(l.done)
		_ = l.nc.Close()
		if l.onFail != nil {
			l.onFail(l.err)
		}
		l.log.Debug("fabric connection closed", "remote", l.remote, "reason", cause)
	})
}

// kill resets the connection without goodbye, as a crashed peer would.
func (l *link) kill() {
	if l.tcp != nil {
		_ = l.tcp.SetLinger(0)
	}
	l.fail(fmt.Errorf("killed"))
}

// readHeader reads the next frame header. It waits as long as it takes
// for the header's first byte (an idle connection is fine; the keepalive
// watches it), but when the rest is not buffered with it, the rest must
// arrive within stall (StallTimeout), else errStalled. Only accepted
// connections read this way, so the read deadline is theirs to use.
func (l *link) readHeader(hb *[headerSize]byte, stall time.Duration) (header, error) {
	if l.br.Buffered() < headerSize {
		if _, err := l.br.Peek(1); err != nil {
			return header{}, err
		}
	}
	if l.br.Buffered() < headerSize {
		if err := l.nc.SetReadDeadline(time.Now().Add(stall)); err != nil {
			return header{}, err
		}
		n, err := io.ReadFull(l.br, hb[:])
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = stallError(err, fmt.Sprintf("the last %d bytes of a frame header", headerSize-n), stall)
			}
			return header{}, unexpectedEOF(err)
		}
		if err := l.nc.SetReadDeadline(time.Time{}); err != nil {
			return header{}, err
		}
	} else {
		_, _ = io.ReadFull(l.br, hb[:]) // buffered: cannot fail
	}
	l.touch()
	return decodeHeader(hb, l.localMax)
}

// noPayload rejects a control frame that carries bytes.
func noPayload(h header) error {
	if h.length != 0 {
		return fmt.Errorf("%w: control frame type %d carries %d bytes", ErrProtocol, h.typ, h.length)
	}
	return nil
}
