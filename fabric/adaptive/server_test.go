package adaptive

import (
	"context"
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

const mWork = fabric.MethodUserBase + 1
