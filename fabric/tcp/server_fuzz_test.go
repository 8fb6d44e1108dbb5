package tcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// FuzzServerFrames feeds arbitrary bytes, as a client's side of the stream
// after a valid hello, to a listener whose handlers echo (mEcho) or hold
// their payload past the watchdog period before echoing it (mBlock here).
// Whatever the bytes, the server must not panic or hang — it closes the
// connection once the stream ends or turns bad — and a held payload must be
// unchanged when its handler looks at it again, though the reader may have
// been lent the read buffer and later frames read meanwhile. The budgets are
// small (ConnInFlightBytes 1 MiB, InFlightBytes 2 MiB) so that declared
// sizes reach them; a stream that starts with "stall:" is not ended, so
// that a frame it leaves unfinished stalls (StallTimeout is 20 ms). Once
// the connection is gone, nothing may stay charged to InFlightBytes.
func FuzzServerFrames(f *testing.F) {
	req := func(m fabric.Method, id uint64, p []byte, crc bool) []byte {
		return encodeFrame(typeRequest, m, id, p, crc)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<10)
	f.Add(bytes.Join([][]byte{req(mBlock, 1, big, false), req(mEcho, 2, bytes.Repeat([]byte{'x'}, len(big)), false)}, nil))
	f.Add(bytes.Join([][]byte{req(mEcho, 1, []byte("one"), true), req(mEcho, 2, []byte("two"), false)}, nil))
	f.Add(bytes.Join([][]byte{encodeFrame(typeOneWay, mEcho, 1, []byte("send"), false), encodeFrame(typeCancel, 0, 2, nil, false)}, nil))
	f.Add(bytes.Join([][]byte{encodeFrame(typePing, 0, 0, nil, false), req(mBlock, 1, []byte("held"), false), encodeFrame(typeCancel, 0, 1, nil, false)}, nil))
	f.Add(req(mEcho, 1, big, false)[:9000])                                                // cut in the middle of a payload
	f.Add(bytes.Join([][]byte{req(mEcho, 1, nil, false), req(mEcho, 1, nil, false)}, nil)) // a duplicate id
	f.Add(encodeFrame(typeReply, 0, 1, []byte("a reply from a client"), false))
	f.Add([]byte("not a frame at all, just bytes"))
	f.Add(append(requestHeader(1, 0xffffffff), make([]byte, 100)...))                             // declares 4 GiB
	f.Add(append(requestHeader(1, 1<<20), make([]byte, 100)...))                                  // declares 1 MiB, sends 100 B
	f.Add(append([]byte("stall:"), append(requestHeader(1, 300<<10), make([]byte, 70000)...)...)) // then stalls
	f.Add(append([]byte("stall:"), requestHeader(1, 10)[:7]...))                                  // stalls in a header
	f.Add(bytes.Join([][]byte{req(mBlock, 1, make([]byte, 700<<10), false), req(mEcho, 2, make([]byte, 700<<10), false)}, nil))
	f.Add([]byte{})

	var damaged atomic.Value // string: the first held payload found changed
	var m fabric.Mux
	m.HandleFunc(mEcho, func(_ context.Context, r *fabric.Request) ([]byte, error) { return r.Payload, nil })
	m.HandleFunc(mBlock, func(_ context.Context, r *fabric.Request) ([]byte, error) {
		before := bytes.Clone(r.Payload)
		time.Sleep(3 * watchPeriod) // even when cancelled: the reader goes on meanwhile
		if !bytes.Equal(before, r.Payload) {
			damaged.CompareAndSwap(nil, fmt.Sprintf("%d-byte payload of request changed while its handler held it", len(before)))
		}
		return r.Payload, nil
	})
	cfg := DefaultConfig()
	cfg.MaxMessageSize, cfg.ConnInFlightBytes, cfg.InFlightBytes = 1<<20, 1<<20, 2<<20
	cfg.StallTimeout = 20 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	tr, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	l, err := tr.Listen(context.Background(), "127.0.0.1:0", &m)
	if err != nil {
		f.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			f.Error(err)
		}
	}()

	f.Fuzz(func(t *testing.T, stream []byte) {
		defer panicOnHang(stream).Stop()
		nc, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		p := hello{maxMessage: 1 << 20, window: 8}.encode()
		var hb [headerSize]byte
		putHeader(&hb, typeHello, 0, 0, p, true)
		if _, err := nc.Write(append(hb[:], p...)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readFrame(nc, &hb, helloPayload, func(n int) []byte { return make([]byte, n) }, nil); err != nil {
			t.Fatal(err)
		}
		replies := make(chan struct{})
		go func() {
			defer close(replies)
			_, _ = io.Copy(io.Discard, nc) // until the server closes
		}()
		stall := bytes.HasPrefix(stream, []byte("stall:"))
		if stall {
			stream = stream[len("stall:"):]
		}
		_, _ = nc.Write(stream)
		if stall {
			select {
			case <-replies: // the server hung up on a stalled frame
			case <-time.After(200 * time.Millisecond): // between frames: no stall
			}
		}
		_ = nc.(*net.TCPConn).CloseWrite() // the end of the stream: the server closes
		<-replies
		for deadline := time.Now().Add(5 * time.Second); tr.mem.used.Load() != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes still charged to InFlightBytes after the connection went (stream %q)", tr.mem.used.Load(), stream)
			}
		}
		if d := damaged.Load(); d != nil {
			t.Fatalf("%s (stream %q)", d, stream)
		}
	})
}
