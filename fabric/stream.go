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
// Chunk payload layout (big-endian): version (1 byte, 1), flags (1 byte:
// 1 first, 2 last, 4 abort), method (2 bytes), stream id (8 bytes, random),
// sequence number (8 bytes, from 0), then the data (for abort, the reason).

// DefaultStreamChunk is the chunk size SendStream uses when given 0.
const DefaultStreamChunk = 1 << 20

const (
	streamVersion    = 1
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

// SendStream sends everything r yields to the peer's StreamReceiver
// handler for method, in chunks of chunkSize bytes (0 means
// DefaultStreamChunk; at most MaxMessageSize less 20 bytes of header),
// one chunk in flight at a time. It returns the number of bytes sent once
// the peer's handler has returned, with the handler's error, r's error
// (after telling the peer to abort), or the connection's. It is safe to
// run several streams on one Conn concurrently.
func SendStream(ctx context.Context, c Conn, method Method, r io.Reader, chunkSize int) (int64, error) {
	if chunkSize == 0 {
		chunkSize = DefaultStreamChunk
	}
	if chunkSize < 1 || chunkSize > MaxMessageSize-streamHeaderSize {
		return 0, fmt.Errorf("fabric: stream chunk size %d is outside [1, %d]", chunkSize, MaxMessageSize-streamHeaderSize)
	}
	var idb [8]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return 0, fmt.Errorf("fabric: choosing a stream id: %w", err)
	}
	id := binary.BigEndian.Uint64(idb[:])
	buf := make([]byte, streamHeaderSize+chunkSize)
	var sent int64
	for seq := uint64(0); ; seq++ {
		n, rerr := io.ReadFull(r, buf[streamHeaderSize:])
		var flags byte
		if seq == 0 {
			flags |= streamFirst
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			flags |= streamLast
		case rerr != nil:
			msg := []byte(rerr.Error())
			chunk := append(buf[:streamHeaderSize:streamHeaderSize], msg...)
			putStreamHeader(chunk, flags|streamAbort, method, id, seq)
			_, _ = c.Call(ctx, MethodStream, chunk)
			return sent, fmt.Errorf("fabric: stream %#x: reading the source after %d bytes: %w", id, sent, rerr)
		}
		chunk := buf[:streamHeaderSize+n]
		putStreamHeader(chunk, flags, method, id, seq)
		if _, err := c.Call(ctx, MethodStream, chunk); err != nil {
			return sent, fmt.Errorf("fabric: stream %#x to %s, chunk %d: %w", id, c.RemoteAddr(), seq, err)
		}
		sent += int64(n)
		if flags&streamLast != 0 {
			return sent, nil
		}
	}
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

type inStream struct {
	pw     *io.PipeWriter
	next   uint64
	result chan error // the handler's error, once
	timer  *time.Timer
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
	streams := s.streams
	s.streams = make(map[uint64]*inStream)
	s.mu.Unlock()
	s.cancel()
	for _, st := range streams {
		s.mu.Lock()
		st.timer.Stop()
		s.mu.Unlock()
		_ = st.pw.CloseWithError(errors.New("fabric: stream receiver closed"))
	}
	s.wg.Wait()
	return nil
}

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

	st, err := s.stream(flags, method, id, req.Peer)
	if err != nil {
		return nil, err
	}
	if seq != st.next {
		s.abort(id, st, fmt.Errorf("fabric: stream %#x: chunk %d arrived, expected %d", id, seq, st.next))
		return nil, Errorf(CodeBadRequest, "stream %#x: chunk %d out of order, expected %d", id, seq, st.next)
	}
	st.next++
	s.mu.Lock()
	st.timer.Reset(s.idle)
	s.mu.Unlock()
	if flags&streamAbort != 0 {
		s.abort(id, st, fmt.Errorf("fabric: stream %#x aborted by the sender: %s", id, data))
		return nil, nil
	}
	stop := context.AfterFunc(ctx, func() {
		_ = st.pw.CloseWithError(fmt.Errorf("fabric: stream %#x: sender cancelled: %w", id, ctx.Err()))
	})
	_, werr := st.pw.Write(data)
	stop()
	if werr == nil && flags&streamLast == 0 {
		return nil, nil
	}
	if werr == nil {
		_ = st.pw.Close()
	}
	// The stream is over: its last chunk, or the handler stopped reading.
	var herr error
	select {
	case herr = <-st.result:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.forget(id, st)
	if herr != nil {
		return nil, AsRemote(herr)
	}
	if werr != nil {
		return nil, Errorf(CodeBadRequest, "stream %#x: handler for method %d returned before reading it all", id, method)
	}
	return nil, nil
}

// stream finds or opens the stream a chunk belongs to.
func (s *StreamReceiver) stream(flags byte, method Method, id uint64, peer string) (*inStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Errorf(CodeUnavailable, "stream receiver is closed")
	}
	st := s.streams[id]
	if flags&streamFirst == 0 {
		if st == nil {
			return nil, Errorf(CodeBadRequest, "stream %#x is unknown: it expired or was never opened", id)
		}
		return st, nil
	}
	if st != nil {
		return nil, Errorf(CodeBadRequest, "stream %#x is already open", id)
	}
	h := s.handlers[method]
	if h == nil {
		return nil, Errorf(CodeUnknownMethod, "no stream handler for method %d", method)
	}
	pr, pw := io.Pipe()
	st = &inStream{pw: pw, result: make(chan error, 1)}
	st.timer = time.AfterFunc(s.idle, func() {
		s.abort(id, st, fmt.Errorf("fabric: stream %#x: no chunk for %v; the sender is presumed gone", id, s.idle))
	})
	s.streams[id] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := h(s.ctx, peer, pr)
		_ = pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		st.result <- err
	}()
	return st, nil
}

// abort ends a stream with err and forgets it without waiting.
func (s *StreamReceiver) abort(id uint64, st *inStream, err error) {
	_ = st.pw.CloseWithError(err)
	s.forget(id, st)
}

func (s *StreamReceiver) forget(id uint64, st *inStream) {
	s.mu.Lock() // st.timer is set under s.mu, possibly after it fired
	st.timer.Stop()
	if s.streams[id] == st {
		delete(s.streams, id)
	}
	s.mu.Unlock()
}
