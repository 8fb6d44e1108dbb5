package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// FuzzClientFrames feeds arbitrary bytes, as a server's side of the stream,
// to a client connection with two Calls (ids 1 and 2, one of them reading
// the socket itself) and a Send (id 3) outstanding. Whatever the bytes,
// every call must return, with its reply or with a *fabric.RemoteError or
// an error wrapping fabric.ErrClosed, and Close must return: the client's
// resumable frame reader never panics, hangs or answers a call twice.
func FuzzClientFrames(f *testing.F) {
	reply1 := encodeFrame(typeReply, 0, 1, []byte("one"), false)
	err2 := encodeFrame(typeError, 0, 2, encodeError(&fabric.RemoteError{Code: 7, Message: "no"}), true)
	done3 := encodeFrame(typeDone, 0, 3, nil, false)
	f.Add(bytes.Join([][]byte{reply1, err2, done3}, nil))
	f.Add(bytes.Join([][]byte{encodeFrame(typePing, 0, 0, nil, false), done3, err2, reply1}, nil))
	f.Add(bytes.Join([][]byte{encodeFrame(typeReply, 0, 2, bytes.Repeat([]byte{9}, 70000), true), reply1}, nil))
	f.Add(encodeFrame(typeError, 0, 1, nil, false))                        // an error frame shorter than its code
	f.Add(encodeFrame(typeReply, 0, 9, []byte("unknown id"), false))       // a reply nobody asked for
	f.Add(encodeFrame(typeDone, 0, 1, nil, false))                         // done for a Call
	f.Add(encodeFrame(typeRequest, 300, 1, []byte("from a server"), true)) // a request from the server
	f.Add(reply1[:30])                                                     // cut in the middle
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, stream []byte) {
		defer panicOnHang(stream).Stop()
		srv, cli := net.Pipe()
		cfg := DefaultConfig()
		cfg.BulkSockets = 0
		cfg.MaxMessageSize = 1 << 20
		l := newLink(&cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), cli, nil, "pipe")
		l.peerMax, l.window = 1<<20, 8
		c := newConn(l, nil, nil)
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = io.Copy(io.Discard, srv) }) // the requests
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errs := make(chan error, 3)
		for range 2 {
			wg.Go(func() {
				_, err := c.Call(ctx, fabric.MethodUserBase, []byte("q"))
				errs <- err
			})
		}
		for len(c.sem) < 2 { // ids 1 and 2 are taken before the Send's 3
			time.Sleep(50 * time.Microsecond)
		}
		errs <- c.Send(ctx, fabric.MethodUserBase, []byte("s"))
		wg.Go(func() {
			// Once nothing is outstanding the client stops reading and,
			// the pipe having no buffer, Write waits for Close below.
			_, _ = srv.Write(stream)
			_ = srv.Close() // the end of the stream: what is still outstanding fails
		})
		for range 3 {
			if err := <-errs; err != nil && !errors.Is(err, fabric.ErrClosed) {
				var re *fabric.RemoteError
				if !errors.As(err, &re) {
					t.Fatalf("call failed with %v, want a reply, a *fabric.RemoteError or fabric.ErrClosed", err)
				}
			}
		}
		_ = c.Close()
		wg.Wait()
	})
}

// panicOnHang panics with every goroutine's stack if not stopped within
// 10 s: a fuzz input that hangs a connection is a failure too.
func panicOnHang(stream []byte) *time.Timer {
	return time.AfterFunc(10*time.Second, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("hung on %q\n%s", stream, buf[:n]))
	})
}
