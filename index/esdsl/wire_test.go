package esdsl

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWireRebuildsTheSameSearch: a Search sent as its Wire (through JSON,
// as it crosses the fabric) and rebuilt gives the same response as the
// original — plain searches with date math, counts, and scroll pages past
// the first.
func TestWireRebuildsTheSameSearch(t *testing.T) {
	ti := newTestIndex(t)
	rebuild := func(s *Search) *Search {
		raw, err := json.Marshal(s.Wire())
		require.NoError(t, err)
		var w Wire
		require.NoError(t, json.Unmarshal(raw, &w))
		s2, err := FromWire(w, ti.fields)
		require.NoError(t, err)
		return s2
	}
	bodies := []struct {
		body   string
		params url.Values
	}{
		{`{"query":{"match":{"body":"quick fox"}},"highlight":{"fields":{"body":{}}}}`, nil},
		{`{"query":{"range":{"published":{"gte":"now-100y"}}},"sort":[{"views":"desc"}],"aggs":{"t":{"terms":{"field":"tags"}}}}`, nil},
		{``, url.Values{"q": {"title:fox"}, "size": {"1"}}},
	}
	for _, b := range bodies {
		s, err := ParseSearch([]byte(b.body), b.params, ti.fields)
		require.NoError(t, err)
		require.Equal(t, ti.run(t, s), ti.run(t, rebuild(s)), b.body)
	}
	c, err := ParseCount([]byte(`{"query":{"term":{"tags":"animal"}}}`), nil, ti.fields)
	require.NoError(t, err)
	c2 := rebuild(c)
	require.True(t, c2.count)
	res, err := ti.idx.Search(c2.Request)
	require.NoError(t, err)
	require.Equal(t, uint64(3), res.Total)

	// A scroll's second page rebuilt elsewhere continues where the first ended.
	s, err := ParseSearch([]byte(`{"size":2,"sort":["_id"]}`), url.Values{"scroll": {"1m"}}, ti.fields)
	require.NoError(t, err)
	first, err := ti.idx.Search(s.Request)
	require.NoError(t, err)
	id, err := s.ScrollID("pit", []string{"test"})
	require.NoError(t, err)
	sc, err := ParseScroll(id, "")
	require.NoError(t, err)
	page, after := s.ScrollCursor(first)
	page2, err := sc.Page(ti.fields, page, after)
	require.NoError(t, err)
	got := ti.run(t, rebuild(page2))
	require.Equal(t, ti.run(t, page2), got)
	require.Equal(t, []string{"3", "4"}, hitIDs(got))
}
