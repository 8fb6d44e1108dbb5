//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/rdma/rdmatest"
)

// A transport that loses its device fails every connection at once,
// refuses dials with ErrDeviceLost while the device is gone, and rebuilds
// itself on a fresh device context when the device is back: the same
// listener then accepts again and a new connection carries calls.
//
// "fatal event": IBV_EVENT_DEVICE_FATAL, handed to both transports as the
// event reader does (rxe never raises it); the device stays, so the
// rebuild finds it at once. "device removed and re-added": the rxe link is
// really deleted (`rdma link delete`) and added again; rxe cannot detach
// user contexts, so the kernel raises no event and the deletion waits until
// every process has closed the device: the transports notice the device's
// verbs node gone, let go (which lets the deletion finish), and reopen the
// new rxe0. It changes the device, so it runs only in the Soft-RoCE guest.
func TestDeviceLossRebuildsTheTransport(t *testing.T) {
	env := rdmaEnv(t)
	t.Run("fatal event", func(t *testing.T) {
		testDeviceLoss(t, env, func(t *testing.T, client, server *Transport) {
			client.onEvent(evDeviceFatal, 0, 0) // every context on the device gets it
			server.onEvent(evDeviceFatal, 0, 0)
		}, nil)
	})
	t.Run("device removed and re-added", func(t *testing.T) {
		if os.Getenv("WEFT_RDMA_GUEST") == "" {
			t.Skip("deletes the RDMA device: runs only in the Soft-RoCE guest (WEFT_RDMA_GUEST=1)")
		}
		var deleted *rdmatest.Deletion
		var netdev string
		testDeviceLoss(t, env, func(t *testing.T, client, server *Transport) {
			netdev = server.gid.Netdev
			require.NotEmpty(t, netdev, "the netdev under %s", env.device)
			t.Cleanup(func() { // whatever happens, leave the device for the tests after this one
				require.NoError(t, rdmatest.Restore(deleted, env.device, netdev))
				require.Eventually(t, func() bool { return portUsable(env.device, env.addr) }, 60*time.Second, 50*time.Millisecond)
			})
			deleted = rdmatest.DeleteLink(env.device, 60*time.Second)
		}, func(t *testing.T, client, _ *Transport) {
			<-deleted.Done()
			require.NoError(t, deleted.Err(), "the deletion must finish once the transports let go of the device")
			require.False(t, rdmatest.Exists(env.device))
			_, err := client.Dial(context.Background(), "127.0.0.1:1")
			require.ErrorIs(t, err, ErrDeviceLost, "dial while the device is gone")
			require.Zero(t, client.rebuilds.Load(), "rebuilt without a device")
			require.NoError(t, rdmatest.AddRxe(env.device, netdev))
		})
	})
}

// testDeviceLoss makes two transports and a connection with a call held in
// its handler, loses the device with lose, checks that the call and a
// second connection fail and dials are refused, runs whileLost (if
// any), and waits for both transports to be rebuilt and carry a call on a
// new connection through the same listener.
func testDeviceLoss(t *testing.T, env testEnv, lose, whileLost func(t *testing.T, client, server *Transport)) {
	p := newHeldPair(t, env, 3*time.Minute)
	client, server, ctx := p.client, p.server, p.ctx
	_, err := p.other.Call(ctx, fabric.MethodUserBase+1, make([]byte, 100<<10))
	require.NoError(t, err)
	errc := p.holdFirst(t)

	lost := time.Now()
	lose(t, client, server)
	require.ErrorIs(t, <-errc, fabric.ErrClosed)
	t.Logf("the held call failed %v after the device was lost", time.Since(lost))
	// Each transport notices a removed device by itself, when it next looks
	// for the device's verbs node, so the held call may have failed through
	// the server alone while the client's other connection still works:
	// wait until the client has failed it too.
	other := p.other.(*conn)
	require.Eventually(t, func() bool {
		other.mu.Lock()
		defer other.mu.Unlock()
		return other.failed
	}, 30*time.Second, 5*time.Millisecond, "the client's other connection outlived the device")
	_, err = p.other.Call(ctx, fabric.MethodUserBase+1, []byte("other"))
	require.ErrorIs(t, err, fabric.ErrClosed)
	if whileLost != nil {
		whileLost(t, client, server)
	}

	for _, tr := range []*Transport{client, server} {
		require.Eventually(t, func() bool { return tr.rebuilds.Load() == 1 && tr.Info().Refusing == "" }, 2*time.Minute, 20*time.Millisecond,
			"%s never rebuilt: %+v", env.device, tr.Info())
		info := tr.Info()
		require.Equal(t, "ACTIVE", info.PortState)
		require.NotEmpty(t, info.LastRebuild)
		t.Logf("rebuilt: %s", info.LastRebuild)
	}
	c, err := client.Dial(ctx, p.l.Addr())
	require.NoError(t, err, "a dial to the same listener after the rebuild")
	defer c.Close()
	for _, size := range []int{64, 300 << 10} { // eager and rendezvous on the new context
		r, err := c.Call(ctx, fabric.MethodUserBase+1, make([]byte, size))
		require.NoError(t, err)
		require.Len(t, r, size)
	}
	require.Len(t, client.Conns(), 1, "only the new connection is left")
}
