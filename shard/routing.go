package shard

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"math/bits"
)

// Murmur3 returns MurmurHash3 x86_32 with seed 0 of the UTF-8 bytes of s.
// It is the routing hash: a document goes to shard
// Murmur3(routing or _id) mod number_of_shards (as an unsigned value). It
// must never change: existing indexes depend on it. It is written here
// rather than taken from github.com/spaolacci/murmur3, whose unsafe pointer
// arithmetic fails the race detector's checkptr.
func Murmur3(s string) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	data := []byte(s)
	var h uint32
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[i*4:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	tail := data[n*4:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

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
