package shard

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/fabric"
)

// FuzzBulkMessages feeds arbitrary bytes to the decoders of the write
// messages another node sends: they never panic, and what decodes encodes
// back to the same bytes (so a decoded message is exactly the one sent).
func FuzzBulkMessages(f *testing.F) {
	seq, term := uint64(7), uint64(2)
	ops := []Op{
		{Type: OpIndex, ID: "a", Source: json.RawMessage(`{"x":1}`)},
		{Type: OpCreate, ID: "b", Source: json.RawMessage(`{}`), IfSeqNo: &seq, IfPrimaryTerm: &term},
		{Type: OpUpdate, ID: "c", Update: &UpdateSpec{Doc: json.RawMessage(`{"y":2}`), DocAsUpsert: true}},
		{Type: OpDelete, ID: "d"},
		{Type: OpIndex, ID: "e", Source: json.RawMessage(`{}`), Version: 42, VersionType: VersionExternal},
		{Type: OpDelete, ID: "f", Version: 7, VersionType: VersionExternalGTE},
		{Type: OpUpdate, ID: "g", Update: &UpdateSpec{Doc: json.RawMessage(`{}`), NoDetectNoop: true}},
	}
	items := make([]item, len(ops))
	res := make([]OpResult, len(ops))
	for k := range ops {
		items[k] = item{op: &ops[k], res: &res[k], autoID: k == 0}
	}
	f.Add(encodeBulk(bulkHeader{cluster: "c", index: "u", shard: 3, alloc: "a", term: 2}, items))
	res[1] = OpResult{Status: 409, Err: ErrVersionConflict}
	res[0] = OpResult{Status: 201, Result: "created", Version: 1, SeqNo: 4, PrimaryTerm: 2}
	f.Add(encodeBulkReply(items))
	f.Add([]byte{wireVersion, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		if h, got, err := decodeBulk(p); err == nil {
			h2, again, err := decodeBulk(encodeBulk(h, got))
			require.NoError(t, err, "what decodes must encode to something that decodes")
			require.Equal(t, h, h2)
			require.Len(t, again, len(got))
			for k := range got {
				require.Equal(t, got[k].op, again[k].op, "op %d", k)
				require.Equal(t, got[k].autoID, again[k].autoID, "op %d", k)
			}
		}
		for n := range 4 {
			slots := make([]item, n)
			for k := range slots {
				slots[k] = item{op: &Op{}, res: &OpResult{}}
			}
			_ = decodeBulkReply(p, slots)
		}
	})
}

// FuzzShardHandlers sends arbitrary payloads to every handler of the shard
// layer on a node with an index: each answers (an error or a reply) and
// never panics or hangs.
func FuzzShardHandlers(f *testing.F) {
	m := openManager(f, f.TempDir())
	f.Cleanup(func() { _ = m.Close() })
	require.NoError(f, m.CreateIndex(context.Background(), "f", IndexSettings{NumberOfShards: 2}, nil))
	v := m.meta.View()
	ix := v.Indices["f"]
	p, _ := ix.Shards[0].Primary()
	mux := &fabric.Mux{}
	streams := fabric.NewStreamReceiver(time.Second)
	f.Cleanup(func() { _ = streams.Close() })
	mux.Handle(fabric.MethodStream, streams)
	m.Register(mux, streams)
	target := searchTarget{Cluster: v.ClusterUUID, Index: ix.UUID, Shard: 0, Alloc: p.AllocationID, Indices: []string{"f"}, MappingVersion: ix.MappingVersion}
	for _, seed := range []any{statsRequest{target}, queryRequest{searchTarget: target, Size: 3}, fetchRequest{searchTarget: target, IDs: []string{"x"}}} {
		raw, err := json.Marshal(seed)
		require.NoError(f, err)
		f.Add(uint8(0), append([]byte{wireVersion}, raw...))
	}
	items := []item{{op: &Op{Type: OpIndex, ID: "z", Source: json.RawMessage(`{"a":1}`)}, res: &OpResult{}}}
	f.Add(uint8(0), encodeBulk(bulkHeader{cluster: v.ClusterUUID, index: ix.UUID, shard: 0, alloc: p.AllocationID, term: 1}, items))
	f.Add(uint8(3), []byte{wireVersion})
	mget := enc{}
	mget.u8(wireVersion)
	mget.str(v.ClusterUUID)
	mget.str(ix.UUID)
	mget.uvarint(0)
	mget.str(p.AllocationID)
	mget.uvarint(2)
	mget.str("a")
	mget.str("b")
	f.Add(uint8(methodMget-methodBulk), mget.b)
	open := enc{}
	open.u8(wireVersion)
	open.str(p.AllocationID)
	open.varint(int64(time.Second))
	f.Add(uint8(methodContextOpen-methodBulk), open.b)
	op := enc{}
	op.u8(wireVersion)
	op.str("no-such-context")
	op.bytes([]byte(`{"p":1}`))
	f.Add(uint8(methodScrollCommit-methodBulk), op.b)
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		method := methodBulk + fabric.Method(which%uint8(methodScrollCommit-methodBulk+1))
		ctx, cancel := context.WithTimeout(context.Background(), 3*routingWait)
		defer cancel()
		_, _ = mux.ServeFabric(ctx, &fabric.Request{Method: method, Payload: payload})
	})
}
