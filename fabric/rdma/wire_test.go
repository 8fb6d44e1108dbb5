package rdma

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

func TestMessageRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		h       header
		payload []byte
	}{
		{"call", header{typ: msgCall, method: 300, credits: 7, id: 1 << 40, length: 3}, []byte("abc")},
		{"empty reply", header{typ: msgReply, id: 9}, nil},
		{"error", header{typ: msgError, id: 2, aux: 1007, length: 4}, []byte("nope")},
		{"rendezvous", header{typ: msgRTS, inner: msgOneWay, id: 5, length: 1 << 20, aux: 0xdead, addr: 0x7f0000001000, rz: 3}, nil},
		{"credit", header{typ: msgCredit, credits: 1<<32 - 1}, nil},
		{"ack", header{typ: msgAck, id: 77}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, headerSize+len(tc.payload))
			tc.h.put(b)
			copy(b[headerSize:], tc.payload)
			got, body, err := parseMessage(b)
			require.NoError(t, err)
			require.Equal(t, tc.h, got)
			require.Equal(t, len(tc.payload), len(body))
		})
	}
}

func TestParseMessageRejects(t *testing.T) {
	put := func(h header, extra int) []byte {
		b := make([]byte, headerSize+extra)
		h.put(b)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", make([]byte, headerSize-1), "shorter than its header"},
		{"unknown type", put(header{typ: 42}, 0), "unknown message type 42"},
		{"length mismatch", put(header{typ: msgCall, length: 5}, 4), "says 5 payload bytes but carries 4"},
		{"control with body", put(header{typ: msgCancel}, 1), "unexpected bytes"},
		{"rendezvous of unknown", put(header{typ: msgRTS, inner: msgFIN}, 0), "unknown message type 8"},
		{"rendezvous too large", put(header{typ: msgRTS, inner: msgCall, length: fabric.MaxMessageSize + 1}, 0), "exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseMessage(tc.b)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func FuzzParseMessage(f *testing.F) {
	b := make([]byte, headerSize+3)
	(&header{typ: msgCall, method: 256, length: 3}).put(b)
	f.Add(b)
	r := make([]byte, headerSize)
	(&header{typ: msgRTS, inner: msgReply, length: 1 << 20}).put(r)
	f.Add(r)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := parseMessage(b)
		if err != nil {
			return
		}
		if len(body) != 0 && int(h.length) != len(body) {
			t.Fatalf("accepted a body of %d bytes for length %d", len(body), h.length)
		}
		out := make([]byte, headerSize+len(body))
		h.put(out)
		copy(out[headerSize:], body)
		require.Equal(t, b, out, "an accepted message re-encodes to the same bytes")
	})
}

func validHello() hello {
	h := hello{mtu: 1024, qpn: 17, psn: 0x123456, credits: 16, eager: 8192, lid: 0}
	copy(h.gid[:], net.ParseIP("10.99.0.1").To16())
	return h
}

func TestHelloRoundTrip(t *testing.T) {
	h := validHello()
	got, err := parseHello(h.marshal())
	require.NoError(t, err)
	require.Equal(t, h, got)
}

func TestParseHelloRejects(t *testing.T) {
	tests := []struct {
		name string
		mod  func(h *hello, b []byte) []byte
		want string
	}{
		{"short", func(_ *hello, b []byte) []byte { return b[:10] }, "is 10 bytes"},
		{"magic", func(_ *hello, b []byte) []byte { b[0] = 'X'; return b }, "not a Weft RDMA transport"},
		{"version", func(_ *hello, b []byte) []byte { b[8] = 9; return b }, "handshake version 9"},
		{"mtu", func(h *hello, _ []byte) []byte { h.mtu = 1500; return h.marshal() }, "path MTU 1500"},
		{"qpn", func(h *hello, _ []byte) []byte { h.qpn = 0; return h.marshal() }, "QP number 0"},
		{"psn", func(h *hello, _ []byte) []byte { h.psn = 1 << 24; return h.marshal() }, "PSN"},
		{"credits", func(h *hello, _ []byte) []byte { h.credits = 1; return h.marshal() }, "granted 1 credits"},
		{"eager", func(h *hello, _ []byte) []byte { h.eager = 10; return h.marshal() }, "eager buffer size 10"},
		{"gid", func(h *hello, _ []byte) []byte { h.gid = [16]byte{}; return h.marshal() }, "all-zero GID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHello()
			_, err := parseHello(tc.mod(&h, h.marshal()))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func FuzzParseHello(f *testing.F) {
	h := validHello()
	f.Add(h.marshal())
	f.Add([]byte("WEFTRDMA"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseHello(b)
		if err != nil {
			return
		}
		require.Equal(t, b, got.marshal(), "an accepted hello re-encodes to the same bytes")
	})
}
