package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/vocab"
)

func TestErrorBodiesAsElasticsearch(t *testing.T) {
	t.Run("a failed search says why in caused_by, and root_cause is the innermost", func(t *testing.T) {
		err := fmt.Errorf("%w: shard logs/0: %w", coord.ErrAllShardsFailed, fmt.Errorf("%w: [logs][0] has no active copy", vocab.ErrUnavailable))
		ae := translate(err)
		require.Equal(t, "search_phase_execution_exception", ae.Type)
		raw, _ := json.Marshal(ae.response())
		require.JSONEq(t, `{"error":{
			"root_cause":[{"type":"unavailable_shards_exception","reason":"[logs][0] has no active copy"}],
			"type":"search_phase_execution_exception","reason":"shard logs/0: shard unavailable: [logs][0] has no active copy",
			"caused_by":{"type":"unavailable_shards_exception","reason":"[logs][0] has no active copy"}},"status":503}`, string(raw))
	})
	t.Run("a missing index names itself as Elasticsearch does", func(t *testing.T) {
		ae := translate(fmt.Errorf("%w: no such index [logs]", state.ErrIndexNotFound))
		raw, _ := json.Marshal(ae.response())
		require.JSONEq(t, `{"error":{
			"root_cause":[{"type":"index_not_found_exception","reason":"no such index [logs]","resource.type":"index_or_alias","resource.id":"logs","index":"logs","index_uuid":"_na_"}],
			"type":"index_not_found_exception","reason":"no such index [logs]","resource.type":"index_or_alias","resource.id":"logs","index":"logs","index_uuid":"_na_"},"status":404}`, string(raw))
	})
	t.Run("a request the DSL translator refuses is a 400 with its type and reason", func(t *testing.T) {
		de := &esdsl.Error{Kind: esdsl.ErrInvalidRequest, Type: "parsing_exception", Reason: "Unknown key [bogus] in the search request"}
		ae := translate(fmt.Errorf("index logs: %w", de))
		raw, _ := json.Marshal(ae.response())
		require.JSONEq(t, `{"error":{
			"root_cause":[{"type":"parsing_exception","reason":"Unknown key [bogus] in the search request"}],
			"type":"parsing_exception","reason":"Unknown key [bogus] in the search request"},"status":400}`, string(raw))
	})
}

// TestItemStatus: a write's status comes from its result, or from its
// error's kind, as Elasticsearch answers each bulk item.
func TestItemStatus(t *testing.T) {
	tests := []struct {
		name string
		res  vocab.OpResult
		want int
	}{
		{"created", vocab.OpResult{Result: "created"}, 201},
		{"updated", vocab.OpResult{Result: "updated"}, 200},
		{"deleted", vocab.OpResult{Result: "deleted"}, 200},
		{"noop", vocab.OpResult{Result: "noop"}, 200},
		{"delete of a missing document", vocab.OpResult{Result: "not_found", Err: vocab.ErrDocumentNotFound}, 404},
		{"version conflict", vocab.OpResult{Err: fmt.Errorf("%w: [1]", vocab.ErrVersionConflict)}, 409},
		{"document that does not parse", vocab.OpResult{Err: fmt.Errorf("%w: x", index.ErrDocParse)}, 400},
		{"strict mapping", vocab.OpResult{Err: fmt.Errorf("%w: x", index.ErrStrictDynamic)}, 400},
		{"invalid request", vocab.OpResult{Err: fmt.Errorf("%w: no id", vocab.ErrInvalidRequest)}, 400},
		{"update of a missing document", vocab.OpResult{Err: fmt.Errorf("%w: [9]", vocab.ErrDocumentNotFound)}, 404},
		{"missing index", vocab.OpResult{Err: fmt.Errorf("%w: [x]", state.ErrIndexNotFound)}, 404},
		{"unavailable shard", vocab.OpResult{Err: fmt.Errorf("%w: not acknowledged", vocab.ErrUnavailable)}, 503},
		{"anything else", vocab.OpResult{Err: errors.New("disk on fire")}, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, itemStatus(tc.res))
		})
	}
}
