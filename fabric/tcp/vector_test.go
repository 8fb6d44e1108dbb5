package tcp

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// vectorPair serves an echo handler with server's config and dials it with
// client's.
func vectorPair(t *testing.T, mutate func(t *testing.T, server, client *Config)) *Conn {
	scfg, ccfg := testConfig(t), testConfig(t)
	if mutate != nil {
		mutate(t, &scfg, &ccfg)
	}
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	_, c := listenDial(t, scfg, ccfg, &m)
	return c
}

// pieces cuts a patterned payload of n bytes into the given piece lengths
// (which must add up to n).
func pieces(lengths ...int) [][]byte {
	n := 0
	for _, l := range lengths {
		n += l
	}
	all := make([]byte, n)
	for i := range all {
		all[i] = byte(i*7 + i/251)
	}
	out := make([][]byte, 0, len(lengths))
	for _, l := range lengths {
		out = append(out, all[:l:l])
		all = all[l:]
	}
	return out
}

func TestCallVectorEqualsCallOfConcatenation(t *testing.T) {
	many := make([]int, 2500) // more pieces than one writev takes (IOV_MAX 1024)
	for i := range many {
		many[i] = i % 5 // 0..4 bytes: every fifth piece is empty
	}
	cases := []struct {
		name   string
		pieces [][]byte
	}{
		{"nil", nil},
		{"no pieces", [][]byte{}},
		{"one empty piece", [][]byte{{}}},
		{"one nil piece", [][]byte{nil}},
		{"one piece", pieces(1000)},
		{"empty pieces around data", append(append([][]byte{nil, {}}, pieces(48, 0, 4096)...), nil)},
		{"header and large body", pieces(48, 3<<20)},
		{"many small pieces", pieces(many...)},
	}
	variants := []struct {
		name   string
		mutate func(t *testing.T, server, client *Config)
	}{
		{"plain", nil},
		{"checksum", func(_ *testing.T, _, c *Config) { c.Checksum = true }},
		{"tls", func(t *testing.T, s, c *Config) { s.ServerTLS, c.ClientTLS = tlsConfigs(t) }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			c := vectorPair(t, v.mutate)
			ctx := context.Background()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					want := bytes.Join(tc.pieces, nil)
					fromCall, err := c.Call(ctx, fabric.MethodUserBase, want)
					require.NoError(t, err)
					got, err := c.CallVector(ctx, fabric.MethodUserBase, tc.pieces)
					require.NoError(t, err)
					require.NotNil(t, got, "an empty reply is an empty slice, as from Call")
					require.Equal(t, fromCall, got)
					require.True(t, bytes.Equal(want, got), "reply of %d bytes differs from the %d-byte concatenation", len(got), len(want))
				})
			}
		})
	}
}

func TestCallVectorErrorsAsCall(t *testing.T) {
	c := vectorPair(t, func(_ *testing.T, s, _ *Config) { s.MaxMessageSize = 1000 })
	ctx := context.Background()

	_, err := c.CallVector(ctx, fabric.MethodUserBase, pieces(600, 401))
	require.ErrorIs(t, err, fabric.ErrTooLarge, "the peer's limit applies to the concatenation")

	_, err = c.CallVector(ctx, fabric.MethodUserBase+1, pieces(1, 2))
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.CallVector(cancelled, fabric.MethodUserBase, pieces(1, 2))
	require.ErrorIs(t, err, context.Canceled)

	st := c.Stats()
	require.Equal(t, uint64(3), st.Calls, "CallVector counts as a call")
	require.Equal(t, uint64(3), st.CallErrors)

	require.NoError(t, c.Close())
	_, err = c.CallVector(ctx, fabric.MethodUserBase, pieces(1, 2))
	require.ErrorIs(t, err, fabric.ErrClosed)
}

// TestCallVectorDoesNotConcatenate checks that the pieces are not copied
// into one buffer: the bytes allocated per call stay near the one reply
// buffer the caller gets, where a concatenation would add a second payload.
func TestCallVectorDoesNotConcatenate(t *testing.T) {
	c := vectorPair(t, nil)
	ctx := context.Background()
	const size = 1 << 20
	ps := pieces(64, size/2-64, size/2)
	for range 3 { // warm the server's buffer pool
		_, err := c.CallVector(ctx, fabric.MethodUserBase, ps)
		require.NoError(t, err)
	}
	// The first bulk call opened the bulk sockets in the background; their
	// buffers must not be counted as the calls'.
	require.Eventually(t, func() bool { return len(c.lanes.group(groupBulk)) == c.cfg.BulkSockets },
		20*time.Second, time.Millisecond, "bulk sockets never opened")
	const calls = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		_, err := c.CallVector(ctx, fabric.MethodUserBase, ps)
		require.NoError(t, err)
	}
	runtime.ReadMemStats(&after)
	perCall := float64(after.TotalAlloc-before.TotalAlloc) / calls
	// One reply (size) plus the server's pooled request buffer when the
	// pool misses (the race detector drops a quarter of pool puts); a
	// concatenation would be a further size per call.
	require.Less(t, perCall, 1.75*size, "bytes allocated per call")
}
