package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/weftsearch/weft/fabric"
)

// Message types on the QP. Every message starts with a header.
const (
	msgCall   uint8 = 1  // request; id is the call id
	msgOneWay uint8 = 2  // Conn.Send
	msgReply  uint8 = 3  // successful reply to call id
	msgError  uint8 = 4  // error reply: aux is the code, payload the text
	msgCancel uint8 = 5  // the caller gave up on call id
	msgCredit uint8 = 6  // returns credits only; consumes none
	msgRTS    uint8 = 7  // rendezvous: inner is the carried type, addr/rkey/length the region to READ, rz its id
	msgFIN    uint8 = 8  // rendezvous rz has been read; the sender may release it
	msgAck    uint8 = 9  // the handler of one-way message id has returned
	msgRTW    uint8 = 10 // rendezvous by WRITE: inner/method/id/length announced, rz the sender's id
	msgCTS    uint8 = 11 // answer to RTW: write rz into addr with rkey aux
	msgDone   uint8 = 12 // rz has been written (the WRITEs precede this SEND on the QP)
)

// header is the fixed 40-byte header of every QP message.
//
//	0 type u8 | 1 inner u8 | 2 method u16 | 4 credits u32 | 8 id u64 |
//	16 length u32 | 20 aux u32 (rkey or error code) | 24 addr u64 | 32 rz u64
//
// credits is the cumulative count (mod 2^32) of receive buffers the sender
// of the header has freed for its peer on this connection.
type header struct {
	typ     uint8
	inner   uint8
	method  fabric.Method
	credits uint32
	id      uint64
	length  uint32
	aux     uint32
	addr    uint64
	rz      uint64
}

var errShortHeader = errors.New("rdma: message shorter than its header")

func (h *header) put(b []byte) {
	_ = b[headerSize-1]
	b[0] = h.typ
	b[1] = h.inner
	binary.LittleEndian.PutUint16(b[2:], uint16(h.method))
	binary.LittleEndian.PutUint32(b[4:], h.credits)
	binary.LittleEndian.PutUint64(b[8:], h.id)
	binary.LittleEndian.PutUint32(b[16:], h.length)
	binary.LittleEndian.PutUint32(b[20:], h.aux)
	binary.LittleEndian.PutUint64(b[24:], h.addr)
	binary.LittleEndian.PutUint64(b[32:], h.rz)
}

// parseMessage decodes a received message of n bytes and checks it against
// the protocol: it returns the header and the eager payload (a sub-slice of
// b). It never panics on any input.
func parseMessage(b []byte) (header, []byte, error) {
	var h header
	if len(b) < headerSize {
		return h, nil, fmt.Errorf("%w: %d bytes", errShortHeader, len(b))
	}
	h.typ = b[0]
	h.inner = b[1]
	h.method = fabric.Method(binary.LittleEndian.Uint16(b[2:]))
	h.credits = binary.LittleEndian.Uint32(b[4:])
	h.id = binary.LittleEndian.Uint64(b[8:])
	h.length = binary.LittleEndian.Uint32(b[16:])
	h.aux = binary.LittleEndian.Uint32(b[20:])
	h.addr = binary.LittleEndian.Uint64(b[24:])
	h.rz = binary.LittleEndian.Uint64(b[32:])
	body := b[headerSize:]
	switch h.typ {
	case msgCall, msgOneWay, msgReply, msgError:
		if int(h.length) != len(body) {
			return h, nil, fmt.Errorf("rdma: message type %d says %d payload bytes but carries %d", h.typ, h.length, len(body))
		}
		return h, body, nil
	case msgCancel, msgCredit, msgFIN, msgAck, msgCTS, msgDone:
		if len(body) != 0 {
			return h, nil, fmt.Errorf("rdma: control message type %d carries %d unexpected bytes", h.typ, len(body))
		}
		return h, nil, nil
	case msgRTS, msgRTW:
		switch h.inner {
		case msgCall, msgOneWay, msgReply, msgError:
		default:
			return h, nil, fmt.Errorf("rdma: rendezvous announces unknown message type %d", h.inner)
		}
		if h.length > fabric.MaxMessageSize {
			return h, nil, fmt.Errorf("rdma: rendezvous of %d bytes exceeds the %d-byte limit: %w", h.length, fabric.MaxMessageSize, fabric.ErrTooLarge)
		}
		if len(body) != 0 {
			return h, nil, fmt.Errorf("rdma: rendezvous announcement carries %d unexpected bytes", len(body))
		}
		return h, nil, nil
	default:
		return h, nil, fmt.Errorf("rdma: unknown message type %d", h.typ)
	}
}

// The handshake on the TCP control connection: each side sends one hello;
// the dialler then sends helloReady once its QP is ready to send.
const (
	helloSize    = 48
	helloVersion = 1
	helloReady   = 'R'
)

var helloMagic = [8]byte{'W', 'E', 'F', 'T', 'R', 'D', 'M', 'A'}

// hello carries what the peer needs to connect its QP to ours.
//
//	0 magic [8] | 8 version u16 | 10 mtu u16 (bytes) | 12 qpn u32 | 16 psn u32 |
//	20 credits u32 | 24 eager u32 | 28 lid u16 | 30 reserved u16 | 32 gid [16]
type hello struct {
	mtu     int
	qpn     uint32
	psn     uint32
	credits uint32
	eager   uint32
	lid     uint16
	gid     [16]byte
}

func (h *hello) marshal() []byte {
	b := make([]byte, helloSize)
	copy(b, helloMagic[:])
	binary.LittleEndian.PutUint16(b[8:], helloVersion)
	binary.LittleEndian.PutUint16(b[10:], uint16(h.mtu))
	binary.LittleEndian.PutUint32(b[12:], h.qpn)
	binary.LittleEndian.PutUint32(b[16:], h.psn)
	binary.LittleEndian.PutUint32(b[20:], h.credits)
	binary.LittleEndian.PutUint32(b[24:], h.eager)
	binary.LittleEndian.PutUint16(b[28:], h.lid)
	copy(b[32:], h.gid[:])
	return b
}

// parseHello decodes and checks a peer's hello. It never panics.
func parseHello(b []byte) (hello, error) {
	var h hello
	if len(b) != helloSize {
		return h, fmt.Errorf("rdma: handshake hello is %d bytes, want %d", len(b), helloSize)
	}
	if [8]byte(b[:8]) != helloMagic {
		return h, fmt.Errorf("rdma: handshake from a peer that is not a Weft RDMA transport (magic %q); is the address a TCP fabric port?", b[:8])
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != helloVersion {
		return h, fmt.Errorf("rdma: peer speaks handshake version %d, this side %d; upgrade the older node", v, helloVersion)
	}
	h.mtu = int(binary.LittleEndian.Uint16(b[10:]))
	h.qpn = binary.LittleEndian.Uint32(b[12:])
	h.psn = binary.LittleEndian.Uint32(b[16:])
	h.credits = binary.LittleEndian.Uint32(b[20:])
	h.eager = binary.LittleEndian.Uint32(b[24:])
	h.lid = binary.LittleEndian.Uint16(b[28:])
	copy(h.gid[:], b[32:48])
	switch h.mtu {
	case 256, 512, 1024, 2048, 4096:
	default:
		return h, fmt.Errorf("rdma: peer announced path MTU %d, not one of 256..4096", h.mtu)
	}
	if h.qpn == 0 || h.qpn >= 1<<24 {
		return h, fmt.Errorf("rdma: peer announced QP number %d outside (0, 2^24)", h.qpn)
	}
	if h.psn >= 1<<24 {
		return h, fmt.Errorf("rdma: peer announced PSN %d outside [0, 2^24)", h.psn)
	}
	if h.credits < 2 || h.credits > 4096 {
		return h, fmt.Errorf("rdma: peer granted %d credits, outside [2,4096]", h.credits)
	}
	if h.eager < 256 || h.eager > 1<<20 {
		return h, fmt.Errorf("rdma: peer eager buffer size %d outside [256,1MiB]", h.eager)
	}
	if net.IP(h.gid[:]).IsUnspecified() {
		return h, errors.New("rdma: peer announced an all-zero GID; its device has no usable GID")
	}
	return h, nil
}
