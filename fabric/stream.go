package fabric

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Streams carry payloads larger than one message (shard recovery, snapshot
// copies) over any Conn: SendStream cuts a reader into chunks, each one
// Call with MethodStream, and the peer's StreamReceiver feeds them, in
// order, to the handler registered for the stream's method as an io.Reader.
//
// Chunk payload layout (big-endian): version (1 byte, 2), flags (1 byte:
// 1 first, 2 last, 4 abort), method (2 bytes), stream id (8 bytes, random),
// sequence number (8 bytes, from 0), then the data (for abort, the reason).
//
// Version 2 keeps several chunks in flight. The sender sends chunk 0 (the
// one that opens the stream) alone, then up to its window of chunks at a
// time. They may arrive in any order — a transport spreads concurrent calls
// over several sockets — and the receiver holds a chunk that arrives early
// (at most MaxStreamWindow ahead of the next one due) until the handler has
// read every chunk before it. An abort chunk ends the stream at once,
// whatever its sequence number. Each chunk's call returns once the handler
// has read its data (the last chunk's once the handler has returned), so
// the sender's window bounds what the receiver holds.

// DefaultStreamChunk is the chunk size SendStream uses when given 0.
const DefaultStreamChunk = 1 << 20

// DefaultStreamWindow is the number of chunks SendStream keeps in flight
// when given 0.
const DefaultStreamWindow = 4

// MaxStreamWindow is the most chunks a stream may have in flight: a
// receiver refuses (and aborts the stream for) a chunk further ahead.
const MaxStreamWindow = 16

const (
	streamVersion    = 2
	streamHeaderSize = 20
	streamFirst      = 1
	streamLast       = 2
	streamAbort      = 4
)

// StreamHandler consumes one incoming stream. r yields the stream's bytes
// in order and io.EOF at its end, or an error if the sender aborted, went
// silent or cancelled. The error StreamHandler returns is what the
// sender's SendStream returns (as a *RemoteError). ctx ends when the
// receiver closes.
type StreamHandler func(ctx context.Context, peer string, r io.Reader) error

// StreamOptions tune SendStream; the zero value takes the defaults.
type StreamOptions struct {
	// Chunk is the data bytes per chunk: 0 means DefaultStreamChunk; at
	// most MaxMessageSize less 20 bytes of header.
	Chunk int
	// Window is the most chunks in flight: 0 means DefaultStreamWindow;
	// at most MaxStreamWindow. SendStream holds Window buffers of Chunk
	// bytes.
	Window int
}

func (o StreamOptions) withDefaults() (StreamOptions, error) {
	if o.Chunk == 0 {
		o.Chunk = DefaultStreamChunk
	}
	if o.Window == 0 {
		o.Window = DefaultStreamWindow
	}
	if o.Chunk < 1 || o.Chunk > MaxMessageSize-streamHeaderSize {
		return o, fmt.Errorf("fabric: stream chunk size %d is outside [1, %d]", o.Chunk, MaxMessageSize-streamHeaderSize)
	}
	if o.Window < 1 || o.Window > MaxStreamWindow {
		return o, fmt.Errorf("fabric: stream window %d is outside [1, %d]", o.Window, MaxStreamWindow)
	}
	return o, nil
}

// SendStream sends everything r yields to the peer's StreamReceiver
// handler for method, in chunks, several in flight (see StreamOptions). r
// is read from this goroutine only, while earlier chunks travel. It
// returns the number of bytes the peer's handler took, once the handler
// has returned, with the handler's error, r's error (after telling the
// peer to abort), or the connection's. It is safe to run several streams
// on one Conn concurrently.
func SendStream(ctx context.Context, c Conn, method Method, r io.Reader, o StreamOptions) (int64, error) {
	o, err := o.withDefaults()
	if err != nil {
		return 0, err
	}
	var idb [8]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return 0, fmt.Errorf("fabric: choosing a stream id: %w", err)
	}
	s := &streamSender{ctx: ctx, c: c, method: method, id: binary.BigEndian.Uint64(idb[:]), free: make(chan []byte, o.Window)}
	for range o.Window {
		s.free <- nil // a buffer is made when first needed
	}
	for seq := uint64(0); ; seq++ {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-ctx.Done():
			s.fail(seq, ctx.Err())
		}
		if err := s.failed(); err != nil {
			s.abort(seq, err)
			s.wg.Wait()
			return s.acked, err
		}
		if buf == nil {
			buf = make([]byte, streamHeaderSize+o.Chunk)
		}
		n, rerr := io.ReadFull(r, buf[streamHeaderSize:])
		var flags byte
		if seq == 0 {
			flags |= streamFirst
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			flags |= streamLast
		case rerr != nil:
			// Everything read before is the peer's: let it take that,
			// then abort.
			s.wg.Wait()
			if err := s.failed(); err != nil {
				return s.acked, err
			}
			err := fmt.Errorf("fabric: stream %#x: reading the source after %d bytes: %w", s.id, s.acked, rerr)
			s.abort(seq, rerr)
			return s.acked, err
		}
		chunk := buf[:streamHeaderSize+n]
		putStreamHeader(chunk, flags, method, s.id, seq)
		if seq == 0 {
			// The first chunk opens the stream: the others wait until it
			// is open.
			s.send(seq, chunk)
		} else {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.send(seq, chunk)
			}()
		}
		if flags&streamLast != 0 {
			s.wg.Wait()
			return s.acked, s.failed()
		}
	}
}

// streamSender is one SendStream's chunks in flight.
type streamSender struct {
	ctx    context.Context
	c      Conn
	method Method
	id     uint64
	wg     sync.WaitGroup // the chunks in flight
	free   chan []byte    // buffers not in flight (nil: not made yet)

	mu    sync.Mutex
	err   error // the first failure
	acked int64 // data bytes of the chunks the peer took
}

// send calls the peer with one chunk and gives its buffer back.
func (s *streamSender) send(seq uint64, chunk []byte) {
	_, err := s.c.Call(s.ctx, MethodStream, chunk)
	s.mu.Lock()
	if err == nil {
		s.acked += int64(len(chunk) - streamHeaderSize)
	}
	s.mu.Unlock()
	if err != nil {
		s.fail(seq, fmt.Errorf("fabric: stream %#x to %s, chunk %d: %w", s.id, s.c.RemoteAddr(), seq, err))
	}
	s.free <- chunk[:cap(chunk)]
}

// fail records the stream's first failure: the one every later one
// follows from (the peer ends the stream on its first error and the others
// report that).
func (s *streamSender) fail(seq uint64, err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *streamSender) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// abort tells the peer to end the stream for cause, so that the chunks it
// holds return at once; best effort (the stream may be over already, or
// the connection gone).
func (s *streamSender) abort(seq uint64, cause error) {
	if s.ctx.Err() != nil {
		return // the peer's handlers of the cancelled calls abort it
	}
	msg := []byte(cause.Error())
	chunk := make([]byte, streamHeaderSize, streamHeaderSize+len(msg))
	putStreamHeader(chunk, streamAbort, s.method, s.id, seq)
	_, _ = s.c.Call(s.ctx, MethodStream, append(chunk, msg...))
}

func putStreamHeader(b []byte, flags byte, method Method, id, seq uint64) {
	b[0] = streamVersion
	b[1] = flags
	binary.BigEndian.PutUint16(b[2:], uint16(method))
	binary.BigEndian.PutUint64(b[4:], id)
	binary.BigEndian.PutUint64(b[12:], seq)
}

// StreamReceiver is the server side of SendStream: register it for
// MethodStream on the server's Mux and register a StreamHandler per
// method with Handle. Its methods are safe for concurrent use.
type StreamReceiver struct {
	idle   time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	handlers map[Method]StreamHandler
	streams  map[uint64]*inStream
	closed   bool
}

var _ Handler = (*StreamReceiver)(nil)

// inStream is one incoming stream.
type inStream struct {
	id      uint64
	pw      *io.PipeWriter
	handled chan struct{} // closed when the handler has returned
	herr    error         // the handler's error, set before handled closes
	ended   chan struct{} // closed when the stream ends: handled, or aborted

	// Under StreamReceiver.mu.
	timer   *time.Timer
	next    uint64                   // the sequence number the handler reads next
	busy    bool                     // chunk next is being written (or handed its turn)
	waiting map[uint64]chan struct{} // chunks that came early, closed at their turn
	over    bool                     // ended is closed
	cause   error                    // why it ended
}

// NewStreamReceiver returns a receiver that aborts a stream when no chunk
// arrives for idle (a sender that died mid-stream).
func NewStreamReceiver(idle time.Duration) *StreamReceiver {
	ctx, cancel := context.WithCancel(context.Background())
	return &StreamReceiver{idle: idle, ctx: ctx, cancel: cancel,
		handlers: make(map[Method]StreamHandler), streams: make(map[uint64]*inStream)}
}

// Handle registers h for streams sent to method.
func (s *StreamReceiver) Handle(method Method, h StreamHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

// Close aborts open streams and waits for their handlers. Idempotent.
func (s *StreamReceiver) Close() error {
	s.mu.Lock()
	s.closed = true
	streams := make([]*inStream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	s.cancel()
	for _, st := range streams {
		s.abort(st, errors.New("fabric: stream receiver closed"))
	}
	s.wg.Wait()
	return nil
}

// errAborted is turn's answer to an abort chunk: the chunk is served.
var errAborted = errors.New("aborted")

// ServeFabric takes one chunk. It blocks until the stream's handler has
// read the chunk's data, and for the last chunk until the handler returns.
func (s *StreamReceiver) ServeFabric(ctx context.Context, req *Request) ([]byte, error) {
	p := req.Payload
	if len(p) < streamHeaderSize || p[0] != streamVersion {
		return nil, Errorf(CodeBadRequest, "stream chunk of %d bytes without a version-%d header", len(p), streamVersion)
	}
	flags := p[1]
	method := Method(binary.BigEndian.Uint16(p[2:]))
	id := binary.BigEndian.Uint64(p[4:])
	seq := binary.BigEndian.Uint64(p[12:])
	data := p[streamHeaderSize:]

	var st *inStream
	var err error
	if flags&streamFirst != 0 && flags&streamAbort == 0 {
		st, err = s.open(method, id, seq, req.Peer)
	} else {
		st, err = s.turn(ctx, id, seq, flags, data)
	}
	if errors.Is(err, errAborted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// This chunk's turn: every chunk before it has been read.
	stop := context.AfterFunc(ctx, func() {
		s.abort(st, fmt.Errorf("fabric: stream %#x: sender cancelled: %w", id, ctx.Err()))
	})
	_, werr := st.pw.Write(data)
	stop()
	if werr == nil && flags&streamLast == 0 {
		s.advance(st)
		return nil, nil
	}
	if werr == nil {
		_ = st.pw.Close()
	}
	// The stream is over: its last chunk, or the handler stopped reading
	// (it returned, or the stream was aborted).
	select {
	case <-st.handled:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.forget(st)
	if st.herr != nil {
		return nil, AsRemote(st.herr)
	}
	if werr != nil {
		return nil, Errorf(CodeBadRequest, "stream %#x: handler for method %d returned before reading it all", id, method)
	}
	return nil, nil
}

// open starts a stream with its first chunk (seq 0), whose turn it is.
func (s *StreamReceiver) open(method Method, id, seq uint64, peer string) (*inStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Errorf(CodeUnavailable, "stream receiver is closed")
	}
	if seq != 0 {
		return nil, Errorf(CodeBadRequest, "stream %#x: first chunk with sequence number %d", id, seq)
	}
	if s.streams[id] != nil {
		return nil, Errorf(CodeBadRequest, "stream %#x is already open", id)
	}
	h := s.handlers[method]
	if h == nil {
		return nil, Errorf(CodeUnknownMethod, "no stream handler for method %d", method)
	}
	pr, pw := io.Pipe()
	st := &inStream{id: id, pw: pw, handled: make(chan struct{}), ended: make(chan struct{}),
		busy: true, waiting: map[uint64]chan struct{}{}}
	st.timer = time.AfterFunc(s.idle, func() {
		s.abort(st, fmt.Errorf("fabric: stream %#x: no chunk for %v; the sender is presumed gone", id, s.idle))
	})
	s.streams[id] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := h(s.ctx, peer, pr)
		_ = pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		st.herr = err
		close(st.handled)
		s.end(st, fmt.Errorf("fabric: stream %#x: its handler returned (%v)", id, err))
	}()
	return st, nil
}

// turn finds the stream of a later chunk and waits until every chunk
// before it has been read; it returns errAborted when the chunk was an
// abort and has ended the stream.
func (s *StreamReceiver) turn(ctx context.Context, id, seq uint64, flags byte, data []byte) (*inStream, error) {
	s.mu.Lock()
	st := s.streams[id]
	if st == nil {
		s.mu.Unlock()
		return nil, Errorf(CodeBadRequest, "stream %#x is unknown: it ended, expired or was never opened", id)
	}
	st.timer.Reset(s.idle)
	if flags&streamAbort != 0 {
		s.mu.Unlock()
		s.abort(st, fmt.Errorf("fabric: stream %#x aborted by the sender: %s", id, data))
		return nil, errAborted
	}
	if seq == st.next && !st.busy {
		st.busy = true
		s.mu.Unlock()
		return st, nil
	}
	if seq <= st.next || seq >= st.next+MaxStreamWindow || st.waiting[seq] != nil {
		next := st.next
		s.mu.Unlock()
		err := Errorf(CodeBadRequest, "stream %#x: chunk %d arrived while chunk %d is due (a repeat, or more than %d ahead)", id, seq, next, MaxStreamWindow)
		s.abort(st, err)
		return nil, err
	}
	mine := make(chan struct{})
	st.waiting[seq] = mine
	s.mu.Unlock()
	select {
	case <-mine:
		return st, nil
	case <-st.ended:
		s.mu.Lock()
		delete(st.waiting, seq)
		cause := st.cause
		s.mu.Unlock()
		select {
		case <-st.handled:
			if st.herr != nil {
				return nil, AsRemote(st.herr)
			}
		default:
		}
		return nil, Errorf(CodeUnavailable, "stream %#x ended before chunk %d: %v", id, seq, cause)
	case <-ctx.Done():
		s.abort(st, fmt.Errorf("fabric: stream %#x: sender cancelled chunk %d: %w", id, seq, ctx.Err()))
		return nil, ctx.Err()
	}
}

// advance marks the chunk being written read and hands the turn to the
// next one if it is waiting.
func (s *StreamReceiver) advance(st *inStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.next++
	if ch, ok := st.waiting[st.next]; ok {
		delete(st.waiting, st.next)
		close(ch) // busy passes to it
		return
	}
	st.busy = false
}

// abort ends a stream with err and forgets it without waiting.
func (s *StreamReceiver) abort(st *inStream, err error) {
	_ = st.pw.CloseWithError(err)
	s.end(st, err)
	s.forget(st)
}

// end marks the stream over, waking the chunks waiting for their turn.
func (s *StreamReceiver) end(st *inStream, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.over {
		st.over, st.cause = true, cause
		close(st.ended)
	}
}

func (s *StreamReceiver) forget(st *inStream) {
	s.mu.Lock() // st.timer is reset under s.mu, possibly after it fired
	st.timer.Stop()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
}
