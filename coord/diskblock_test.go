package coord_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/coord/coordtest"
	"github.com/weftsearch/weft/vocab"
)

// setBlock sets or removes the flood stage's read_only_allow_delete block
// on the index, as the cluster leader does.
func setBlock(t *testing.T, mc *coordtest.MemCluster, name string, on bool) {
	require.NoError(t, mc.Update(func(v *state.State) error {
		ix := coordtest.CloneIndex(v, name)
		ix.Settings = map[string]json.RawMessage{}
		if on {
			ix.Settings[state.ReadOnlyAllowDeleteSetting] = json.RawMessage(`"true"`)
		}
		return nil
	}))
}

// While an index carries the flood stage block every document write to it
// is refused — deletes of documents too, as Elasticsearch refuses them —
// before anything is logged; other indices are written, the blocked index
// is read and may be deleted, and writes resume once the block is gone.
func TestFloodStageBlockRefusesDocumentWrites(t *testing.T) {
	m := coordtest.OpenManager(t, t.TempDir())
	defer m.Close()
	ctx := context.Background()
	for _, name := range []string{"full", "other", "doomed"} {
		require.NoError(t, m.CreateIndex(ctx, name, coord.IndexSettings{NumberOfShards: 2}, nil))
		res, err := m.Bulk(ctx, []vocab.Op{{Type: vocab.OpIndex, Index: name, ID: "1", Source: json.RawMessage(`{"n":1}`)}}, coord.WriteOptions{Refresh: coord.RefreshTrue})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
	}
	setBlock(t, m.MC, "full", true)
	setBlock(t, m.MC, "doomed", true)

	ops := []vocab.Op{
		{Type: vocab.OpIndex, Index: "full", ID: "2", Source: json.RawMessage(`{"n":2}`)},
		{Type: vocab.OpCreate, Index: "full", ID: "3", Source: json.RawMessage(`{"n":3}`)},
		{Type: vocab.OpUpdate, Index: "full", ID: "1", Update: &vocab.UpdateSpec{Doc: json.RawMessage(`{"n":9}`)}},
		{Type: vocab.OpDelete, Index: "full", ID: "1"},
		{Type: vocab.OpIndex, Index: "full", Source: json.RawMessage(`{"n":4}`)},
		{Type: vocab.OpIndex, Index: "other", ID: "2", Source: json.RawMessage(`{"n":2}`)},
	}
	res, err := m.Bulk(ctx, ops, coord.WriteOptions{Refresh: coord.RefreshTrue})
	require.NoError(t, err)
	for k, r := range res[:5] {
		require.ErrorIs(t, r.Err, state.ErrIndexBlocked, "op %d (%s)", k, ops[k].Type)
		require.EqualError(t, r.Err, "index blocked: index [full] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];")
	}
	require.NoError(t, res[5].Err, "an index without the block is written")

	d, err := m.Get(ctx, "full", "1", "")
	require.NoError(t, err, "a blocked index is read")
	require.JSONEq(t, `{"n":1}`, string(d.Source), "nothing of the refused ops was applied")
	_, err = m.Get(ctx, "full", "2", "")
	require.ErrorIs(t, err, vocab.ErrDocumentNotFound)

	require.NoError(t, m.DeleteIndex(ctx, "doomed"), "the block allows deleting the index")

	setBlock(t, m.MC, "full", false)
	res, err = m.Bulk(ctx, ops[:1], coord.WriteOptions{Refresh: coord.RefreshTrue})
	require.NoError(t, err)
	require.NoError(t, res[0].Err, "writes resume once the block is released")
}
