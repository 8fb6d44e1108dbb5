package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// _mappings is routed like _mapping, as Elasticsearch routes both
// (prometheus-elasticsearch-exporter's --es.indices_mappings asks GET
// /_all/_mappings).
func TestMappingsPluralIsRouted(t *testing.T) {
	a := newTestAPI(t, apiConfig())
	a.must(200, "PUT", "/m1", `{"mappings":{"properties":{"title":{"type":"text"}}}}`)
	a.must(200, "PUT", "/m1/_mappings", `{"properties":{"year":{"type":"integer"}}}`)
	for _, p := range []string{"/_all/_mappings", "/_mappings", "/m1/_mappings", "/_all/_mapping"} {
		r := a.must(200, "GET", p, "")
		require.Equal(t, "text", path(t, r, "m1", "mappings", "properties", "title", "type"), p)
		require.Equal(t, "integer", path(t, r, "m1", "mappings", "properties", "year", "type"), p)
	}
}
