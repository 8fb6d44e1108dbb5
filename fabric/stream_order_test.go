package fabric

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of how a StreamReceiver orders chunks that arrive out of order,
// with chunks handed to ServeFabric directly so that the order is the
// test's, not a transport's.

const mOrder = MethodUserBase + 41

func orderChunk(flags byte, id, seq uint64, data string) *Request {
	b := make([]byte, streamHeaderSize, streamHeaderSize+len(data))
	putStreamHeader(b, flags, mOrder, id, seq)
	return &Request{Method: MethodStream, Payload: append(b, data...), Peer: "p"}
}

// orderReceiver returns a receiver whose handler sends what it read, and
// its error, on the returned channels.
func orderReceiver(t *testing.T, handlerErr error) (*StreamReceiver, chan string, chan error) {
	t.Helper()
	recv := NewStreamReceiver(10 * time.Second)
	t.Cleanup(func() { require.NoError(t, recv.Close()) })
	got, readErr := make(chan string, 1), make(chan error, 1)
	recv.Handle(mOrder, func(_ context.Context, _ string, r io.Reader) error {
		if handlerErr != nil {
			b := make([]byte, 1)
			_, err := io.ReadFull(r, b)
			readErr <- err
			return handlerErr
		}
		b, err := io.ReadAll(r)
		got <- string(b)
		readErr <- err
		return err
	})
	return recv, got, readErr
}

// serveAsync serves one chunk on its own goroutine.
func serveAsync(recv *StreamReceiver, req *Request) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := recv.ServeFabric(context.Background(), req)
		done <- err
	}()
	return done
}

// waiting is how many chunks of stream id wait for their turn.
func waiting(recv *StreamReceiver, id uint64) int {
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if st := recv.streams[id]; st != nil {
		return len(st.waiting)
	}
	return -1
}

func requireBlocked(t *testing.T, ch chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("chunk served before its turn: %v", err)
	default:
	}
}

func recvWithin(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("chunk not answered within 10 s")
		return nil
	}
}

func TestStreamReceiverHoldsEarlyChunksUntilTheirTurn(t *testing.T) {
	recv, got, readErr := orderReceiver(t, nil)
	ctx := context.Background()
	_, err := recv.ServeFabric(ctx, orderChunk(streamFirst, 7, 0, "a"))
	require.NoError(t, err)
	last := serveAsync(recv, orderChunk(streamLast, 7, 3, "d"))
	third := serveAsync(recv, orderChunk(0, 7, 2, "c"))
	require.Eventually(t, func() bool { return waiting(recv, 7) == 2 }, 10*time.Second, time.Millisecond)
	requireBlocked(t, last)
	requireBlocked(t, third)
	_, err = recv.ServeFabric(ctx, orderChunk(0, 7, 1, "b"))
	require.NoError(t, err)
	require.NoError(t, recvWithin(t, third))
	require.NoError(t, recvWithin(t, last))
	require.Equal(t, "abcd", <-got)
	require.NoError(t, <-readErr)
}

func TestStreamReceiverRefusesRepeatsAndChunksTooFarAhead(t *testing.T) {
	tests := []struct {
		name  string
		early uint64 // a chunk already waiting (0: none)
		bad   uint64
	}{
		{"a chunk already read", 0, 0},
		{"a repeat of a waiting chunk", 2, 2},
		{"more than the window ahead", 0, MaxStreamWindow + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recv, _, readErr := orderReceiver(t, nil)
			ctx := context.Background()
			_, err := recv.ServeFabric(ctx, orderChunk(streamFirst, 9, 0, "a"))
			require.NoError(t, err)
			var early chan error
			if tc.early > 0 {
				early = serveAsync(recv, orderChunk(0, 9, tc.early, "x"))
				require.Eventually(t, func() bool { return waiting(recv, 9) == 1 }, 10*time.Second, time.Millisecond)
			}
			_, err = recv.ServeFabric(ctx, orderChunk(0, 9, tc.bad, "x"))
			require.ErrorIs(t, err, &RemoteError{Code: CodeBadRequest})
			require.ErrorContains(t, <-readErr, "arrived while chunk 1 is due", "the handler sees the stream fail")
			if early != nil {
				require.Error(t, recvWithin(t, early), "the waiting chunk is let go")
			}
		})
	}
}

func TestStreamAbortReleasesWaitingChunks(t *testing.T) {
	recv, _, readErr := orderReceiver(t, nil)
	ctx := context.Background()
	_, err := recv.ServeFabric(ctx, orderChunk(streamFirst, 11, 0, "a"))
	require.NoError(t, err)
	third := serveAsync(recv, orderChunk(0, 11, 2, "c"))
	require.Eventually(t, func() bool { return waiting(recv, 11) == 1 }, 10*time.Second, time.Millisecond)
	_, err = recv.ServeFabric(ctx, orderChunk(streamAbort, 11, 5, "disk on fire"))
	require.NoError(t, err)
	require.ErrorContains(t, recvWithin(t, third), "disk on fire")
	require.ErrorContains(t, <-readErr, "aborted by the sender: disk on fire")
}

func TestStreamHandlerErrorReachesWaitingChunks(t *testing.T) {
	recv, _, readErr := orderReceiver(t, Errorf(CodeUserBase+3, "quota exceeded"))
	ctx := context.Background()
	third := serveAsync(recv, orderChunk(0, 13, 2, "c")) // before the stream is open: refused
	require.ErrorContains(t, recvWithin(t, third), "unknown")
	third = nil
	_, err := recv.ServeFabric(ctx, orderChunk(streamFirst, 13, 0, "a"))
	require.NoError(t, err)
	require.NoError(t, <-readErr)
	third = serveAsync(recv, orderChunk(0, 13, 2, "c"))
	err = recvWithin(t, third)
	require.ErrorIs(t, err, &RemoteError{Code: CodeUserBase + 3}, "a chunk that waited reports the handler's error")
}

// FuzzStreamChunks feeds arbitrary chunks (each one Call's payload: any
// header, any order, repeats, aborts) to a StreamReceiver whose handler
// reads everything: every chunk is answered, nothing panics, and closing
// the receiver leaves no handler running.
func FuzzStreamChunks(f *testing.F) {
	seed := func(chunks ...*Request) []byte {
		var b []byte
		for _, c := range chunks {
			b = append(b, byte(len(c.Payload)>>8), byte(len(c.Payload)))
			b = append(b, c.Payload...)
		}
		return b
	}
	f.Add(seed(orderChunk(streamFirst, 1, 0, "a"), orderChunk(0, 1, 2, "c"), orderChunk(streamLast, 1, 3, "d"), orderChunk(0, 1, 1, "b")))
	f.Add(seed(orderChunk(streamFirst|streamLast, 2, 0, "whole")))
	f.Add(seed(orderChunk(streamFirst, 3, 0, "a"), orderChunk(0, 3, 2, "c"), orderChunk(streamAbort, 3, 9, "why")))
	f.Add(seed(orderChunk(streamFirst, 4, 0, "a"), orderChunk(0, 4, 1, "b"), orderChunk(0, 4, 1, "b"), orderChunk(0, 4, 40, "far")))
	f.Add(seed(orderChunk(streamFirst, 5, 3, "x"), orderChunk(streamFirst, 5, 0, "a"), orderChunk(streamFirst, 5, 0, "a")))
	f.Fuzz(func(t *testing.T, in []byte) {
		recv := NewStreamReceiver(50 * time.Millisecond)
		recv.Handle(mOrder, func(_ context.Context, _ string, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var answered []chan error
		for len(in) >= 2 && len(answered) < 64 {
			n := min(int(in[0])<<8|int(in[1]), len(in)-2)
			p := in[2 : 2+n]
			in = in[2+n:]
			done := make(chan error, 1)
			go func() {
				_, err := recv.ServeFabric(ctx, &Request{Method: MethodStream, Payload: p, Peer: "fuzz"})
				done <- err
			}()
			answered = append(answered, done)
		}
		for k, done := range answered {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("chunk %d was never answered", k)
			}
		}
		closed := make(chan struct{})
		go func() { _ = recv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not return: a handler is still running")
		}
	})
}
