package scoring

import (
	"testing"

	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
)

func boostedTerm(field, v string, b float64) query.Query {
	q := query.NewTermQuery(v)
	q.SetField(field)
	q.SetBoost(b)
	return q
}

func TestBleveDisjunctionIgnoresItsBoost(t *testing.T) {
	// The premise of Boost: if bleve starts applying a compound query's
	// boost, wrapping it would apply the boost twice.
	idx := openIndex(t)
	plain := query.NewDisjunctionQuery([]query.Query{term("a", "fox"), term("a", "quick")})
	withBoost := query.NewDisjunctionQuery([]query.Query{term("a", "fox"), term("a", "quick")})
	withBoost.SetBoost(3)
	withSibling := func(first query.Query) query.Query {
		return query.NewBooleanQuery(nil, []query.Query{first, term("b", "fox")}, nil)
	}
	want, _, _ := scores(t, idx, withSibling(plain), false)
	got, _, _ := scores(t, idx, withSibling(withBoost), false)
	require.Equal(t, want, got)
}

func TestBoostWeighsACompoundLikeBoostedTerms(t *testing.T) {
	// A disjunction boosted by 3 must score, against a sibling, exactly as
	// the same disjunction of terms each boosted by 3.
	idx := openIndex(t)
	wrapped := &Boost{Query: query.NewDisjunctionQuery([]query.Query{term("a", "fox"), term("a", "quick")}), Factor: 3}
	byTerms := query.NewDisjunctionQuery([]query.Query{boostedTerm("a", "fox", 3), boostedTerm("a", "quick", 3)})
	unboosted := query.NewDisjunctionQuery([]query.Query{term("a", "fox"), term("a", "quick")})
	withSibling := func(first query.Query) query.Query {
		return query.NewBooleanQuery(nil, []query.Query{first, term("b", "fox")}, nil)
	}
	want, wantTotal, _ := scores(t, idx, withSibling(byTerms), false)
	got, total, _ := scores(t, idx, withSibling(wrapped), false)
	base, _, _ := scores(t, idx, withSibling(unboosted), false)
	require.Equal(t, wantTotal, total)
	require.Len(t, got, len(want))
	differs := false
	for id, s := range want {
		require.InDelta(t, s, got[id], 1e-12*s, id)
		differs = differs || base[id] != got[id]
	}
	require.True(t, differs, "the boost changed no score")
}

func TestBoostExplains(t *testing.T) {
	idx := openIndex(t)
	q := &Boost{Query: query.NewDisjunctionQuery([]query.Query{term("a", "fox"), term("b", "fox")}), Factor: 2}
	_, _, res := scores(t, idx, q, true)
	require.NotEmpty(t, res.Hits)
	for _, h := range res.Hits {
		require.NotNil(t, h.Expl, h.ID)
		require.InDelta(t, h.Score, h.Expl.Value, 1e-12*h.Score, h.ID)
		require.Len(t, h.Expl.Children, 1, h.ID)
	}
}

func TestBoostValidate(t *testing.T) {
	require.ErrorContains(t, (&Boost{Query: term("a", "fox"), Factor: -1}).Validate(), "negative")
	require.ErrorContains(t, (&Boost{Query: NewDisMax(nil, 2), Factor: 1}).Validate(), "tie_breaker")
	require.NoError(t, (&Boost{Query: term("a", "fox"), Factor: 2}).Validate())
}
