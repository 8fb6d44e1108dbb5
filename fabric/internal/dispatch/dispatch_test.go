package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
		{"close ends running handlers' contexts", func(t *testing.T, d *Dispatcher, r *recorder) {
			d.Dispatch(10, fabric.MethodUserBase+1, nil, false, nil)
			<-blockEntered
			d.Close()
			require.ErrorIs(t, r.next(t).err, context.Canceled)
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

// A duplicate id is answered without holding up Dispatch: its caller is
// the connection's reader (on RDMA, the poller of every connection), and
// the answer may have to wait for the peer.
func TestDuplicateIDAnswerDoesNotBlockDispatch(t *testing.T) {
	entered, unblock := make(chan struct{}), make(chan struct{})
	var m fabric.Mux
	m.HandleFunc(fabric.MethodUserBase, func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	answers := make(chan error, 2)
	respond := func(_ uint64, _ bool, _ []byte, err error) {
		if errors.Is(err, &fabric.RemoteError{Code: fabric.CodeBadRequest}) {
			<-unblock // the peer gives no credit for the answer yet
		}
		answers <- err
	}
	d := New(context.Background(), &m, "peer", respond, nil)
	d.Dispatch(1, fabric.MethodUserBase, nil, false, nil)
	<-entered
	returned := make(chan struct{})
	go func() {
		d.Dispatch(1, fabric.MethodUserBase, nil, false, nil)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		close(unblock)
		<-returned
		t.Fatal("Dispatch waited for the answer to a duplicate id")
	}
	close(unblock)
	require.ErrorIs(t, <-answers, &fabric.RemoteError{Code: fabric.CodeBadRequest})
	d.Close()
	require.ErrorIs(t, <-answers, context.Canceled)
	require.NoError(t, d.Wait(context.Background()))
}

// The end of New's parent ends the handlers' contexts, as Close does.
func TestParentEndsHandlers(t *testing.T) {
	entered := make(chan struct{}, 1)
	h := fabric.HandlerFunc(func(ctx context.Context, _ *fabric.Request) ([]byte, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	parent, cancel := context.WithCancel(context.Background())
	r := newRecorder()
	d := New(parent, h, "peer", r.respond, r.release)
	d.Dispatch(1, fabric.MethodUserBase, nil, false, nil)
	<-entered
	cancel()
	require.ErrorIs(t, r.next(t).err, context.Canceled)
	require.NoError(t, d.Wait(context.Background()))
	_, ok := d.Accept(2, fabric.MethodUserBase, nil, false, nil)
	require.False(t, ok, "a dispatcher whose parent ended takes no more requests")
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

// BenchmarkGoDeepHandler serves requests whose handler needs about 6 KiB
// of stack (the adaptive server's depth), each on a fresh goroutine as
// Dispatch does: "grown" grows the stack first (GrowStack), "plain" lets
// the runtime grow it as the handler deepens.
func BenchmarkGoDeepHandler(b *testing.B) {
	h := fabric.HandlerFunc(func(context.Context, *fabric.Request) ([]byte, error) {
		return nil, nil
	})
	deep := fabric.HandlerFunc(func(ctx context.Context, r *fabric.Request) ([]byte, error) {
		var frame [96]byte
		return recurse(ctx, r, 48, &frame, h) // 48 frames of about 128 bytes
	})
	for _, name := range []string{"grown", "plain"} {
		b.Run(name, func(b *testing.B) {
			done := make(chan struct{}, 1)
			d := New(context.Background(), deep, "peer", func(uint64, bool, []byte, error) { done <- struct{}{} }, nil)
			defer d.Close()
			b.ReportAllocs()
			id := uint64(0)
			for b.Loop() {
				id++
				t, ok := d.Accept(id, fabric.MethodUserBase, nil, false, nil)
				require.True(b, ok)
				if name == "grown" {
					go t.serve()
				} else {
					go t.Run()
				}
				<-done
			}
		})
	}
}

//go:noinline
func recurse(ctx context.Context, r *fabric.Request, n int, frame *[96]byte, h fabric.Handler) ([]byte, error) {
	if n == 0 {
		return h.ServeFabric(ctx, r)
	}
	var mine [96]byte
	mine[n%len(mine)] = frame[n%len(frame)] + 1
	return recurse(ctx, r, n-1, &mine, h)
}

// BenchmarkAcceptRun is the dispatcher's share of a quick request served
// on the reader goroutine, as tcp serves a lone call: accept, run an echo
// handler, respond. "parallel" does it from every processor at once on
// one dispatcher, as a connection with many calls in flight.
func BenchmarkAcceptRun(b *testing.B) {
	h := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	payload := make([]byte, 64)
	b.Run("serial", func(b *testing.B) {
		d := New(context.Background(), h, "peer", func(uint64, bool, []byte, error) {}, nil)
		defer d.Close()
		b.ReportAllocs()
		id := uint64(0)
		for b.Loop() {
			id++
			t, _ := d.Accept(id, fabric.MethodUserBase, payload, false, nil)
			t.Run()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		d := New(context.Background(), h, "peer", func(uint64, bool, []byte, error) {}, nil)
		defer d.Close()
		var ids atomic.Uint64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t, _ := d.Accept(ids.Add(1), fabric.MethodUserBase, payload, false, nil)
				t.Run()
			}
		})
	})
}
