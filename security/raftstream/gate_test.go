package raftstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// rpcBytes is one RPC as Raft's NetworkTransport writes it.
func rpcBytes(t testing.TB, typ byte, req any, data []byte) []byte {
	var b bytes.Buffer
	b.WriteByte(typ)
	if err := codec.NewEncoder(&b, &codec.MsgpackHandle{}).Encode(req); err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	return b.Bytes()
}

// FuzzGate feeds the gate any stream: it never panics, and every byte it
// hands on belongs to an RPC whose server id was checked and allowed.
func FuzzGate(f *testing.F) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("a")}
	f.Add(rpcBytes(f, rpcAppendEntries, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3, Entries: []*raft.Log{{Index: 1, Data: []byte("x")}}}, nil))
	f.Add(rpcBytes(f, rpcInstallSnapshot, &raft.InstallSnapshotRequest{RPCHeader: hdr, Size: 4}, []byte("data")))
	f.Add(append(rpcBytes(f, rpcRequestVote, &raft.RequestVoteRequest{RPCHeader: hdr}, nil),
		rpcBytes(f, rpcTimeoutNow, &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ID: []byte("n3")}}, nil)...))
	f.Add([]byte{rpcInstallSnapshot, 0x81, 0xa4, 'S', 'i', 'z', 'e', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{9})
	f.Fuzz(func(t *testing.T, in []byte) {
		allowed := 0
		g := newGate(bufio.NewReader(bytes.NewReader(in)), func(id raft.ServerID) error {
			if id != "n2" {
				return errors.New("not n2")
			}
			allowed++
			return nil
		})
		out, err := io.ReadAll(g)
		if len(out) > 0 && allowed == 0 {
			t.Fatalf("%d bytes handed on with no RPC allowed", len(out))
		}
		if len(out) > len(in) {
			t.Fatalf("handed on %d bytes of %d", len(out), len(in))
		}
		if err == nil && !bytes.Equal(out, in) {
			t.Fatal("a stream read to its end was changed")
		}
	})
}
