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

// bufPool holds one sync.Pool per size class, and the envelopes. One per
// Transport.
type bufPool struct {
	classes   [maxClass + 1]sync.Pool // of *[]byte
	envelopes sync.Pool               // of *envelope
}

// envelope is one outgoing envelope: its header, the two pieces a
// fabric.VectorCaller path is given (header, then body), and, for a path
// without that ability, header and body copied into one pooled buffer,
// made on first need and kept for re-sends.
type envelope struct {
	hdr  [headerSize]byte
	vec  [2][]byte
	flat *[]byte
}

func sizeClass(n int) int {
	payload := n - headerSize
	if payload <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(payload - 1))
}

// get returns a buffer of length n; its contents are undefined. The
// pointer is what put takes back (pooling it allocates nothing).
func (bp *bufPool) get(n int) *[]byte {
	c := sizeClass(n)
	if c > maxClass {
		b := make([]byte, n)
		return &b
	}
	if b, ok := bp.classes[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<c+headerSize)
	return &b
}

// put returns b to its pool. The caller must not use b afterwards; only
// buffers from get that no transport still holds may be put.
func (bp *bufPool) put(b *[]byte) {
	c := sizeClass(cap(*b))
	if c > maxClass || cap(*b) != 1<<c+headerSize {
		return
	}
	bp.classes[c].Put(b)
}

// envelope returns an envelope whose header the caller fills in.
func (bp *bufPool) envelope() *envelope {
	if e, ok := bp.envelopes.Get().(*envelope); ok {
		return e
	}
	return new(envelope)
}

// release returns e and its flat buffer, if any, to the pools; no path may
// still hold them.
func (bp *bufPool) release(e *envelope) {
	if e.flat != nil {
		bp.put(e.flat)
		e.flat = nil
	}
	bp.envelopes.Put(e)
}
