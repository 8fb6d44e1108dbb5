package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/weftsearch/weft/fabric"
)

// Wire constants; see the package documentation for the layout.
const (
	headerSize   = 24
	magic        = 0x5746 // "WF"
	version      = 1
	flagCRC      = 1 << 0
	knownFlags   = flagCRC
	readChunk    = 1 << 20 // large payloads are read in steps, refreshing liveness
	helloPayload = 12
)

// Frame types.
const (
	typeHello   = 1 // handshake: limits and options, first frame each way
	typeRequest = 2 // a Call
	typeOneWay  = 3 // a Send
	typeReply   = 4 // a Call's result
	typeError   = 5 // a Call's *fabric.RemoteError: code uint16, message
	typeDone    = 6 // a Send's handler returned: its window slot is free
	typeCancel  = 7 // the caller gave up on request id
	typePing    = 8 // keepalive probe
	typePong    = 9 // keepalive answer
	typeMax     = typePong
)

// ErrProtocol is wrapped by every error about malformed frames; a
// connection that sees one is closed, since framing can no longer be
// trusted.
var ErrProtocol = errors.New("tcp: protocol error")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a decoded frame header.
type header struct {
	typ    uint8
	flags  uint8
	method fabric.Method
	id     uint64
	length uint32
	crc    uint32
}

// putHeader encodes a frame header into b. With withCRC it sums the header
// (less its CRC field) and payload; payload must then be the frame's whole
// payload.
func putHeader(b *[headerSize]byte, typ uint8, method fabric.Method, id uint64, payload []byte, withCRC bool) {
	encodeHeader(b, typ, method, id, len(payload), withCRC)
	if withCRC {
		setCRC(b, crc32.Update(crc32.Checksum(b[:20], castagnoli), castagnoli, payload))
	}
}

// putHeaderVec is putHeader for a payload given as pieces: the frame's
// payload is their concatenation.
func putHeaderVec(b *[headerSize]byte, typ uint8, method fabric.Method, id uint64, pieces [][]byte, withCRC bool) {
	encodeHeader(b, typ, method, id, vecLen(pieces), withCRC)
	if withCRC {
		sum := crc32.Checksum(b[:20], castagnoli)
		for _, p := range pieces {
			sum = crc32.Update(sum, castagnoli, p)
		}
		setCRC(b, sum)
	}
}

// encodeHeader writes a header for a payload of n bytes, its CRC field
// zero; withCRC sets the CRC flag, which the checksum covers, so setCRC
// must follow.
func encodeHeader(b *[headerSize]byte, typ uint8, method fabric.Method, id uint64, n int, withCRC bool) {
	binary.BigEndian.PutUint16(b[0:], magic)
	b[2] = version
	b[3] = typ
	b[4] = 0
	if withCRC {
		b[4] = flagCRC
	}
	b[5] = 0
	binary.BigEndian.PutUint16(b[6:], uint16(method))
	binary.BigEndian.PutUint64(b[8:], id)
	binary.BigEndian.PutUint32(b[16:], uint32(n))
	binary.BigEndian.PutUint32(b[20:], 0)
}

// setCRC stores sum in the CRC field of b.
func setCRC(b *[headerSize]byte, sum uint32) {
	binary.BigEndian.PutUint32(b[20:], sum)
}

// vecLen is the length of the concatenation of pieces.
func vecLen(pieces [][]byte) int {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	return n
}

// decodeHeader parses and checks a header; limit bounds the payload length.
func decodeHeader(b *[headerSize]byte, limit uint32) (header, error) {
	if m := binary.BigEndian.Uint16(b[0:]); m != magic {
		return header{}, fmt.Errorf("%w: bad magic %#04x, want %#04x: the peer does not speak the weft fabric protocol", ErrProtocol, m, magic)
	}
	if b[2] != version {
		return header{}, fmt.Errorf("%w: unsupported version %d, this build speaks %d: upgrade the older node", ErrProtocol, b[2], version)
	}
	h := header{
		typ:    b[3],
		flags:  b[4],
		method: fabric.Method(binary.BigEndian.Uint16(b[6:])),
		id:     binary.BigEndian.Uint64(b[8:]),
		length: binary.BigEndian.Uint32(b[16:]),
		crc:    binary.BigEndian.Uint32(b[20:]),
	}
	switch {
	case h.typ == 0 || h.typ > typeMax:
		return header{}, fmt.Errorf("%w: unknown frame type %d", ErrProtocol, h.typ)
	case h.flags&^knownFlags != 0:
		return header{}, fmt.Errorf("%w: unknown flags %#02x", ErrProtocol, h.flags)
	case b[5] != 0:
		return header{}, fmt.Errorf("%w: reserved byte is %#02x, want 0", ErrProtocol, b[5])
	case h.length > limit:
		return header{}, fmt.Errorf("%w: frame type %d declares %d payload bytes, above the limit %d: %w",
			ErrProtocol, h.typ, h.length, limit, fabric.ErrTooLarge)
	case h.flags&flagCRC == 0 && h.crc != 0:
		return header{}, fmt.Errorf("%w: CRC field %#08x set without the CRC flag", ErrProtocol, h.crc)
	}
	return h, nil
}

// checkCRC verifies a frame's checksum when it carries one.
func checkCRC(b *[headerSize]byte, h header, payload []byte) error {
	if h.flags&flagCRC == 0 {
		return nil
	}
	sum := crc32.Update(crc32.Checksum(b[:20], castagnoli), castagnoli, payload)
	if sum != h.crc {
		return fmt.Errorf("%w: CRC32C mismatch on frame type %d id %d (%d bytes): got %#08x, header says %#08x; the data was corrupted in transit",
			ErrProtocol, h.typ, h.id, h.length, sum, h.crc)
	}
	return nil
}

// readFull reads len(p) bytes in steps of at most readChunk, calling
// progress after each so that a long transfer keeps the peer alive.
func readFull(r io.Reader, p []byte, progress func()) error {
	for len(p) > 0 {
		n := min(len(p), readChunk)
		if _, err := io.ReadFull(r, p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if progress != nil {
			progress()
		}
	}
	return nil
}

// readFrame reads one frame: header, then a payload in a buffer from
// alloc (called only after the length passed the limit check), then the
// CRC check. It is the decoder FuzzDecodeFrame exercises.
func readFrame(r io.Reader, hb *[headerSize]byte, limit uint32, alloc func(int) []byte, progress func()) (header, []byte, error) {
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return header{}, nil, err
	}
	h, err := decodeHeader(hb, limit)
	if err != nil {
		return header{}, nil, err
	}
	var p []byte
	if h.length > 0 {
		p = alloc(int(h.length))
		if err := readFull(r, p, progress); err != nil {
			return header{}, nil, unexpectedEOF(err)
		}
	}
	if err := checkCRC(hb, h, p); err != nil {
		return header{}, nil, err
	}
	return h, p, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// hello is the handshake payload: what each side accepts.
type hello struct {
	maxMessage uint32 // largest payload this side accepts
	window     uint32 // in-flight calls this side allows per connection
	wantCRC    bool   // this side asks for checksummed frames
}

func (h hello) encode() []byte {
	b := make([]byte, helloPayload)
	binary.BigEndian.PutUint32(b[0:], h.maxMessage)
	binary.BigEndian.PutUint32(b[4:], h.window)
	if h.wantCRC {
		b[8] = 1
	}
	return b
}

// Hello fields: the bounds Config.Validate puts on the values they carry.
const (
	helloWantCRC   = 1 << 0 // byte 8
	helloMaxWindow = 1 << 16
)

// decodeHello parses a hello payload and checks every field's range: a
// peer announcing limits this build cannot honour, or bits it does not
// know, is refused during the handshake rather than trusted later.
func decodeHello(p []byte) (hello, error) {
	if len(p) != helloPayload {
		return hello{}, fmt.Errorf("%w: hello of %d bytes, want %d", ErrProtocol, len(p), helloPayload)
	}
	h := hello{maxMessage: binary.BigEndian.Uint32(p[0:]), window: binary.BigEndian.Uint32(p[4:]), wantCRC: p[8]&helloWantCRC != 0}
	switch {
	case h.maxMessage < 1 || h.maxMessage > fabric.MaxMessageSize:
		return hello{}, fmt.Errorf("%w: hello announces a max message of %d bytes, outside [1, %d]", ErrProtocol, h.maxMessage, fabric.MaxMessageSize)
	case h.window < 1 || h.window > helloMaxWindow:
		return hello{}, fmt.Errorf("%w: hello announces a window of %d calls, outside [1, %d]", ErrProtocol, h.window, helloMaxWindow)
	case p[8]&^helloWantCRC != 0:
		return hello{}, fmt.Errorf("%w: hello options byte %#02x has unknown bits set (known: %#02x)", ErrProtocol, p[8], helloWantCRC)
	case p[9] != 0 || p[10] != 0 || p[11] != 0:
		return hello{}, fmt.Errorf("%w: hello reserved bytes are %#x, want 0", ErrProtocol, p[9:12])
	}
	return h, nil
}

// encodeError is the payload of a typeError frame.
func encodeError(re *fabric.RemoteError) []byte {
	b := make([]byte, 2, 2+len(re.Message))
	binary.BigEndian.PutUint16(b, uint16(re.Code))
	return append(b, re.Message...)
}

func decodeError(p []byte) (*fabric.RemoteError, error) {
	if len(p) < 2 {
		return nil, fmt.Errorf("%w: error frame of %d bytes, want at least 2", ErrProtocol, len(p))
	}
	return &fabric.RemoteError{Code: fabric.Code(binary.BigEndian.Uint16(p)), Message: string(p[2:])}, nil
}
