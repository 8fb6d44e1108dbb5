package adaptive

import (
	"context"

	"github.com/weftsearch/weft/fabric/internal/callctx"
)

// callCtx is the context a call's handler runs with (embedded in its
// entry). It ends when cancel is called: by the caller's cancel message,
// the session's goodbye, the listener's close, or ResendGrace after every
// path that carried the call went away (server.leave).
//
// The owner's path (the carrier) is watched with context.AfterFunc only
// from the handler's first look at its context (callctx.Watcher), because
// a handler that never looks cannot tell when its context ends, and a
// handler that looks later sees the same outcome, its ResendGrace counted
// from that moment.
type callCtx struct {
	callctx.Ctx

	// carrier is the owner's path context, watched for the entry until
	// the handler returns (retire); stop ends the watch. Guarded by the
	// context's lock (Looked and End's function run under it).
	carrier context.Context
	srv     *server
	sess    *session
	entry   *entry
	stop    func() bool
}

// carry sets what to watch once the handler looks; call it before the
// handler runs.
func (c *callCtx) carry(carrier context.Context, srv *server, sess *session, e *entry) {
	c.carrier, c.srv, c.sess, c.entry = carrier, srv, sess, e
	c.SetWatcher(c)
}

// Looked starts watching the carrier, once, while the handler runs.
func (c *callCtx) Looked() {
	if c.carrier != nil && c.stop == nil {
		srv, sess, e := c.srv, c.sess, c.entry
		c.stop = context.AfterFunc(c.carrier, func() { srv.leave(sess, e) })
	}
}

// retire is called when the handler has returned: the carrier no longer
// matters, and the context ends (as cancel), under one lock.
func (c *callCtx) retire() {
	var stop func() bool
	c.End(func() {
		stop = c.stop
		c.carrier, c.srv, c.sess, c.entry, c.stop = nil, nil, nil, nil, nil
	})
	if stop != nil {
		stop()
	}
}

// cancel ends the context; it is idempotent.
func (c *callCtx) cancel() { c.End(nil) }
