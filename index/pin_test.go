package index

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
)

// A pinned view keeps seeing the documents of the moment it was taken —
// not writes, updates or deletes after it — and fails once released.
func TestPinnedViewIsAPointInTime(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	apply := func(seq uint64, ops ...Op) {
		for k := range ops {
			ops[k].SeqNo, ops[k].Version = seq+uint64(k), 1
		}
		require.NoError(t, idx.Apply(context.Background(), ops))
	}
	apply(1, Op{ID: "a", Source: json.RawMessage(`{"t":"one"}`)}, Op{ID: "b", Source: json.RawMessage(`{"t":"two"}`)})
	view, err := idx.Pin()
	require.NoError(t, err)
	apply(3, Op{ID: "c", Source: json.RawMessage(`{"t":"three"}`)}, Op{ID: "a", Delete: true}, Op{ID: "b", Source: json.RawMessage(`{"t":"changed"}`)})

	ids := func(i *Index, q string) []string {
		var query query.Query = bleve.NewMatchAllQuery()
		if q != "*" {
			query = bleve.NewQueryStringQuery(q)
		}
		req := bleve.NewSearchRequest(query)
		req.SortBy([]string{"_id"})
		res, err := i.Search(context.Background(), req)
		require.NoError(t, err)
		var out []string
		for _, h := range res.Hits {
			out = append(out, h.ID)
		}
		return out
	}
	require.Equal(t, []string{"a", "b"}, ids(view, "*"))
	require.Equal(t, []string{"b"}, ids(view, "t:two"))
	require.Equal(t, []string{"b", "c"}, ids(idx, "*"))
	require.Equal(t, []string{"b"}, ids(idx, "t:changed"))
	st, gen, err := view.TermStats(context.Background(), bleve.NewMatchAllQuery())
	require.NoError(t, err)
	require.EqualValues(t, 2, st.DocCount)
	require.Zero(t, gen, "a pinned view's statistics stand for no generation of the index: never kept")
	_, gen, err = idx.TermStats(context.Background(), bleve.NewMatchAllQuery())
	require.NoError(t, err)
	require.NotZero(t, gen)

	require.ErrorIs(t, view.Apply(context.Background(), []Op{{ID: "x", Source: json.RawMessage(`{}`), SeqNo: 9}}), ErrReadOnly)
	require.NoError(t, view.Release())
	require.NoError(t, view.Release(), "idempotent")
	_, err = view.Search(context.Background(), bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, []string{"b", "c"}, ids(idx, "*"), "the index goes on")
}
