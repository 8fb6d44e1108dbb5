package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
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

	st, _, err := idx.TermStats(context.Background(), q)
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

func searchTotal(t *testing.T, idx *Index, q query.Query) uint64 {
	t.Helper()
	res, err := idx.Search(context.Background(), bleve.NewSearchRequest(q))
	require.NoError(t, err)
	return res.Total
}

func TestAnalyzers(t *testing.T) {
	m, err := ParseMapping([]byte(`{"properties":{
		"std":{"type":"text"},"en":{"type":"text","analyzer":"english"},"ws":{"type":"text","analyzer":"whitespace"},
		"simple":{"type":"text","analyzer":"simple"},"kw":{"type":"text","analyzer":"keyword"}}}`))
	require.NoError(t, err)
	idx, err := Create(t.TempDir(), m)
	require.NoError(t, err)
	defer idx.Close()
	src := `"To be or NOT to be, running-dogs 42x"`
	doc := `{"std":` + src + `,"en":` + src + `,"ws":` + src + `,"simple":` + src + `,"kw":` + src + `}`
	require.NoError(t, idx.Apply(context.Background(), []Op{{ID: "1", Source: []byte(doc), SeqNo: 1, Version: 1}}))
	tests := []struct {
		field, term string
		hits        uint64
	}{
		{"std", "to", 1}, {"std", "not", 1}, {"std", "42x", 1}, {"std", "running", 1},
		{"en", "to", 0}, {"en", "not", 0}, {"en", "run", 1}, {"en", "dog", 1},
		{"ws", "NOT", 1}, {"ws", "not", 0}, {"ws", "be,", 1},
		{"simple", "not", 1}, {"simple", "x", 1}, {"simple", "42x", 0},
		{"kw", "To be or NOT to be, running-dogs 42x", 1}, {"kw", "to", 0},
	}
	for _, tc := range tests {
		t.Run(tc.field+"/"+tc.term, func(t *testing.T) {
			q := bleve.NewTermQuery(tc.term)
			q.SetField(tc.field)
			require.Equal(t, tc.hits, searchTotal(t, idx, q))
		})
	}
}

func TestFieldLengthsFollowUpdatesAndDeletes(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	ctx := context.Background()
	q := bleve.NewMatchQuery("a")
	q.SetField("t")
	lens := func() uint64 {
		st, _, err := idx.TermStats(ctx, q)
		require.NoError(t, err)
		return st.FieldLength["t"]
	}
	require.NoError(t, idx.Apply(ctx, []Op{
		{ID: "1", Source: []byte(`{"t":"a b c"}`), SeqNo: 1, Version: 1},
		{ID: "2", Source: []byte(`{"t":"a b"}`), SeqNo: 2, Version: 1},
	}))
	require.Equal(t, uint64(5), lens())
	require.NoError(t, idx.Apply(ctx, []Op{{ID: "1", Source: []byte(`{"t":"a"}`), SeqNo: 3, Version: 2}}))
	require.Equal(t, uint64(3), lens())
	require.NoError(t, idx.Apply(ctx, []Op{{ID: "2", Delete: true, SeqNo: 4, Version: 2}}))
	require.Equal(t, uint64(1), lens())
	// Several ops on one id in one batch count only the last.
	require.NoError(t, idx.Apply(ctx, []Op{
		{ID: "3", Source: []byte(`{"t":"a b c d"}`), SeqNo: 5, Version: 1},
		{ID: "3", Source: []byte(`{"t":"a b"}`), SeqNo: 6, Version: 2},
	}))
	require.Equal(t, uint64(3), lens())
	require.Equal(t, uint64(6), idx.AppliedSeq())
}

// TestSearchDuringDynamicMapping runs searches while documents add fields
// (the bleve mapping is swapped under the index lock); run with -race.
func TestSearchDuringDynamicMapping(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	ctx := context.Background()
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			q := bleve.NewMatchQuery("v")
			q.SetField("f0")
			if _, err := idx.Search(ctx, bleve.NewSearchRequest(q)); err != nil {
				errs <- err
				return
			}
		}
	}()
	for k := range 30 {
		src := fmt.Sprintf(`{"f%d":"v","f0":"v"}`, k)
		require.NoError(t, idx.Apply(ctx, []Op{{ID: fmt.Sprint(k), Source: []byte(src), SeqNo: uint64(k + 1), Version: 1}}))
	}
	close(done)
	require.NoError(t, <-errs)
	require.Equal(t, "text", idx.Mapping().FieldType("f29"))
}

// TestSearchSourcesAcrossSegments checks that every hit carries its own
// current _source when the index has several segments and replaced
// documents (hits' stored fields are read by doc number).
func TestSearchSourcesAcrossSegments(t *testing.T) {
	idx, err := Create(t.TempDir(), NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	var seq uint64
	want := map[string]string{}
	for batch := range 4 {
		docs := map[string]string{}
		for k := range 5 {
			id := fmt.Sprintf("d%d", (batch*5+k)%12) // later batches replace earlier documents
			docs[id] = fmt.Sprintf(`{"body":"common word batch%d","id":%q}`, batch, id)
			want[id] = docs[id]
		}
		applyDocs(t, idx, docs, &seq)
	}
	q := bleve.NewMatchQuery("common")
	q.SetField("body")
	req := bleve.NewSearchRequestOptions(q, 100, 0, false)
	req.Fields = []string{SourceField}
	res, err := idx.Search(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, res.Hits, len(want))
	for _, h := range res.Hits {
		src, ok := h.Fields[SourceField].(string)
		require.True(t, ok, "hit %s has no _source", h.ID)
		require.JSONEq(t, want[h.ID], src, "hit %s", h.ID)
	}
}

// TestSearchSourcesFromTheSlab checks every hit's _source for result sets
// whose stored fields span several of the reader's slab chunks (many small
// documents, documents larger than a chunk), including a search that asks
// for every stored field.
func TestSearchSourcesFromTheSlab(t *testing.T) {
	tests := []struct {
		name    string
		docs    int
		padding int
		fields  []string
	}{
		{name: "many small documents", docs: 70, padding: 10, fields: []string{SourceField}},
		{name: "documents of a few kB", docs: 40, padding: 3 << 10, fields: []string{SourceField}},
		{name: "documents larger than a chunk", docs: 6, padding: 70 << 10, fields: []string{SourceField}},
		{name: "every stored field", docs: 40, padding: 100, fields: []string{"*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := Create(t.TempDir(), NewDynamicMapping())
			require.NoError(t, err)
			defer idx.Close()
			var seq uint64
			want := map[string]string{}
			for k := range tc.docs {
				id := fmt.Sprintf("d%d", k)
				want[id] = fmt.Sprintf(`{"body":"common word %d","pad":%q}`, k, strings.Repeat(string(rune('a'+k%26)), tc.padding+k))
			}
			applyDocs(t, idx, want, &seq)
			q := bleve.NewMatchQuery("common")
			q.SetField("body")
			req := bleve.NewSearchRequestOptions(q, tc.docs, 0, false)
			req.Fields = tc.fields
			res, err := idx.Search(context.Background(), req)
			require.NoError(t, err)
			require.Len(t, res.Hits, tc.docs)
			for _, h := range res.Hits {
				src, ok := h.Fields[SourceField].(string)
				require.True(t, ok, "hit %s has no _source", h.ID)
				require.Equal(t, want[h.ID], src, "hit %s", h.ID)
			}
		})
	}
}

// TestSnapshotOpensAsAnIndex: a snapshot taken while the index serves opens
// as an index of its own with the same documents, state and global
// checkpoint, and later writes to the original do not reach it.
func TestSnapshotOpensAsAnIndex(t *testing.T) {
	dir := t.TempDir()
	m := NewDynamicMapping()
	idx, err := Create(filepath.Join(dir, "a"), m)
	require.NoError(t, err)
	var seq uint64
	applyDocs(t, idx, map[string]string{"1": `{"t":"one"}`, "2": `{"t":"two"}`}, &seq)
	idx.SetGlobalCheckpoint(1)
	applyDocs(t, idx, map[string]string{"3": `{"t":"three"}`}, &seq)
	require.NoError(t, idx.Snapshot(filepath.Join(dir, "copy")))
	applyDocs(t, idx, map[string]string{"4": `{"t":"four"}`}, &seq)
	require.NoError(t, idx.Close())

	cp, err := Open(filepath.Join(dir, "copy"), m)
	require.NoError(t, err)
	defer cp.Close()
	require.Equal(t, uint64(3), cp.Stats().DocCount)
	require.Equal(t, uint64(3), cp.AppliedSeq())
	require.Equal(t, uint64(1), cp.GlobalCheckpoint())
	d, ok, err := cp.Get("3")
	require.NoError(t, err)
	require.True(t, ok)
	require.JSONEq(t, `{"t":"three"}`, string(d.Source))
	_, ok, err = cp.Get("4")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestSnapshotLinksPersistedSegments: the segments scorch has persisted are
// hard links in the snapshot (no copy), and the snapshot stays whole after
// the original index goes on, closes and is deleted.
func TestSnapshotLinksPersistedSegments(t *testing.T) {
	dir := t.TempDir()
	m := NewDynamicMapping()
	idx, err := Create(filepath.Join(dir, "a"), m)
	require.NoError(t, err)
	var seq uint64
	for b := range 5 {
		docs := map[string]string{}
		for k := range 20 {
			docs[fmt.Sprintf("d%d-%d", b, k)] = fmt.Sprintf(`{"t":"batch %d doc %d"}`, b, k)
		}
		applyDocs(t, idx, docs, &seq)
	}
	require.Eventually(t, func() bool { return idx.PersistedSeq() == seq }, 10*time.Second, time.Millisecond)
	require.NoError(t, idx.Snapshot(filepath.Join(dir, "copy")))

	zaps, err := filepath.Glob(filepath.Join(dir, "copy", "store", "*.zap"))
	require.NoError(t, err)
	require.NotEmpty(t, zaps)
	linked := 0
	for _, z := range zaps {
		a, errA := os.Stat(z)
		b, errB := os.Stat(filepath.Join(dir, "a", "store", filepath.Base(z)))
		if errA == nil && errB == nil && os.SameFile(a, b) {
			linked++
		}
	}
	require.Equal(t, len(zaps), linked, "every persisted segment is a link of the original's")

	applyDocs(t, idx, map[string]string{"late": `{"t":"after the snapshot"}`}, &seq)
	require.NoError(t, idx.Close())
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "a")))
	cp, err := Open(filepath.Join(dir, "copy"), m)
	require.NoError(t, err)
	defer cp.Close()
	require.Equal(t, uint64(100), cp.Stats().DocCount)
	require.Equal(t, seq-1, cp.AppliedSeq())
	d, ok, err := cp.Get("d4-19")
	require.NoError(t, err)
	require.True(t, ok)
	require.JSONEq(t, `{"t":"batch 4 doc 19"}`, string(d.Source))
}
