package enginebench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// rawIndex is the in-process side: a plain bleve scorch index with the same
// mapping the node builds from the same ES mapping.
type rawIndex struct {
	idx bleve.Index
	// bm25 are the statistics its searches score with (nil: bleve's own).
	bm25 *search.BM25Stats
}

// bm25Key is the internal key under which persist stores the BM25
// statistics for the worker that searches the index.
var bm25Key = []byte("enginebench-bm25")

// bm25Stats counts what the node scores BM25 with: the documents, and per
// field the tokens indexed (the node's average field length is tokens ÷
// documents, Lucene's). Left to itself bleve divides the number of distinct
// terms in the field by the documents instead, which ranks differently, so
// the raw side searches with these to score like for like. Each document is
// mapped and analyzed as bleve indexes it.
func bm25Stats(m mapping.IndexMapping, docs []Doc) (*search.BM25Stats, error) {
	st := &search.BM25Stats{DocCount: float64(len(docs)), FieldCardinality: map[string]int{}}
	for _, d := range docs {
		var src map[string]any
		if err := json.Unmarshal(d.Source, &src); err != nil {
			return nil, fmt.Errorf("raw bleve: document %s: %w", d.ID, err)
		}
		doc := document.NewDocument(d.ID)
		if err := m.MapDocument(doc, src); err != nil {
			return nil, fmt.Errorf("raw bleve: document %s: %w", d.ID, err)
		}
		for _, f := range doc.Fields {
			if f.Options().IsIndexed() {
				f.Analyze()
				st.FieldCardinality[f.Name()] += f.AnalyzedLength()
			}
		}
	}
	return st, nil
}

// openRaw creates a scorch index in dir. unsafeBatch selects scorch's
// unsafe_batch, which the node's index package uses (a batch returns once
// searchable; durability comes from the shard log); without it a batch
// returns only once persisted, bleve's default.
func openRaw(dir string, m mapping.IndexMapping, unsafeBatch bool) (*rawIndex, error) {
	cfg := map[string]any{}
	if unsafeBatch {
		cfg["unsafe_batch"] = true
	}
	idx, err := bleve.NewUsing(dir, m, scorch.Name, bleve.Config.DefaultKVStore, cfg)
	if err != nil {
		return nil, fmt.Errorf("raw bleve: create %s: %w", dir, err)
	}
	return &rawIndex{idx: idx}, nil
}

func (r *rawIndex) Close() error { return r.idx.Close() }

// load indexes docs in batches of batchSize, one batch at a time, decoding
// each source as a bleve user would, and returns the elapsed time.
func (r *rawIndex) load(ctx context.Context, docs []Doc, batchSize int) (time.Duration, error) {
	start := time.Now()
	for lo := 0; lo < len(docs); lo += batchSize {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b := r.idx.NewBatch()
		for _, d := range docs[lo:min(lo+batchSize, len(docs))] {
			var m map[string]any
			if err := json.Unmarshal(d.Source, &m); err != nil {
				return 0, fmt.Errorf("raw bleve: document %s: %w", d.ID, err)
			}
			if err := b.Index(d.ID, m); err != nil {
				return 0, fmt.Errorf("raw bleve: document %s: %w", d.ID, err)
			}
		}
		if err := r.idx.Batch(b); err != nil {
			return 0, fmt.Errorf("raw bleve: batch at document %d: %w", lo, err)
		}
	}
	return time.Since(start), nil
}

// persist waits until every batch indexed so far is on disk. With
// unsafe_batch, Batch returns before its segment is persisted, and Close
// does not persist what is left, so the index must be persisted before it
// is closed and opened again (by the raw worker). It sends an empty batch
// (an internal key) and waits for scorch to persist it: scorch persists
// its snapshots in order, so the earlier batches are on disk too.
func (r *rawIndex) persist(ctx context.Context, m mapping.IndexMapping, docs []Doc) error {
	st, err := bm25Stats(m, docs)
	if err != nil {
		return err
	}
	r.bm25 = st
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	b := r.idx.NewBatch()
	b.SetInternal(bm25Key, raw)
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := r.idx.Batch(b); err != nil {
		return fmt.Errorf("raw bleve: persist: %w", err)
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("raw bleve: persist: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rawQuery builds the bleve query equivalent to esBody(q).
func rawQuery(q Query) query.Query {
	term := func(field, value string) query.Query {
		t := bleve.NewTermQuery(value)
		t.SetField(field)
		return t
	}
	switch q.Kind {
	case KindBoolean:
		b := bleve.NewBooleanQuery()
		b.AddMust(term("body", q.Terms[0]))
		b.AddShould(term("subject", q.Terms[1]))
		b.AddMustNot(term("body", q.Terms[2]))
		return b
	case KindPhrase:
		p := bleve.NewMatchPhraseQuery(q.Terms[0])
		p.SetField("body")
		return p
	default:
		return term("body", q.Terms[0])
	}
}

// search runs q for the top size hits with their stored fields (the
// in-process counterpart of returning _source).
func (r *rawIndex) search(ctx context.Context, q Query, size int) (answer, error) {
	req := bleve.NewSearchRequestOptions(rawQuery(q), size, 0, false)
	req.Fields = []string{"*"}
	if r.bm25 != nil {
		ctx = context.WithValue(ctx, search.BM25StatsKey, r.bm25)
	}
	res, err := r.idx.SearchInContext(ctx, req)
	if err != nil {
		return answer{}, fmt.Errorf("raw bleve: %s query %q: %w", q.Kind, q.Terms, err)
	}
	a := answer{Total: res.Total}
	for _, h := range res.Hits {
		a.IDs = append(a.IDs, h.ID)
		a.Scores = append(a.Scores, h.Score)
	}
	return a, nil
}

// answer is what a query returned, for the cross-check of the two sides.
type answer struct {
	IDs    []string
	Scores []float64
	Total  uint64
}
