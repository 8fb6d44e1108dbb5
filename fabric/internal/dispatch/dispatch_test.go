package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/fabric"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type outcome struct {
	id     uint64
	oneWay bool
	reply  string
	err    error
}

type recorder struct {
	ch       chan outcome
	mu       sync.Mutex
	released int
}

func newRecorder() *recorder { return &recorder{ch: make(chan outcome, 64)} }

func (r *recorder) respond(id uint64, oneWay bool, reply []byte, err error) {
	r.ch <- outcome{id: id, oneWay: oneWay, reply: string(reply), err: err}
}

func (r *recorder) release(*[]byte) {
	r.mu.Lock()
	r.released++
	r.mu.Unlock()
}

func (r *recorder) next(t *testing.T) outcome {
	t.Helper()
	select {
	case o := <-r.ch:
		return o
	case <-time.After(20 * time.Second):
		require.FailNow(t, "no response")
		return outcome{}
	}
}

func TestDispatcher(t *testing.T) {
	blockEntered := make(chan struct{}, 8)
	release := make(chan struct{})
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte("echo:"), r.Payload...), nil
	})
	m.HandleFunc(fabric.MethodUserBase+1, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		blockEntered <- struct{}{}
		select {
		case <-release:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	m.HandleFunc(fabric.MethodUserBase+2, func(context.Context, *fabric.Request) ([]byte, error) { panic("boom") })

	tests := []struct {
		name string
		run  func(t *testing.T, d *Dispatcher, r *recorder)
	}{
		{"ping is answered without a handler", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(1, fabric.MethodPing, []byte("p"), false, new([]byte))
			o := r.next(t)
			require.Equal(t, outcome{id: 1, reply: "p"}, o)
		}},
		{"handler reply", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(2, fabric.MethodUserBase, []byte("x"), false, nil)
			require.Equal(t, "echo:x", r.next(t).reply)
		}},
		{"panic becomes CodeInternal", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(3, fabric.MethodUserBase+2, nil, false, nil)
			o := r.next(t)
			require.ErrorIs(t, o.err, &fabric.RemoteError{Code: fabric.CodeInternal})
			require.ErrorContains(t, o.err, "boom")
		}},
		{"cancel ends the handler's context", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(4, fabric.MethodUserBase+1, nil, false, nil)
			<-blockEntered
			d.Cancel(4)
			require.ErrorIs(t, r.next(t).err, context.Canceled)
		}},
		{"duplicate id is refused", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(5, fabric.MethodUserBase+1, nil, false, nil)
			<-blockEntered
			d.Dispatch(5, fabric.MethodUserBase, nil, false, nil)
			require.ErrorIs(t, r.next(t).err, &fabric.RemoteError{Code: fabric.CodeBadRequest})
			d.Cancel(5)
			r.next(t)
		}},
		{"a request after a one-way waits for it", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(6, fabric.MethodUserBase+1, nil, true, nil)
			<-blockEntered
			d.Dispatch(7, fabric.MethodUserBase, []byte("later"), false, nil)
			require.Equal(t, 2, d.Running())
			select {
			case o := <-r.ch:
				require.FailNow(t, "served before the one-way message before it", "%+v", o)
			default:
			}
			d.Cancel(6)
			// Once the one-way handler returns, the later request runs; the
			// two outcomes may reach the recorder in either order.
			a, b := r.next(t), r.next(t)
			if a.id != 6 {
				a, b = b, a
			}
			require.Equal(t, uint64(6), a.id)
			require.True(t, a.oneWay)
			require.Equal(t, uint64(7), b.id)
			require.Equal(t, "echo:later", b.reply)
		}},
		{"closed dispatcher drops requests and releases their buffers", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Close()
			_, ok := d.Accept(8, fabric.MethodUserBase, nil, false, new([]byte))
			require.False(t, ok)
			r.mu.Lock()
			defer r.mu.Unlock()
			require.Equal(t, 1, r.released)
		}},
		{"wait gives up at its deadline naming the stragglers", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(9, fabric.MethodUserBase+1, nil, false, nil)
			<-blockEntered
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			require.ErrorContains(t, d.Wait(ctx), "1 handlers from peer still running")
			d.Cancel(9)
			r.next(t)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			d := New(context.Background(), &m, "peer", r.respond, r.release)
			tc.run(t, d, r)
			d.Close()
			require.NoError(t, d.Wait(context.Background()))
		})
	}
}

func (r *recorder) releases() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

// TestLend: a request's buffer goes back to the transport only when the
// dispatcher has responded and the handler's loan has been returned,
// whichever comes last; a request without a buffer offers no loan.
func TestLend(t *testing.T) {
	tests := []struct {
		name         string
		returnInside bool // the handler returns the loan before it returns
	}{
		{"returned after the response", false},
		{"returned before the handler returns", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			loans := make(chan fabric.Lender, 1)
			h := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
				require.NotNil(t, r.Lender, "a request with a buffer is lendable")
				r.Lender.Lend()
				r.Lender.Lend() // at most one loan: this does nothing
				if tc.returnInside {
					r.Lender.Return()
				}
				loans <- r.Lender
				return r.Payload, nil
			})
			d := New(context.Background(), h, "peer", rec.respond, rec.release)
			buf := []byte("kept")
			d.Dispatch(1, fabric.MethodUserBase, buf, false, &buf)
			require.Equal(t, "kept", rec.next(t).reply)
			loan := <-loans
			require.NoError(t, d.Wait(context.Background()))
			if !tc.returnInside {
				require.Zero(t, rec.releases(), "the buffer stays lent after the response")
			}
			loan.Return()
			require.Equal(t, 1, rec.releases())
			loan.Return()
			require.Equal(t, 1, rec.releases(), "a second return does nothing")
			d.Close()
		})
	}
	t.Run("no buffer, no loan", func(t *testing.T) {
		rec := newRecorder()
		lendable := make(chan bool, 1)
		h := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
			lendable <- r.Lender != nil
			return nil, nil
		})
		d := New(context.Background(), h, "peer", rec.respond, rec.release)
		d.Dispatch(1, fabric.MethodUserBase, []byte("reused"), false, nil)
		rec.next(t)
		require.False(t, <-lendable)
		require.NoError(t, d.Wait(context.Background()))
		d.Close()
	})
}

// TestWorkersAreReused: a request is handed to a worker left idle by an
// earlier one rather than to a new goroutine; at most maxIdleWorkers stay
// idle, and Close ends them all.
func TestWorkersAreReused(t *testing.T) {
	rec := newRecorder()
	gate := make(chan struct{})
	h := fabric.HandlerFunc(func(context.Context, *fabric.Request) ([]byte, error) {
		<-gate
		return nil, nil
	})
	d := New(context.Background(), h, "peer", rec.respond, rec.release)
	idle := func(n int32) func() bool { return func() bool { return d.idle.Load() == n } }

	// One request at a time: with a new goroutine each, maxIdleWorkers of
	// them would be left waiting. (A worker counts itself idle just before
	// it waits, so a request arriving in between starts a new one: rare.)
	for id := range uint64(3 * maxIdleWorkers) {
		d.Dispatch(id, fabric.MethodUserBase, nil, false, nil)
		gate <- struct{}{}
		rec.next(t)
		require.Eventually(t, func() bool { return d.idle.Load() > 0 }, 10*time.Second, time.Millisecond)
	}
	require.LessOrEqual(t, d.idle.Load(), int32(2), "the idle worker serves the next request")

	const burst = maxIdleWorkers + 4
	for id := range uint64(burst) {
		d.Dispatch(100+id, fabric.MethodUserBase, nil, false, nil)
	}
	for range burst {
		gate <- struct{}{}
		rec.next(t)
	}
	require.Eventually(t, idle(maxIdleWorkers), 10*time.Second, time.Millisecond, "the others exit")
	require.Never(t, func() bool { return d.idle.Load() > maxIdleWorkers }, 50*time.Millisecond, time.Millisecond)

	d.Close()
	require.NoError(t, d.Wait(context.Background()))
	require.Zero(t, d.idle.Load(), "Close ends the idle workers")
}
