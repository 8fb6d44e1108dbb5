package auth

import (
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// passwordCache remembers which (username, password) pairs were verified
// against which password hash, so a repeated request does not pay bcrypt.
// It holds no passwords: an entry's key is HMAC-SHA-256 under a random
// per-process key of (username, password), so a memory dump of the cache
// is no dictionary to attack offline without that key too. An entry is
// trusted only while the user's hash is the one it was verified against
// and for at most ttl. It keeps the size most recently used entries.
// A nil *passwordCache caches nothing.
type passwordCache struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	key   []byte
	order *list.List // of *cacheEntry, most recent first
	byKey map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	key   [sha256.Size]byte
	hash  string
	added time.Time
}

func newPasswordCache(size int, ttl time.Duration) *passwordCache {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		// crypto/rand does not fail on supported platforms (Go 1.24+
		// crashes the program rather than return an error).
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return &passwordCache{size: size, ttl: ttl, key: key, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

func (c *passwordCache) keyOf(username, password string) [sha256.Size]byte {
	m := hmac.New(sha256.New, c.key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(username)))
	m.Write(n[:]) // length prefix: ("ab","c") and ("a","bc") differ
	m.Write([]byte(username))
	m.Write([]byte(password))
	var k [sha256.Size]byte
	m.Sum(k[:0])
	return k
}

// verified reports whether the pair was verified against hash within ttl.
func (c *passwordCache) verified(username, password, hash string, now time.Time) bool {
	if c == nil {
		return false
	}
	k := c.keyOf(username, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return false
	}
	e := el.Value.(*cacheEntry)
	if e.hash != hash || now.Sub(e.added) >= c.ttl || now.Before(e.added) {
		c.order.Remove(el)
		delete(c.byKey, k)
		return false
	}
	c.order.MoveToFront(el)
	return true
}

// remember records that the pair matched hash at now.
func (c *passwordCache) remember(username, password, hash string, now time.Time) {
	if c == nil {
		return
	}
	k := c.keyOf(username, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		el.Value = &cacheEntry{key: k, hash: hash, added: now}
		c.order.MoveToFront(el)
		return
	}
	c.byKey[k] = c.order.PushFront(&cacheEntry{key: k, hash: hash, added: now})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}

func (c *passwordCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *passwordCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.byKey)
}
