package fabric_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabrictest"
)

const mSnapshot = fabric.MethodUserBase + 40

// streamPair serves recv on a mem network and dials it.
func streamPair(t *testing.T, recv *fabric.StreamReceiver) fabric.Conn {
	t.Helper()
	n := fabrictest.NewNetwork()
	var m fabric.Mux
	m.Handle(fabric.MethodStream, recv)
	ctx := context.Background()
	l, err := n.Node("server").Listen(ctx, "server:1", &m)
	require.NoError(t, err)
	c, err := n.Node("client").Dial(ctx, l.Addr())
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, recv.Close())
		require.NoError(t, l.Close())
	})
	return c
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}

func TestSendStreamDeliversInOrder(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		chunk      int
		window     int
		wantChunks int
	}{
		{"empty stream", 0, 1024, 0, 1},
		{"smaller than a chunk", 100, 1024, 0, 1},
		{"exact multiple of the chunk", 4096, 1024, 0, 5},
		{"several chunks and a tail", 3<<20 + 17, 256 << 10, 0, 13},
		{"one chunk in flight", 3<<20 + 17, 256 << 10, 1, 13},
		{"the widest window", 3<<20 + 17, 64 << 10, fabric.MaxStreamWindow, 49},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recv := fabric.NewStreamReceiver(10 * time.Second)
			got := make(chan [32]byte, 1)
			recv.Handle(mSnapshot, func(_ context.Context, peer string, r io.Reader) error {
				require.Equal(t, "client", peer)
				h := sha256.New()
				if _, err := io.Copy(h, r); err != nil {
					return err
				}
				got <- [32]byte(h.Sum(nil))
				return nil
			})
			c := streamPair(t, recv)
			data := randomBytes(tc.size)
			n, err := fabric.SendStream(context.Background(), c, mSnapshot, bytes.NewReader(data), fabric.StreamOptions{Chunk: tc.chunk, Window: tc.window})
			require.NoError(t, err)
			require.EqualValues(t, tc.size, n)
			require.Equal(t, sha256.Sum256(data), <-got)
			require.EqualValues(t, tc.wantChunks, c.Stats().Calls)
		})
	}
}

func TestSendStreamHandlerErrorReachesSender(t *testing.T) {
	recv := fabric.NewStreamReceiver(10 * time.Second)
	recv.Handle(mSnapshot, func(_ context.Context, _ string, r io.Reader) error {
		_, _ = io.CopyN(io.Discard, r, 10)
		return fabric.Errorf(fabric.CodeUserBase+1, "disk full after 10 bytes")
	})
	c := streamPair(t, recv)
	_, err := fabric.SendStream(context.Background(), c, mSnapshot, bytes.NewReader(randomBytes(1<<20)), fabric.StreamOptions{Chunk: 1024})
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUserBase + 1})
	require.ErrorContains(t, err, "disk full")
}

func TestSendStreamUnknownMethod(t *testing.T) {
	c := streamPair(t, fabric.NewStreamReceiver(10*time.Second))
	_, err := fabric.SendStream(context.Background(), c, mSnapshot, bytes.NewReader([]byte("x")), fabric.StreamOptions{})
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})
}

func TestSendStreamSourceErrorAbortsReceiver(t *testing.T) {
	recv := fabric.NewStreamReceiver(10 * time.Second)
	seen := make(chan error, 1)
	recv.Handle(mSnapshot, func(_ context.Context, _ string, r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		seen <- err
		return err
	})
	c := streamPair(t, recv)
	src := io.MultiReader(bytes.NewReader(randomBytes(5000)), iotest.ErrReader(errors.New("bad sector")))
	n, err := fabric.SendStream(context.Background(), c, mSnapshot, src, fabric.StreamOptions{Chunk: 1024})
	require.ErrorContains(t, err, "bad sector")
	require.EqualValues(t, 4096, n, "whole chunks before the failing read")
	require.ErrorContains(t, <-seen, "aborted by the sender: bad sector")
}

func TestStreamReceiverAbortsSilentSender(t *testing.T) {
	recv := fabric.NewStreamReceiver(30 * time.Millisecond)
	seen := make(chan error, 1)
	recv.Handle(mSnapshot, func(_ context.Context, _ string, r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		seen <- err
		return err
	})
	c := streamPair(t, recv)
	// A source that yields one chunk and then blocks, like a sender whose
	// disk stalled or that died between chunks.
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write(make([]byte, 1024)) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := fabric.SendStream(ctx, c, mSnapshot, pr, fabric.StreamOptions{Chunk: 1024})
		done <- err
	}()
	require.ErrorContains(t, <-seen, "presumed gone")
	cancel()
	_ = pw.CloseWithError(errors.New("sender gave up"))
	require.Error(t, <-done)
}

func TestSendStreamRejectsBadChunkSize(t *testing.T) {
	c := streamPair(t, fabric.NewStreamReceiver(time.Second))
	_, err := fabric.SendStream(context.Background(), c, mSnapshot, bytes.NewReader(nil), fabric.StreamOptions{Chunk: -1})
	require.ErrorContains(t, err, "chunk size -1")
	_, err = fabric.SendStream(context.Background(), c, mSnapshot, bytes.NewReader(nil), fabric.StreamOptions{Window: fabric.MaxStreamWindow + 1})
	require.ErrorContains(t, err, "window 17")
}

func TestStreamReceiverRejectsMalformedChunks(t *testing.T) {
	recv := fabric.NewStreamReceiver(time.Second)
	recv.Handle(mSnapshot, func(context.Context, string, io.Reader) error { return nil })
	c := streamPair(t, recv)
	ctx := context.Background()
	_, err := c.Call(ctx, fabric.MethodStream, []byte("short"))
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeBadRequest})
	// A middle chunk of a stream that was never opened.
	chunk := make([]byte, 20)
	chunk[0] = 1
	_, err = c.Call(ctx, fabric.MethodStream, chunk)
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeBadRequest})
	require.ErrorContains(t, err, "version-2", "a version-1 chunk (one in flight, in order) is refused")
	chunk[0] = 2
	_, err = c.Call(ctx, fabric.MethodStream, chunk)
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeBadRequest})
	require.ErrorContains(t, err, "unknown")
}
