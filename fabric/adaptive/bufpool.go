package adaptive

import (
	"math/bits"
	"sync"
)

// Envelope buffers are pooled by size class: class c holds buffers of
// 1<<c + headerSize bytes, so a power-of-two payload and its header share
// a class with nothing wasted. Classes run from 64 B to 64 MiB of payload;
// larger buffers are allocated and dropped.
const (
	minClass = 6
	maxClass = 26
)

// bufPool holds one sync.Pool per size class. One per Transport.
type bufPool [maxClass + 1]sync.Pool

func sizeClass(n int) int {
	payload := n - headerSize
	if payload <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(payload - 1))
}

// get returns a buffer of length n; its contents are undefined.
func (bp *bufPool) get(n int) []byte {
	c := sizeClass(n)
	if c > maxClass {
		return make([]byte, n)
	}
	if b, ok := bp[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<c+headerSize)
}

// put returns b to its pool. The caller must not use b afterwards; only
// buffers from get that no transport still holds may be put.
func (bp *bufPool) put(b []byte) {
	c := sizeClass(cap(b))
	if c > maxClass || cap(b) != 1<<c+headerSize {
		return
	}
	b = b[:cap(b)]
	bp[c].Put(&b)
}
