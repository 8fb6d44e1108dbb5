package coord

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/weftsearch/weft/internal/murmur3"
)

// Murmur3 returns MurmurHash3 x86_32 with seed 0 of the UTF-8 bytes of s.
// It is the routing hash: a document goes to shard
// Murmur3(routing or _id) mod number_of_shards (as an unsigned value). It
// must never change: existing indexes depend on it.
func Murmur3(s string) uint32 { return murmur3.Sum32([]byte(s), 0) }

// ShardFor returns the shard of a document: routing if non-empty, else id.
func ShardFor(id, routing string, shards int) int {
	key := routing
	if key == "" {
		key = id
	}
	return int(Murmur3(key) % uint32(shards))
}

// NewID returns a 20-character URL-safe random document id, the shape of
// the ids Elasticsearch generates.
func NewID() string {
	var b [15]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b[:])
}
