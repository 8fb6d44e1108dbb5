package adaptive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/weftsearch/weft/fabric"
)

// MethodEnvelope is the reserved fabric method that carries the adaptive
// transport's envelope on each underlying path. Calls made through an
// adaptive Conn travel as MethodEnvelope calls; one-way messages and
// fabric.MethodPing travel as themselves.
const MethodEnvelope = fabric.MethodAdaptiveEnvelope

// Envelope kinds.
const (
	kindCall    byte = 1 // a whole request: header, then the payload
	kindChunk   byte = 2 // part of a striped request: header, then bytes at Offset
	kindExec    byte = 3 // run the striped request whose chunks have all arrived
	kindFetch   byte = 4 // return Length bytes at Offset of a striped reply
	kindCancel  byte = 5 // one-way: cancel request ID
	kindRelease byte = 6 // one-way: the client has the whole reply of ID
	kindBye     byte = 7 // one-way: the session is closing; cancel everything
)

const (
	wireVersion = 1
	// headerSize: version, kind, method, session, id, watermark, total,
	// offset, length.
	headerSize = 1 + 1 + 2 + 8 + 8 + 8 + 8 + 8 + 4
)

// inlineReply in the Length field of a kindCall asks for the reply in one
// piece whatever its size (the caller chose one path for this size).
const inlineReply = 1

// codeStripedReply marks a reply too large to return in one piece: the
// call succeeded, and its reply (whose length is the error's message, in
// decimal) waits on the server to be fetched in chunks. It is a fabric code
// (below fabric.CodeUserBase) that never reaches callers of Conn.Call.
const codeStripedReply = fabric.CodeStripedReply

// stripedReply is the marker error for a reply of n bytes.
func stripedReply(n int) error {
	return fabric.Errorf(codeStripedReply, "%d", n)
}

// isStripedReply reports whether err is the marker and the reply length.
func isStripedReply(err error) (int, bool) {
	if err == nil {
		return 0, false
	}
	var re *fabric.RemoteError
	if !errors.As(err, &re) || re.Code != codeStripedReply {
		return 0, false
	}
	n, perr := strconv.Atoi(re.Message)
	if perr != nil || n < 0 || n > fabric.MaxMessageSize {
		return 0, false
	}
	return n, true
}

// header is the fixed part of every envelope.
type header struct {
	Kind    byte
	Method  fabric.Method
	Session uint64
	ID      uint64
	// Watermark: every request ID below it is finished on the client, so
	// the server may forget them.
	Watermark uint64
	Total     uint64 // striped request or reply: total bytes
	// Offset: for a chunk or a fetch, where the bytes start; for a call
	// or an exec, a request id whose reply the client now holds (0: none),
	// so the server can drop that reply before the watermark passes it.
	Offset uint64
	Length uint32 // fetch: how many bytes
}

var errBadEnvelope = errors.New("adaptive: bad envelope")

func (h *header) put(b []byte) {
	b[0] = wireVersion
	b[1] = h.Kind
	binary.BigEndian.PutUint16(b[2:], uint16(h.Method))
	binary.BigEndian.PutUint64(b[4:], h.Session)
	binary.BigEndian.PutUint64(b[12:], h.ID)
	binary.BigEndian.PutUint64(b[20:], h.Watermark)
	binary.BigEndian.PutUint64(b[28:], h.Total)
	binary.BigEndian.PutUint64(b[36:], h.Offset)
	binary.BigEndian.PutUint32(b[44:], h.Length)
}

// parseHeader decodes and checks an envelope; it returns the bytes after
// the header. Every field a server later indexes with is bounded here.
func parseHeader(b []byte) (header, []byte, error) {
	var h header
	if len(b) < headerSize {
		return h, nil, fmt.Errorf("%w: %d bytes, the header alone is %d", errBadEnvelope, len(b), headerSize)
	}
	if b[0] != wireVersion {
		return h, nil, fmt.Errorf("%w: version %d, this build speaks %d; upgrade the older node", errBadEnvelope, b[0], wireVersion)
	}
	h.Kind = b[1]
	h.Method = fabric.Method(binary.BigEndian.Uint16(b[2:]))
	h.Session = binary.BigEndian.Uint64(b[4:])
	h.ID = binary.BigEndian.Uint64(b[12:])
	h.Watermark = binary.BigEndian.Uint64(b[20:])
	h.Total = binary.BigEndian.Uint64(b[28:])
	h.Offset = binary.BigEndian.Uint64(b[36:])
	h.Length = binary.BigEndian.Uint32(b[44:])
	body := b[headerSize:]
	switch h.Kind {
	case kindCall, kindCancel, kindRelease, kindBye:
	case kindChunk:
		if h.Total > fabric.MaxMessageSize || h.Offset > h.Total || uint64(len(body)) > h.Total-h.Offset || len(body) == 0 {
			return h, nil, fmt.Errorf("%w: chunk of %d bytes at %d of a %d-byte message (limit %d)",
				errBadEnvelope, len(body), h.Offset, h.Total, fabric.MaxMessageSize)
		}
	case kindExec:
		if h.Total > fabric.MaxMessageSize {
			return h, nil, fmt.Errorf("%w: striped message of %d bytes exceeds %d", errBadEnvelope, h.Total, fabric.MaxMessageSize)
		}
	case kindFetch:
		if h.Offset > fabric.MaxMessageSize || uint64(h.Length) > fabric.MaxMessageSize {
			return h, nil, fmt.Errorf("%w: fetch of %d bytes at %d", errBadEnvelope, h.Length, h.Offset)
		}
	default:
		return h, nil, fmt.Errorf("%w: unknown kind %d", errBadEnvelope, h.Kind)
	}
	return h, body, nil
}
