package adaptive

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    header
		body []byte
	}{
		{"call", header{Kind: kindCall, Method: fabric.MethodUserBase + 3, Session: 7, ID: 9, Watermark: 4}, []byte("payload")},
		{"chunk", header{Kind: kindChunk, Session: 1, ID: 2, Total: 10, Offset: 6}, []byte("abcd")},
		{"fetch", header{Kind: kindFetch, Session: 1, ID: 2, Offset: 1 << 20, Length: 1 << 20}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, headerSize+len(tt.body))
			tt.h.put(b)
			copy(b[headerSize:], tt.body)
			got, body, err := parseHeader(b)
			require.NoError(t, err)
			require.Equal(t, tt.h, got)
			require.Equal(t, string(tt.body), string(body))
		})
	}
}

func TestParseHeaderRejects(t *testing.T) {
	good := make([]byte, headerSize)
	(&header{Kind: kindCall}).put(good)
	tests := []struct {
		name string
		mod  func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:headerSize-1] }},
		{"version", func(b []byte) []byte { b[0] = 9; return b }},
		{"kind", func(b []byte) []byte { b[1] = 200; return b }},
		{"chunk past total", func(b []byte) []byte {
			(&header{Kind: kindChunk, Total: 2, Offset: 1}).put(b)
			return append(b, 1, 2)
		}},
		{"chunk too large", func(b []byte) []byte {
			(&header{Kind: kindChunk, Total: fabric.MaxMessageSize + 1}).put(b)
			return append(b, 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.mod(append([]byte(nil), good...))
			_, _, err := parseHeader(b)
			require.ErrorIs(t, err, errBadEnvelope)
		})
	}
}

// FuzzParseHeader: the envelope parser faces the network; it must never
// panic, and what it accepts must be within the bounds it promises.
func FuzzParseHeader(f *testing.F) {
	for _, h := range []header{
		{Kind: kindCall, Method: 300, Session: 1, ID: 2},
		{Kind: kindChunk, Session: 1, ID: 2, Total: 8, Offset: 4},
		{Kind: kindExec, Total: 1 << 20},
		{Kind: kindFetch, Offset: 10, Length: 20},
		{Kind: kindBye},
	} {
		b := make([]byte, headerSize+4)
		h.put(b)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := parseHeader(b)
		if err != nil {
			return
		}
		if h.Kind == kindChunk && (h.Offset+uint64(len(body)) > h.Total || h.Total > fabric.MaxMessageSize) {
			t.Fatalf("accepted chunk outside its message: %+v body %d", h, len(body))
		}
	})
}
