package raftstream

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// MaxRPCBytes bounds one Raft RPC request as the gate reads it (a
// snapshot's data, which follows its request, is not counted): Raft's
// AppendEntries carry at most MaxAppendEntries metadata commands, far
// below it.
const MaxRPCBytes = 128 << 20

// Raft's RPC types on the wire (raft/net_transport.go): one byte, then
// the request in msgpack.
const (
	rpcAppendEntries byte = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
)

var errRPCTooLarge = fmt.Errorf("raftstream: a Raft RPC over %d bytes", MaxRPCBytes)

// gate reads an accepted connection's Raft RPCs ahead of Raft's transport:
// each request is read and its header's server id checked before Raft
// sees any byte of it. The wire is Raft's NetworkTransport's: a type
// byte, the request as a msgpack map, and for InstallSnapshot the
// snapshot's Size bytes. Responses go the other way and pass untouched.
type gate struct {
	rec     recorder
	dec     *codec.Decoder
	check   func(raft.ServerID) error
	pending []byte // checked bytes of the current RPC Raft has not read yet
	raw     int64  // snapshot bytes still to pass through after pending
	err     error  // sticky: once refused, the connection reads nothing more
}

func newGate(src *bufio.Reader, check func(raft.ServerID) error) *gate {
	g := &gate{rec: recorder{src: src}, check: check}
	g.dec = codec.NewDecoder(&g.rec, &codec.MsgpackHandle{})
	return g
}

// Read hands Raft checked bytes: the current RPC's, then its snapshot
// data, then (reading and checking it first) the next RPC's.
func (g *gate) Read(p []byte) (int, error) {
	if len(g.pending) == 0 && g.raw == 0 {
		if g.err != nil {
			return 0, g.err
		}
		if g.err = g.next(); g.err != nil {
			return 0, g.err
		}
	}
	if len(g.pending) > 0 {
		n := copy(p, g.pending)
		g.pending = g.pending[n:]
		return n, nil
	}
	if int64(len(p)) > g.raw {
		p = p[:g.raw]
	}
	n, err := g.rec.src.Read(p)
	g.raw -= int64(n)
	return n, err
}

// rpcHead is the part of every Raft request the gate reads; msgpack skips
// the other fields. Raft's requests embed RPCHeader, so its fields are
// at the top of the map, as they are here.
type rpcHead struct {
	raft.RPCHeader
	Size int64 // InstallSnapshot's data length
}

// next reads one RPC request into pending and checks whom it speaks for.
func (g *gate) next() error {
	g.rec.buf = g.rec.buf[:0]
	typ, err := g.rec.src.ReadByte()
	if err != nil {
		return err // the peer closed, or the connection failed: Raft's own end
	}
	g.rec.buf = append(g.rec.buf, typ)
	if typ > rpcRequestPreVote {
		return fmt.Errorf("raftstream: unknown Raft RPC type %d", typ)
	}
	var head rpcHead
	g.dec.Reset(&g.rec)
	if err := g.dec.Decode(&head); err != nil {
		return fmt.Errorf("raftstream: reading a Raft RPC: %w", err)
	}
	if len(head.ID) == 0 {
		return errors.New("raftstream: a Raft RPC that names no server id")
	}
	if err := g.check(raft.ServerID(head.ID)); err != nil {
		return err
	}
	if typ == rpcInstallSnapshot {
		if head.Size < 0 {
			return fmt.Errorf("raftstream: a snapshot of %d bytes", head.Size)
		}
		g.raw = head.Size
	}
	g.pending = g.rec.buf
	return nil
}

// recorder keeps every byte the decoder reads from src, up to MaxRPCBytes.
// It offers only Read, so the decoder asks for exactly what it needs and
// never reads past the request.
type recorder struct {
	src *bufio.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	if room := MaxRPCBytes - len(r.buf); len(p) > room {
		if room == 0 {
			return 0, errRPCTooLarge
		}
		p = p[:room]
	}
	n, err := r.src.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}
