package coord_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/vocab"
)

func TestPITIDs(t *testing.T) {
	p := coord.PIT{Shards: []coord.PITShard{{Index: "b", UUID: "u", Shard: 1, Node: "n", Alloc: "a", Ctx: "c"}, {Index: "a", Shard: 0}, {Index: "b", Shard: 0}}}
	got, err := coord.DecodePIT(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, got)
	require.Equal(t, []string{"a", "b"}, got.Indices())
	for _, bad := range []string{"", "!!", "e30", "bnVsbA"} {
		_, err := coord.DecodePIT(bad)
		require.ErrorIs(t, err, vocab.ErrInvalidRequest, bad)
	}
}

// FuzzDecodePIT: a point in time id comes from clients; any string decodes
// to a point in time with shards or fails with ErrInvalidRequest.
func FuzzDecodePIT(f *testing.F) {
	f.Add(coord.PIT{Shards: []coord.PITShard{{Index: "i", UUID: "u", Node: "n", Alloc: "a", Ctx: "c"}}}.Encode())
	f.Add("eyJzIjpbXX0")
	f.Fuzz(func(t *testing.T, id string) {
		p, err := coord.DecodePIT(id)
		if err != nil {
			require.ErrorIs(t, err, vocab.ErrInvalidRequest)
			return
		}
		require.NotEmpty(t, p.Shards)
		again, err := coord.DecodePIT(p.Encode())
		require.NoError(t, err)
		raw1, _ := json.Marshal(p)
		raw2, _ := json.Marshal(again)
		require.JSONEq(t, string(raw1), string(raw2))
	})
}
