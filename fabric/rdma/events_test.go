//go:build linux && cgo && rdma

package rdma

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

// setLink sets the netdev up or down with iproute2 (by path: in the guest,
// busybox's ip would shadow it).
func setLink(t *testing.T, dev, state string) {
	t.Helper()
	ip := "/bin/ip"
	if _, err := os.Stat(ip); err != nil {
		ip = "ip"
	}
	out, err := exec.Command(ip, "link", "set", dev, state).CombinedOutput()
	require.NoError(t, err, "ip link set %s %s: %s", dev, state, out)
}

// portUsable reports whether dev's port is ACTIVE with a RoCE v2 GID for addr.
func portUsable(dev, addr string) bool {
	devs, err := Devices()
	if err != nil {
		return false
	}
	for _, d := range devs {
		if d.Name != dev || len(d.Ports) == 0 || d.Ports[0].State != "ACTIVE" {
			continue
		}
		_, err := chooseGID(d.Ports[0].GIDs, -1, net.ParseIP(addr), d.Ports[0].LinkLayer)
		return err == nil
	}
	return false
}

// The netdev under the device goes down: both transports learn it from the
// device's asynchronous event (IBV_EVENT_PORT_ERR), fail every connection at
// once, refuse new dials with ErrPortDown and show the port down in Info and
// Devices; when the netdev is up again they accept connections again.
// "idle": the only calls are waiting on a handler that never answers, and
// no work request is in flight, so nothing but the event can end them: they
// return ErrClosed instead of hanging until their deadline. "mid-traffic":
// eager and rendezvous calls are on the wire too (RC retries are set to give
// up only after about 30 s; rxe also fails sends on a down netdev locally).
//
// It downs a netdev, so it runs only in the Soft-RoCE guest, which is the
// test's own machine.
func TestPortDownFailsConnectionsAndRefusesDials(t *testing.T) {
	env := rdmaEnv(t)
	if os.Getenv("WEFT_RDMA_GUEST") == "" {
		t.Skip("sets the RDMA netdev down: runs only in the Soft-RoCE guest (WEFT_RDMA_GUEST=1)")
	}
	for _, tc := range []struct {
		name   string
		movers int
	}{{"idle", 0}, {"mid-traffic", 4}} {
		t.Run(tc.name, func(t *testing.T) { testPortDown(t, env, tc.movers) })
	}
}

func testPortDown(t *testing.T, env testEnv, movers int) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	// RC retries would take 7 × 4.096 µs × 2^20 ≈ 30 s to give up.
	mod := func(c *Config) { c.Timeout, c.RetryCount = 20, 7 }
	client := newTestTransport(t, env, mod)
	server := newTestTransport(t, env, mod)
	netdev := server.gid.Netdev
	require.NotEmpty(t, netdev, "the netdev under GID %d of %s", server.gid.Index, env.device)

	held := make(chan struct{}, 64)
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		held <- struct{}{}
		<-ctx.Done() // never answers: only the connection's failure ends it
		return nil, ctx.Err()
	})
	m.HandleFunc(fabric.MethodUserBase+1, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	l, c := listenAndDial(t, ctx, env, server, client, &m)

	const heldCalls = 4
	errs := make(chan error, heldCalls+movers)
	var wg sync.WaitGroup
	for range heldCalls {
		wg.Go(func() {
			_, err := c.Call(ctx, fabric.MethodUserBase, []byte("wait"))
			errs <- err
		})
	}
	for i := range movers {
		wg.Go(func() {
			p := make([]byte, 1<<10<<(i*3)) // 1 KiB .. 512 KiB: eager and rendezvous
			for {
				if _, err := c.Call(ctx, fabric.MethodUserBase+1, p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range heldCalls {
		select {
		case <-held:
		case <-ctx.Done():
			t.Fatal("the held calls never reached the handler")
		}
	}

	t.Cleanup(func() { // whatever happens, leave the device usable for the tests after this one
		setLink(t, netdev, "up")
		require.Eventually(t, func() bool { return portUsable(env.device, env.addr) }, 60*time.Second, 50*time.Millisecond,
			"%s not ACTIVE with its GID again after %s came up", env.device, netdev)
	})
	down := time.Now()
	setLink(t, netdev, "down")
	wg.Wait()
	t.Logf("every call returned %v after %s went down", time.Since(down), netdev)
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, fabric.ErrClosed)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "a call waited for its deadline: %v", err)
	}
	for _, tr := range []*Transport{client, server} {
		require.Eventually(t, func() bool { return tr.Info().Refusing != "" }, 10*time.Second, 10*time.Millisecond,
			"the transport never saw the port go down")
		info := tr.Info()
		require.Equal(t, "DOWN", info.PortState)
		require.Contains(t, info.Refusing, "IBV_EVENT_PORT_ERR")
		t.Logf("Info while down: %+v", info)
	}
	if movers == 0 {
		require.Positive(t, client.eventFailed.Load()+server.eventFailed.Load(), "no connection was failed by the port event")
	}
	_, err := client.Dial(ctx, l.Addr())
	require.ErrorIs(t, err, ErrPortDown)
	t.Logf("dial while down: %v", err)
	devs, err := Devices()
	require.NoError(t, err)
	for _, d := range devs {
		if d.Name == env.device {
			require.Equal(t, "DOWN", d.Ports[0].State, "Devices() for %s", d.Name)
		}
	}
	failed := client.Conns()
	require.Len(t, failed, 1)
	require.NotEmpty(t, failed[0].FailureReason)
	t.Logf("the dialled connection: QP %s, failure %q", failed[0].QPState, failed[0].FailureReason)

	setLink(t, netdev, "up")
	require.Eventually(t, func() bool {
		return portUsable(env.device, env.addr) && client.Info().Refusing == "" && server.Info().Refusing == ""
	}, 60*time.Second, 20*time.Millisecond, "the transports never saw %s ACTIVE again", env.device)
	var c2 fabric.Conn
	require.Eventually(t, func() bool { // the GID may come back just after the port
		var err error
		if c2, err = client.Dial(ctx, l.Addr()); err != nil {
			t.Logf("dial after the port came back: %v", err)
			return false
		}
		return true
	}, 30*time.Second, 100*time.Millisecond)
	defer c2.Close()
	r, err := c2.Call(ctx, fabric.MethodUserBase+1, []byte("back"))
	require.NoError(t, err)
	require.Equal(t, "back", string(r))
	t.Logf("Info after: %+v", client.Info())
}

// rxe raises no QP-level asynchronous events (its QP errors all surface as
// work completions), so the handling of the ones a real NIC raises is
// checked by handing the event to the transport's handler, as the event
// reader does: a QP event fails that connection only, promptly. (A
// device-level fatal event: TestDeviceLossRebuildsTheTransport.)
func TestAsyncEventHandling(t *testing.T) {
	env := rdmaEnv(t)
	tests := []struct {
		name  string
		event int
	}{
		{"QP fatal fails its connection", evQPFatal},
		{"QP access error fails its connection", evQPAccessErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newHeldPair(t, env, 60*time.Second)
			client, ctx := p.client, p.ctx
			errc := p.holdFirst(t)
			client.onEvent(tc.event, p.first.(*conn).qpn, 0)
			err := <-errc
			require.ErrorIs(t, err, fabric.ErrClosed)
			require.ErrorContains(t, err, eventName(tc.event))
			require.False(t, errors.Is(err, context.DeadlineExceeded))
			require.Equal(t, uint64(1), client.Info().AsyncEvents)

			_, err = p.other.Call(ctx, fabric.MethodUserBase+1, []byte("other"))
			require.NoError(t, err, "a connection the event did not name")
			c3, err := client.Dial(ctx, p.l.Addr())
			require.NoError(t, err)
			require.NoError(t, c3.Close())
		})
	}
}
