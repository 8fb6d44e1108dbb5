package esdsl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hitScores runs body and returns each hit's _score by _id.
func hitScores(t *testing.T, ti *testIndex, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	hits := ti.search(t, body, nil)["hits"].(map[string]any)["hits"].([]any)
	for _, h := range hits {
		m := h.(map[string]any)
		out[m["_id"].(string)] = m["_score"].(float64)
	}
	return out
}

func requireSameScores(t *testing.T, want, got map[string]float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for id, s := range want {
		require.InDelta(t, s, got[id], 1e-12*s, "document %s", id)
	}
}

func TestMultiMatchBestFieldsIsADisMaxOfItsFields(t *testing.T) {
	ti := newTestIndex(t)
	// Documents 1 and 4 hold "fox" in both title and body.
	const fields = `"fields":["title","body"]`
	best := hitScores(t, ti, `{"query":{"multi_match":{"query":"fox",`+fields+`}}}`)
	disMax := hitScores(t, ti, `{"query":{"dis_max":{"queries":[{"match":{"title":"fox"}},{"match":{"body":"fox"}}]}}}`)
	requireSameScores(t, disMax, best)

	// With tie_breaker 1 every field counts in full: for documents matching
	// in every field that is most_fields' sum.
	tie1 := hitScores(t, ti, `{"query":{"multi_match":{"query":"fox","tie_breaker":1,`+fields+`}}}`)
	most := hitScores(t, ti, `{"query":{"multi_match":{"query":"fox","type":"most_fields",`+fields+`}}}`)
	requireSameScores(t, most, tie1)
	for _, id := range []string{"1", "4"} {
		require.Less(t, best[id], tie1[id], "document %s: the best field alone scores less than both", id)
	}
}

func TestQueryStringOverFieldsTakesTheBestField(t *testing.T) {
	ti := newTestIndex(t)
	qs := hitScores(t, ti, `{"query":{"query_string":{"query":"fox","fields":["title","body"]}}}`)
	disMax := hitScores(t, ti, `{"query":{"dis_max":{"queries":[{"match":{"title":"fox"}},{"match":{"body":"fox"}}]}}}`)
	requireSameScores(t, disMax, qs)
	most := hitScores(t, ti, `{"query":{"query_string":{"query":"fox","type":"most_fields","fields":["title","body"]}}}`)
	for _, id := range []string{"1", "4"} {
		require.Less(t, qs[id], most[id], "document %s", id)
	}
}

func TestBoostOnACompoundQueryWeighsItAgainstItsSiblings(t *testing.T) {
	ti := newTestIndex(t)
	// A bool of one match boosted by 3 weighs against its sibling exactly
	// as the match boosted by 3 itself; without the boost it does not.
	nested := hitScores(t, ti, `{"query":{"bool":{"should":[{"bool":{"must":{"match":{"body":"fox"}},"boost":3}},{"match":{"title":"quick"}}]}}}`)
	leaf := hitScores(t, ti, `{"query":{"bool":{"should":[{"match":{"body":{"query":"fox","boost":3}}},{"match":{"title":"quick"}}]}}}`)
	plain := hitScores(t, ti, `{"query":{"bool":{"should":[{"bool":{"must":{"match":{"body":"fox"}}}},{"match":{"title":"quick"}}]}}}`)
	requireSameScores(t, leaf, nested)
	require.NotEqual(t, plain, nested)
}

func TestTieBreakerOutsideUnitIntervalIsRefused(t *testing.T) {
	for _, body := range []string{
		`{"query":{"dis_max":{"queries":[{"match_all":{}}],"tie_breaker":1.5}}}`,
		`{"query":{"multi_match":{"query":"fox","fields":["title","body"],"tie_breaker":-1}}}`,
		`{"query":{"query_string":{"query":"fox","tie_breaker":2}}}`,
	} {
		_, err := ParseSearch([]byte(body), nil, newTestIndex(t).fields)
		require.ErrorContains(t, err, "between 0 and 1", body)
	}
}
