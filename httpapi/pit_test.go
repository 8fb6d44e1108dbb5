package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Points in time and scrolls over them (issue 11, phase 3).

func TestPointInTime(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/p", `{"settings":{"number_of_shards":3},"mappings":{"properties":{"n":{"type":"long"}}}}`)
	a.must(200, "POST", "/p/_bulk?refresh=true", bulkLines(`{"index":{"_id":"1"}}`, `{"n":1}`, `{"index":{"_id":"2"}}`, `{"n":2}`, `{"index":{"_id":"3"}}`, `{"n":3}`))
	r := a.must(200, "POST", "/p/_pit?keep_alive=1m", "")
	id := r["id"].(string)
	require.EqualValues(t, 3, path(t, r, "_shards", "total"))

	// Writes after the point in time are not seen through it.
	a.must(200, "POST", "/p/_bulk?refresh=true", bulkLines(`{"index":{"_id":"4"}}`, `{"n":4}`, `{"delete":{"_id":"1"}}`, `{"index":{"_id":"2"}}`, `{"n":20}`))
	body := func(extra string) string {
		return `{"pit":{"id":"` + id + `","keep_alive":"1m"},"size":2,"sort":[{"n":"asc"}]` + extra + `}`
	}
	r = a.must(200, "POST", "/_search", body(""))
	require.Equal(t, id, r["pit_id"])
	require.EqualValues(t, 3, path(t, r, "hits", "total", "value"))
	require.Equal(t, []string{"1", "2"}, hitIDs(t, r))
	last := path(t, r, "hits", "hits", 1, "sort")
	after, err := json.Marshal(last)
	require.NoError(t, err)
	r = a.must(200, "POST", "/_search", body(`,"search_after":`+string(after)))
	require.Equal(t, []string{"3"}, hitIDs(t, r))
	r = a.must(200, "POST", "/_search", `{"pit":{"id":"`+id+`"},"query":{"term":{"n":2}}}`)
	require.Equal(t, []string{"2"}, hitIDs(t, r), "the old value of 2 is what the point in time holds")
	require.Equal(t, []string{"3", "4", "2"}, hitIDs(t, a.must(200, "POST", "/p/_search", `{"sort":["n"]}`)), "the index itself moved on (2 is 20 now)")

	require.Equal(t, 400, a.do("POST", "/p/_search", body("")).Status, "a point in time search names no index")
	require.Equal(t, 400, a.do("POST", "/_search?scroll=1m", body("")).Status)
	require.Equal(t, 400, a.do("POST", "/_search", `{"pit":{"id":"garbage"}}`).Status)
	require.Equal(t, 400, a.do("POST", "/p/_pit", "").Status, "keep_alive is required")

	r = a.must(200, "DELETE", "/_pit", `{"id":"`+id+`"}`)
	require.EqualValues(t, 3, r["num_freed"])
	rr := a.do("POST", "/_search", body(""))
	require.Equal(t, 404, rr.Status, string(rr.Body))
	require.Equal(t, "search_context_missing_exception", errorType(t, rr))
	require.Equal(t, 404, a.do("DELETE", "/_pit", `{"id":"`+id+`"}`).Status, "nothing left to free")
}

func TestScrollPagesAPointInTimeAndNeverReplays(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/sc", `{"settings":{"number_of_shards":2}}`)
	a.must(200, "POST", "/sc/_bulk?refresh=true", bulkLines(`{"index":{"_id":"1"}}`, `{"n":1}`, `{"index":{"_id":"2"}}`, `{"n":2}`, `{"index":{"_id":"3"}}`, `{"n":3}`))
	r := a.must(200, "POST", "/sc/_search?scroll=1m&size=2", `{"sort":["n"]}`)
	id := r["_scroll_id"].(string)
	require.Equal(t, []string{"1", "2"}, hitIDs(t, r))
	a.must(201, "PUT", "/sc/_doc/0?refresh=true", `{"n":0}`)

	// The same id, sent again, continues: a client that keeps the first
	// id never sees a page twice (nor loops forever).
	r = a.must(200, "POST", "/_search/scroll", `{"scroll_id":"`+id+`","scroll":"1m"}`)
	require.Equal(t, []string{"3"}, hitIDs(t, r))
	require.EqualValues(t, 3, path(t, r, "hits", "total", "value"), "a document written since is not seen")
	require.Equal(t, id, r["_scroll_id"])
	r = a.must(200, "GET", "/_search/scroll?scroll_id="+id, "")
	require.Empty(t, hitIDs(t, r))
	r = a.must(200, "GET", "/_search/scroll/"+id, "")
	require.Empty(t, hitIDs(t, r), "past the end, it stays there")

	r = a.must(200, "DELETE", "/_search/scroll", `{"scroll_id":["`+id+`"]}`)
	require.EqualValues(t, 1, r["num_freed"])
	rr := a.do("POST", "/_search/scroll", `{"scroll_id":"`+id+`"}`)
	require.Equal(t, 404, rr.Status)
	require.Equal(t, "search_context_missing_exception", errorType(t, rr))
	require.Equal(t, 404, a.do("DELETE", "/_search/scroll", `{"scroll_id":"`+id+`"}`).Status)
	require.Equal(t, 400, a.do("DELETE", "/_search/scroll/_all", "").Status)
}
