package shard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/shardapi"
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
	require.ErrorIs(t, err, shardapi.ErrContextMissing)
	_, err = r.use(gone, 0)
	require.ErrorIs(t, err, shardapi.ErrContextMissing)

	view, err := r.use(long, time.Minute)
	require.NoError(t, err)
	require.NotNil(t, view)

	// A scroll's cursor: one page at a time.
	cur, err := r.claim(long)
	require.NoError(t, err)
	require.Zero(t, cur.Page)
	_, err = r.claim(long)
	require.ErrorIs(t, err, shardapi.ErrVersionConflict, "a second page before the first committed")
	require.NoError(t, r.commit(long, shardapi.ScrollCursor{Page: 1, After: [][]byte{[]byte("k")}}))
	cur, err = r.claim(long)
	require.NoError(t, err)
	require.Equal(t, 1, cur.Page)
	require.True(t, r.close(long))
	require.False(t, r.close(long))
	_, err = view.Search(context.Background(), nil)
	require.ErrorIs(t, err, index.ErrClosed, "a closed context releases its view")
	require.ErrorIs(t, r.commit(long, shardapi.ScrollCursor{}), shardapi.ErrContextMissing)
}
