package adaptive

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
)

// TestServerDropsAcknowledgedReplies: a call's header can name an earlier
// call whose reply the client holds; the server drops that reply at once,
// before the watermark passes it, and a stray duplicate of the
// acknowledged call is refused rather than answered with nothing.
func TestServerDropsAcknowledgedReplies(t *testing.T) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	s := newServer(DefaultConfig().withDefaults(), &bufPool{}, echo)
	defer func() { s.close(); s.wait() }()
	call := func(h header, body string) ([]byte, error) {
		buf := make([]byte, headerSize+len(body))
		h.put(buf)
		copy(buf[headerSize:], body)
		return s.ServeFabric(context.Background(), &fabric.Request{Method: MethodEnvelope, Payload: buf})
	}
	const sid = 7
	// Calls 1 and 2 run; the watermark stays at 1 (call 1 is outstanding
	// as far as the client is concerned).
	for id := uint64(1); id <= 2; id++ {
		reply, err := call(header{Kind: kindCall, Method: mWork, Session: sid, ID: id, Watermark: 1}, "req")
		require.NoError(t, err)
		require.Equal(t, "req", string(reply))
	}
	v, ok := s.sessions.Load(uint64(sid))
	require.True(t, ok)
	sess := v.(*session)
	entry := func(id uint64) *entry {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		return sess.entries[id]
	}
	require.NotNil(t, entry(2).resp, "kept for a re-send until acknowledged")

	// Call 3 acknowledges call 2's reply.
	_, err := call(header{Kind: kindCall, Method: mWork, Session: sid, ID: 3, Watermark: 1, Offset: 2}, "req")
	require.NoError(t, err)
	require.NotNil(t, entry(2), "the entry stays until the watermark passes it")
	require.Nil(t, entry(2).resp, "the acknowledged reply is dropped")
	require.NotNil(t, entry(1).resp, "an unacknowledged reply is kept")

	_, err = call(header{Kind: kindCall, Method: mWork, Session: sid, ID: 2, Watermark: 1}, "req")
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnavailable}, "a duplicate of an acknowledged call is not run again")
}

// lender is a path's fabric.Lender that counts loans and their returns.
type lender struct {
	mu             sync.Mutex
	lent, released int
}

func (l *lender) Lend() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent++
}

func (l *lender) Return() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released++
}

func (l *lender) counts() (lent, released int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lent, l.released
}

// TestServerBorrowsAliasedReplies: a reply that aliases the path's request
// buffer is kept for re-sends by borrowing that buffer when the path lends
// it (no copy), and given back once the client acknowledges the reply, the
// watermark passes it, or the session ends. A re-send gets a copy, since
// the loan may end before its path has sent it. With a path that does not
// lend, the path sends the handler's reply and the server keeps a pooled
// copy; a reply kept for striped fetches is copied too.
func TestServerBorrowsAliasedReplies(t *testing.T) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return r.Payload, nil
	})
	cfg := DefaultConfig()
	cfg.StripeThreshold = 1 << 10
	s := newServer(cfg.withDefaults(), &bufPool{}, echo)
	defer func() { s.close(); s.wait() }()
	const sid = 9
	call := func(l fabric.Lender, h header, body []byte) (reply, buf []byte, err error) {
		buf = make([]byte, headerSize+len(body))
		h.Session = sid
		h.Method = mWork
		h.put(buf)
		copy(buf[headerSize:], body)
		reply, err = s.ServeFabric(context.Background(), &fabric.Request{Method: MethodEnvelope, Payload: buf, Lender: l})
		return reply, buf, err
	}
	path := &lender{}
	body := []byte("request")

	reply, buf1, err := call(path, header{Kind: kindCall, ID: 1, Watermark: 1}, body)
	require.NoError(t, err)
	require.Equal(t, body, reply)
	require.True(t, overlaps(reply, buf1), "the reply is the request's memory, not a copy")
	lent, released := path.counts()
	require.Equal(t, [2]int{1, 0}, [2]int{lent, released}, "borrowed while the reply is kept for re-sends")

	other := &lender{}
	reply, buf, err := call(other, header{Kind: kindCall, ID: 1, Watermark: 1}, body)
	require.NoError(t, err, "a re-send of call 1 on another path")
	require.Equal(t, body, reply)
	require.False(t, overlaps(reply, buf1) || overlaps(reply, buf), "a re-send gets its own copy")
	lent, _ = other.counts()
	require.Zero(t, lent, "a re-send is not run, so it borrows nothing")

	_, _, err = call(path, header{Kind: kindCall, ID: 2, Watermark: 1, Offset: 1}, body)
	require.NoError(t, err)
	lent, released = path.counts()
	require.Equal(t, [2]int{2, 1}, [2]int{lent, released}, "call 2 acknowledges call 1: its loan ends")

	_, _, err = call(path, header{Kind: kindCall, ID: 3, Watermark: 3}, body)
	require.NoError(t, err)
	lent, released = path.counts()
	require.Equal(t, [2]int{3, 2}, [2]int{lent, released}, "the watermark passes call 2: its loan ends")

	reply, buf, err = call(nil, header{Kind: kindCall, ID: 4, Watermark: 3}, body)
	require.NoError(t, err)
	require.Equal(t, body, reply)
	require.True(t, overlaps(reply, buf), "a path that does not lend sends the handler's reply")
	v, ok := s.sessions.Load(uint64(sid))
	require.True(t, ok)
	sess := v.(*session)
	sess.mu.Lock()
	kept := sess.entries[4]
	require.Equal(t, body, kept.resp)
	require.False(t, overlaps(kept.resp, buf), "and the server keeps a copy")
	require.NotNil(t, kept.pooled, "from its pool")
	sess.mu.Unlock()

	large := make([]byte, 2<<10)
	_, _, err = call(path, header{Kind: kindCall, ID: 5, Watermark: 3}, large)
	n, ok := isStripedReply(err)
	require.True(t, ok, "a large reply not asked inline is kept for fetches: %v", err)
	require.Equal(t, len(large), n)
	lent, _ = path.counts()
	require.Equal(t, 3, lent, "a reply served by fetches on any path is a copy")

	s.bye(sid)
	lent, released = path.counts()
	require.Equal(t, [2]int{3, 3}, [2]int{lent, released}, "the session's end gives back every loan")
	sess.mu.Lock()
	require.Nil(t, kept.pooled, "and every pooled copy")
	sess.mu.Unlock()
}

const mWork = fabric.MethodUserBase + 1

// TestClientAcknowledgesLargeRepliesOnly: a call names the latest earlier
// call whose reply of ackMinReply bytes or more arrived, and the server
// drops that reply at once; smaller replies wait for the watermark, which
// saves the server a lookup per call.
func TestClientAcknowledgesLargeRepliesOnly(t *testing.T) {
	n := fabrictest.NewNetwork()
	cfg := DefaultConfig()
	cli, err := New(cfg, n.Node("client"))
	require.NoError(t, err)
	srv, err := New(cfg, n.Node("server"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const mBlock = mWork + 1
	unblock := make(chan struct{})
	var m fabric.Mux
	m.HandleFunc(mWork, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	m.HandleFunc(mBlock, func(context.Context, *fabric.Request) ([]byte, error) {
		<-unblock
		return nil, nil
	})
	l, err := srv.Listen(ctx, "mem:server:0", &m)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	fc, err := cli.Dial(ctx, l.Addr())
	require.NoError(t, err)
	defer func() { require.NoError(t, fc.Close()) }()
	c := fc.(*Conn)
	kept := func(id uint64) (resp []byte, acked bool) {
		var out *entry
		l.(*listener).srv.sessions.Range(func(_, v any) bool {
			sess := v.(*session)
			sess.mu.Lock()
			defer sess.mu.Unlock()
			if e := sess.entries[id]; e != nil {
				out, resp, acked = e, e.resp, e.acked
			}
			return true
		})
		require.NotNil(t, out, "entry %d", id)
		return resp, acked
	}

	// A call in its handler holds the watermark, which would otherwise
	// drop each reply at the next call anyway.
	blocked := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, mBlock, nil)
		blocked <- err
	}()
	defer func() {
		close(unblock)
		require.NoError(t, <-blocked)
	}()
	require.Eventually(t, func() bool { return c.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)

	_, err = c.Call(ctx, mWork, make([]byte, 64))
	require.NoError(t, err)
	require.Zero(t, c.acked.Load(), "a small reply is not acknowledged")
	_, err = c.Call(ctx, mWork, make([]byte, ackMinReply))
	require.NoError(t, err)
	large := c.acked.Load()
	require.NotZero(t, large, "a large reply is acknowledged by the next call")
	resp, acked := kept(large)
	require.Len(t, resp, ackMinReply, "kept until then")
	require.False(t, acked)

	_, err = c.Call(ctx, mWork, make([]byte, 64))
	require.NoError(t, err)
	require.Zero(t, c.acked.Load(), "the acknowledgement went out")
	resp, acked = kept(large)
	require.Nil(t, resp, "the server dropped the acknowledged reply")
	require.True(t, acked)
}
