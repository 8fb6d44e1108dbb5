package shard

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

// FuzzBulkMessages feeds arbitrary bytes to the decoders of the write
// messages another node sends: they never panic, and what decodes encodes
// back to the same bytes (so a decoded message is exactly the one sent).
func FuzzBulkMessages(f *testing.F) {
	seq, term := uint64(7), uint64(2)
	ops := []vocab.Op{
		{Type: vocab.OpIndex, ID: "a", Source: json.RawMessage(`{"x":1}`)},
		{Type: vocab.OpCreate, ID: "b", Source: json.RawMessage(`{}`), IfSeqNo: &seq, IfPrimaryTerm: &term},
		{Type: vocab.OpUpdate, ID: "c", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"y":2}`), DocAsUpsert: true}},
		{Type: vocab.OpDelete, ID: "d"},
		{Type: vocab.OpIndex, ID: "e", Source: json.RawMessage(`{}`), Version: 42, VersionType: vocab.VersionExternal},
		{Type: vocab.OpDelete, ID: "f", Version: 7, VersionType: vocab.VersionExternalGTE},
		{Type: vocab.OpUpdate, ID: "g", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{}`), NoDetectNoop: true}},
	}
	items := make([]Item, len(ops))
	res := make([]vocab.OpResult, len(ops))
	for k := range ops {
		items[k] = Item{Op: &ops[k], Result: &res[k], AutoID: k == 0}
	}
	f.Add(encodeBulk(Header{Cluster: "c", Index: "u", Shard: 3, Alloc: "a", Term: 2}, items))
	res[1] = vocab.OpResult{Err: vocab.ErrVersionConflict}
	res[0] = vocab.OpResult{Result: "created", Version: 1, SeqNo: 4, PrimaryTerm: 2}
	f.Add(encodeBulkReply(items))
	f.Add([]byte{wireVersion, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		if h, got, err := decodeBulk(p); err == nil {
			h2, again, err := decodeBulk(encodeBulk(h, got))
			require.NoError(t, err, "what decodes must encode to something that decodes")
			require.Equal(t, h, h2)
			require.Len(t, again, len(got))
			for k := range got {
				require.Equal(t, got[k].Op, again[k].Op, "op %d", k)
				require.Equal(t, got[k].AutoID, again[k].AutoID, "op %d", k)
			}
		}
		for n := range 4 {
			slots := make([]Item, n)
			for k := range slots {
				slots[k] = Item{Op: &vocab.Op{}, Result: &vocab.OpResult{}}
			}
			_ = decodeBulkReply(p, slots)
		}
	})
}

// FuzzSearchMessages feeds arbitrary bytes to the decoders of the search
// phases' messages: they never panic, and what decodes encodes to
// something that decodes to the same message.
func FuzzSearchMessages(f *testing.F) {
	h := SearchHeader{Cluster: "c", Indices: []string{"a", "b"}, Wire: esdsl.Wire{Body: []byte(`{"query":{"match_all":{}}}`),
		Params: map[string][]string{"q": {"x"}, "routing": {"1", "2"}}, Now: -5, ScrollPage: 2, After: [][]byte{[]byte("k"), {}},
		Scope: esdsl.Scope{Filter: []byte(`{"term":{"t":"x"}}`), MaxResultWindow: 50, MaxInnerResultWindow: 5, MaxTermsCount: 7}},
		KeepAlive: time.Minute}
	ref := ShardRef{Index: "u", Shard: 3, Alloc: "al", MappingVersion: 9, Ctx: "reader-context"}
	st := &index.TermStats{DocCount: 4, FieldLength: map[string]uint64{"body": 10},
		DocFreq: map[string]map[string]uint64{"body": {"x": 2, "y": 1}}, Dicts: map[string][]index.DictTerm{"prefix\x00body\x00x": {{Term: "x"}, {Term: "xy", EditDistance: 1}}}}
	f.Add(uint8(0), encodeStatsRequest(&StatsRequest{SearchHeader: h, Shards: []ShardRef{ref, ref}}))
	f.Add(uint8(1), encodeStatsReply([]StatsPart{{Stats: st, Gen: 5}, {Err: vocab.ErrUnavailable}}))
	f.Add(uint8(2), encodeQueryRequest(&QueryRequest{SearchHeader: h, Stats: st, From: 1, Size: 2, Prefetch: 3, Fields: []string{"_source"},
		Shards: []QueryShard{{ShardRef: ref, Expect: 3}}}))
	qr, err := encodeQueryReply([]QueryPart{
		{Res: QueryResult{Total: 3, GTE: true, MaxScore: 1.5, Hits: []WireHit{{ID: "a", Score: 1.5, Sort: []string{"s"}, Num: 4}},
			Aggs: esdsl.AggPartials{"n": {Count: 2}}, Fetched: []FetchedHit{{ID: "a", Fields: map[string]any{"_source": `{}`}}}}},
		{Stale: &StatsPart{Stats: st, Gen: 8}}, {Err: vocab.ErrStaleRouting}})
	require.NoError(f, err)
	f.Add(uint8(3), qr)
	f.Add(uint8(4), encodeFetchRequest(&FetchRequest{SearchHeader: h, Fields: []string{"_source"}, Locations: true,
		Shards: []FetchShard{{ShardRef: ref, IDs: []string{"a", "b"}}}}))
	fr, err := encodeFetchReply([]FetchPart{{Hits: []FetchedHit{{ID: "a", Fields: map[string]any{"_source": `{"x":1}`, "n": 2.0},
		Locations: search.FieldTermLocationMap{"body": {"x": {{Pos: 1, Start: 0, End: 1, ArrayPositions: []uint64{2}}}}},
		Matched:   []string{"q"}}}}, {Err: vocab.ErrUnavailable}})
	require.NoError(f, err)
	f.Add(uint8(5), fr)
	const parts = 2
	f.Fuzz(func(t *testing.T, which uint8, p []byte) {
		switch which % 6 {
		case 0:
			roundTrip(t, p, decodeStatsRequest, func(m *StatsRequest) ([]byte, error) { return encodeStatsRequest(m), nil })
		case 1:
			roundTrip(t, p, func(b []byte) ([]StatsPart, error) { return decodeStatsReply(b, parts) },
				func(ps []StatsPart) ([]byte, error) { return encodeStatsReply(ps), nil })
		case 2:
			roundTrip(t, p, decodeQueryRequest, func(m *QueryRequest) ([]byte, error) { return encodeQueryRequest(m), nil })
		case 3:
			roundTrip(t, p, func(b []byte) ([]QueryPart, error) { return decodeQueryReply(b, parts) }, encodeQueryReply)
		case 4:
			roundTrip(t, p, decodeFetchRequest, func(m *FetchRequest) ([]byte, error) { return encodeFetchRequest(m), nil })
		case 5:
			roundTrip(t, p, func(b []byte) ([]FetchPart, error) { return decodeFetchReply(b, parts) }, encodeFetchReply)
		}
	})
}

// roundTrip: when p decodes, what it decodes to encodes to something that
// decodes to the same message.
func roundTrip[M any](t *testing.T, p []byte, decode func([]byte) (M, error), encode func(M) ([]byte, error)) {
	m, err := decode(p)
	if err != nil {
		return
	}
	raw, err := encode(m)
	require.NoError(t, err)
	again, err := decode(raw)
	require.NoError(t, err)
	require.Equal(t, m, again)
}
