package httpapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/httpapi"
)

// Aliases, open and close, index and cluster settings (issue 11, phase 3),
// each checked over HTTP against a real single-node cluster.

func TestAliasesAtCreationAndThroughSearchAndWrites(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/books", `{"settings":{"number_of_shards":2},"mappings":{"properties":{"genre":{"type":"keyword"}}},
		"aliases":{"all-books":{},"poems":{"filter":{"term":{"genre":"poem"}}},"routed":{"routing":"r1"},"w":{"is_write_index":"true"}}}`)
	a.must(200, "POST", "/_bulk?refresh=true", "{\"index\":{\"_index\":\"books\",\"_id\":\"1\"}}\n{\"genre\":\"poem\"}\n{\"index\":{\"_index\":\"books\",\"_id\":\"2\"}}\n{\"genre\":\"novel\"}\n")

	got := a.must(200, "GET", "/books/_alias", "")
	aliases := path(t, got, "books", "aliases").(map[string]any)
	require.Equal(t, map[string]any{"term": map[string]any{"genre": "poem"}}, path(t, aliases, "poems", "filter"))
	require.Equal(t, "r1", path(t, aliases, "routed", "index_routing"))
	require.Equal(t, "r1", path(t, aliases, "routed", "search_routing"))
	require.Equal(t, true, path(t, aliases, "w", "is_write_index"))
	require.Equal(t, map[string]any{}, aliases["all-books"])
	require.Equal(t, aliases, path(t, a.must(200, "GET", "/books", ""), "books", "aliases"), "GET /{index} shows them too")

	// Reads through an alias: its filter restricts searches and counts.
	require.ElementsMatch(t, []string{"1", "2"}, hitIDs(t, a.must(200, "GET", "/all-books/_search", "")))
	require.Equal(t, []string{"1"}, hitIDs(t, a.must(200, "GET", "/poems/_search", "")))
	require.Equal(t, 1.0, a.must(200, "GET", "/poems/_count", "")["count"])
	require.Equal(t, 1.0, a.must(200, "GET", "/poem*/_count", "")["count"], "a wildcard matches aliases")
	require.Equal(t, 2.0, a.must(200, "GET", "/poems,books/_count", "")["count"], "reached by name too: no filter")
	r := a.must(200, "POST", "/poems/_explain/2", `{"query":{"match_all":{}}}`)
	require.Equal(t, false, r["matched"], "the alias filter applies to explain")
	require.Equal(t, "books", a.must(200, "GET", "/poems/_doc/2", "")["_index"])

	// Writes through an alias go to its write index, with its routing.
	r = a.must(201, "PUT", "/w/_doc/3?refresh=true", `{"genre":"poem"}`)
	require.Equal(t, "books", r["_index"])
	a.must(201, "PUT", "/routed/_doc/4?refresh=true", `{"genre":"essay"}`)
	require.Equal(t, 404, a.do("GET", "/books/_doc/4", "").Status, "stored under the alias's routing, not its id")
	require.Equal(t, "4", a.must(200, "GET", "/books/_doc/4?routing=r1", "")["_id"])
	require.Equal(t, 400, a.do("PUT", "/routed/_doc/5?routing=other", `{}`).Status, "a routing other than the alias's")
	require.Equal(t, []string{"4"}, hitIDs(t, a.must(200, "POST", "/routed/_search", `{"query":{"term":{"genre":"essay"}}}`)))

	// Errors, as Elasticsearch words them.
	require.Equal(t, 400, a.do("PUT", "/all-books", "").Status, "an index may not take an alias's name")
	require.Equal(t, "invalid_index_name_exception", errorType(t, a.do("PUT", "/all-books", "")))
	require.Equal(t, 400, a.do("PUT", "/x", `{"aliases":{"books":{}}}`).Status, "an alias may not take an index's name")
	require.Equal(t, 400, a.do("PUT", "/x", `{"aliases":{"a":{"filter":"nope"}}}`).Status)
	require.Equal(t, 400, a.do("PUT", "/x", `{"aliases":{"a":{"colour":"red"}}}`).Status)
}

func TestAliasEndpoints(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/i1", "")
	a.must(200, "PUT", "/i2", "")

	a.must(200, "PUT", "/i1/_alias/both", "")
	a.must(200, "PUT", "/i2/_alias/both", `{"filter":{"match_all":{}}}`)
	require.Equal(t, 200, a.do("HEAD", "/_alias/both", "").Status)
	require.Equal(t, 404, a.do("HEAD", "/_alias/nope", "").Status)
	r := a.must(200, "GET", "/_alias/both", "")
	require.Len(t, r, 2)

	// A write through an alias of two indices with no write index fails
	// its item, naming why.
	b := a.must(200, "POST", "/_bulk", "{\"index\":{\"_index\":\"both\"}}\n{\"f\":1}\n")
	item := path(t, b, "items", 0, "index").(map[string]any)
	require.EqualValues(t, 400, item["status"])
	require.Contains(t, path(t, item, "error", "reason"), "no write index is defined for alias [both]")
	require.Equal(t, 400, a.do("GET", "/both/_doc/1", "").Status, "a read needs one index")

	// _aliases applies its actions all or none.
	rr := a.do("POST", "/_aliases", `{"actions":[{"add":{"index":"i1","alias":"new"}},{"remove":{"index":"i2","alias":"missing","must_exist":true}}]}`)
	require.Equal(t, 404, rr.Status, string(rr.Body))
	require.Equal(t, 404, a.do("HEAD", "/_alias/new", "").Status, "the add was not applied")
	a.must(200, "POST", "/_aliases", `{"actions":[{"add":{"indices":["i1","i2"],"alias":"new","is_write_index":false}},{"remove":{"index":"i*","alias":"both"}},{"add":{"index":"i2","alias":"w","is_write_index":true}}]}`)
	require.Equal(t, 404, a.do("HEAD", "/_alias/both", "").Status)
	r = a.must(200, "GET", "/i2/_alias/new,w", "")
	require.Equal(t, false, path(t, r, "i2", "aliases", "new", "is_write_index"))
	require.Equal(t, 2, len(path(t, r, "i2", "aliases").(map[string]any)))
	cat := string(a.do("GET", "/_cat/aliases?v=true&s=alias,index", "").Body)
	lines := strings.Split(strings.TrimSpace(cat), "\n")
	require.Equal(t, []string{"alias", "index", "filter", "routing.index", "routing.search", "is_write_index"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"new", "i1", "-", "-", "-", "false"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"w", "i2", "-", "-", "-", "true"}, strings.Fields(lines[3]))

	a.must(200, "POST", "/_aliases", `{"actions":[{"remove_index":{"index":"i1"}}]}`)
	require.Equal(t, 404, a.do("GET", "/i1", "").Status)
	a.must(200, "DELETE", "/i2/_alias/n*", "")
	require.Equal(t, 404, a.do("HEAD", "/_alias/new", "").Status)
	require.Equal(t, 404, a.do("DELETE", "/i2/_alias/gone", "").Status)
	require.Equal(t, 400, a.do("DELETE", "/w", "").Status, "DELETE /{index} refuses an alias")

	require.Equal(t, 400, a.do("POST", "/_aliases", `{"actions":[]}`).Status)
	require.Equal(t, 400, a.do("POST", "/_aliases", `{"actions":[{"rename":{"index":"i2","alias":"x"}}]}`).Status)
	require.Equal(t, 400, a.do("POST", "/_aliases", `{"actions":[{"add":{"index":"i2"}}]}`).Status)
	require.Equal(t, 404, a.do("POST", "/_aliases", `{"actions":[{"add":{"index":"nope","alias":"x"}}]}`).Status)
}

func TestOpenAndClose(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(201, "PUT", "/shut/_doc/1?refresh=true", `{"f":1}`)
	a.must(201, "PUT", "/other/_doc/1?refresh=true", `{"f":1}`)
	r := a.must(200, "POST", "/shut/_close", "")
	require.Equal(t, true, path(t, r, "indices", "shut", "closed"))

	for _, req := range [][2]string{{"GET", "/shut/_search"}, {"GET", "/shut/_count"}, {"GET", "/shut/_doc/1"}, {"PUT", "/shut/_doc/2"}} {
		r := a.do(req[0], req[1], `{}`)
		require.Equal(t, 400, r.Status, "%s %s: %s", req[0], req[1], r.Body)
		require.Equal(t, "index_closed_exception", errorType(t, r))
	}
	require.Equal(t, 1.0, a.must(200, "GET", "/*/_count", "")["count"], "wildcards skip closed indices")
	require.Equal(t, 400, a.do("GET", "/*/_count?expand_wildcards=all", "").Status)
	require.Equal(t, 0.0, a.must(200, "GET", "/shut/_count?ignore_unavailable=true", "")["count"])
	b := a.must(200, "POST", "/_bulk", "{\"index\":{\"_index\":\"shut\",\"_id\":\"9\"}}\n{}\n")
	require.Equal(t, "index_closed_exception", path(t, b, "items", 0, "index", "error", "type"))
	cat := strings.Fields(string(a.do("GET", "/_cat/indices/shut?h=status", "").Body))
	require.Equal(t, []string{"close"}, cat)
	require.Equal(t, "true", path(t, a.must(200, "GET", "/shut/_settings", ""), "shut", "settings", "index", "verified_before_close"))

	a.must(200, "POST", "/shut/_open", "")
	require.Equal(t, 1.0, a.must(200, "GET", "/shut/_count", "")["count"], "the data is still there")
	require.Equal(t, 400, a.do("POST", "/sh*/_close", "").Status, "closing by wildcard needs action.destructive_requires_name false")
	require.Equal(t, 404, a.do("POST", "/nope/_close", "").Status)
}

func TestIndexSettingsStoredAndHonoured(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/s", `{"settings":{"index":{"refresh_interval":"5s","max_result_window":5,"max_terms_count":2,
		"max_inner_result_window":3,"analyze":{"max_token_count":2},"number_of_routing_shards":4,"number_of_shards":2}}}`)
	got := path(t, a.must(200, "GET", "/s/_settings", ""), "s", "settings", "index").(map[string]any)
	require.Equal(t, "5s", got["refresh_interval"])
	require.Equal(t, "5", got["max_result_window"])
	require.Equal(t, "2", path(t, got, "analyze", "max_token_count"))
	flat := path(t, a.must(200, "GET", "/s/_settings?flat_settings=true", ""), "s", "settings").(map[string]any)
	require.Equal(t, "4", flat["index.number_of_routing_shards"])

	r := a.do("GET", "/s/_search?size=6", "")
	require.Equal(t, 400, r.Status)
	require.Contains(t, string(r.Body), "[5]")
	require.Equal(t, 200, a.do("GET", "/s/_search?size=5", "").Status)
	require.Equal(t, 400, a.do("POST", "/s/_search", `{"query":{"terms":{"f":["a","b","c"]}}}`).Status)
	require.Equal(t, 400, a.do("POST", "/s/_search", `{"aggs":{"t":{"top_hits":{"size":4}}}}`).Status)
	r = a.do("POST", "/s/_analyze", `{"text":"one two three","analyzer":"standard"}`)
	require.Equal(t, 400, r.Status)
	require.Contains(t, string(r.Body), "index.analyze.max_token_count")

	a.must(200, "PUT", "/s/_settings", `{"index.max_result_window":100,"refresh_interval":null}`)
	require.Equal(t, 200, a.do("GET", "/s/_search?size=6", "").Status)
	got = path(t, a.must(200, "GET", "/s/_settings", ""), "s", "settings", "index").(map[string]any)
	require.NotContains(t, got, "refresh_interval")

	for _, bad := range []string{
		`{"settings":{"index.nonsense":1}}`,
		`{"settings":{"max_result_window":"lots"}}`,
		`{"settings":{"refresh_interval":"soon"}}`,
		`{"settings":{"soft_deletes.enabled":false}}`,
		`{"settings":{"index.sort.field":"a"}}`,
		`{"settings":{"number_of_shards":3,"number_of_routing_shards":4}}`,
	} {
		r := a.do("PUT", "/bad", bad)
		require.Equal(t, 400, r.Status, "%s: %s", bad, r.Body)
		require.Equal(t, "illegal_argument_exception", errorType(t, r), bad)
	}
	require.Equal(t, 400, a.do("PUT", "/s/_settings", `{"index.number_of_routing_shards":8}`).Status)
	require.Equal(t, 400, a.do("PUT", "/s/_settings", `{"index.codec":"best_compression"}`).Status, "static while open")
}

func TestClusterSettingsHonoured(t *testing.T) {
	a := newTestAPI(t, apiConfigWithCluster(t))
	a.must(200, "PUT", "/d1", "")
	require.Equal(t, 400, a.do("DELETE", "/d*", "").Status)
	r := a.must(200, "PUT", "/_cluster/settings", `{"transient":{"action.destructive_requires_name":false}}`)
	require.Equal(t, false, path(t, r, "transient", "action.destructive_requires_name"))
	require.Equal(t, "false", path(t, a.must(200, "GET", "/_cluster/settings", ""), "persistent", "action.destructive_requires_name"))
	a.must(200, "DELETE", "/d*", "")
	require.Equal(t, 404, a.do("GET", "/d1", "").Status)
	a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"action":{"destructive_requires_name":null}}}`)
	require.Equal(t, 400, a.do("DELETE", "/d*", "").Status)
	require.Equal(t, 400, a.do("PUT", "/_cluster/settings", `{"persistent":{"search.default_allow_partial_results":"maybe"}}`).Status)
	require.Equal(t, 400, a.do("PUT", "/_cluster/settings", `{"persistent":{"no.such.setting":1}}`).Status)

	// The three kinds of setting share one committed structure: setting
	// or resetting one keeps the others.
	a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"search.default_allow_partial_results":false,"indices.recovery.max_bytes_per_sec":"1kb","cluster.routing.allocation.exclude._name":"nobody"}}`)
	a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"indices.recovery.max_bytes_per_sec":null}}`)
	got := a.must(200, "GET", "/_cluster/settings", "")
	require.Equal(t, "false", path(t, got, "persistent", "search.default_allow_partial_results"))
	require.Equal(t, "nobody", path(t, got, "persistent", "cluster.routing.allocation.exclude._name"))
	require.NotContains(t, got["persistent"], "indices.recovery.max_bytes_per_sec")
	a.must(200, "PUT", "/_cluster/settings", `{"persistent":{"search.default_allow_partial_results":null,"indices.recovery.max_bytes_per_sec":"2kb"}}`)
	got = a.must(200, "GET", "/_cluster/settings", "")
	require.Equal(t, "2048b", path(t, got, "persistent", "indices.recovery.max_bytes_per_sec"))
	require.Equal(t, "nobody", path(t, got, "persistent", "cluster.routing.allocation.exclude._name"))
	require.NotContains(t, got["persistent"], "search.default_allow_partial_results")
}

func TestExternalVersionsAndDetectNoop(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	r := a.must(201, "PUT", "/v/_doc/1?version=10&version_type=external", `{"n":1}`)
	require.EqualValues(t, 10, r["_version"])
	rr := a.do("PUT", "/v/_doc/1?version=10&version_type=external", `{"n":2}`)
	require.Equal(t, 409, rr.Status)
	require.Contains(t, string(rr.Body), "current version [10] is higher or equal to the one provided [10]")
	r = a.must(200, "PUT", "/v/_doc/1?version=10&version_type=external_gte", `{"n":3}`)
	require.EqualValues(t, 10, r["_version"])
	require.Equal(t, 409, a.do("PUT", "/v/_doc/1?version=9&version_type=external_gte", `{"n":4}`).Status)
	b := a.must(200, "POST", "/_bulk", "{\"index\":{\"_index\":\"v\",\"_id\":\"1\",\"version\":12,\"version_type\":\"external\"}}\n{\"n\":5}\n{\"delete\":{\"_index\":\"v\",\"_id\":\"1\",\"version\":11,\"version_type\":\"external\"}}\n")
	require.EqualValues(t, 12, path(t, b, "items", 0, "index", "_version"))
	require.EqualValues(t, 409, path(t, b, "items", 1, "delete", "status"))

	require.Equal(t, 409, a.do("GET", "/v/_doc/1?version=11", "").Status, "a versioned read")
	require.Equal(t, 200, a.do("HEAD", "/v/_doc/1?version=12", "").Status)
	for _, bad := range []string{"?version=3", "?version=x&version_type=external", "?version_type=external", "?version=1&version_type=force", "?op_type=create&version=20&version_type=external"} {
		r := a.do("PUT", "/v/_doc/2"+bad, `{}`)
		require.Equal(t, 400, r.Status, "%s: %s", bad, r.Body)
	}

	r = a.must(200, "POST", "/v/_update/1", `{"doc":{"n":5}}`)
	require.Equal(t, "noop", r["result"])
	r = a.must(200, "POST", "/v/_update/1", `{"doc":{"n":5},"detect_noop":false}`)
	require.Equal(t, "updated", r["result"])
	require.EqualValues(t, 13, r["_version"])
}

func TestClusterHealthLevels(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/h", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	r := a.must(200, "GET", "/_cluster/health?level=indices", "")
	require.Equal(t, "green", path(t, r, "indices", "h", "status"))
	require.EqualValues(t, 2, path(t, r, "indices", "h", "active_primary_shards"))
	require.NotContains(t, path(t, r, "indices", "h"), "shards")
	r = a.must(200, "GET", "/_cluster/health/h?level=shards", "")
	require.Equal(t, true, path(t, r, "indices", "h", "shards", "1", "primary_active"))
	require.NotContains(t, a.must(200, "GET", "/_cluster/health", ""), "indices")
}

// memAdmin keeps cluster settings in memory: the node's ClusterAdmin
// commits them through Raft (package cluster tests that part); here the
// API's reading of them is under test.
type memAdmin struct {
	mu sync.Mutex
	s  state.Settings
}

func (m *memAdmin) Raft() state.RaftInfo { return state.RaftInfo{} }
func (m *memAdmin) Settings() state.Settings {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}
func (m *memAdmin) PutSettings(_ context.Context, s state.Settings) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s = s
	return nil
}
func (m *memAdmin) Move(context.Context, string, int, string, string) error { return nil }
func (m *memAdmin) DiskUsage() map[string]state.DiskUsage                   { return nil }

func apiConfigWithCluster(testing.TB) httpapi.Config {
	cfg := apiConfig()
	cfg.Cluster = &memAdmin{}
	return cfg
}
