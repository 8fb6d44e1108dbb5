package coord

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
)

// statsCache keeps the term statistics of recent searches, per search and
// shard copy, each with the generation of the copy's contents it was read
// from (index.TermStats), so that a search repeated while the shards do not
// change skips the statistics phase and still ranks exactly as with fresh
// statistics: its query phase tells every copy the generation assumed of
// it, and a copy whose contents changed answers stale, with its fresh
// statistics, instead of searching (see searchShards). It is bounded by an
// estimate of the bytes held, least recently used first out. Safe for
// concurrent use; what it hands out is never modified.
type statsCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *statsEntry, most recently used in front
	byKey  map[string]*list.Element
}

// ShardStats are one shard copy's statistics for a query (phase 1) and the
// generation of the copy's contents they were read from (0: none; such
// statistics are never kept).
type ShardStats struct {
	Stats      *index.TermStats
	Generation uint64
}

type statsEntry struct {
	key    string
	copies map[string]ShardStats // by allocation ID
	// sum is the statistics of the copies and generations sumSig names,
	// summed.
	sum    *index.TermStats
	sumSig string
	size   int64
}

// newStatsCache returns a cache holding about budget bytes (0: off, nil).
func newStatsCache(budget int64) *statsCache {
	if budget <= 0 {
		return nil
	}
	return &statsCache{budget: budget, lru: list.New(), byKey: map[string]*list.Element{}}
}

// statsScope is one search's place in the cache: nil when nothing is kept.
type statsScope struct {
	cache *statsCache
	key   string
}

// scope returns the cache's place for a search of srch over the named
// indexes (their uuids and mapping versions in v), or nil when there is no
// cache or srch searches a point in time (a scroll's pages do): a pinned
// view's statistics are those of its moment, which no generation of the
// copy stands for, so such a search neither uses kept statistics nor
// keeps its own. The key holds all that the statistics depend on besides
// the copies' contents: the request as sent with its scope (alias
// filters, index limits), the indexes and their mappings, and the instant
// date math resolved against when the request has any.
func (c *statsCache) scope(v *state.State, names []string, srch *esdsl.Search) *statsScope {
	if pit, _ := srch.PointInTime(); c == nil || pit != "" {
		return nil
	}
	w := srch.Wire()
	h := sha256.New()
	var num [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(num[:], uint64(len(b)))
		h.Write(num[:])
		h.Write(b)
	}
	for _, n := range names {
		field([]byte(n))
		if ix, ok := v.Indices[n]; ok {
			field([]byte(ix.UUID))
			field([]byte(strconv.FormatUint(ix.MappingVersion, 10)))
		}
	}
	field(w.Body)
	keys := make([]string, 0, len(w.Params))
	for k := range w.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dateMath := strings.Contains(strings.ToLower(string(w.Body)), "now")
	for _, k := range keys {
		field([]byte(k))
		for _, val := range w.Params[k] {
			field([]byte(val))
			dateMath = dateMath || strings.Contains(strings.ToLower(val), "now")
		}
	}
	if dateMath {
		field([]byte(strconv.FormatInt(w.Now, 10)))
	}
	if w.Count {
		field([]byte("count"))
	}
	field(w.Scope.Filter)
	for _, n := range []int{w.Scope.MaxResultWindow, w.Scope.MaxInnerResultWindow, w.Scope.MaxTermsCount} {
		field([]byte(strconv.Itoa(n)))
	}
	return &statsScope{cache: c, key: string(h.Sum(nil))}
}

// get returns the kept statistics of each copy ids[k] (zero where none).
func (s *statsScope) get(ids []string) []ShardStats {
	out := make([]ShardStats, len(ids))
	if s == nil {
		return out
	}
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[s.key]
	if !ok {
		return out
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*statsEntry)
	for k, id := range ids {
		out[k] = e.copies[id]
	}
	return out
}

// put keeps the statistics of copies ids[k] that have a generation.
func (s *statsScope) put(ids []string, st []ShardStats) {
	if s == nil {
		return
	}
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	var e *statsEntry
	if el, ok := c.byKey[s.key]; ok {
		c.lru.MoveToFront(el)
		e = el.Value.(*statsEntry)
	}
	for k, id := range ids {
		if id == "" || st[k].Generation == 0 || st[k].Stats == nil {
			continue
		}
		if e == nil {
			e = &statsEntry{key: s.key, copies: map[string]ShardStats{}, size: int64(len(s.key)) + 64}
			c.byKey[s.key] = c.lru.PushFront(e)
			c.used += e.size
		}
		if old, ok := e.copies[id]; ok {
			if old.Generation == st[k].Generation {
				continue
			}
			c.resize(e, -statsSize(old.Stats))
		}
		e.copies[id] = st[k]
		c.resize(e, statsSize(st[k].Stats))
	}
	c.evict()
}

// sum returns the statistics st summed, from the cache when the same
// copies at the same generations were summed before.
func (s *statsScope) sum(ids []string, st []ShardStats) *index.TermStats {
	var sig strings.Builder
	keep := s != nil
	for k, id := range ids {
		if id == "" || st[k].Generation == 0 {
			keep = false
			break
		}
		sig.WriteString(id)
		sig.WriteByte(':')
		sig.WriteString(strconv.FormatUint(st[k].Generation, 16))
		sig.WriteByte(' ')
	}
	if keep {
		c := s.cache
		c.mu.Lock()
		if el, ok := c.byKey[s.key]; ok {
			if e := el.Value.(*statsEntry); e.sumSig == sig.String() {
				c.mu.Unlock()
				return e.sum
			}
		}
		c.mu.Unlock()
	}
	total := &index.TermStats{}
	for k := range st {
		total.Add(st[k].Stats)
	}
	if keep {
		c := s.cache
		c.mu.Lock()
		if el, ok := c.byKey[s.key]; ok {
			e := el.Value.(*statsEntry)
			if e.sum != nil {
				c.resize(e, -statsSize(e.sum))
			}
			e.sum, e.sumSig = total, sig.String()
			c.resize(e, statsSize(total))
			c.evict()
		}
		c.mu.Unlock()
	}
	return total
}

// resize changes e's accounted size by d. The caller holds mu.
func (c *statsCache) resize(e *statsEntry, d int64) {
	e.size += d
	c.used += d
}

// evict drops the least recently used entries while over budget. The
// caller holds mu.
func (c *statsCache) evict() {
	for c.used > c.budget && c.lru.Len() > 0 {
		el := c.lru.Back()
		e := el.Value.(*statsEntry)
		c.lru.Remove(el)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}

// statsSize estimates the bytes s holds.
func statsSize(s *index.TermStats) int64 {
	if s == nil {
		return 0
	}
	n := int64(64)
	for f := range s.FieldLength {
		n += int64(len(f)) + 24
	}
	for f, terms := range s.DocFreq {
		n += int64(len(f)) + 48
		for t := range terms {
			n += int64(len(t)) + 24
		}
	}
	for sig, terms := range s.Dicts {
		n += int64(len(sig)) + 48
		for _, t := range terms {
			n += int64(len(t.Term)) + 24
		}
	}
	return n
}

// staleStats is the answer of a copy whose contents changed since the
// statistics its query phase assumed: its fresh statistics.
type staleStats struct{ ShardStats }

func (e *staleStats) Error() string { return index.ErrStaleStats.Error() }
func (e *staleStats) Unwrap() error { return index.ErrStaleStats }

// cachedCopy is a searcher that names the copy it searches, so that its
// statistics can be kept.
type cachedCopy interface {
	copyID() string
}

// copyIDs names the copies of ss ("" for a searcher that names none).
func copyIDs(ss []ShardSearcher) []string {
	out := make([]string, len(ss))
	for k, s := range ss {
		if c, ok := s.(cachedCopy); ok {
			out[k] = c.copyID()
		}
	}
	return out
}
