package fabric_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

func TestMux(t *testing.T) {
	var m fabric.Mux
	ctx := context.Background()
	_, err := m.ServeFabric(ctx, &fabric.Request{Method: fabric.MethodUserBase})
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod}, "the zero Mux knows no method")
	reply := func(s string) fabric.HandlerFunc {
		return func(context.Context, *fabric.Request) ([]byte, error) { return []byte(s), nil }
	}
	m.Handle(fabric.MethodUserBase, reply("a"))
	m.HandleFunc(fabric.MethodUserBase+1, reply("b"))
	for method, want := range map[fabric.Method]string{fabric.MethodUserBase: "a", fabric.MethodUserBase + 1: "b"} {
		got, err := m.ServeFabric(ctx, &fabric.Request{Method: method})
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	m.Handle(fabric.MethodUserBase, reply("a2"))
	got, err := m.ServeFabric(ctx, &fabric.Request{Method: fabric.MethodUserBase})
	require.NoError(t, err)
	require.Equal(t, "a2", string(got), "Handle replaces")
	_, err = m.ServeFabric(ctx, &fabric.Request{Method: fabric.MethodUserBase + 2})
	require.ErrorIs(t, err, &fabric.RemoteError{Code: fabric.CodeUnknownMethod})
}

// Handle may be called while requests are served (run with -race).
func TestMuxHandleWhileServing(t *testing.T) {
	var m fabric.Mux
	ctx := context.Background()
	m.HandleFunc(fabric.MethodUserBase, func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if w == 0 {
					m.HandleFunc(fabric.MethodUserBase+fabric.Method(1+i), func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil })
					continue
				}
				_, err := m.ServeFabric(ctx, &fabric.Request{Method: fabric.MethodUserBase})
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for i := range 200 {
		_, err := m.ServeFabric(ctx, &fabric.Request{Method: fabric.MethodUserBase + fabric.Method(1+i)})
		require.NoError(t, err, fmt.Sprint("method ", i))
	}
}

// BenchmarkMuxServe routes a request to a handler that does nothing, from
// every processor at once: what each request pays in the Mux.
func BenchmarkMuxServe(b *testing.B) {
	var m fabric.Mux
	for i := range 8 {
		m.HandleFunc(fabric.MethodUserBase+fabric.Method(i), func(context.Context, *fabric.Request) ([]byte, error) { return nil, nil })
	}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		req := &fabric.Request{Method: fabric.MethodUserBase + 3}
		for pb.Next() {
			if _, err := m.ServeFabric(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
