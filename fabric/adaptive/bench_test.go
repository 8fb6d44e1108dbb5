package adaptive_test

import (
	"context"
	"testing"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/tcp"
)

// BenchmarkCall measures one path list over TCP against plain tcp, small
// calls, as many in flight as -cpu × GOMAXPROCS parallelism gives.
func BenchmarkCall(b *testing.B) {
	echo := fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
		return append([]byte(nil), r.Payload...), nil
	})
	for _, tc := range []struct{ name string }{{"tcp"}, {"adaptive"}} {
		b.Run(tc.name, func(b *testing.B) {
			var c fabric.Conn
			if tc.name == "adaptive" {
				c = tcpPaths(b, echo)
			} else {
				tr, err := tcp.New(tcp.DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				l, err := tr.Listen(context.Background(), "127.0.0.1:0", echo)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close() })
				c, err = tr.Dial(context.Background(), l.Addr())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close() })
			}
			payload := make([]byte, 64)
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(context.Background(), mWork, payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
