package scoring

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Boost multiplies the scores of Query by Factor. Use it for queries whose
// bleve type ignores its own boost; leaf queries (term, match, phrase, …)
// apply theirs and need no wrapper.
type Boost struct {
	Query  query.Query `json:"query"`
	Factor float64     `json:"boost"`
}

var (
	_ query.Query            = (*Boost)(nil)
	_ query.ValidatableQuery = (*Boost)(nil)
)

// Validate checks the factor and the wrapped query.
func (q *Boost) Validate() error {
	if q.Factor < 0 {
		return fmt.Errorf("boost %v is negative", q.Factor)
	}
	if v, ok := q.Query.(query.ValidatableQuery); ok {
		return v.Validate()
	}
	return nil
}

// MarshalJSON names the query's kind, for logs and debugging (bleve's
// query parser does not know it, so it does not round-trip).
func (q *Boost) MarshalJSON() ([]byte, error) {
	type plain Boost
	return json.Marshal(struct {
		Boost *plain `json:"boosted"`
	}{(*plain)(q)})
}

// Searcher is the wrapped query's searcher with its scores multiplied.
func (q *Boost) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	s, err := q.Query.Searcher(ctx, r, m, options)
	if err != nil {
		return nil, err
	}
	return boosted(s, q.Factor, options.Explain), nil
}

// boosted returns s with its weight scaled by b² and its scores by b (s
// itself when b is 1).
func boosted(s search.Searcher, b float64, explain bool) search.Searcher {
	if b == 1 {
		return s
	}
	bs := &boostSearcher{boost: b}
	bs.rescored = rescored{Searcher: s, rescore: func(dm *search.DocumentMatch) {
		dm.Score *= b
		if explain {
			dm.Expl = &search.Explanation{
				Value:    dm.Score,
				Message:  fmt.Sprintf("product of boost %g and:", b),
				Children: []*search.Explanation{dm.Expl},
			}
		}
	}}
	return bs
}

type boostSearcher struct {
	rescored
	boost float64
}

// Weight is the squared weight bleve's normalisation sums: the wrapped
// searcher's, times the boost squared (as for a boosted term query).
func (s *boostSearcher) Weight() float64 { return s.Searcher.Weight() * s.boost * s.boost }

// rescored is a searcher whose every match goes through rescore before it
// is returned.
type rescored struct {
	search.Searcher
	rescore func(*search.DocumentMatch)
}

func (s *rescored) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Next(ctx)
	if dm != nil {
		s.rescore(dm)
	}
	return dm, err
}

func (s *rescored) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Advance(ctx, id)
	if dm != nil {
		s.rescore(dm)
	}
	return dm, err
}
