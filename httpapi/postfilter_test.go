package httpapi_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// loadMovies creates movies (three shards) with 12 documents: genre
// drama for every third, comedy for the others, and a year.
func loadMovies(t *testing.T, a *testAPI) {
	t.Helper()
	a.must(200, "PUT", "/movies", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"},"genre":{"type":"keyword"},"year":{"type":"long"}}}}`)
	var b strings.Builder
	for i := range 12 {
		genre := "comedy"
		if i%3 == 0 {
			genre = "drama"
		}
		fmt.Fprintf(&b, "{\"index\":{\"_index\":\"movies\",\"_id\":\"%d\"}}\n{\"title\":\"movie number %d\",\"genre\":%q,\"year\":%d}\n", i, i, genre, 2000+i)
	}
	r := a.must(200, "POST", "/_bulk?refresh=true", b.String(), "Content-Type", "application/x-ndjson")
	require.Equal(t, false, r["errors"])
}

// genreBuckets reads the genres terms aggregation as key → doc_count.
func genreBuckets(t *testing.T, r map[string]any) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, b := range path(t, r, "aggregations", "genres", "buckets").([]any) {
		bm := b.(map[string]any)
		out[bm["key"].(string)] = bm["doc_count"].(float64)
	}
	return out
}

// dramas are the ids of loadMovies' dramas.
var dramas = []string{"0", "3", "6", "9"}

// TestSearchPostFilter is search-ui's first facet click, over three
// shards: the hits and their total are the clicked facet's, while the
// facet counts (a terms aggregation) are of every document the query
// matches.
func TestSearchPostFilter(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	loadMovies(t, a)
	facet := `"aggs":{"genres":{"terms":{"field":"genre"}}},"post_filter":{"bool":{"filter":[{"term":{"genre":"drama"}}]}}`
	every := map[string]float64{"drama": 4, "comedy": 8}

	t.Run("hits filtered, buckets not", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_search", `{"query":{"match":{"title":"movie"}},"size":20,`+facet+`}`)
		require.EqualValues(t, 3, path(t, r, "_shards", "successful"))
		got := hitIDs(t, r)
		sort.Strings(got)
		require.Equal(t, dramas, got)
		require.EqualValues(t, 4, path(t, r, "hits", "total", "value"))
		require.Equal(t, "eq", path(t, r, "hits", "total", "relation"))
		require.Equal(t, every, genreBuckets(t, r))
	})
	t.Run("the query still narrows the buckets", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_search", `{"query":{"range":{"year":{"gte":2006}}},"size":20,`+facet+`}`)
		got := hitIDs(t, r)
		sort.Strings(got)
		require.Equal(t, []string{"6", "9"}, got)
		require.Equal(t, map[string]float64{"drama": 2, "comedy": 4}, genreBuckets(t, r))
	})
	t.Run("track_total_hits", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_search", `{"track_total_hits":2,"size":0,`+facet+`}`)
		require.EqualValues(t, 2, path(t, r, "hits", "total", "value"))
		require.Equal(t, "gte", path(t, r, "hits", "total", "relation"))
		r = a.must(200, "POST", "/movies/_search?rest_total_hits_as_int=true", `{"size":0,`+facet+`}`)
		require.EqualValues(t, 4, path(t, r, "hits", "total"))
		require.Equal(t, every, genreBuckets(t, r))
	})
	t.Run("scroll pages are filtered", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_search?scroll=1m", `{"size":3,"sort":["year"],`+facet+`}`)
		require.EqualValues(t, 4, path(t, r, "hits", "total", "value"))
		require.Equal(t, every, genreBuckets(t, r))
		got := hitIDs(t, r)
		id := r["_scroll_id"].(string)
		for range 5 {
			r = a.must(200, "POST", "/_search/scroll", `{"scroll_id":"`+id+`","scroll":"1m"}`)
			page := hitIDs(t, r)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
		}
		require.Equal(t, dramas, got, "every drama once, in year order")
		a.must(200, "DELETE", "/_search/scroll", `{"scroll_id":["`+id+`"]}`)
	})
	t.Run("point in time", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_pit?keep_alive=1m", "")
		pit := r["id"].(string)
		r = a.must(200, "POST", "/_search", `{"pit":{"id":"`+pit+`"},"size":20,"sort":["year"],`+facet+`}`)
		require.Equal(t, dramas, hitIDs(t, r))
		require.Equal(t, every, genreBuckets(t, r))
		a.must(200, "DELETE", "/_pit", `{"id":"`+pit+`"}`)
	})
	t.Run("msearch", func(t *testing.T) {
		r := a.must(200, "POST", "/movies/_msearch", bulkLines(`{}`, `{"size":20,`+facet+`}`), "Content-Type", "application/x-ndjson")
		item := path(t, r, "responses", 0).(map[string]any)
		require.EqualValues(t, 4, path(t, item, "hits", "total", "value"))
		require.Equal(t, every, genreBuckets(t, item))
	})
}
