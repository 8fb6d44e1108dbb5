package coord

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// TestStatsCacheKeysByWhatStatisticsDependOn: searches share kept
// statistics only when their requests, indexes and mappings are the same
// (and the instant their date math resolves against, when they have any,
// and the scope: alias filters, index limits); a point in time's searches
// (a scroll's pages) have no place in the cache.
func TestStatsCacheKeysByWhatStatisticsDependOn(t *testing.T) {
	c := newStatsCache(1 << 20)
	v := &state.State{Indices: map[string]*state.Index{
		"a": {Name: "a", UUID: "ua", MappingVersion: 1},
		"b": {Name: "b", UUID: "ub", MappingVersion: 1},
	}}
	fields := esdsl.Fields(nil)
	parse := func(body string, params url.Values, now time.Time) *esdsl.Search {
		t.Helper()
		w := esdsl.Wire{Body: []byte(body), Params: params, Now: now.UnixNano()}
		s, err := esdsl.FromWire(w, fields)
		require.NoError(t, err)
		return s
	}
	t0 := time.Unix(1700000000, 0)
	key := func(names []string, body string, params url.Values, now time.Time) string {
		return c.scope(v, names, parse(body, params, now)).key
	}
	base := key([]string{"a"}, `{"query":{"match":{"x":"y"}}}`, nil, t0)
	require.Equal(t, base, key([]string{"a"}, `{"query":{"match":{"x":"y"}}}`, nil, t0.Add(time.Hour)), "no date math: the instant does not count")
	require.NotEqual(t, base, key([]string{"a"}, `{"query":{"match":{"x":"z"}}}`, nil, t0))
	require.NotEqual(t, base, key([]string{"b"}, `{"query":{"match":{"x":"y"}}}`, nil, t0))
	require.NotEqual(t, base, key([]string{"a", "b"}, `{"query":{"match":{"x":"y"}}}`, nil, t0))
	require.NotEqual(t, base, key([]string{"a"}, `{"query":{"match":{"x":"y"}}}`, url.Values{"q": {"x:y"}}, t0))
	dm := `{"query":{"range":{"d":{"gte":"now-1d"}}}}`
	require.NotEqual(t, key([]string{"a"}, dm, nil, t0), key([]string{"a"}, dm, nil, t0.Add(time.Hour)), "date math resolves against the instant")
	v.Indices["a"].MappingVersion = 2
	require.NotEqual(t, base, key([]string{"a"}, `{"query":{"match":{"x":"y"}}}`, nil, t0), "another mapping")

	scoped := func(sc esdsl.Scope) string {
		s, err := esdsl.FromWire(esdsl.Wire{Body: []byte(`{"query":{"match":{"x":"y"}}}`), Now: t0.UnixNano(), Scope: sc}, fields)
		require.NoError(t, err)
		return c.scope(v, []string{"a"}, s).key
	}
	require.NotEqual(t, scoped(esdsl.Scope{}), scoped(esdsl.Scope{Filter: []byte(`{"term":{"x":"z"}}`)}), "an alias filter")
	require.NotEqual(t, scoped(esdsl.Scope{}), scoped(esdsl.Scope{MaxResultWindow: 50}), "an index limit")

	scroll := parse(`{"query":{"match":{"x":"y"}},"size":2}`, url.Values{"scroll": {"1m"}}, t0)
	require.NotNil(t, c.scope(v, []string{"a"}, scroll))
	scroll.SetPointInTime("some-pit", time.Minute)
	require.Nil(t, c.scope(v, []string{"a"}, scroll), "a point in time (every scroll page) neither uses nor keeps statistics")

	require.Nil(t, newStatsCache(0).scope(v, []string{"a"}, scroll), "no cache, no scope")
}

// TestStatsCacheKeepsWithinItsBudget: statistics with a generation are
// kept by copy, replaced when the copy's generation changes, summed once
// per set of generations, and the least recently used searches leave
// once the budget is spent.
func TestStatsCacheKeepsWithinItsBudget(t *testing.T) {
	st := func(n uint64, terms ...string) *index.TermStats {
		df := map[string]uint64{}
		for _, term := range terms {
			df[term] = n
		}
		return &index.TermStats{DocCount: n, FieldLength: map[string]uint64{"f": n}, DocFreq: map[string]map[string]uint64{"f": df}}
	}
	c := newStatsCache(4096)
	s := &statsScope{cache: c, key: "k1"}
	ids := []string{"a", "b", ""}
	s.put(ids, []ShardStats{{st(1, "x"), 7}, {st(2, "x"), 0}, {st(3, "x"), 9}})
	got := s.get(ids)
	require.Equal(t, uint64(1), got[0].Stats.DocCount)
	require.Nil(t, got[1].Stats, "no generation: not kept")
	require.Nil(t, got[2].Stats, "no copy: not kept")

	two := []string{"a", "b"}
	s.put(two, []ShardStats{{st(1, "x"), 7}, {st(5, "x"), 3}})
	per := s.get(two)
	sum := s.sum(two, per)
	require.Equal(t, uint64(6), sum.DocCount)
	require.Equal(t, uint64(6), sum.DocFreq["f"]["x"])
	require.Same(t, sum, s.sum(two, s.get(two)), "the same generations are summed once")
	s.put(two, []ShardStats{{st(1, "x"), 7}, {st(8, "x"), 4}})
	require.Equal(t, uint64(9), s.sum(two, s.get(two)).DocCount, "a new generation replaces the copy's statistics")

	for k := range 40 {
		o := &statsScope{cache: c, key: fmt.Sprint("other", k)}
		o.put([]string{"a"}, []ShardStats{{st(1, "some", "terms", "of", "a", "query"), 1}})
	}
	require.LessOrEqual(t, c.used, c.budget)
	require.Nil(t, s.get(two)[0].Stats, "the least recently used search left")
	require.NotNil(t, (&statsScope{cache: c, key: "other39"}).get([]string{"a"})[0].Stats)
}
