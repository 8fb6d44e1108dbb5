package index

import (
	"context"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/require"
)

func applyDocs(t *testing.T, idx *Index, docs map[string]string, seq *uint64) {
	t.Helper()
	var ops []Op
	for _, id := range sortedKeys(docs) {
		*seq++
		ops = append(ops, Op{ID: id, Source: []byte(docs[id]), SeqNo: *seq, Version: 1, PrimaryTerm: 1})
	}
	require.NoError(t, idx.Apply(context.Background(), ops))
}

func TestIndexApplyGetSearchReopen(t *testing.T) {
	dir := t.TempDir()
	m := NewDynamicMapping()
	idx, err := Create(dir, m)
	require.NoError(t, err)
	var seq uint64
	applyDocs(t, idx, map[string]string{
		"1": `{"title":"The quick brown fox","n":3,"when":"2024-01-02"}`,
		"2": `{"title":"A lazy dog","n":4.5,"tags":["a","b"]}`,
	}, &seq)
	require.Equal(t, "text", m.FieldType("title"))
	require.Equal(t, "keyword", m.FieldType("title.keyword"))
	require.Equal(t, "long", m.FieldType("n"))
	require.Equal(t, "date", m.FieldType("when"))

	d, ok, err := idx.Get("1")
	require.NoError(t, err)
	require.True(t, ok)
	require.JSONEq(t, `{"title":"The quick brown fox","n":3,"when":"2024-01-02"}`, string(d.Source))
	require.Equal(t, uint64(1), d.SeqNo)

	// "the" is kept: ES standard analyzer has no stop words.
	q := bleve.NewMatchQuery("the")
	q.SetField("title")
	req := bleve.NewSearchRequest(q)
	req.Fields = []string{SourceField}
	res, err := idx.Search(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Total)
	require.Equal(t, "1", res.Hits[0].ID)

	kq := bleve.NewTermQuery("A lazy dog")
	kq.SetField("title.keyword")
	res, err = idx.Search(context.Background(), bleve.NewSearchRequest(kq))
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Total)

	st, err := idx.TermStats(context.Background(), q)
	require.NoError(t, err)
	require.Equal(t, uint64(2), st.DocCount)
	require.Equal(t, uint64(1), st.DocFreq["title"]["the"])
	require.Equal(t, uint64(7), st.FieldLength["title"])

	require.NoError(t, idx.Close())
	idx, err = Open(dir, m)
	require.NoError(t, err)
	defer idx.Close()
	d, ok, err = idx.Get("2")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(2), d.SeqNo)
}
