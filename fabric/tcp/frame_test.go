package tcp

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

func encodeFrame(typ uint8, method fabric.Method, id uint64, payload []byte, withCRC bool) []byte {
	var hb [headerSize]byte
	putHeader(&hb, typ, method, id, payload, withCRC)
	return append(hb[:], payload...)
}

func alloc(n int) []byte { return make([]byte, n) }

func TestDecodeFrame(t *testing.T) {
	good := encodeFrame(typeRequest, 300, 7, []byte("payload"), true)
	mutate := func(i int, b byte) []byte {
		f := bytes.Clone(good)
		f[i] = b
		return f
	}
	tests := []struct {
		name    string
		in      []byte
		limit   uint32
		wantErr error
		wantMsg string
	}{
		{"valid with CRC", good, 1 << 20, nil, ""},
		{"valid without CRC", encodeFrame(typeReply, 0, 9, []byte("x"), false), 1 << 20, nil, ""},
		{"empty payload", encodeFrame(typePing, 0, 0, nil, false), 0, nil, ""},
		{"bad magic", mutate(0, 'G'), 1 << 20, ErrProtocol, "bad magic"},
		{"future version", mutate(2, 2), 1 << 20, ErrProtocol, "unsupported version 2"},
		{"unknown type", mutate(3, 42), 1 << 20, ErrProtocol, "unknown frame type 42"},
		{"unknown flag", mutate(4, 0x81), 1 << 20, ErrProtocol, "unknown flags"},
		{"reserved byte set", mutate(5, 1), 1 << 20, ErrProtocol, "reserved byte"},
		{"length above limit", good, 3, fabric.ErrTooLarge, "above the limit 3"},
		{"corrupted payload", mutate(headerSize+2, 'X'), 1 << 20, ErrProtocol, "CRC32C mismatch"},
		{"corrupted id", mutate(12, 0xff), 1 << 20, ErrProtocol, "CRC32C mismatch"},
		{"truncated header", good[:10], 1 << 20, io.ErrUnexpectedEOF, ""},
		{"truncated payload", good[:headerSize+3], 1 << 20, io.ErrUnexpectedEOF, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hb [headerSize]byte
			h, p, err := readFrame(bytes.NewReader(tc.in), &hb, tc.limit, alloc, nil)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, tc.in[headerSize:], append([]byte{}, p...))
				require.EqualValues(t, len(p), h.length)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			if tc.wantMsg != "" {
				require.ErrorContains(t, err, tc.wantMsg)
			}
		})
	}
}

func TestHelloAndErrorRoundTrip(t *testing.T) {
	h := hello{maxMessage: 12345, window: 17, wantCRC: true}
	got, err := decodeHello(h.encode())
	require.NoError(t, err)
	require.Equal(t, h, got)
	_, err = decodeHello(hello{maxMessage: 1}.encode())
	require.ErrorIs(t, err, ErrProtocol, "a zero window")
	_, err = decodeHello([]byte{1, 2})
	require.ErrorIs(t, err, ErrProtocol)

	re := &fabric.RemoteError{Code: fabric.CodeUserBase + 3, Message: "nope"}
	back, err := decodeError(encodeError(re))
	require.NoError(t, err)
	require.Equal(t, re, back)
	_, err = decodeError([]byte{1})
	require.ErrorIs(t, err, ErrProtocol)
}

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder: it must
// never panic, never allocate more than the limit for a declared length,
// and either return well-formed frames or a clear error.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(encodeFrame(typeRequest, 256, 1, []byte("hello"), true))
	f.Add(encodeFrame(typeReply, 0, 2, bytes.Repeat([]byte{0xab}, 300), false))
	f.Add(encodeFrame(typeHello, 0, 0, hello{maxMessage: 1 << 20, window: 8}.encode(), true))
	f.Add(encodeFrame(typeError, 0, 3, encodeError(&fabric.RemoteError{Code: 2, Message: "x"}), false))
	f.Add(append(encodeFrame(typePing, 0, 0, nil, false), encodeFrame(typeCancel, 0, 5, nil, true)...))
	f.Add([]byte("WF\x01\x02\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Add([]byte{})
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var hb [headerSize]byte
		for {
			h, p, err := readFrame(r, &hb, limit, func(n int) []byte {
				if n > limit {
					t.Fatalf("allocating %d bytes for a frame, above the limit %d", n, limit)
				}
				return make([]byte, n)
			}, nil)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrProtocol) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
			if int(h.length) != len(p) || h.typ == 0 || h.typ > typeMax {
				t.Fatalf("decoded an inconsistent frame: %+v with %d bytes", h, len(p))
			}
			switch h.typ {
			case typeHello:
				_, _ = decodeHello(p)
			case typeError:
				_, _ = decodeError(p)
			}
		}
	})
}
