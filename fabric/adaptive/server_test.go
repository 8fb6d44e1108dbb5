package adaptive

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// TestServerDropsAcknowledgedReplies: a call's header can name an earlier
// call whose reply the client holds; the server drops that reply at once,
// before the watermark passes it, and a stray duplicate of the
// acknowledged call is refused rather than answered with nothing.
func TestServerDropsAcknowledgedReplies(t *testing.T) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	s := newServer(DefaultConfig().withDefaults(), echo)
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

// lender is a path's fabric.Lender that counts loans and their releases.
type lender struct {
	mu             sync.Mutex
	lent, released int
}

func (l *lender) Lend() func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lent++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.released++
			l.mu.Unlock()
		})
	}
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
// the loan may end before its path has sent it; a path that does not lend,
// and a reply kept for striped fetches, get copies too.
func TestServerBorrowsAliasedReplies(t *testing.T) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return r.Payload, nil
	})
	cfg := DefaultConfig()
	cfg.StripeThreshold = 1 << 10
	s := newServer(cfg.withDefaults(), echo)
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
	require.False(t, overlaps(reply, buf), "a path that does not lend: the kept reply is a copy")

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
}

const mWork = fabric.MethodUserBase + 1
