//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/bufpool"
	"github.com/weftsearch/weft/fabric/internal/dispatch"
)

// A request that arrives on a connection whose dispatcher has already
// closed (the connection is failing: its context ended first) is dropped
// by the dispatcher, which gives the payload back (releaseRequest) from
// inside Dispatch, while the receive path holds its queue's lock. On the
// poller, taking that lock again there stopped every connection's
// completions for good: drains timed out, the transport never let go of a
// lost device, and `rdma link delete` hung in the kernel. Arrival must
// return, with the payload given back, and the queue still usable.
// It needs no device: the receive path and the dispatcher are plain Go.
func TestRequestDroppedOnAClosingConnDoesNotStallTheReceiver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{rzIn: map[*[]byte]*region{}}
	h := fabric.HandlerFunc(func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil })
	released := make(chan *[]byte, 1)
	c.disp = dispatch.New(ctx, h, "peer", func(uint64, bool, []byte, error) {}, func(bp *[]byte) {
		c.releaseRequest(bp)
		released <- bp
	})
	cancel() // the connection fails: its dispatcher closes
	c.disp.Close()

	bp := bufpool.Get(64)
	arrived := make(chan struct{})
	go func() {
		c.arrive(&rxReq{id: 1, method: fabric.MethodUserBase, buf: bp, ready: true})
		close(arrived)
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the receive path is stuck handing a request to a closed dispatcher (it holds rxMu while the payload is given back)")
	}
	require.Same(t, bp, <-released, "the dropped request's payload is given back")
	c.rxMu.Lock() // the queue's lock is free again
	require.Empty(t, c.rxq)
	c.rxMu.Unlock()
}
