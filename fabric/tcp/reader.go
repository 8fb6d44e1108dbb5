package tcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// The client side of a connection reads with whichever goroutine holds the
// reader role (Conn.reader, guarded by Conn.pmu):
//
//   - A caller that finds nobody reading after sending its request reads
//     the socket itself until its reply has arrived, delivering any other
//     frames on the way. With one call in flight this is a plain blocking
//     read on the caller's goroutine, as in a hand-written client: no
//     goroutine hand-off, so no other thread is woken to run the caller
//     (on loopback that wake-up, not the copy, was most of the cost
//     over raw TCP at 4–16 KiB).
//   - When that caller has its reply and other calls, or the done frames of
//     Sends, are still outstanding, it passes the role to the connection's
//     reader goroutine (bgRead), which reads until nothing is outstanding.
//     Callers that find the role taken wait for their reply as before.
//   - Nobody reads while nothing is outstanding; the keepalive then wakes
//     the reader goroutine to read the peer's pong (and any ping), so an
//     idle connection still proves its peer alive.
//
// The frame being read is kept in Conn.rs, so reading can stop in the
// middle of a frame and be resumed by another goroutine: a caller whose ctx
// ends while it is blocked reading interrupts its read with a past read
// deadline, gives the role to the reader goroutine and returns ctx.Err().

// Reader roles.
const (
	readerNone   = iota // nothing outstanding, nobody reads
	readerCaller        // Conn.readerCall reads for its own reply
	readerBg            // the reader goroutine reads
)

// readState is the frame being read; only the reader-role holder uses it.
type readState struct {
	hb   [headerSize]byte
	hn   int    // header bytes read so far
	h    header // the decoded header, once hn == headerSize
	body bool   // a reply or error payload is being read
	cl   *call  // its call; nil when the payload is discarded
	p    []byte // its buffer; nil when discarded without a CRC
	pn   int    // payload bytes read so far
}

// aLongTimeAgo is a read deadline in the past: it interrupts a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// bgRead is the reader goroutine: it reads while it holds the role, which
// it is given by kickReader, and gives it up when nothing is outstanding.
func (c *Conn) bgRead() {
	defer close(c.readerDone)
	for {
		select {
		case <-c.bgKick:
		case <-c.done:
			return
		}
		for {
			if err := c.readFrame(); err != nil {
				c.readFailed(err)
				return
			}
			c.pmu.Lock()
			if len(c.pending) == 0 {
				c.reader = readerNone
				c.pmu.Unlock()
				break
			}
			c.pmu.Unlock()
		}
	}
}

// kickReader gives the role to the reader goroutine; c.pmu is held and the
// role is free.
func (c *Conn) kickReader() {
	c.reader = readerBg
	c.readerCall = nil
	select {
	case c.bgKick <- struct{}{}:
	default:
	}
}

// ensureReader makes sure someone reads: for a Send's done frame and for
// the keepalive's pong.
func (c *Conn) ensureReader() {
	c.pmu.Lock()
	if c.reader == readerNone && c.pending != nil {
		c.kickReader()
	}
	c.pmu.Unlock()
}

// await waits for the reply of cl, whose request has been handed to the
// transport, reading the socket itself when nobody else does.
func (c *Conn) await(ctx context.Context, cl *call, id uint64, queued bool) ([]byte, error) {
	c.pmu.Lock()
	if c.reader == readerNone && c.pending != nil {
		c.reader, c.readerCall = readerCaller, cl
		cl.ctxDone = ctx.Done()
		c.pmu.Unlock()
		return c.readOwn(ctx, cl, id, queued)
	}
	c.pmu.Unlock()
	select {
	case <-cl.done:
		return c.finish(cl, queued)
	case <-ctx.Done():
		return c.abandon(ctx, cl, id, queued)
	}
}

// readOwn reads frames on the caller's goroutine until cl's reply is in.
func (c *Conn) readOwn(ctx context.Context, cl *call, id uint64, queued bool) ([]byte, error) {
	stop := c.watch(ctx, cl)
	defer stop()
	c.own = cl
	for {
		if c.ownIn { // endBody answered cl
			c.own, c.ownIn = nil, false
			c.passRole()
			return c.finish(cl, queued)
		}
		select {
		case <-cl.done: // answered before this caller took the role
			c.own = nil
			c.passRole()
			return c.finish(cl, queued)
		default:
		}
		err := c.readFrame()
		if err == nil {
			continue
		}
		if !c.interrupted(err) {
			c.own = nil
			c.readFailed(err)
			c.passRole()
			<-cl.done // failPending or readFailed has answered it
			return c.finish(cl, queued)
		}
		if c.rs.cl == cl {
			// Our reply is arriving: take it, as a waiting caller would.
			continue
		}
		c.own = nil
		c.passRole()
		return c.abandon(ctx, cl, id, queued)
	}
}

// watch arranges for the read of caller cl to be interrupted when ctx
// ends, and returns what ends that arrangement.
//
// context.AfterFunc takes ctx's lock to register and again to unregister.
// Calls that share one long-lived ctx (a component's lifetime, a
// benchmark's) would do that from every lane at once, all on that one
// lock; so a ctx whose Done channel a socket's reading callers use twice
// in a row stays watched (sticky) until it ends or the socket fails, and
// later readers with it register nothing. Other contexts are watched for
// their call only, as a context a request ends with its work would
// otherwise start the watch's function, a goroutine, for every request.
func (c *Conn) watch(ctx context.Context, cl *call) (stop func() bool) {
	done := cl.ctxDone
	if done == nil {
		return noStop
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	repeat := c.lastDone == done
	c.lastDone = done
	switch {
	case c.stickyDone == done:
		return noStop
	case repeat && c.stickyDone == nil && c.pending != nil:
		c.stickyDone = done
		c.stickyStop = context.AfterFunc(ctx, func() { c.interrupt(done) })
		return noStop
	}
	return context.AfterFunc(ctx, func() { c.interrupt(done) })
}

func noStop() bool { return true }

// interrupt stops the blocked read of the caller holding the reader role
// if its ctx's Done channel is done, which has been closed; a sticky
// watch of done ends.
func (c *Conn) interrupt(done <-chan struct{}) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.stickyDone == done {
		c.stickyDone, c.stickyStop = nil, nil
	}
	if c.reader == readerCaller && c.readerCall.ctxDone == done && !c.interrupting {
		c.interrupting = true
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

// interrupted reports whether err is interrupt's doing, and if so clears
// the deadline so that reading can go on.
func (c *Conn) interrupted(err error) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if !c.interrupting || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.interrupting = false
	return c.nc.SetReadDeadline(time.Time{}) == nil
}

// passRole ends a caller's turn as reader: the reader goroutine takes over
// if anything is still outstanding.
func (c *Conn) passRole() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.interrupting { // interrupt fired after the reply was in
		c.interrupting = false
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	c.reader, c.readerCall = readerNone, nil
	if len(c.pending) > 0 {
		c.kickReader()
	}
}

// readFailed breaks the connection after a read error and answers the call
// whose reply was being read (the others are answered by failPending).
func (c *Conn) readFailed(err error) {
	if cl := c.rs.cl; cl != nil {
		c.rs.cl = nil
		cl.err = fmt.Errorf("tcp: reading reply %d from %s: %w: %w", c.rs.h.id, c.remote, err, fabric.ErrClosed)
		c.release()
		cl.done <- struct{}{}
	}
	c.fail(err)
}

// readFrame reads (the rest of) one frame from the server and acts on it.
// An I/O error leaves the partial frame in c.rs, so a later call resumes
// it; any error other than interrupt's breaks the connection.
func (c *Conn) readFrame() error {
	rs := &c.rs
	if !rs.body {
		for rs.hn < headerSize {
			n, err := c.br.Read(rs.hb[rs.hn:])
			rs.hn += n
			if err != nil {
				if rs.hn > 0 {
					err = unexpectedEOF(err)
				}
				return err
			}
		}
		c.touch()
		h, err := decodeHeader(&rs.hb, c.localMax)
		if err != nil {
			return err
		}
		rs.h = h
		if err := c.control(h); err != nil || (h.typ != typeReply && h.typ != typeError) {
			rs.hn = 0
			return err
		}
		if err := c.startBody(h); err != nil {
			return err
		}
	}
	for rs.pn < int(rs.h.length) {
		want := min(int(rs.h.length)-rs.pn, readChunk)
		var n int
		var err error
		if rs.p == nil {
			n, err = c.br.Discard(want)
		} else {
			n, err = c.br.Read(rs.p[rs.pn : rs.pn+want])
		}
		rs.pn += n
		c.received.Add(uint64(n))
		if n > 0 {
			c.touch()
		}
		if err != nil {
			return unexpectedEOF(err)
		}
	}
	return c.endBody()
}

// control acts on a frame without a payload; replies and errors are left
// to startBody.
func (c *Conn) control(h header) error {
	switch h.typ {
	case typeReply, typeError:
		return nil
	case typeDone:
		if err := noPayload(h); err != nil {
			return err
		}
		c.pmu.Lock()
		cl, ok := c.pending[h.id]
		if ok && cl == oneWayMark {
			delete(c.pending, h.id)
		}
		c.pmu.Unlock()
		if !ok || cl != oneWayMark {
			return fmt.Errorf("%w: done frame for id %d, which is not an outstanding Send", ErrProtocol, h.id)
		}
		c.sendsOut.Add(-1)
		c.release()
		return nil
	case typePing:
		if err := noPayload(h); err != nil {
			return err
		}
		c.post(typePong, h.id)
		return nil
	case typePong:
		return noPayload(h)
	default:
		return fmt.Errorf("%w: unexpected frame type %d from a server", ErrProtocol, h.typ)
	}
}

// startBody takes the call a reply or error frame answers out of the
// pending table and sets up reading its payload.
func (c *Conn) startBody(h header) error {
	c.pmu.Lock()
	cl, ok := c.pending[h.id]
	if ok {
		delete(c.pending, h.id)
	}
	cancelled := ok && cl.cancelled
	c.pmu.Unlock()
	if !ok || cl == oneWayMark {
		return fmt.Errorf("%w: reply for id %d, which is not an outstanding Call", ErrProtocol, h.id)
	}
	rs := &c.rs
	rs.body, rs.pn, rs.cl, rs.p = true, 0, nil, nil
	if cancelled {
		// Nobody wants it: free the slot, read past it (checking a CRC).
		c.release()
		if h.flags&flagCRC != 0 {
			rs.p = make([]byte, h.length)
		}
		return nil
	}
	// From here on cl has left the pending table, so the connection's
	// failure will not reach it: readFailed answers it.
	rs.cl = cl
	n := int(h.length)
	if c.br.Buffered() >= n {
		// The whole reply is buffered (one read system call brought in
		// the header and up to 64 KiB after it): copy it into the reply
		// the caller will own as it is allocated, which skips zeroing
		// the new memory first.
		b, _ := c.br.Peek(n)
		p := make([]byte, n)
		copy(p, b)
		_, _ = c.br.Discard(n)
		rs.p, rs.pn = p, n
		c.received.Add(uint64(n))
		return nil
	}
	rs.p = make([]byte, n) // the reply the caller will own
	return nil
}

// endBody checks a fully read reply or error frame and answers its call.
func (c *Conn) endBody() error {
	rs := &c.rs
	if err := checkCRC(&rs.hb, rs.h, rs.p); err != nil {
		return err
	}
	cl, p, typ := rs.cl, rs.p, rs.h.typ
	if cl == nil {
		*rs = readState{}
		return nil
	}
	if typ == typeError {
		re, err := decodeError(p)
		if err != nil {
			return err
		}
		cl.err = re
	} else {
		cl.reply = p
	}
	*rs = readState{}
	c.release()
	if cl == c.own {
		c.ownIn = true
		return nil
	}
	cl.done <- struct{}{}
	return nil
}
