// Package bufpool recycles byte buffers by power-of-two size class, so a
// transport's receive path does not allocate per message.
package bufpool

import (
	"math/bits"
	"sync"
)

const (
	minShift = 9  // 512 B
	maxShift = 28 // 256 MiB; larger buffers are allocated and left to the GC
)

var pools [maxShift - minShift + 1]sync.Pool

// Get returns a buffer of length n. Buffers above 256 MiB
// (fabric.MaxMessageSize) are freshly allocated. The caller owns it until
// it passes it to Put.
func Get(n int) *[]byte {
	c := class(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if v := pools[c].Get(); v != nil {
		b := v.(*[]byte)
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minShift))
	return &b
}

// Put returns b to its pool; b must not be used afterwards. Buffers not
// from Get (wrong capacity) are dropped.
func Put(b *[]byte) {
	c := class(cap(*b))
	if c < 0 || cap(*b) != 1<<(c+minShift) {
		return
	}
	pools[c].Put(b)
}

// class returns the index of the smallest class holding n, or -1.
func class(n int) int {
	if n > 1<<maxShift {
		return -1
	}
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// Cap returns the capacity of the buffer Get(n) returns, which is what it
// holds in memory: n rounded up to its size class, or n above the classes.
func Cap(n int) int {
	c := class(n)
	if c < 0 {
		return n
	}
	return 1 << (c + minShift)
}
