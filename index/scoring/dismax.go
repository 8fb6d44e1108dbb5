package scoring

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// DisMax matches the union of its clauses and scores each document as
// Lucene's DisjunctionMaxQuery does: max(clause scores) + TieBreaker × (sum
// of the other matching clauses' scores), times its boost. TieBreaker is in
// [0, 1]: 0 keeps only the best clause, 1 sums them all. The clauses are
// normalised together as bleve's disjunction normalises them. A DisMax is
// not modified by searching, so one may be shared by concurrent searches.
type DisMax struct {
	Disjuncts  []query.Query `json:"dis_max"`
	TieBreaker float64       `json:"tie_breaker"`
	BoostVal   *query.Boost  `json:"boost,omitempty"`
}

var (
	_ query.Query            = (*DisMax)(nil)
	_ query.BoostableQuery   = (*DisMax)(nil)
	_ query.ValidatableQuery = (*DisMax)(nil)
)

// NewDisMax returns a DisMax over clauses with the given tie breaker.
func NewDisMax(clauses []query.Query, tieBreaker float64) *DisMax {
	return &DisMax{Disjuncts: clauses, TieBreaker: tieBreaker}
}

// SetBoost multiplies every score of the query by b.
func (q *DisMax) SetBoost(b float64) {
	boost := query.Boost(b)
	q.BoostVal = &boost
}

// Boost is the query's boost (1 when unset).
func (q *DisMax) Boost() float64 { return q.BoostVal.Value() }

// Validate checks the tie breaker and every clause that can be validated.
func (q *DisMax) Validate() error {
	if q.TieBreaker < 0 || q.TieBreaker > 1 {
		return fmt.Errorf("dis_max: tie_breaker %v is outside [0, 1]", q.TieBreaker)
	}
	for _, c := range q.Disjuncts {
		if v, ok := c.(query.ValidatableQuery); ok {
			if err := v.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarshalJSON names the query's kind, for logs and debugging (bleve's
// query parser does not know it, so it does not round-trip).
func (q *DisMax) MarshalJSON() ([]byte, error) {
	type plain DisMax
	return json.Marshal((*plain)(q))
}

// Searcher builds the clauses' searchers and a disjunction over them that
// reports each clause's score separately, which the returned searcher
// combines into the dis_max score.
func (q *DisMax) Searcher(ctx context.Context, r bindex.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	clauses := make([]search.Searcher, 0, len(q.Disjuncts))
	closeAll := func() {
		for _, s := range clauses {
			_ = s.Close()
		}
	}
	for _, d := range q.Disjuncts {
		s, err := d.Searcher(ctx, r, m, options)
		if err != nil {
			closeAll()
			return nil, err
		}
		if s != nil {
			clauses = append(clauses, s)
		}
	}
	if len(clauses) == 0 {
		return searcher.NewMatchNoneSearcher(r)
	}
	// With the breakdown asked for in its context, bleve's disjunction
	// records each matching clause's score by clause position in
	// DocumentMatch.ScoreBreakdown instead of summing them.
	bctx := context.WithValue(ctx, search.IncludeScoreBreakdownKey, true)
	disj, err := searcher.NewDisjunctionSearcher(bctx, r, clauses, 0, options)
	if err != nil {
		closeAll()
		return nil, err
	}
	return boosted(&rescored{Searcher: disj, rescore: disMaxScore(q.TieBreaker, options.Explain)}, q.Boost(), options.Explain), nil
}

// disMaxScore returns what turns the per-clause scores of a disjunction's
// match into the dis_max score: max + tie × (sum − max). It empties the
// breakdown so that nothing above mistakes it for a per-query (hybrid
// search) breakdown.
func disMaxScore(tie float64, explain bool) func(*search.DocumentMatch) {
	return func(dm *search.DocumentMatch) {
		var best, sum float64
		for _, v := range dm.ScoreBreakdown {
			sum += v
			best = max(best, v)
		}
		dm.Score = best + tie*(sum-best)
		clear(dm.ScoreBreakdown)
		if !explain {
			return
		}
		var children []*search.Explanation
		if dm.Expl != nil {
			for _, c := range dm.Expl.Children {
				if c != nil {
					children = append(children, c)
				}
			}
		}
		dm.Expl = &search.Explanation{
			Value:    dm.Score,
			Message:  fmt.Sprintf("max plus %g times others of:", tie),
			Children: children,
		}
	}
}
