package fabrictest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

// Setup is what one conformance subtest runs against.
type Setup struct {
	// Client dials; Server listens. They may be the same Transport.
	Client, Server fabric.Transport
	// Addr is passed to Server.Listen ("127.0.0.1:0" for TCP).
	Addr string
	// Kill simulates the death of the peer serving l: its connections
	// break without goodbye (sockets reset, QPs destroyed) and its handlers'
	// contexts are cancelled. Listener.Close is still called afterwards.
	// nil skips the peer-death subtest.
	Kill func(l fabric.Listener)
	// MaxMessageSize is the largest payload the transport accepts as
	// configured here; 0 means fabric.MaxMessageSize.
	MaxMessageSize int
	// MaxInFlight is the per-connection window the transport enforces:
	// calls and one-way messages not yet finished by the peer. Required.
	MaxInFlight int
	// Patience bounds the payload-size subtest's calls (up to 64 MiB each
	// way) before they count as hung; 0 means the suite's usual guard.
	// Transports measured under emulation (Soft-RoCE in a TCG guest moves
	// about 10 MB/s) need more. It never relaxes what the subtest checks.
	Patience time.Duration
}

// Factory returns a fresh Setup for one subtest. It may register cleanups
// with t; it must not start goroutines that outlive the Setup's listeners
// and connections (each subtest checks for leaks).
type Factory func(t *testing.T) Setup

// guard bounds every wait in the suite so that a broken transport fails a
// test instead of hanging it. It is never what a test measures.
const guard = 20 * time.Second

// Method numbers the suite uses.
const (
	mEcho   = fabric.MethodUserBase + iota
	mRecord // records payload order
	mBlock  // blocks until its context ends or the test releases it
	mFail
	mPlain
	mStream
)

// RunConformance runs the fabric contract's tests against the transport f
// builds. Every subtest gets a fresh Setup and checks that no goroutine
// outlives it.
func RunConformance(t *testing.T, f Factory) {
	tests := []struct {
		name string
		run  func(t *testing.T, s Setup)
	}{
		{"Echo", testEcho},
		{"PingWithoutHandler", testPing},
		{"OrderingPerCaller", testOrdering},
		{"ConcurrentCallers", testConcurrent},
		{"PayloadSizes", testPayloadSizes},
		{"StreamWindow", testStreamWindow},
		{"TooLarge", testTooLarge},
		{"Cancellation", testCancellation},
		{"Deadline", testDeadline},
		{"RemoteErrorCodes", testRemoteErrors},
		{"UnknownMethod", testUnknownMethod},
		{"HandlerPanicIsAnError", testHandlerPanic},
		{"PeerKilledMidCall", testPeerKilled},
		{"ListenerCloseInFlight", testListenerClose},
		{"SlowReceiverBoundedWindow", testSlowReceiver},
		{"ConnCloseIdempotent", testConnClose},
		{"Reconnect", testReconnect},
		{"Stats", testStats},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			s := f(t)
			require.NotNil(t, s.Client, "Setup.Client")
			require.NotNil(t, s.Server, "Setup.Server")
			require.Positive(t, s.MaxInFlight, "Setup.MaxInFlight")
			if s.MaxMessageSize == 0 {
				s.MaxMessageSize = fabric.MaxMessageSize
			}
			tc.run(t, s)
		})
	}
}

// server is the handler every subtest uses.
type server struct {
	mu       sync.Mutex
	recorded []uint64
	entered  chan struct{} // one token per mBlock entry
	released chan struct{} // closed to release mBlock handlers
	ended    chan error    // one ctx error per mBlock exit
	peers    chan string
}

func newServer() *server {
	return &server{entered: make(chan struct{}, 1<<16), released: make(chan struct{}), ended: make(chan error, 1<<16),
		peers: make(chan string, 1)}
}

func (s *server) mux() *fabric.Mux {
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		select {
		case s.peers <- r.Peer:
		default:
		}
		return r.Payload, nil // aliasing the request is allowed
	})
	m.HandleFunc(mRecord, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		if len(r.Payload) != 8 {
			return nil, fabric.Errorf(fabric.CodeBadRequest, "want 8 bytes, got %d", len(r.Payload))
		}
		s.mu.Lock()
		s.recorded = append(s.recorded, binary.BigEndian.Uint64(r.Payload))
		s.mu.Unlock()
		return nil, nil
	})
	m.HandleFunc(mBlock, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		s.entered <- struct{}{}
		select {
		case <-ctx.Done():
			s.ended <- ctx.Err()
			return nil, ctx.Err()
		case <-s.released:
			s.ended <- nil
			return []byte("released"), nil
		}
	})
	m.HandleFunc(mFail, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return nil, fabric.Errorf(fabric.CodeUserBase+7, "refused %q", r.Payload)
	})
	m.HandleFunc(mPlain, func(context.Context, *fabric.Request) ([]byte, error) {
		return nil, errors.New("disk on fire")
	})
	return &m
}

func (s *server) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-s.entered:
		case <-time.After(guard):
			require.FailNow(t, "handler was not entered", "waited %v", guard)
		}
	}
}

func (s *server) waitEnded(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.ended:
		return err
	case <-time.After(guard):
		require.FailNow(t, "handler did not return", "waited %v", guard)
		return nil
	}
}

// start listens with h and dials; both are closed when the subtest ends.
func start(t *testing.T, s Setup, h fabric.Handler) (fabric.Listener, fabric.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	l, err := s.Server.Listen(ctx, s.Addr, h)
	require.NoError(t, err, "Listen(%q)", s.Addr)
	t.Cleanup(func() { _ = l.Close() })
	c, err := s.Client.Dial(ctx, l.Addr())
	require.NoError(t, err, "Dial(%q)", l.Addr())
	t.Cleanup(func() { _ = c.Close() })
	return l, c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

func testEcho(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	reply, err := c.Call(testCtx(t), mEcho, []byte("hello, weft"))
	require.NoError(t, err)
	require.Equal(t, "hello, weft", string(reply))
	require.NotEmpty(t, <-srv.peers, "Request.Peer")
	require.Equal(t, s.Client.Name(), c.Stats().Transport)
	require.NotEmpty(t, c.RemoteAddr())
}

func testPing(t *testing.T, s Setup) {
	var fail fabric.HandlerFunc = func(context.Context, *fabric.Request) ([]byte, error) {
		return nil, errors.New("the handler must not see pings")
	}
	_, c := start(t, s, fail)
	reply, err := c.Call(testCtx(t), fabric.MethodPing, []byte("probe"))
	require.NoError(t, err)
	require.Equal(t, "probe", string(reply))
}

func testOrdering(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	const n = 300
	want := make([]uint64, 0, n)
	for i := range uint64(n) {
		p := binary.BigEndian.AppendUint64(nil, i)
		if i%4 == 3 {
			_, err := c.Call(ctx, mRecord, p)
			require.NoError(t, err, "Call %d", i)
		} else {
			require.NoError(t, c.Send(ctx, mRecord, p), "Send %d", i)
		}
		want = append(want, i)
	}
	// A last Call returns only after every earlier message reached the handler.
	_, err := c.Call(ctx, mRecord, binary.BigEndian.AppendUint64(nil, n))
	require.NoError(t, err)
	srv.mu.Lock()
	got := append([]uint64(nil), srv.recorded...)
	srv.mu.Unlock()
	require.Equal(t, append(want, n), got, "handler saw messages out of order")
}

func testConcurrent(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	const callers, calls = 64, 40
	errs := make(chan error, callers)
	for g := range callers {
		go func() {
			for i := range calls {
				p := fmt.Appendf(nil, "caller %d call %d %s", g, i, bytes.Repeat([]byte{'x'}, (g*calls+i)%300))
				reply, err := c.Call(ctx, mEcho, p)
				if err != nil {
					errs <- fmt.Errorf("caller %d call %d: %w", g, i, err)
					return
				}
				if !bytes.Equal(reply, p) {
					errs <- fmt.Errorf("caller %d call %d got another call's reply %.40q", g, i, reply)
					return
				}
			}
			errs <- nil
		}()
	}
	for range callers {
		require.NoError(t, <-errs)
	}
	require.GreaterOrEqual(t, c.Stats().Calls, uint64(callers*calls))
}

// pattern returns n bytes whose content depends on their position.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := 0; i < n && i < 251; i++ {
		p[i] = byte(i*7 + 3)
	}
	for filled := min(n, 251); filled < n; filled *= 2 {
		copy(p[filled:], p[:filled]) // period 251 (prime) so shifted chunks differ
	}
	return p
}

// patience is how long the large transfers of a test may take: the
// setup's Patience, or guard.
func (s Setup) patience() time.Duration {
	if s.Patience == 0 {
		return guard
	}
	return s.Patience
}

func testPayloadSizes(t *testing.T, s Setup) {
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		if !bytes.Equal(r.Payload, pattern(len(r.Payload))) {
			return nil, fabric.Errorf(fabric.CodeBadRequest, "request of %d bytes arrived corrupted", len(r.Payload))
		}
		return r.Payload, nil
	})
	_, c := start(t, s, &m)
	ctx, cancel := context.WithTimeout(context.Background(), s.patience())
	defer cancel()
	for _, size := range []int{0, 1, 64, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20} {
		if size > s.MaxMessageSize {
			t.Logf("skipping %d bytes: above the transport's limit %d", size, s.MaxMessageSize)
			continue
		}
		want := pattern(size)
		reply, err := c.Call(ctx, mEcho, want)
		require.NoError(t, err, "size %d", size)
		require.Len(t, reply, size)
		require.True(t, bytes.Equal(want, reply), "reply of %d bytes differs from the request", size)
		require.True(t, bytes.Equal(want, pattern(size)), "the transport modified the caller's %d-byte payload", size)
	}
}

// testStreamWindow: fabric.SendStream with the widest window (many chunks
// in flight, which the transport may deliver in any order) delivers the
// bytes whole and in order.
func testStreamWindow(t *testing.T, s Setup) {
	recv := fabric.NewStreamReceiver(guard)
	t.Cleanup(func() { _ = recv.Close() })
	const size = 4<<20 + 77
	got := make(chan []byte, 1)
	recv.Handle(mStream, func(_ context.Context, _ string, r io.Reader) error {
		b, err := io.ReadAll(r)
		got <- b
		return err
	})
	var m fabric.Mux
	m.Handle(fabric.MethodStream, recv)
	_, c := start(t, s, &m)
	ctx, cancel := context.WithTimeout(context.Background(), s.patience())
	defer cancel()
	want := pattern(size)
	n, err := fabric.SendStream(ctx, c, mStream, bytes.NewReader(want), fabric.StreamOptions{Chunk: 64 << 10, Window: fabric.MaxStreamWindow})
	require.NoError(t, err)
	require.EqualValues(t, size, n)
	require.True(t, bytes.Equal(want, <-got), "the stream arrived reordered or corrupted")
}

func testTooLarge(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	big := make([]byte, s.MaxMessageSize+1)
	_, err := c.Call(ctx, mEcho, big)
	require.ErrorIs(t, err, fabric.ErrTooLarge)
	require.ErrorIs(t, c.Send(ctx, mEcho, big), fabric.ErrTooLarge)
	reply, err := c.Call(ctx, mEcho, []byte("still fine"))
	require.NoError(t, err, "the connection must survive a refused payload")
	require.Equal(t, "still fine", string(reply))
}

func testCancellation(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil)
		done <- err
	}()
	srv.waitEntered(t, 1)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(guard):
		require.FailNow(t, "Call did not return after its context was cancelled")
	}
	require.ErrorIs(t, srv.waitEnded(t), context.Canceled, "the handler's context must be cancelled")
	reply, err := c.Call(testCtx(t), mEcho, []byte("after"))
	require.NoError(t, err)
	require.Equal(t, "after", string(reply))
}

// expiringCtx is a context whose deadline the test fires by hand, so a
// deadline test does not depend on how fast the machine is.
type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiringCtx(parent context.Context) *expiringCtx {
	return &expiringCtx{Context: parent, done: make(chan struct{})}
}

func (c *expiringCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) expire()                     { c.once.Do(func() { close(c.done) }) }

func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func testDeadline(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := newExpiringCtx(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil)
		done <- err
	}()
	srv.waitEntered(t, 1)
	ctx.expire()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(guard):
		require.FailNow(t, "Call did not return after its deadline passed")
	}
	require.Error(t, srv.waitEnded(t), "the handler's context must end")
	_, err := c.Call(ctx, mEcho, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a Call with an expired context")
	short, cancel := context.WithTimeout(testCtx(t), 20*time.Millisecond)
	defer cancel()
	_, err = c.Call(short, mBlock, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a real timer deadline")
}

func testRemoteErrors(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	_, err := c.Call(ctx, mFail, []byte("x"))
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUserBase + 7})
	var re *fabric.RemoteError
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Message, `refused "x"`)

	_, err = c.Call(ctx, mPlain, nil)
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeInternal})
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Message, "disk on fire")
	require.False(t, errors.Is(err, fabric.ErrClosed), "a handler error must not break the connection")
}

func testUnknownMethod(t *testing.T, s Setup) {
	_, c := start(t, s, &fabric.Mux{})
	_, err := c.Call(testCtx(t), fabric.MethodUserBase+999, []byte("?"))
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})
}

func testHandlerPanic(t *testing.T, s Setup) {
	var m fabric.Mux
	m.HandleFunc(mFail, func(context.Context, *fabric.Request) ([]byte, error) { panic("bad input") })
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	_, c := start(t, s, &m)
	ctx := testCtx(t)
	_, err := c.Call(ctx, mFail, nil)
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeInternal}, "a panicking handler fails its call")
	require.ErrorContains(t, err, "bad input")
	reply, err := c.Call(ctx, mEcho, []byte("alive"))
	require.NoError(t, err, "the server survives a panicking handler")
	require.Equal(t, "alive", string(reply))
}

// failAll starts n blocking calls, runs stop once the handlers hold them,
// and requires every call to fail with fabric.ErrClosed.
func failAll(t *testing.T, s Setup, n int, stop func(l fabric.Listener, c fabric.Conn)) {
	srv := newServer()
	l, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Call(ctx, mBlock, nil)
			done <- err
		}()
	}
	srv.waitEntered(t, n)
	stop(l, c)
	for i := range n {
		select {
		case err := <-done:
			require.ErrorIs(t, err, fabric.ErrClosed, "call %d", i)
		case <-time.After(guard):
			require.FailNow(t, "in-flight call hung", "call %d", i)
		}
	}
	_, err := c.Call(ctx, mEcho, nil)
	require.ErrorIs(t, err, fabric.ErrClosed, "a call on a broken connection")
}

func testPeerKilled(t *testing.T, s Setup) {
	if s.Kill == nil {
		t.Skip("Setup.Kill is nil: this transport cannot simulate peer death")
	}
	failAll(t, s, 8, func(l fabric.Listener, _ fabric.Conn) { s.Kill(l) })
}

func testListenerClose(t *testing.T, s Setup) {
	failAll(t, s, 8, func(l fabric.Listener, _ fabric.Conn) {
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "second Close")
	})
}

func testSlowReceiver(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	// One-way messages to a handler that does not return: without a window
	// they would pile up without bound. A full window's worth goes through;
	// the next Send blocks until its context ends.
	ctx := testCtx(t)
	for i := range s.MaxInFlight {
		require.NoError(t, c.Send(ctx, mBlock, nil), "Send %d of a %d-message window", i, s.MaxInFlight)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := c.Send(short, mBlock, nil)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "Send must block once %d messages are unfinished", s.MaxInFlight)
	require.LessOrEqual(t, c.Stats().InFlight, s.MaxInFlight)
	close(srv.released) // one-way messages are served one at a time, in order
	srv.waitEntered(t, s.MaxInFlight)
	for range s.MaxInFlight {
		require.NoError(t, srv.waitEnded(t))
	}
	// The window frees up once the handlers return: a full window's worth
	// of sends goes through again, and the refused message never arrived.
	for i := range s.MaxInFlight {
		require.NoError(t, c.Send(ctx, mEcho, nil), "Send %d after the handlers returned", i)
	}
	_, err = c.Call(ctx, mEcho, []byte("drained"))
	require.NoError(t, err)
	select {
	case <-srv.entered:
		require.Fail(t, "the Send that timed out reached the handler")
	default:
	}
}

func testConnClose(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil)
		done <- err
	}()
	srv.waitEntered(t, 1)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "second Close")
	select {
	case err := <-done:
		require.ErrorIs(t, err, fabric.ErrClosed)
	case <-time.After(guard):
		require.FailNow(t, "Close did not fail the in-flight call")
	}
	_, err := c.Call(ctx, mEcho, nil)
	require.ErrorIs(t, err, fabric.ErrClosed)
	require.ErrorIs(t, c.Send(ctx, mEcho, nil), fabric.ErrClosed)
	require.ErrorIs(t, srv.waitEnded(t), context.Canceled, "closing the conn cancels its handlers")
}

func testReconnect(t *testing.T, s Setup) {
	srv := newServer()
	ctx := testCtx(t)
	l, c := start(t, s, srv.mux())
	_, err := c.Call(ctx, mEcho, []byte("one"))
	require.NoError(t, err)
	addr := l.Addr()
	require.NoError(t, l.Close())
	_, err = c.Call(ctx, mEcho, []byte("two"))
	require.ErrorIs(t, err, fabric.ErrClosed, "a call to a closed listener")

	l2, err := s.Server.Listen(ctx, addr, srv.mux())
	require.NoError(t, err, "Listen again on %s", addr)
	t.Cleanup(func() { _ = l2.Close() })
	c2, err := s.Client.Dial(ctx, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Close() })
	reply, err := c2.Call(ctx, mEcho, []byte("three"))
	require.NoError(t, err)
	require.Equal(t, "three", string(reply))
}

func testStats(t *testing.T, s Setup) {
	srv := newServer()
	_, c := start(t, s, srv.mux())
	ctx := testCtx(t)
	before := c.Stats()
	for range 3 {
		_, err := c.Call(ctx, mEcho, make([]byte, 100))
		require.NoError(t, err)
	}
	_, err := c.Call(ctx, mFail, nil)
	require.Error(t, err)
	for range 2 {
		require.NoError(t, c.Send(ctx, mEcho, make([]byte, 50)))
	}
	_, err = c.Call(ctx, mEcho, nil) // the sends have reached the handler
	require.NoError(t, err)
	after := c.Stats()
	require.Equal(t, s.Client.Name(), after.Transport)
	require.GreaterOrEqual(t, after.Calls-before.Calls, uint64(5))
	require.GreaterOrEqual(t, after.CallErrors-before.CallErrors, uint64(1))
	require.GreaterOrEqual(t, after.Sends-before.Sends, uint64(2))
	require.GreaterOrEqual(t, after.BytesSent-before.BytesSent, uint64(400))
	require.GreaterOrEqual(t, after.BytesReceived-before.BytesReceived, uint64(300))
}
