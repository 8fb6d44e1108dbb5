package cluster

import "sync"

// broadcast signals every subscriber without ever blocking: each has a
// channel of capacity one, so a burst of signals coalesces into one
// wake-up for a slow reader.
type broadcast struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Watch subscribes; the func unsubscribes.
func (b *broadcast) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[chan struct{}]struct{})
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

// Signal wakes every subscriber.
func (b *broadcast) Signal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
