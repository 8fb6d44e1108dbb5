package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplyJSONMatchesEncodingJSON checks that replyJSON (jsoniter with the
// raw-message and map extensions) encodes like encoding/json without HTML
// HTML escaping, byte for byte: omitempty maps that are nil, empty or filled, raw sources, and
// sorted map keys.
func TestReplyJSONMatchesEncodingJSON(t *testing.T) {
	type hit struct {
		ID        string              `json:"_id"`
		Source    json.RawMessage     `json:"_source,omitempty"`
		Highlight map[string][]string `json:"highlight,omitempty"`
		Aggs      map[string]any      `json:"aggs,omitempty"`
	}
	tests := []struct {
		name string
		v    any
	}{
		{"nil maps", hit{ID: "1", Source: json.RawMessage(`{"a":1}`)}},
		{"empty maps", hit{ID: "2", Highlight: map[string][]string{}, Aggs: map[string]any{}}},
		{"filled maps", hit{ID: "3", Highlight: map[string][]string{"b": {"<em>x</em>"}, "a": {"y"}}, Aggs: map[string]any{"z": 1, "c": "d"}}},
		{"slice of hits", []hit{{ID: "4"}, {ID: "5", Highlight: map[string][]string{"f": {"g"}}}}},
		{"top-level map", map[string]any{"count": 3, "a": map[string]int{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replyJSON.Marshal(tc.v)
			require.NoError(t, err)
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(tc.v))
			require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(got))
		})
	}
}
