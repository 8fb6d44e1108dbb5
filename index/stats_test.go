package index

import (
	"context"
	"math"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
)

// TestGenerationNamesTheContents: TermStats reports the same generation
// while nothing is written, another after every write or mapping change,
// and a search expecting a generation runs only while the index is still
// at it.
func TestGenerationNamesTheContents(t *testing.T) {
	dir := t.TempDir()
	m := NewDynamicMapping()
	idx, err := Create(dir, m)
	require.NoError(t, err)
	ctx := context.Background()
	var seq uint64
	applyDocs(t, idx, map[string]string{"1": `{"t":"a b"}`, "2": `{"t":"a"}`}, &seq)
	q := bleve.NewMatchQuery("a")
	q.SetField("t")
	stats := func() (*TermStats, uint64) {
		st, gen, err := idx.TermStats(ctx, q)
		require.NoError(t, err)
		require.NotZero(t, gen, "no write was in flight")
		return st, gen
	}
	st, gen := stats()
	_, again := stats()
	require.Equal(t, gen, again, "nothing was written")
	search := func(expect uint64) error {
		sctx := ExpectGeneration(WithGlobalStats(ctx, st), expect)
		_, err := idx.Search(sctx, bleve.NewSearchRequest(q))
		return err
	}
	require.NoError(t, search(gen))

	applyDocs(t, idx, map[string]string{"3": `{"t":"a c"}`}, &seq)
	_, written := stats()
	require.NotEqual(t, gen, written, "a write changes the generation")
	require.ErrorIs(t, search(gen), ErrStaleStats)
	require.NoError(t, search(written))
	require.NoError(t, search(0), "0 expects nothing")

	applyDocs(t, idx, map[string]string{"4": `{"u":1}`}, &seq) // adds a field
	_, mapped := stats()
	require.NotEqual(t, written, mapped)

	// The same files opened again hold the same documents, but never
	// the generation of the Index that had them before.
	require.NoError(t, idx.Close())
	idx, err = Open(dir, m)
	require.NoError(t, err)
	defer idx.Close()
	idx.EndReplay()
	_, reopened := stats()
	require.NotEqual(t, mapped, reopened)
}

// TestDocumentsLoadsStoredFieldsAsSearchDoes: Documents gives the
// existing documents' stored fields as a search's hits carry them, and
// skips ids that do not exist.
func TestDocumentsLoadsStoredFieldsAsSearchDoes(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	var seq uint64
	applyDocs(t, idx, map[string]string{"1": `{"t":"one"}`, "2": `{"t":"two","n":2}`}, &seq)
	req := bleve.NewSearchRequest(bleve.NewDocIDQuery([]string{"1", "2"}))
	req.Fields = []string{SourceField}
	res, err := idx.Search(context.Background(), req)
	require.NoError(t, err)
	want := map[string]map[string]any{}
	for _, h := range res.Hits {
		want[h.ID] = h.Fields
	}
	require.Len(t, want, 2)

	got, err := idx.Documents([]string{"2", "gone", "1"}, []string{SourceField})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "2", got[0].ID)
	require.Equal(t, "1", got[1].ID)
	for _, h := range got {
		require.Equal(t, want[h.ID], h.Fields, h.ID)
		require.NotEmpty(t, h.Fields[SourceField])
	}
	bare, err := idx.Documents([]string{"1"}, nil)
	require.NoError(t, err)
	require.Len(t, bare, 1)
	require.Nil(t, bare[0].Fields)
}

// TestStatisticsOfNoDocumentScoreNothing: statistics read while the
// indexes held no document (a search racing the first writes) would make
// bleve's scores NaN (an idf of log 0, normalised by an infinite weight);
// under them a search scores with the shard's own statistics instead, so
// every score is a number (NaN cannot be written in a JSON reply).
func TestStatisticsOfNoDocumentScoreNothing(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	ctx := context.Background()
	var seq uint64
	applyDocs(t, idx, map[string]string{"0": `{"other":"x"}`}, &seq) // the field searched is not there yet
	q := bleve.NewMatchQuery("ipsum")
	q.SetField("text")
	empty, _, err := idx.TermStats(ctx, q)
	require.NoError(t, err)
	empty.DocCount = 0 // as if read before the first document
	applyDocs(t, idx, map[string]string{"1": `{"text":"lorem ipsum"}`, "2": `{"text":"ipsum dolor ipsum"}`}, &seq)
	res, err := idx.Search(WithGlobalStats(ctx, empty), bleve.NewSearchRequest(q))
	require.NoError(t, err)
	require.Len(t, res.Hits, 2)
	for _, h := range res.Hits {
		require.False(t, math.IsNaN(h.Score) || math.IsInf(h.Score, 0), "hit %s scored %v", h.ID, h.Score)
	}
	require.False(t, math.IsNaN(res.MaxScore))
}
