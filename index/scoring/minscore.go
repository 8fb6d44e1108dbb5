package scoring

import (
	"context"
	"encoding/json"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// MinScore matches the documents of Query that score at least Min
// (Elasticsearch's min_score): the others are left out of the hits, the
// total and aggregations alike. Use it as the outermost query.
type MinScore struct {
	Query query.Query `json:"query"`
	Min   float64     `json:"min_score"`
}

var (
	_ query.Query            = (*MinScore)(nil)
	_ query.ValidatableQuery = (*MinScore)(nil)
)

// Validate checks the wrapped query.
func (q *MinScore) Validate() error {
	if v, ok := q.Query.(query.ValidatableQuery); ok {
		return v.Validate()
	}
	return nil
}

// MarshalJSON names the query's kind, for logs and debugging.
func (q *MinScore) MarshalJSON() ([]byte, error) {
	type plain MinScore
	return json.Marshal(struct {
		M *plain `json:"min_score"`
	}{(*plain)(q)})
}

// Searcher is the wrapped query's searcher without the matches that score
// below Min. Scores are always computed: they decide the matches.
func (q *MinScore) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	if options.Score == "none" {
		options.Score = ""
	}
	s, err := q.Query.Searcher(ctx, r, m, options)
	if err != nil {
		return nil, err
	}
	return &minScoreSearcher{Searcher: s, min: q.Min}, nil
}

type minScoreSearcher struct {
	search.Searcher
	min float64
}

func (s *minScoreSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for {
		dm, err := s.Searcher.Next(ctx)
		if dm == nil || err != nil || dm.Score >= s.min {
			return dm, err
		}
		ctx.DocumentMatchPool.Put(dm)
	}
}

func (s *minScoreSearcher) Advance(ctx *search.SearchContext, id bindex.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Advance(ctx, id)
	if dm == nil || err != nil || dm.Score >= s.min {
		return dm, err
	}
	ctx.DocumentMatchPool.Put(dm)
	return s.Next(ctx)
}
