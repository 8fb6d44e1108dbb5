package shard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// FuzzShardHandlers sends arbitrary payloads to every handler of the shard
// layer on a node with an index: each answers (an error or a reply) and
// never panics or hangs.
func FuzzShardHandlers(f *testing.F) {
	m := coordtest.OpenManager(f, f.TempDir())
	f.Cleanup(func() { _ = m.Close() })
	require.NoError(f, m.CreateIndex(context.Background(), "f", coord.IndexSettings{NumberOfShards: 2}, nil))
	v := m.Meta.State()
	ix := v.Indices["f"]
	p, _ := ix.Shards[0].Primary()
	mux := &fabric.Mux{}
	streams := fabric.NewStreamReceiver(time.Second)
	f.Cleanup(func() { _ = streams.Close() })
	mux.Handle(fabric.MethodStream, streams)
	m.Store.Register(mux, streams)
	h := shard.SearchHeader{Cluster: v.ClusterUUID, Indices: []string{"f"}, Wire: esdsl.Wire{Body: []byte(`{"query":{"match":{"a":"x"}}}`)}}
	ref := shard.ShardRef{Index: ix.UUID, Alloc: p.AllocationID, MappingVersion: ix.MappingVersion}
	search := map[fabric.Method][]byte{
		shard.MethodSearchStats: shard.EncodeStatsRequest(&shard.StatsRequest{SearchHeader: h, Shards: []shard.ShardRef{ref, ref}}),
		shard.MethodSearchQuery: shard.EncodeQueryRequest(&shard.QueryRequest{SearchHeader: h, Size: 3, Stats: &index.TermStats{DocCount: 1},
			Shards: []shard.QueryShard{{ShardRef: ref, Expect: 7}}}),
		shard.MethodSearchFetch: shard.EncodeFetchRequest(&shard.FetchRequest{SearchHeader: h, Fields: []string{index.SourceField}, Named: true,
			Shards: []shard.FetchShard{{ShardRef: ref, IDs: []string{"x"}}}}),
	}
	pitRef := ref
	pitRef.Ctx = "no-such-context"
	pitHeader := h
	pitHeader.KeepAlive = time.Minute
	pitHeader.Wire.Scope = esdsl.Scope{Filter: []byte(`{"term":{"a":"y"}}`), MaxResultWindow: 5}
	f.Add(uint8(shard.MethodSearchQuery-shard.MethodBulk), shard.EncodeQueryRequest(&shard.QueryRequest{SearchHeader: pitHeader, Size: 3,
		Shards: []shard.QueryShard{{ShardRef: pitRef}}}))
	for m, seed := range search {
		f.Add(uint8(m-shard.MethodBulk), seed)
	}
	items := []shard.Item{{Op: &vocab.Op{Type: vocab.OpIndex, ID: "z", Source: json.RawMessage(`{"a":1}`)}, Result: &vocab.OpResult{}}}
	hdr := shard.Header{Cluster: v.ClusterUUID, Index: ix.UUID, Alloc: p.AllocationID, Term: 1}
	f.Add(uint8(0), shard.EncodeBulk(hdr, items))
	f.Add(uint8(3), []byte{shard.WireVersion})
	f.Add(uint8(shard.MethodMget-shard.MethodBulk), shard.MgetRequest(hdr, "a", "b"))
	f.Add(uint8(shard.MethodContextOpen-shard.MethodBulk), shard.ContextOpenRequest(hdr, time.Second, vocab.ContextScroll))
	f.Add(uint8(shard.MethodScrollCommit-shard.MethodBulk), shard.ScrollCommitRequest(hdr, "no-such-context", []byte(`{"p":1}`)))
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		method := shard.MethodBulk + fabric.Method(which%uint8(shard.MethodScrollCommit-shard.MethodBulk+1))
		ctx, cancel := context.WithTimeout(context.Background(), 3*shard.RoutingWait)
		defer cancel()
		_, _ = mux.ServeFabric(ctx, &fabric.Request{Method: method, Payload: payload})
	})
}
