package index

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Global BM25 statistics.
//
// bleve's own "global scoring" (IndexAlias preSearch) sums doc counts and
// per-segment dictionary sizes across shards, but a term's document frequency
// stays per shard and the "average field length" depends on segment layout,
// so N shards do not score like one index. Weft instead runs two phases:
//
//  1. TermStats on every shard: builds the query's searchers without running
//     them and records the local document frequency of every (field, term)
//     they open, the shard's doc count and its total field lengths (tokens
//     indexed per field, kept by Apply).
//  2. The sums go into the search context (WithGlobalStats); every shard then
//     scores with the global doc count, the global document frequency of each
//     term, and avgdl = ceil(total tokens / doc count).
//
// Both phases see the index through weftScorch, a scorch index whose readers
// consult the context in TermFieldReader. A single shard takes the same path,
// so one shard and N shards give identical scores.

// IndexType is the bleve index type name this package registers and uses.
const IndexType = "weft_scorch"

var registerOnce sync.Once

func registerIndexType() {
	registerOnce.Do(func() {
		// Registration is process-wide in bleve; this name is ours alone.
		_ = registry.RegisterIndexType(IndexType, func(storeName string, config map[string]any, q *bindex.AnalysisQueue) (bindex.Index, error) {
			s, err := scorch.NewScorch(storeName, config, q)
			if err != nil {
				return nil, err
			}
			sc, ok := s.(*scorch.Scorch)
			if !ok {
				return nil, fmt.Errorf("index: scorch constructor returned %T", s)
			}
			return &weftScorch{Scorch: sc}, nil
		})
	})
}

// weftScorch is scorch with readers that apply global term statistics.
type weftScorch struct{ *scorch.Scorch }

func (w *weftScorch) Reader() (bindex.IndexReader, error) {
	r, err := w.Scorch.Reader()
	if err != nil {
		return nil, err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return r, nil
	}
	return &statsReader{IndexSnapshot: snap}, nil
}

type statsReader struct{ *scorch.IndexSnapshot }

type ctxKey int

const statsCtxKey ctxKey = 1

func (r *statsReader) TermFieldReader(ctx context.Context, term []byte, field string, includeFreq, includeNorm, includeTermVectors bool) (bindex.TermFieldReader, error) {
	tfr, err := r.IndexSnapshot.TermFieldReader(ctx, term, field, includeFreq, includeNorm, includeTermVectors)
	if err != nil || ctx == nil {
		return tfr, err
	}
	switch v := ctx.Value(statsCtxKey).(type) {
	case *recorder:
		v.record(field, term, tfr.Count())
	case *TermStats:
		if df, ok := v.DocFreq[field][string(term)]; ok {
			if st, ok := tfr.(*scorch.IndexSnapshotTermFieldReader); ok {
				return &countedTFR{IndexSnapshotTermFieldReader: st, count: df}, nil
			}
			return &countedGenericTFR{TermFieldReader: tfr, count: df}, nil
		}
	}
	return tfr, nil
}

// countedTFR reports the global document frequency; everything else
// (including scorch's Optimizable) is the shard's reader.
type countedTFR struct {
	*scorch.IndexSnapshotTermFieldReader
	count uint64
}

func (c *countedTFR) Count() uint64 { return c.count }

type countedGenericTFR struct {
	bindex.TermFieldReader
	count uint64
}

func (c *countedGenericTFR) Count() uint64 { return c.count }

type recorder struct {
	mu sync.Mutex
	df map[string]map[string]uint64
}

func (r *recorder) record(field string, term []byte, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.df[field]
	if m == nil {
		m = map[string]uint64{}
		r.df[field] = m
	}
	m[string(term)] = n
}

// TermStats are the scoring statistics of one query over one or more shards.
// They are plain data (JSON-encodable) so that a remote shard can return them.
type TermStats struct {
	DocCount    uint64                       `json:"doc_count"`
	FieldLength map[string]uint64            `json:"field_length"` // tokens indexed per field
	DocFreq     map[string]map[string]uint64 `json:"doc_freq"`     // field → term → docs
}

// Add sums o into s.
func (s *TermStats) Add(o *TermStats) {
	if o == nil {
		return
	}
	s.DocCount += o.DocCount
	if s.FieldLength == nil {
		s.FieldLength = map[string]uint64{}
	}
	for f, n := range o.FieldLength {
		s.FieldLength[f] += n
	}
	if s.DocFreq == nil {
		s.DocFreq = map[string]map[string]uint64{}
	}
	for f, terms := range o.DocFreq {
		m := s.DocFreq[f]
		if m == nil {
			m = make(map[string]uint64, len(terms))
			s.DocFreq[f] = m
		}
		for t, n := range terms {
			m[t] += n
		}
	}
}

// WithGlobalStats returns a context under which searches of this package's
// indexes score with the given statistics (phase 2 above). s must not be
// modified afterwards.
func WithGlobalStats(ctx context.Context, s *TermStats) context.Context {
	card := make(map[string]int, len(s.FieldLength)+len(s.DocFreq))
	for f, n := range s.FieldLength {
		card[f] = int(n)
	}
	for f := range s.DocFreq {
		if _, ok := card[f]; !ok {
			card[f] = 0
		}
	}
	ctx = context.WithValue(ctx, statsCtxKey, s)
	return context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{
		DocCount:         float64(s.DocCount),
		FieldCardinality: card,
	})
}

func cloneLens(m map[string]uint64) map[string]uint64 { return maps.Clone(m) }
