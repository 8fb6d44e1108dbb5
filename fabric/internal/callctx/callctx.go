// Package callctx is the context a fabric handler runs with: it has no
// parent, ends only when its owner calls End, and costs one mutex and no
// allocation until the handler looks at it. Transports end the contexts of
// their running calls themselves instead of deriving each from a
// connection-wide parent, whose lock every call would then take twice
// (to register and to unregister), from every processor at once.
package callctx

import (
	"context"
	"sync"
	"time"
)

// Ctx is a handler's context. The zero value is ready to use; it must not
// be copied once used. Contexts derived from it register through AfterFunc
// (the context package's afterFuncer), so deriving one starts no goroutine.
type Ctx struct {
	mu    sync.Mutex
	err   error
	done  chan struct{} // made on first Done
	funcs map[*func()]struct{}
	w     Watcher
}

// Watcher is told each time the handler looks at a context that has not
// ended (Done, Err, AfterFunc), with the context's lock held: an owner
// that watches something for the call only once the handler looks at its
// context (a handler that never looks cannot tell when it ends) starts
// the watch there, and ends it in End's function.
type Watcher interface {
	Looked()
}

var _ context.Context = (*Ctx)(nil)

// closed is the Done channel of a context that ended before anyone asked.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// SetWatcher sets w; call it before the handler runs.
func (c *Ctx) SetWatcher(w Watcher) {
	c.mu.Lock()
	c.w = w
	c.mu.Unlock()
}

// Deadline: a call has none of its own; the caller's deadline ends it
// through a cancel message.
func (c *Ctx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value: a handler's context carries no values.
func (c *Ctx) Value(any) any { return nil }

// Done returns a channel closed when the context ends.
func (c *Ctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookedLocked()
	if c.done == nil {
		if c.err != nil {
			return closed
		}
		c.done = make(chan struct{})
	}
	return c.done
}

// Err returns context.Canceled once the context has ended.
func (c *Ctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookedLocked()
	return c.err
}

// AfterFunc arranges for f to run in its own goroutine once the context
// ends, as context.AfterFunc does; stop cancels that if f has not started.
func (c *Ctx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookedLocked()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.funcs == nil {
		c.funcs = make(map[*func()]struct{})
	}
	key := &f
	c.funcs[key] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[key]
		delete(c.funcs, key)
		return ok
	}
}

func (c *Ctx) lookedLocked() {
	if c.w != nil && c.err == nil {
		c.w.Looked()
	}
}

// End ends the context, unless it has ended: locked, when not nil, runs
// first with the context's lock held (and runs even if the context had
// ended), then Done is closed and the functions given to AfterFunc start.
// It is idempotent and safe from any goroutine.
func (c *Ctx) End(locked func()) {
	c.mu.Lock()
	if locked != nil {
		locked()
	}
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for f := range funcs {
		go (*f)()
	}
}
