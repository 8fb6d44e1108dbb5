package shard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/vocab"
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
	open := func(alloc string, keep time.Duration) string {
		require.NoError(t, r.reserve(vocab.ContextPIT, 10, time.Now()))
		return r.open(alloc, vocab.ContextPIT, pin(), keep)
	}
	short := open("a1", time.Millisecond)
	long := open("a1", time.Hour)
	gone := open("a2", time.Hour)
	require.Equal(t, 3, r.count(vocab.ContextPIT))
	time.Sleep(5 * time.Millisecond)
	r.sweep(time.Now(), func(alloc string) bool { return alloc == "a1" })
	require.Equal(t, 1, r.count(vocab.ContextPIT), "expired, and without its copy, contexts go")
	_, err = r.use(short, 0)
	require.ErrorIs(t, err, vocab.ErrContextMissing)
	_, err = r.use(gone, 0)
	require.ErrorIs(t, err, vocab.ErrContextMissing)

	view, err := r.use(long, time.Minute)
	require.NoError(t, err)
	require.NotNil(t, view)

	// A scroll's cursor: one page at a time.
	cur, err := r.claim(long)
	require.NoError(t, err)
	require.Zero(t, cur.Page)
	_, err = r.claim(long)
	require.ErrorIs(t, err, vocab.ErrVersionConflict, "a second page before the first committed")
	require.NoError(t, r.commit(long, vocab.ScrollCursor{Page: 1, After: [][]byte{[]byte("k")}}))
	cur, err = r.claim(long)
	require.NoError(t, err)
	require.Equal(t, 1, cur.Page)
	require.True(t, r.close(long))
	require.False(t, r.close(long))
	_, err = view.Search(context.Background(), nil)
	require.ErrorIs(t, err, index.ErrClosed, "a closed context releases its view")
	require.ErrorIs(t, r.commit(long, vocab.ScrollCursor{}), vocab.ErrContextMissing)
}

// TestReaderContextLimits: a node holds at most the limit of contexts of
// each kind, counted apart; closing one, or its expiry, frees its slot.
func TestReaderContextLimits(t *testing.T) {
	idx, err := index.Create(t.TempDir(), index.NewDynamicMapping())
	require.NoError(t, err)
	defer idx.Close()
	r := newReaderContexts()
	defer r.closeAll()
	now := time.Now()
	open := func(kind vocab.ContextKind, limit int, keep time.Duration) (string, error) {
		if err := r.reserve(kind, limit, now); err != nil {
			return "", err
		}
		v, err := idx.Pin()
		require.NoError(t, err)
		return r.open("a1", kind, v, keep), nil
	}

	first, err := open(vocab.ContextScroll, 2, time.Hour)
	require.NoError(t, err)
	_, err = open(vocab.ContextScroll, 2, time.Minute)
	require.NoError(t, err)
	_, err = open(vocab.ContextScroll, 2, time.Hour)
	require.ErrorIs(t, err, vocab.ErrTooManyScrollContexts)
	require.EqualError(t, err, "too many scroll contexts: Trying to create too many scroll contexts. Must be less than or equal to: [2]. "+
		"This limit can be set by changing the [search.max_open_scroll_context] setting.")
	require.Equal(t, 2, r.count(vocab.ContextScroll))

	_, err = open(vocab.ContextPIT, 1, time.Hour)
	require.NoError(t, err, "points in time are counted apart from scrolls")
	_, err = open(vocab.ContextPIT, 1, time.Hour)
	require.ErrorIs(t, err, vocab.ErrTooManyPITContexts)
	require.Equal(t, 1, r.count(vocab.ContextPIT))

	require.True(t, r.close(first))
	_, err = open(vocab.ContextScroll, 2, time.Hour)
	require.NoError(t, err, "a closed context frees its slot")
	_, err = open(vocab.ContextScroll, 2, time.Hour)
	require.ErrorIs(t, err, vocab.ErrTooManyScrollContexts)

	now = now.Add(2 * time.Minute) // the one-minute scroll expired; the reaper has not run
	_, err = open(vocab.ContextScroll, 2, time.Hour)
	require.NoError(t, err, "an expired context frees its slot at the next open")
	require.Equal(t, 2, r.count(vocab.ContextScroll))

	require.NoError(t, r.reserve(vocab.ContextPIT, 2, now))
	require.Equal(t, 2, r.count(vocab.ContextPIT), "a reserved slot counts")
	r.unreserve(vocab.ContextPIT)
	require.Equal(t, 1, r.count(vocab.ContextPIT))
}
