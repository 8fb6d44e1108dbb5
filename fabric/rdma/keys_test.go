//go:build linux && cgo && rdma

package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

// A peer that presents the rendezvous key of another connection gets a
// remote access error when keys are type-2 memory windows: its own QP goes
// to the error state and the other connection's buffer is unchanged. With
// memory-region keys (the fallback) the same write lands, which is the hole
// the windows close. Connection A's write-mode transfer is held after the
// server offered its target (bound, CTS sent) while connection B, to the
// same server transport, RDMA WRITEs to A's address with A's key.
func TestRendezvousKeyWorksOnlyOnItsConnection(t *testing.T) {
	env := rdmaEnv(t)
	tests := []struct {
		name          string
		disableMW     bool
		scope         string
		attackLanding bool
	}{
		{"memory windows", false, KeyScopeWindow, false},
		{"memory-region keys", true, KeyScopeRegion, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			mod := func(c *Config) { c.RendezvousMode, c.DisableMemoryWindows = "write", tc.disableMW }
			client := newTestTransport(t, env, mod)
			server := newTestTransport(t, env, mod)
			if server.keyScope != tc.scope {
				require.Empty(t, os.Getenv("WEFT_RDMA_GUEST"), "rxe in the guest has type-2 memory windows, but the transport chose %s: %s", server.keyScope, server.keyWhy)
				t.Skipf("device %s: key scope %s (%s)", env.device, server.keyScope, server.keyWhy)
			}
			const n = 256 << 10
			ctsCh, release := make(chan header, 1), make(chan struct{})
			client.testCTSHook = func(h header) {
				if h.length == n {
					ctsCh <- h
					<-release
				}
			}
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			var m fabric.Mux
			m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) {
				sum := sha256.Sum256(r.Payload)
				return sum[:], nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			l, a := listenAndDial(t, ctx, env, server, client, &m)
			b, err := client.Dial(ctx, l.Addr())
			require.NoError(t, err)
			defer b.Close()

			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i*7 + 3)
			}
			type result struct {
				reply []byte
				err   error
			}
			done := make(chan result, 1)
			go func() {
				r, err := a.Call(ctx, fabric.MethodUserBase, payload)
				done <- result{r, err}
			}()
			var cts header
			select {
			case cts = <-ctsCh:
			case <-ctx.Done():
				t.Fatal("the server never offered a region for connection A's request")
			}
			victim := server.offered(t, cts)
			before := bytes.Clone(victim[:n])

			cb := b.(*conn)
			attack, err := cb.out.get(n)
			require.NoError(t, err)
			for i := range attack.mem[:n] {
				attack.mem[i] = 0xEE
			}
			err = cb.transfer(opWrite, attack, cts.addr, cts.aux, n)
			cb.out.put(attack)
			if tc.attackLanding {
				require.NoError(t, err, "with memory-region keys the write lands")
				require.Equal(t, bytes.Repeat([]byte{0xEE}, n), victim[:n], "connection B's write did not land")
			} else {
				require.ErrorIs(t, err, fabric.ErrClosed)
				require.ErrorContains(t, err, "remote access error")
				require.Equal(t, "ERR", cb.info().QPState, "the attacker's QP")
				require.True(t, bytes.Equal(before, victim[:n]), "connection A's buffer changed")
			}
			t.Logf("write to connection A's region (addr %#x, key %#x) over connection B: %v", cts.addr, cts.aux, err)

			close(release)
			released = true
			res := <-done
			require.NoError(t, res.err)
			sum := sha256.Sum256(payload)
			require.Equal(t, sum[:], res.reply, "connection A's request arrived changed")
			require.Equal(t, "RTS", a.(*conn).info().QPState)
			found := false
			for _, ci := range server.Conns() {
				if ci.RemoteQPN != a.(*conn).qpn {
					continue
				}
				found = true
				require.Equal(t, tc.scope, ci.KeyScope)
				if tc.scope == KeyScopeWindow {
					require.Positive(t, ci.WindowsBound)
					require.Equal(t, ci.WindowsBound, ci.WindowsRevoked, "windows bound but not invalidated after the transfer")
				} else {
					require.Zero(t, ci.WindowsBound)
				}
			}
			require.True(t, found, "the server's side of connection A is not in its Conns()")
		})
	}
}

// offered returns the memory of the region the transport offered with CTS
// cts (still being written), failing the test if there is none.
func (t *Transport) offered(tb testing.TB, cts header) []byte {
	tb.Helper()
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, c := range t.byID {
		c.mu.Lock()
		p := c.rzW[cts.rz]
		c.mu.Unlock()
		if p != nil && p.reg != nil && p.reg.addr == cts.addr {
			return p.reg.mem
		}
	}
	tb.Fatalf("no connection offered a region at %#x for rendezvous %d", cts.addr, cts.rz)
	return nil
}
