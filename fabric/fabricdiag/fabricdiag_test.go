package fabricdiag_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/fabricdiag"
)

// recordListen is a path transport that keeps the handler Listen was given,
// so the test can serve requests through it without sockets.
type recordListen struct {
	name string
	h    fabric.Handler
}

func (r *recordListen) Name() string { return r.name }
func (r *recordListen) Listen(_ context.Context, _ string, h fabric.Handler) (fabric.Listener, error) {
	r.h = h
	return nil, nil
}
func (r *recordListen) Dial(context.Context, string) (fabric.Conn, error) {
	return nil, fabric.ErrNotSupported
}

func serve(t *testing.T, h fabric.Handler, peer string, payload string, oneWay bool) {
	t.Helper()
	_, _ = h.ServeFabric(context.Background(), &fabric.Request{Method: fabric.MethodUserBase, Payload: []byte(payload), Peer: peer, OneWay: oneWay})
}

func TestCountingGroupsByHostAndPath(t *testing.T) {
	c := fabricdiag.NewCounting()
	var failNext bool
	inner := fabric.HandlerFunc(func(ctx context.Context, req *fabric.Request) ([]byte, error) {
		if failNext {
			return nil, errors.New("boom")
		}
		return []byte("reply"), nil
	})
	tcpRec, rdmaRec := &recordListen{name: "tcp"}, &recordListen{name: "rdma"}
	for _, tr := range []fabric.Transport{c.Wrap(tcpRec), c.Wrap(rdmaRec)} {
		_, err := tr.Listen(context.Background(), "x", inner)
		require.NoError(t, err)
	}
	require.Equal(t, "rdma", c.Wrap(rdmaRec).Name())

	serve(t, tcpRec.h, "10.0.0.2:5000", "abcd", false)
	serve(t, tcpRec.h, "10.0.0.2:5000", "ab", true)
	failNext = true
	serve(t, tcpRec.h, "10.0.0.2:5000", "x", false)
	failNext = false
	serve(t, rdmaRec.h, "10.0.0.2:6000", "abcdef", false)
	serve(t, tcpRec.h, "10.0.0.1:7000", "z", false)

	peers := c.Peers()
	require.Len(t, peers, 2)
	require.Equal(t, "10.0.0.1", peers[0].Peer)
	a := peers[1]
	require.Equal(t, "10.0.0.2", a.Peer)
	require.Equal(t, "inbound", a.Direction)
	require.Len(t, a.Paths, 2)
	require.Equal(t, "rdma", a.Paths[0].Transport)
	require.EqualValues(t, 1, a.Paths[0].Messages)
	require.EqualValues(t, 6, a.Paths[0].BytesReceived)
	require.EqualValues(t, 5, a.Paths[0].BytesSent)
	tc := a.Paths[1]
	require.Equal(t, "tcp", tc.Transport)
	require.Equal(t, "10.0.0.2:5000", tc.Remote)
	require.EqualValues(t, 3, tc.Messages)
	require.EqualValues(t, 7, tc.BytesReceived)
	require.EqualValues(t, 5, tc.BytesSent, "one-way replies and errors send nothing")
	require.EqualValues(t, 1, tc.Errors)
}

func TestCountingIsBounded(t *testing.T) {
	c := fabricdiag.NewCounting()
	rec := &recordListen{name: "tcp"}
	_, err := c.Wrap(rec).Listen(context.Background(), "x", fabric.HandlerFunc(func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil }))
	require.NoError(t, err)
	for i := range fabricdiag.MaxPeers + 10 {
		serve(t, rec.h, fmt.Sprintf("127.0.0.1:%d", 10000+i), "", false)
	}
	n := 0
	for _, p := range c.Peers() {
		n += len(p.Paths)
	}
	require.Equal(t, fabricdiag.MaxPeers, n)
}
