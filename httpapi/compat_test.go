package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Elasticsearch behaviours added for issue 11 (phase 1), each checked over
// HTTP against a real engine.

func TestFieldTypesOfIssue11(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/types", `{"mappings":{"properties":{
		"addr":{"type":"ip","meta":{"unit":"none"}},
		"at":{"type":"date","format":"yyyy-MM-dd HH:mm:ss[.SSS]||epoch_second"},
		"ns":{"type":"date_nanos"},
		"hf":{"type":"half_float"},
		"sf":{"type":"scaled_float","scaling_factor":10},
		"sug":{"type":"completion"},
		"ages":{"type":"integer_range"},
		"span":{"type":"date_range","format":"yyyy-MM-dd"},
		"nets":{"type":"ip_range"}}}}`)
	a.must(201, "PUT", "/types/_doc/1?refresh=true", `{"addr":"192.168.1.7","at":"2024-05-01 10:00:00.250","ns":"2024-05-01T10:00:00.123456789Z","hf":1.5,"sf":2.34,"sug":{"input":["weft"]},"ages":{"gte":10,"lt":20},"span":{"gte":"2024-01-01","lte":"2024-01-31"},"nets":"10.0.0.0/8"}`)
	a.must(201, "PUT", "/types/_doc/2?refresh=true", `{"addr":"::1","at":1714557600,"ages":{"gte":30,"lte":40}}`)

	m := a.must(200, "GET", "/types/_mapping", "")
	props := m["types"].(map[string]any)["mappings"].(map[string]any)["properties"].(map[string]any)
	require.Equal(t, map[string]any{"unit": "none"}, props["addr"].(map[string]any)["meta"])
	require.Equal(t, "yyyy-MM-dd HH:mm:ss[.SSS]||epoch_second", props["at"].(map[string]any)["format"])
	require.Equal(t, 10.0, props["sf"].(map[string]any)["scaling_factor"])

	for name, tc := range map[string]struct {
		query string
		ids   []string
	}{
		"ip term":                 {`{"term":{"addr":"192.168.1.7"}}`, []string{"1"}},
		"ip cidr":                 {`{"term":{"addr":"192.168.0.0/16"}}`, []string{"1"}},
		"ipv6 term":               {`{"term":{"addr":"0:0::1"}}`, []string{"2"}},
		"custom date format":      {`{"range":{"at":{"gte":"2024-05-01 09:00:00","lte":"2024-05-01 11:00:00"}}}`, []string{"1", "2"}},
		"date_nanos":              {`{"range":{"ns":{"gt":"2024-05-01T10:00:00.123456788Z"}}}`, []string{"1"}},
		"scaled_float rounds":     {`{"term":{"sf":2.3}}`, []string{"1"}},
		"half_float":              {`{"range":{"hf":{"gte":1}}}`, []string{"1"}},
		"completion input":        {`{"term":{"sug":"weft"}}`, []string{"1"}},
		"range contains value":    {`{"term":{"ages":15}}`, []string{"1"}},
		"range excludes lt bound": {`{"term":{"ages":20}}`, nil},
		"range intersects":        {`{"range":{"ages":{"gte":18,"lte":35}}}`, []string{"1", "2"}},
		"range within":            {`{"range":{"ages":{"gte":5,"lte":25,"relation":"within"}}}`, []string{"1"}},
		"range contains":          {`{"range":{"ages":{"gte":32,"lte":33,"relation":"contains"}}}`, []string{"2"}},
		"date_range contains day": {`{"term":{"span":"2024-01-15"}}`, []string{"1"}},
		"ip_range contains":       {`{"term":{"nets":"10.1.2.3"}}`, []string{"1"}},
		"exists on a range field": {`{"exists":{"field":"span"}}`, []string{"1"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := a.must(200, "POST", "/types/_search", `{"query":`+tc.query+`}`)
			require.ElementsMatch(t, tc.ids, hitIDsOf(r), "query %s", tc.query)
		})
	}
	for name, body := range map[string]string{
		"bad ip":              `{"addr":"999.1.1.1"}`,
		"date outside format": `{"at":"01/05/2024"}`,
		"range wrong way":     `{"ages":{"gte":5,"lte":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := a.do("PUT", "/types/_doc/bad", body)
			require.Equal(t, 400, r.Status, "%s", r.Body)
			require.Equal(t, "document_parsing_exception", errorType(t, r))
		})
	}
	for name, mapping := range map[string]string{
		"scaled_float without factor": `{"properties":{"x":{"type":"scaled_float"}}}`,
		"meta not strings":            `{"properties":{"x":{"type":"keyword","meta":{"a":1}}}}`,
		"unknown date pattern letter": `{"properties":{"x":{"type":"date","format":"yyyy-qq"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := a.do("PUT", "/bad", `{"mappings":`+mapping+`}`)
			require.Equal(t, 400, r.Status, "%s", r.Body)
			require.Equal(t, "mapper_parsing_exception", errorType(t, r))
		})
	}
}

func hitIDsOf(r map[string]any) []string {
	var ids []string
	for _, h := range r["hits"].(map[string]any)["hits"].([]any) {
		ids = append(ids, h.(map[string]any)["_id"].(string))
	}
	return ids
}

func TestParametersOfIssue11(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/p", `{"settings":{"number_of_replicas":0}}`)
	a.must(201, "PUT", "/p/_doc/1?refresh=true&require_alias=false&wait_for_active_shards=1", `{"f":1,"g":{"a":1,"b":2}}`)
	a.must(200, "GET", "/_cluster/health?level=indices&wait_for_active_shards=1", "")
	r := a.do("GET", "/_cluster/health?level=nodes", "")
	require.Equal(t, 400, r.Status)

	// rest_total_hits_as_int: a number; with track_total_hits false, -1;
	// with a limit, refused.
	s := a.must(200, "GET", "/p/_search?rest_total_hits_as_int=true", "")
	require.Equal(t, 1.0, s["hits"].(map[string]any)["total"])
	s = a.must(200, "GET", "/p/_search?rest_total_hits_as_int=true&track_total_hits=false", "")
	require.Equal(t, -1.0, s["hits"].(map[string]any)["total"])
	r = a.do("GET", "/p/_search?rest_total_hits_as_int=true&track_total_hits=100", "")
	require.Equal(t, 400, r.Status)
	s = a.must(200, "GET", "/p/_search?scroll=1m&size=1", "")
	s = a.must(200, "POST", "/_search/scroll?rest_total_hits_as_int=true", `{"scroll":"1m","scroll_id":"`+s["_scroll_id"].(string)+`"}`)
	require.Equal(t, 1.0, s["hits"].(map[string]any)["total"])

	// GET doc _source filtering.
	g := a.must(200, "GET", "/p/_doc/1?_source_includes=g&_source_excludes=g.b", "")
	require.Equal(t, map[string]any{"g": map[string]any{"a": 1.0}}, g["_source"])
	g = a.must(200, "GET", "/p/_doc/1?_source=f", "")
	require.Equal(t, map[string]any{"f": 1.0}, g["_source"])

	// Bulk: a numeric _id, op_type in the metadata, require_alias, an
	// empty _id as Elasticsearch types it.
	b := a.must(200, "POST", "/_bulk?refresh=true", "{\"index\":{\"_index\":\"p\",\"_id\":7,\"require_alias\":false}}\n{\"f\":7}\n{\"index\":{\"_index\":\"p\",\"_id\":\"7\",\"op_type\":\"create\"}}\n{\"f\":8}\n{\"index\":{\"_index\":\"p\",\"_id\":\"\"}}\n{}\n")
	items := b["items"].([]any)
	require.Equal(t, "7", items[0].(map[string]any)["index"].(map[string]any)["_id"])
	require.Equal(t, 409.0, items[1].(map[string]any)["create"].(map[string]any)["status"])
	require.Equal(t, "illegal_argument_exception", items[2].(map[string]any)["index"].(map[string]any)["error"].(map[string]any)["type"])

	// Empty mappings render as {}.
	a.must(200, "PUT", "/empty", "")
	m := a.must(200, "GET", "/empty/_mapping", "")
	require.Equal(t, map[string]any{}, m["empty"].(map[string]any)["mappings"])
}
