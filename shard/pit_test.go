package shard

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/index"
)

func TestReaderContexts(t *testing.T) {
	idx, err := index.Create(t.TempDir(), index.NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	pin := func() *index.Index {
		v, err := idx.Pin()
		require.NoError(t, err)
		return v
	}
	r := newReaderContexts()
	short := r.open("a1", pin(), time.Millisecond)
	long := r.open("a1", pin(), time.Hour)
	gone := r.open("a2", pin(), time.Hour)
	require.Equal(t, 3, r.count())
	time.Sleep(5 * time.Millisecond)
	r.sweep(time.Now(), func(alloc string) bool { return alloc == "a1" })
	require.Equal(t, 1, r.count(), "expired, and without its copy, contexts go")
	_, err = r.use(short, 0)
	require.ErrorIs(t, err, ErrContextMissing)
	_, err = r.use(gone, 0)
	require.ErrorIs(t, err, ErrContextMissing)

	view, err := r.use(long, time.Minute)
	require.NoError(t, err)
	require.NotNil(t, view)

	// A scroll's cursor: one page at a time.
	cur, err := r.claim(long)
	require.NoError(t, err)
	require.Zero(t, cur.Page)
	_, err = r.claim(long)
	require.ErrorIs(t, err, ErrVersionConflict, "a second page before the first committed")
	require.NoError(t, r.commit(long, ScrollCursor{Page: 1, After: [][]byte{[]byte("k")}}))
	cur, err = r.claim(long)
	require.NoError(t, err)
	require.Equal(t, 1, cur.Page)
	require.True(t, r.close(long))
	require.False(t, r.close(long))
	_, err = view.Search(context.Background(), nil)
	require.ErrorIs(t, err, index.ErrClosed, "a closed context releases its view")
	require.ErrorIs(t, r.commit(long, ScrollCursor{}), ErrContextMissing)
}

func TestPITIDs(t *testing.T) {
	p := PIT{Shards: []PITShard{{Index: "b", UUID: "u", Shard: 1, Node: "n", Alloc: "a", Ctx: "c"}, {Index: "a", Shard: 0}, {Index: "b", Shard: 0}}}
	got, err := DecodePIT(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, got)
	require.Equal(t, []string{"a", "b"}, got.Indices())
	for _, bad := range []string{"", "!!", "e30", "bnVsbA"} {
		_, err := DecodePIT(bad)
		require.ErrorIs(t, err, ErrInvalidRequest, bad)
	}
}

// FuzzDecodePIT: a point in time id comes from clients; any string decodes
// to a point in time with shards or fails with ErrInvalidRequest.
func FuzzDecodePIT(f *testing.F) {
	f.Add(PIT{Shards: []PITShard{{Index: "i", UUID: "u", Node: "n", Alloc: "a", Ctx: "c"}}}.Encode())
	f.Add("eyJzIjpbXX0")
	f.Fuzz(func(t *testing.T, id string) {
		p, err := DecodePIT(id)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidRequest)
			return
		}
		require.NotEmpty(t, p.Shards)
		again, err := DecodePIT(p.Encode())
		require.NoError(t, err)
		raw1, _ := json.Marshal(p)
		raw2, _ := json.Marshal(again)
		require.JSONEq(t, string(raw1), string(raw2))
	})
}
