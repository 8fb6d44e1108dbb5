package adaptive

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a call's handler runs with (embedded in its
// entry). It ends when cancel is called: by the caller's cancel message,
// the session's goodbye, the listener's close, or ResendGrace after every
// path that carried the call went away (server.leave).
//
// It costs nothing until the handler looks at it: the owner's path (the
// carrier) is watched with context.AfterFunc only from the handler's first
// Done or Err, because a handler that never looks cannot tell when its
// context ends, and a handler that looks later sees the same outcome, its
// ResendGrace counted from that moment. Contexts derived from it register
// through AfterFunc (the context package's afterFuncer), so deriving one
// starts no goroutine.
type callCtx struct {
	mu    sync.Mutex
	err   error
	done  chan struct{} // made on first Done
	funcs map[*func()]struct{}

	// carrier is the owner's path context, watched for the entry until
	// the handler returns (retire); stop ends the watch.
	carrier context.Context
	srv     *server
	sess    *session
	entry   *entry
	stop    func() bool
}

var _ context.Context = (*callCtx)(nil)

// Deadline: a call has none of its own; the caller's deadline ends it
// through a cancel message.
func (c *callCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value: a handler's context carries no values.
func (c *callCtx) Value(any) any { return nil }

// Done returns a channel closed when the context ends.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchLocked()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

// Err returns context.Canceled once the context has ended.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchLocked()
	return c.err
}

// AfterFunc arranges for f to run in its own goroutine once the context
// ends, as context.AfterFunc does; stop cancels that if f has not started.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchLocked()
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

// watchLocked starts watching the carrier, once, while the handler runs.
func (c *callCtx) watchLocked() {
	if c.carrier != nil && c.stop == nil && c.err == nil {
		srv, sess, e := c.srv, c.sess, c.entry
		c.stop = context.AfterFunc(c.carrier, func() { srv.leave(sess, e) })
	}
}

// retire is called when the handler has returned: the carrier no longer
// matters, and the context ends (as cancel), under one lock.
func (c *callCtx) retire() {
	c.mu.Lock()
	stop := c.stop
	c.carrier, c.srv, c.sess, c.entry, c.stop = nil, nil, nil, nil, nil
	funcs := c.endLocked()
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	runAll(funcs)
}

// cancel ends the context; it is idempotent.
func (c *callCtx) cancel() {
	c.mu.Lock()
	funcs := c.endLocked()
	c.mu.Unlock()
	runAll(funcs)
}

// endLocked ends the context, unless it has ended, and returns the
// functions registered to run then.
func (c *callCtx) endLocked() map[*func()]struct{} {
	if c.err != nil {
		return nil
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	return funcs
}

func runAll(funcs map[*func()]struct{}) {
	for f := range funcs {
		go (*f)()
	}
}
