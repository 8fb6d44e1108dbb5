package shardlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The format of the log, on disk and (records) in replication messages.
//
// Segment files are named <n>.wal (n = 20-digit segment number), in one
// directory. A segment is a sequence of frames:
//
//	length  uint32 LE   bytes of payload
//	crc     uint32 LE   CRC-32C (Castagnoli) of payload
//	payload
//
// A record's payload, which is also the replication wire format, is
//
//	term u64 | seq u64 | version u64 | op u8 (0 index, 1 delete) | uvarint len(id) | id | source
//
// (integers big endian, the uvarint in its shortest form). A sync mark's
// payload is
//
//	0 u64 | 0 u64 | durable u64 | op u8 = 2
//
// and says that the segment's first `durable` bytes had been fsynced
// before the mark was written. Append puts one ahead of its records when an
// fsync has completed since the last mark, and Close ends the segment with
// one; they cost bytes, not fsyncs.

// Frame ops.
const (
	recIndex    byte = 0
	recDelete   byte = 1
	recSyncMark byte = 2
)

const (
	// FrameHeader is the length of a frame's header (payload length and
	// CRC): the fewest bytes any frame takes.
	FrameHeader = 8
	// recFixed is a record payload's fixed part: term, seq, version, op.
	recFixed = 25
	// markPayload is a sync mark's payload length; a record's is longer
	// (its id length takes at least one byte).
	markPayload = recFixed
	// minRecordFrame is the smallest record frame.
	minRecordFrame = FrameHeader + recFixed + 1
)

// maxRecord bounds one record's payload, so that a record the reader
// would reject is never written.
const maxRecord = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Record is one logged operation: a document indexed (or deleted) with its
// sequence number, the primary term it was written in, and its version.
type Record struct {
	Term    uint64
	Seq     uint64
	Version int64
	Delete  bool
	ID      string
	Source  []byte
}

// AppendFrame appends r in its log frame (length, CRC-32C, payload) to b
// and returns the extended slice; replication sends records in this frame
// too (DecodeFrame reads it back).
func (r *Record) AppendFrame(b []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, FrameHeader)...)
	b = binary.BigEndian.AppendUint64(b, r.Term)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Version))
	op := recIndex
	if r.Delete {
		op = recDelete
	}
	b = append(b, op)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = append(b, r.Source...)
	return sealFrame(b, start)
}

// appendMark appends a sync mark's frame to b.
func appendMark(b []byte, durable int64) []byte {
	start := len(b)
	b = append(b, make([]byte, FrameHeader+16)...)
	b = binary.BigEndian.AppendUint64(b, uint64(durable))
	b = append(b, recSyncMark)
	return sealFrame(b, start)
}

// sealFrame fills in the header of the frame that starts at b[start].
func sealFrame(b []byte, start int) []byte {
	payload := b[start+FrameHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(payload, crcTable))
	return b
}

var errBadPayload = errors.New("malformed record payload")

// decodeRecord decodes a record payload. It accepts exactly the payloads
// AppendFrame produces: re-encoding the record gives p back.
func decodeRecord(p []byte) (Record, error) {
	var r Record
	if len(p) < recFixed+1 {
		return r, errBadPayload
	}
	r.Term = binary.BigEndian.Uint64(p[0:])
	r.Seq = binary.BigEndian.Uint64(p[8:])
	r.Version = int64(binary.BigEndian.Uint64(p[16:]))
	switch p[24] {
	case recIndex:
	case recDelete:
		r.Delete = true
	default:
		return r, errBadPayload
	}
	n, k := binary.Uvarint(p[recFixed:])
	if k <= 0 || (k > 1 && p[recFixed+k-1] == 0) || uint64(len(p)-recFixed-k) < n {
		return r, errBadPayload
	}
	id := p[recFixed+k:][:n]
	r.ID = string(id)
	if src := p[recFixed+k+int(n):]; len(src) > 0 {
		r.Source = append([]byte(nil), src...)
	}
	return r, nil
}

// parseMark returns the durable length a sync mark payload states.
func parseMark(p []byte) (int64, bool) {
	if len(p) != markPayload || p[24] != recSyncMark ||
		binary.BigEndian.Uint64(p[0:]) != 0 || binary.BigEndian.Uint64(p[8:]) != 0 {
		return 0, false
	}
	d := binary.BigEndian.Uint64(p[16:])
	return int64(d), d <= 1<<62
}

// DecodeFrame decodes one record in its log frame (length, CRC, payload)
// from the front of b — how records travel in replication messages — and
// returns the bytes after it. The source is copied. An error says why b
// does not start with a whole, valid record frame; the caller names what
// it was reading.
func DecodeFrame(b []byte) (Record, []byte, error) {
	if len(b) < FrameHeader {
		return Record{}, nil, errors.New("short record header")
	}
	n := binary.LittleEndian.Uint32(b[0:])
	sum := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-FrameHeader) || n > maxRecord {
		return Record{}, nil, fmt.Errorf("record length %d exceeds the message", n)
	}
	payload := b[FrameHeader : FrameHeader+int(n)]
	if crc32.Checksum(payload, crcTable) != sum {
		return Record{}, nil, errors.New("checksum mismatch")
	}
	r, err := decodeRecord(payload)
	if err != nil {
		return Record{}, nil, err
	}
	return r, b[FrameHeader+int(n):], nil
}

// checksumOK reports whether a whole frame's payload matches its CRC.
func checksumOK(frame []byte) bool {
	return crc32.Checksum(frame[FrameHeader:], crcTable) == binary.LittleEndian.Uint32(frame[4:])
}

// errBadFrame marks a frame that is cut short, fails its checksum, or does
// not decode.
var errBadFrame = errors.New("bad frame")

// frameReader reads the frames of one segment in order.
type frameReader struct {
	br      *bufio.Reader
	size    int64 // the file's size when opened
	off     int64 // where the frame returned last starts
	next    int64 // where the frame after it starts
	payload []byte
}

// read returns the payload of the frame at r.next (valid until the next
// call) and moves past it; io.EOF at the end of the file; an error wrapping
// errBadFrame if the frame is cut short or fails its checksum (r.off is
// then where it starts); or the file's read error.
func (r *frameReader) read() ([]byte, error) {
	r.off = r.next
	left := r.size - r.off
	if left == 0 {
		return nil, io.EOF
	}
	if left < FrameHeader {
		return nil, fmt.Errorf("%w: %d bytes left, less than a header", errBadFrame, left)
	}
	var hdr [FrameHeader]byte
	if _, err := io.ReadFull(r.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(hdr[0:]))
	if n > left-FrameHeader {
		return nil, fmt.Errorf("%w: length %d runs past the end of the file", errBadFrame, n)
	}
	if int64(cap(r.payload)) < n {
		r.payload = make([]byte, n)
	}
	r.payload = r.payload[:n]
	if _, err := io.ReadFull(r.br, r.payload); err != nil {
		return nil, err
	}
	if crc32.Checksum(r.payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadFrame)
	}
	r.next = r.off + FrameHeader + n
	return r.payload, nil
}
