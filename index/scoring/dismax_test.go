package scoring

import (
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/stretchr/testify/require"
)

// openIndex builds a small BM25 scorch index on disk whose documents hold
// "fox" in field a, field b, both or neither.
func openIndex(t *testing.T) bleve.Index {
	t.Helper()
	m := bleve.NewIndexMapping()
	m.ScoringModel = bindex.BM25Scoring // Weft's model; tf-idf would add a query norm
	idx, err := bleve.New(t.TempDir()+"/idx", m)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, idx.Close()) })
	docs := map[string]map[string]string{
		"both":      {"a": "quick brown fox", "b": "fox fox fox"},
		"a-only":    {"a": "fox jumps over fox", "b": "lazy dog"},
		"b-only":    {"a": "lazy dog", "b": "the fox"},
		"neither":   {"a": "cat", "b": "mouse"},
		"both-weak": {"a": "a very long text with one fox among many other words here", "b": "another long text that names a fox once in passing only"},
	}
	b := idx.NewBatch()
	for id, d := range docs {
		require.NoError(t, b.Index(id, d))
	}
	require.NoError(t, idx.Batch(b))
	return idx
}

func term(field, v string) query.Query {
	q := query.NewTermQuery(v)
	q.SetField(field)
	return q
}

// scores runs q and returns each hit's score by id, and the total.
func scores(t *testing.T, idx bleve.Index, q query.Query, explain bool) (map[string]float64, uint64, *bleve.SearchResult) {
	t.Helper()
	res, err := idx.Search(bleve.NewSearchRequestOptions(q, 100, 0, explain))
	require.NoError(t, err)
	out := map[string]float64{}
	for _, h := range res.Hits {
		out[h.ID] = h.Score
	}
	return out, res.Total, res
}

// clauseScores returns, by document id, each clause's score as bleve's
// disjunction over clauses computes it (with its query normalisation),
// the oracle for how Query combines them.
func clauseScores(t *testing.T, idx bleve.Index, clauses ...query.Query) map[string][]float64 {
	t.Helper()
	d := query.NewDisjunctionQuery(clauses)
	d.RetrieveScoreBreakdown(true)
	res, err := idx.Search(bleve.NewSearchRequestOptions(d, 100, 0, false))
	require.NoError(t, err)
	out := map[string][]float64{}
	for _, h := range res.Hits {
		for _, v := range h.ScoreBreakdown {
			out[h.ID] = append(out[h.ID], v)
		}
	}
	return out
}

func TestScoreIsBestClausePlusTieBreakerTimesOthers(t *testing.T) {
	idx := openIndex(t)
	clauses := []query.Query{term("a", "fox"), term("b", "fox")}
	parts := clauseScores(t, idx, clauses...)
	for _, tc := range []struct {
		name  string
		tie   float64
		boost float64
	}{
		{"best clause only", 0, 1},
		{"part of the others", 0.3, 1},
		{"sum of all", 1, 1},
		{"boosted", 0.3, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewDisMax(clauses, tc.tie)
			if tc.boost != 1 {
				q.SetBoost(tc.boost)
			}
			got, total, _ := scores(t, idx, q, false)
			require.Equal(t, uint64(4), total, "every document with a fox in a or b matches")
			require.NotContains(t, got, "neither")
			for id, s := range got {
				var best, sum float64
				for _, v := range parts[id] {
					best, sum = max(best, v), sum+v
				}
				require.NotZero(t, best, id)
				want := (best + tc.tie*(sum-best)) * tc.boost
				require.InDelta(t, want, s, 1e-12*want, "document %s: clause scores %v", id, parts[id])
			}
		})
	}
}

func TestRanksByTheBestFieldNotTheSum(t *testing.T) {
	idx := openIndex(t)
	// "both-weak" matches weakly in both fields, "b-only" strongly in one:
	// bleve's disjunction (a sum) ranks the double match first, dis_max
	// the better single field.
	clauses := []query.Query{term("a", "fox"), term("b", "fox")}
	summed, _, _ := scores(t, idx, query.NewDisjunctionQuery(clauses), false)
	require.Greater(t, summed["both-weak"], summed["b-only"], "the corpus must tell the two scorings apart")
	got, _, _ := scores(t, idx, NewDisMax(clauses, 0), false)
	require.Greater(t, got["b-only"], got["both-weak"])
}

func TestNestedInABooleanQuery(t *testing.T) {
	idx := openIndex(t)
	inner := NewDisMax([]query.Query{term("a", "fox"), term("b", "fox")}, 0)
	bq := query.NewBooleanQuery([]query.Query{inner}, nil, []query.Query{term("a", "quick")})
	got, total, _ := scores(t, idx, bq, false)
	require.Equal(t, uint64(3), total)
	require.NotContains(t, got, "both", "must_not removed the document with quick")
	alone, _, _ := scores(t, idx, inner, false)
	for id, s := range got {
		require.InDelta(t, alone[id], s, 1e-12*s, id)
	}
}

func TestExplanationCarriesTheScoreAndClauses(t *testing.T) {
	idx := openIndex(t)
	_, _, res := scores(t, idx, NewDisMax([]query.Query{term("a", "fox"), term("b", "fox")}, 0.5), true)
	require.NotEmpty(t, res.Hits)
	for _, h := range res.Hits {
		require.NotNil(t, h.Expl, h.ID)
		require.InDelta(t, h.Score, h.Expl.Value, 1e-12*h.Score, h.ID)
		require.NotEmpty(t, h.Expl.Children, h.ID)
	}
}

func TestNoClausesMatchesNothing(t *testing.T) {
	idx := openIndex(t)
	_, total, _ := scores(t, idx, NewDisMax(nil, 0), false)
	require.Zero(t, total)
}

func TestValidateRejectsTieBreakerOutsideUnitInterval(t *testing.T) {
	for _, tie := range []float64{-0.1, 1.5} {
		err := NewDisMax([]query.Query{term("a", "fox")}, tie).Validate()
		require.ErrorContains(t, err, "tie_breaker")
	}
	require.NoError(t, NewDisMax([]query.Query{term("a", "fox")}, 0.7).Validate())
}
