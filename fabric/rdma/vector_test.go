//go:build linux && cgo && rdma

package rdma

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

// vectorPair dials a connection to a listener whose handler for
// MethodUserBase echoes a copy of the payload and whose MethodUserBase+1
// answers nothing.
func vectorPair(t *testing.T, env testEnv, mode string) fabric.Conn {
	t.Helper()
	mod := func(c *Config) { c.RendezvousMode = mode }
	client := newTestTransport(t, env, mod)
	server := newTestTransport(t, env, mod)
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return bytes.Clone(r.Payload), nil
	})
	m.HandleFunc(fabric.MethodUserBase+1, func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, c := listenAndDial(t, ctx, env, server, client, &m)
	return c
}

// pattern returns n bytes that differ from piece to piece (seed).
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

// CallVector delivers the concatenation of its pieces, eagerly and by
// rendezvous in both modes, and answers exactly as Call of the
// concatenation does.
func TestCallVectorEqualsCallOfConcatenation(t *testing.T) {
	env := rdmaEnv(t)
	thr := TestConfig().RendezvousThreshold
	cases := []struct {
		name   string
		pieces [][]byte
	}{
		{"nil", nil},
		{"no pieces", [][]byte{}},
		{"one empty piece", [][]byte{{}}},
		{"one piece", [][]byte{pattern(100, 1)}},
		{"empty pieces around one", [][]byte{nil, pattern(33, 2), {}, nil}},
		{"header and body", [][]byte{pattern(40, 3), pattern(1000, 4)}},
		{"many small", func() [][]byte {
			var v [][]byte
			for i := range 64 {
				v = append(v, pattern(i, byte(i)))
			}
			return v
		}()},
		{"one below the threshold", [][]byte{pattern(thr-1-40, 5), pattern(40, 6)}},
		{"at the threshold", [][]byte{pattern(40, 7), pattern(thr-40, 8)}},
		{"rendezvous, two pieces", [][]byte{pattern(40, 9), pattern(300_000, 10)}},
		{"rendezvous, many pieces", func() [][]byte {
			var v [][]byte
			for i := range 40 {
				v = append(v, pattern(1000*i, byte(i)), nil)
			}
			return v
		}()},
	}
	for _, mode := range []string{"write", "read"} {
		t.Run(mode, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			fc := vectorPair(t, env, mode)
			vc, ok := fc.(fabric.VectorCaller)
			require.True(t, ok, "the rdma Conn is a fabric.VectorCaller")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard for -race under TCG
			defer cancel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					flat := bytes.Join(tc.pieces, nil)
					before := fc.Stats()
					got, err := vc.CallVector(ctx, fabric.MethodUserBase, tc.pieces)
					require.NoError(t, err)
					after := fc.Stats()
					want, err := fc.Call(ctx, fabric.MethodUserBase, flat)
					require.NoError(t, err)
					require.Equal(t, len(flat), len(got))
					require.True(t, bytes.Equal(flat, got), "the handler got something else than the concatenation")
					require.True(t, bytes.Equal(want, got), "CallVector and Call of the concatenation answer differently")
					require.Equal(t, before.Calls+1, after.Calls, "CallVector counts as a call")
					require.Equal(t, before.CallErrors, after.CallErrors)
				})
			}
			info := fc.(*conn).info()
			require.Positive(t, info.Rendezvous, "the large cases went by rendezvous")
			require.Zero(t, info.Errors)
		})
	}
}

// The pieces are copied into registered memory, not first joined in Go
// memory: a 1 MiB vector call (whose handler answers nothing) allocates far
// less than the megabyte a concatenation would.
func TestCallVectorDoesNotConcatenate(t *testing.T) {
	env := rdmaEnv(t)
	fc := vectorPair(t, env, "write")
	vc := fc.(fabric.VectorCaller)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pieces := [][]byte{pattern(40, 1), pattern(1<<20-40, 2)}
	_, err := vc.CallVector(ctx, fabric.MethodUserBase+1, pieces) // warm the region cache
	require.NoError(t, err)
	const calls = 8
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		_, err := vc.CallVector(ctx, fabric.MethodUserBase+1, pieces)
		require.NoError(t, err)
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / calls
	t.Logf("%d bytes allocated per 1 MiB vector call", perCall)
	require.Less(t, perCall, uint64(256<<10), "a 1 MiB CallVector allocated about as much as joining its pieces")
}

// CallVector fails as Call does: too large before anything is sent, an
// ended context, a remote error, a closed connection.
func TestCallVectorErrors(t *testing.T) {
	env := rdmaEnv(t)
	fc := vectorPair(t, env, "write")
	vc := fc.(fabric.VectorCaller)
	ctx := context.Background()

	big := make([]byte, 1<<20)
	var tooLarge [][]byte
	for range TestConfig().MaxMessageSize/len(big) + 1 {
		tooLarge = append(tooLarge, big) // the same megabyte many times: no large allocation
	}
	_, err := vc.CallVector(ctx, fabric.MethodUserBase, tooLarge)
	require.ErrorIs(t, err, fabric.ErrTooLarge)

	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = vc.CallVector(done, fabric.MethodUserBase, [][]byte{[]byte("x")})
	require.ErrorIs(t, err, context.Canceled)

	_, err = vc.CallVector(ctx, fabric.MethodUserBase+2, [][]byte{[]byte("x"), []byte("y")})
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})

	require.NoError(t, fc.Close())
	_, err = vc.CallVector(ctx, fabric.MethodUserBase, [][]byte{[]byte("x")})
	require.ErrorIs(t, err, fabric.ErrClosed)
	st := fc.Stats()
	require.EqualValues(t, 2, st.CallErrors, "as for Call, the remote error and the closed connection count; size and context are checked before the call counts")
}
