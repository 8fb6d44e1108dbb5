package tcp

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// answeringPeer accepts one connection, answers the hello, reads one
// request and sends back what answer builds for its id, then reads and
// ignores everything until the client hangs up.
func answeringPeer(t *testing.T, answer func(id uint64) []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		alloc := func(n int) []byte { return make([]byte, n) }
		var hb [headerSize]byte
		if _, _, err := readFrame(nc, &hb, helloPayload, alloc, nil); err != nil {
			return
		}
		p := hello{maxMessage: 1 << 20, window: 8}.encode()
		putHeader(&hb, typeHello, 0, 0, p, true)
		if _, err := nc.Write(append(hb[:], p...)); err != nil {
			return
		}
		h, _, err := readFrame(nc, &hb, 1<<20, alloc, nil)
		if err != nil {
			return
		}
		if _, err := nc.Write(answer(h.id)); err != nil {
			return
		}
		buf := make([]byte, 4096)
		for {
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// A reply frame the client cannot use breaks the connection; the Call it
// answers must fail with it, not wait forever (which it did, ctx or not,
// when the frame was an error frame too short for its code or an empty
// reply with a bad CRC: the call had left the pending table, so the
// connection's failure did not reach it).
func TestMalformedReplyFailsItsCall(t *testing.T) {
	frame := func(typ uint8, id uint64, payload []byte, crc bool) []byte {
		var hb [headerSize]byte
		putHeader(&hb, typ, 0, id, payload, crc)
		return append(hb[:], payload...)
	}
	tests := []struct {
		name   string
		answer func(id uint64) []byte
	}{
		{"error frame shorter than its code", func(id uint64) []byte { return frame(typeError, id, []byte{1}, false) }},
		{"empty reply with a wrong CRC", func(id uint64) []byte {
			b := frame(typeReply, id, nil, true)
			binary.BigEndian.PutUint32(b[20:], 0xdeadbeef)
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newTransport(t, testConfig(t)).Dial(context.Background(), answeringPeer(t, tt.answer))
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, fabric.MethodUserBase, []byte("hello"))
				errc <- err
			}()
			select {
			case err := <-errc:
				require.ErrorIs(t, err, fabric.ErrClosed)
				require.ErrorIs(t, err, ErrProtocol)
			case <-time.After(5 * time.Second):
				t.Fatal("Call did not return 4.5 s after its ctx ended: the malformed reply left it waiting forever")
			}
		})
	}
}
