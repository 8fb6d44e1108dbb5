package shard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/shard/shardlog"
	"github.com/weftsearch/weft/vocab"
)

// The shard layer's messages between nodes. Each method's request and
// reply start with wireVersion; a node refuses a version it does not know
// with CodeBadRequest. Writes and gets use a compact binary encoding
// (documents travel as they came, without JSON escaping); search phases
// have their own version and encoding (searchwire.go).
//
// Methods (offsets from fabric.MethodShardBase; part of the wire format):
const (
	MethodBulk          = fabric.MethodShardBase + iota // a group of writes to one primary
	MethodGet                                           // unused since wire version 4 (gets go as MethodMget); never reused
	MethodRefresh                                       // wait for a copy's writes in flight
	MethodCopyStats                                     // a node's copies: document counts, recoveries
	MethodSearchStats                                   // search phase 1: term statistics
	MethodSearchQuery                                   // search phase 2: ids, scores, sort keys, facets
	MethodSearchFetch                                   // search phase 3: sources and term locations of the final page
	MethodReplicate                                     // a group of log records from a primary to a copy of its group
	MethodRecoveryStart                                 // a recovering copy asks its primary how to recover
	MethodRecoveryFiles                                 // the primary streams its index snapshot (also the stream's method)
	MethodRecoveryOps                                   // the primary replays its log to the copy and adds it to its group
	MethodMget                                          // realtime gets of several documents of one shard from its primary
	MethodContextOpen                                   // pin a copy in a reader context (point in time, scroll)
	MethodContextClose                                  // release a reader context
	MethodScrollClaim                                   // take a scroll's cursor from its home context for a page
	MethodScrollCommit                                  // store a scroll's cursor after a page
)

// 2: bulk replies say how many copies hold each write; 3: external
// versions in bulk ops, mget, reader contexts (point in time, scroll); 4:
// every request to one copy starts with the same Header, and gets go as
// MethodMget; 5: bulk replies carry no HTTP status (the error's kind, its
// wire code, says what failed); 6: a request to open a reader context
// says its kind (point in time or scroll), which the node counts against
// the kind's limit; 7: a replication message says whether it carries a
// primary's new writes (refusable under indexing pressure) or a recovery's
// replay or a resync (never refused).
const wireVersion = 7

// Error codes of the shard layer on the wire: a sentinel error crosses a
// node boundary as its code (fabric.CodeUserBase + n for whole-request
// errors, the bare n inside a bulk reply) and comes back as the same
// sentinel, so errors.Is works on both sides. Codes are part of the wire
// format: never renumber.
var wireErrors = []error{
	1:  state.ErrIndexNotFound,
	2:  vocab.ErrDocumentNotFound,
	3:  vocab.ErrVersionConflict,
	4:  vocab.ErrInvalidRequest,
	5:  vocab.ErrClosed,
	6:  vocab.ErrUnavailable,
	7:  vocab.ErrStaleRouting,
	8:  vocab.ErrClusterBlocked,
	9:  state.ErrMappingVersion,
	10: index.ErrDocParse,
	11: index.ErrStrictDynamic,
	12: index.ErrMappingConflict,
	13: index.ErrInvalidMapping,
	14: index.ErrClosed,
	15: vocab.ErrInvalidIndexName,
	16: state.ErrIndexExists,
	17: ErrSeqGap,
	18: ErrDiverged,
	19: errCorruptRecord,
	20: shardlog.ErrFailed,
	21: shardlog.ErrCorrupt,
	22: vocab.ErrContextMissing,
	23: index.ErrIllegalArgument,
	24: vocab.ErrTooManyScrollContexts,
	25: vocab.ErrTooManyPITContexts,
	26: membudget.ErrRejected,
}

// errCode returns the wire code of err's sentinel (0: none) and its
// message with the sentinel's own text cut from the front.
func errCode(err error) (uint16, string) {
	msg := err.Error()
	for code, s := range wireErrors {
		if s != nil && errors.Is(err, s) {
			if d, ok := strings.CutPrefix(msg, s.Error()+": "); ok {
				msg = d
			}
			return uint16(code), msg
		}
	}
	return 0, msg
}

// codeErr rebuilds the error errCode encoded.
func codeErr(code uint16, msg string) error {
	if int(code) < len(wireErrors) && wireErrors[code] != nil {
		return fmt.Errorf("%w: %s", wireErrors[code], msg)
	}
	return errors.New(msg)
}

// remoteErr turns a handler's error into the fabric error the caller sees.
func remoteErr(err error) error {
	code, msg := errCode(err)
	if code == 0 {
		return err
	}
	return fabric.Errorf(fabric.CodeUserBase+fabric.Code(code), "%s", msg)
}

// fromRemote turns a fabric call's error back into the shard layer's
// sentinel; other errors (transport failures) stay as they are.
func fromRemote(err error) error {
	var re *fabric.RemoteError
	if errors.As(err, &re) && re.Code > fabric.CodeUserBase && int(re.Code-fabric.CodeUserBase) < len(wireErrors) {
		return codeErr(uint16(re.Code-fabric.CodeUserBase), re.Message)
	}
	return err
}

// ErrBadMessage: a message that does not decode. Every decoder returns it
// (wrapped) rather than panic on any input.
var ErrBadMessage = errors.New("malformed shard message")

// enc appends a message.
type enc struct{ b []byte }

func (e *enc) u8(v byte)        { e.b = append(e.b, v) }
func (e *enc) u16(v uint16)     { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u64(v uint64)     { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(v []byte) {
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}
func (e *enc) str(v string) {
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}

// dec reads a message; the first malformed field sets err and every later
// read returns zero values, so a decoder checks err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadMessage, what)
	}
	d.b = nil
}

func (d *dec) u8() byte {
	if len(d.b) < 1 {
		d.fail("short u8")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u16() uint16 {
	if len(d.b) < 2 {
		d.fail("short u16")
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *dec) u64() uint64 {
	if len(d.b) < 8 {
		d.fail("short u64")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must fit in what is left (each element taking
// at least min bytes), so a corrupt count never makes a decoder allocate
// without bound.
func (d *dec) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/max(min, 1)) || n > math.MaxInt32 {
		d.fail("count exceeds the message")
		return 0
	}
	return int(n)
}

// bytes returns a slice of the message (not a copy).
func (d *dec) bytes() []byte {
	n := d.count(1)
	if d.err != nil {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string { return string(d.bytes()) }

// end checks that the whole message was read.
func (d *dec) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// version reads and checks the message version.
func (d *dec) version() {
	if v := d.u8(); d.err == nil && v != wireVersion {
		d.err = fmt.Errorf("%w: version %d, this node speaks %d", ErrBadMessage, v, wireVersion)
	}
}

// jsonReply encodes a JSON reply (copy statistics, recovery) with its
// version.
func jsonReply(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte{wireVersion}, raw...), nil
}
