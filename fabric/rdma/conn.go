//go:build linux && cgo && rdma

package rdma

/*
#include "wf_verbs.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/bufpool"
	"github.com/weftsearch/weft/fabric/internal/dispatch"
)

// conn is one RC connection, either side. The dialling side is returned by
// Dial as a fabric.Conn; the listening side serves handler calls.
type conn struct {
	t       *Transport
	cfg     Config
	dialed  bool
	peer    string
	ctl     net.Conn // TCP control connection; its end fails the conn
	handler fabric.Handler

	id        uint32
	qp        *C.struct_ibv_qp
	qpn, rqpn uint32
	keyScope  string // the transport's, when the conn was made
	// lastWQE: IBV_EVENT_QP_LAST_WQE_REACHED arrived for the QP (under t.mu;
	// see retire.go).
	lastWQE   bool
	maxInline int
	eagerMax  int // largest eager payload the peer accepts
	threshold int // payloads >= threshold go by rendezvous
	ring      *region
	depth     uint64

	ctx    context.Context // cancelled when the conn fails; parent of handler contexts
	cancel context.CancelFunc

	mu          sync.Mutex
	wakeCh      chan struct{} // closed and replaced when credits, slots or state change
	failed      bool
	failReason  string
	reachedRTR  bool // the QP reached RTR: it may have taken SRQ buffers
	sendCredits int
	peerFreed   uint32 // last cumulative count seen from the peer
	freed       uint32 // receive buffers freed for the peer, cumulative
	advertised  uint32 // freed as last told to the peer
	creditDue   bool   // a credit message should go when a slot frees
	sqHead      uint64 // next send sequence number
	sqDone      uint64 // every sequence number below is complete
	invReserved uint64 // send slots set aside for the invalidation of bound windows
	pending     []wr
	spare       []wr
	posting     bool
	reads       map[uint64]chan error    // signaled READ/WRITE seq → waiter
	rzW         map[uint64]*pendingWrite // write-mode rendezvous awaiting msgDone, by the sender's rz
	calls       map[uint64]chan result
	sendsOut    map[uint64]struct{} // one-way messages not yet acknowledged
	rzOut       map[uint64]*region
	nextRz      uint64
	drained     chan struct{} // closed when sqDone reaches the close marker
	drainAt     uint64

	// Requests are handed to disp in arrival order; a rendezvous request
	// holds back those behind it until its payload is in. rzIn has a lock
	// of its own: disp gives a payload back (releaseRequest) from inside
	// Dispatch when it drops a request, while rxMu is held.
	disp   *dispatch.Dispatcher
	rxMu   sync.Mutex
	rxq    []*rxReq
	rzMu   sync.Mutex
	rzIn   map[*[]byte]*region // request payloads held in rendezvous regions
	window chan struct{}       // one token per call or one-way message in flight

	nextCall atomic.Uint64
	out, in  rzCache
	bg       sync.WaitGroup // handlers, pulls, cancels, dispatcher, control reader
	once     sync.Once
	closed   chan struct{}

	calls_, callErrs, sends, msgsSent, msgsRecv, bytesSent, bytesRecv, rendezvous, errs atomic.Uint64
	windowsBound, windowsRevoked                                                        atomic.Uint64
	inflight                                                                            atomic.Int64
}

var (
	_ fabric.Conn         = (*conn)(nil)
	_ fabric.VectorCaller = (*conn)(nil)
)

type result struct {
	data []byte
	err  error
}

// pendingWrite is a region this side gave a peer to WRITE a message into.
type pendingWrite struct {
	reg *region
	h   header // the RTW
	r   *rxReq // nil for replies
}

// rxReq is a received request waiting for its turn with the dispatcher.
type rxReq struct {
	id        uint64
	method    fabric.Method
	oneWay    bool
	buf       *[]byte // the payload, from bufpool or a rendezvous region
	ready     bool    // payload is in
	cancelled bool    // the caller cancelled before it was dispatched
	failed    bool    // the pull failed; drop it
}

// newConn creates a conn with its QP in INIT, or fails (the transport is
// closed or its device lost, or the device refused).
func (t *Transport) newConn(ctl net.Conn, dialed bool, peer string, h fabric.Handler) (*conn, error) {
	c := &conn{
		t: t, cfg: t.cfg, dialed: dialed, peer: peer, ctl: ctl, handler: h,
		depth:  uint64(t.cfg.SendQueueDepth),
		wakeCh: make(chan struct{}),
		reads:  map[uint64]chan error{}, calls: map[uint64]chan result{}, sendsOut: map[uint64]struct{}{},
		rzOut: map[uint64]*region{}, rzW: map[uint64]*pendingWrite{}, rzIn: map[*[]byte]*region{}, closed: make(chan struct{}), window: make(chan struct{}, t.cfg.MaxInFlight),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if h == nil {
		h = fabric.HandlerFunc(func(_ context.Context, r *fabric.Request) ([]byte, error) {
			return nil, fabric.Errorf(fabric.CodeUnknownMethod, "the dialling side of an rdma connection serves no methods (method %d)", r.Method)
		})
	}
	c.disp = dispatch.New(c.ctx, h, peer, c.respond, c.releaseRequest)
	// The device's resources are read only once admitted (retire.go), so a
	// rebuild never swaps them under a connection.
	if err := t.admitQP(); err != nil {
		c.cancel()
		return nil, err
	}
	// Only the memory a peer must reach is exposed: the sender's copies in
	// read mode, the receiver's targets otherwise. With type-2 memory
	// windows the regions carry no remote rights themselves; each transfer
	// binds the region's window on this QP (keyScope). Without them the
	// regions are registered with the remote right they need.
	readMode := t.cfg.RendezvousMode == "read"
	if t.keyScope == KeyScopeWindow {
		c.out = rzCache{pd: t.pd, access: accessLocal, limit: t.cfg.RendezvousCacheBytes, t: t}
		if readMode {
			c.out.access, c.out.windows = accessMWBind, true
		}
		c.in = rzCache{pd: t.pd, access: accessMWBind, windows: true, limit: t.cfg.RendezvousCacheBytes, t: t}
	} else {
		c.out = rzCache{pd: t.pd, access: accessLocal, limit: t.cfg.RendezvousCacheBytes, t: t}
		if readMode {
			c.out.access = accessRemoteRead
		}
		c.in = rzCache{pd: t.pd, access: accessRemoteWrite, limit: t.cfg.RendezvousCacheBytes, t: t}
	}
	c.out.breakRegistration, c.in.breakRegistration = &t.breakOut, &t.breakIn
	var gotInline, gotSQ C.uint32_t
	c.qp = C.wf_create_qp(t.pd, t.cq, t.srq, C.uint32_t(t.cfg.SendQueueDepth), C.uint32_t(t.cfg.MaxInline), &gotInline, &gotSQ)
	if c.qp != nil {
		c.qpn = uint32(c.qp.qp_num)
	}
	t.admitted(c)
	if c.qp == nil {
		c.cancel()
		return nil, fmt.Errorf("rdma: creating an RC queue pair on %s failed (send queue %d)", t.devName, t.cfg.SendQueueDepth)
	}
	c.maxInline = int(gotInline)
	c.keyScope = t.keyScope
	var err error
	if c.ring, err = newRegion(t.pd, t.cfg.SendQueueDepth*t.cfg.EagerSize, accessLocal); err != nil {
		c.destroy()
		return nil, err
	}
	if rc := C.wf_qp_init(c.qp, C.uint8_t(t.port)); rc != 0 {
		c.destroy()
		return nil, fmt.Errorf("rdma: moving QP %d to INIT: %v", c.qpn, errnoErr(rc))
	}
	return c, nil
}

func (c *conn) hello(psn uint32, gid GIDInfo) hello {
	h := hello{mtu: c.t.activeMTU, qpn: c.qpn, psn: psn, credits: uint32(c.cfg.Credits), eager: uint32(c.cfg.EagerSize), lid: c.t.lid}
	copy(h.gid[:], gid.GID.To16())
	return h
}

// connect moves the QP to RTR and RTS towards the peer's hello.
func (c *conn) connect(local hello, gid GIDInfo, peer hello) error {
	mtu := min(local.mtu, peer.mtu)
	sgid := C.int(gid.Index)
	if c.t.linkLayer == "InfiniBand" && peer.lid != 0 {
		sgid = -1
	}
	if rc := C.wf_qp_rtr(c.qp, C.uint8_t(c.t.port), C.uint32_t(peer.qpn), C.uint32_t(peer.psn), C.uint32_t(mtuEnum(mtu)),
		(*C.uint8_t)(&peer.gid[0]), C.uint16_t(peer.lid), sgid, C.uint8_t(c.t.rdAtomic)); rc != 0 {
		return fmt.Errorf("rdma: moving QP %d to RTR towards QP %d (GID %s, MTU %d): %v", c.qpn, peer.qpn, net.IP(peer.gid[:]), mtu, errnoErr(rc))
	}
	c.mu.Lock()
	c.reachedRTR = true
	c.mu.Unlock()
	if rc := C.wf_qp_rts(c.qp, C.uint32_t(local.psn), C.uint8_t(c.cfg.Timeout), C.uint8_t(c.cfg.RetryCount), C.uint8_t(c.t.rdAtomic)); rc != 0 {
		return fmt.Errorf("rdma: moving QP %d to RTS: %v", c.qpn, errnoErr(rc))
	}
	c.rqpn = peer.qpn
	c.sendCredits = int(peer.credits)
	c.eagerMax = min(int(peer.eager), c.cfg.EagerSize) - headerSize
	c.threshold = min(c.cfg.RendezvousThreshold, c.eagerMax+1)
	return nil
}

// handshake runs the control-connection exchange. The dialler sends its
// hello first and helloReady last; the listener answers with its hello.
// track, when set, is told of the conn as soon as it can receive (before
// the handshake's last step), so its owner can fail it at any time after.
func (t *Transport) handshake(ctx context.Context, ctl net.Conn, dialed bool, peer string, h fabric.Handler, track func(*conn) error) (*conn, error) {
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > t.cfg.HandshakeTimeout {
		dl = time.Now().Add(t.cfg.HandshakeTimeout)
	}
	_ = ctl.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = ctl.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c, err := t.newConn(ctl, dialed, peer, h)
	if err != nil {
		return nil, err
	}
	gid := t.gidFor(ctl.LocalAddr())
	local := c.hello(rand.Uint32()&0xffffff, gid)
	buf := make([]byte, helloSize)
	readHello := func() (hello, error) {
		if _, err := io.ReadFull(ctl, buf); err != nil {
			return hello{}, fmt.Errorf("rdma: reading the handshake from %s: %w", peer, errors.Join(err, ctx.Err()))
		}
		return parseHello(buf)
	}
	registered := false
	fail := func(err error) (*conn, error) {
		if registered {
			c.fail("handshake failed")
			_ = c.Close()
		} else {
			c.destroy()
		}
		return nil, err
	}
	if dialed {
		if _, err := ctl.Write(local.marshal()); err != nil {
			return fail(fmt.Errorf("rdma: sending the handshake to %s: %w", peer, err))
		}
		ph, err := readHello()
		if err != nil {
			return fail(err)
		}
		if err := c.connect(local, gid, ph); err != nil {
			return fail(err)
		}
		if err := t.register(c); err != nil {
			return fail(err)
		}
		registered = true
		if _, err := ctl.Write([]byte{helloReady}); err != nil {
			return fail(fmt.Errorf("rdma: completing the handshake with %s: %w", peer, err))
		}
	} else {
		ph, err := readHello()
		if err != nil {
			return fail(err)
		}
		if err := c.connect(local, gid, ph); err != nil {
			return fail(err)
		}
		if err := t.register(c); err != nil {
			return fail(err)
		}
		registered = true
		if track != nil {
			if err := track(c); err != nil {
				return fail(err)
			}
		}
		if _, err := ctl.Write(local.marshal()); err != nil {
			return fail(fmt.Errorf("rdma: answering the handshake of %s: %w", peer, err))
		}
		var r [1]byte
		if _, err := io.ReadFull(ctl, r[:]); err != nil || r[0] != helloReady {
			return fail(fmt.Errorf("rdma: %s did not complete the handshake (got %q): %w", peer, r[0], errors.Join(err, ctx.Err())))
		}
	}
	_ = ctl.SetDeadline(time.Time{})
	c.bg.Add(1)
	go c.readControl()
	return c, nil
}

// readControl waits for the end of the control connection: the peer closed
// its side, died, or this side failed. Either way the conn fails.
func (c *conn) readControl() {
	defer c.bg.Done()
	_, err := io.Copy(io.Discard, c.ctl)
	if err == nil {
		err = io.EOF
	}
	c.fail("control connection to " + c.peer + " ended: " + err.Error())
}

// wake broadcasts a state change to senders waiting for credits or slots.
// Caller holds c.mu.
func (c *conn) wakeLocked() {
	close(c.wakeCh)
	c.wakeCh = make(chan struct{})
}

func (c *conn) errClosedLocked() error {
	return fmt.Errorf("rdma: connection to %s failed (%s): %w", c.peer, c.failReason, fabric.ErrClosed)
}

// freeSlotsLocked is the number of send slots free now, less those set
// aside for invalidations. Caller holds c.mu.
func (c *conn) freeSlotsLocked() uint64 {
	return c.depth - (c.sqHead - c.sqDone) - c.invReserved
}

// reserve waits until the conn has n send slots and, if credit, one credit;
// with expose, also two more slots for exposeLocked (the bind, and the
// invalidation it sets aside), while fewer than half the send queue is set
// aside for invalidations. It returns with c.mu held, or an error without it.
func (c *conn) reserve(ctx context.Context, n uint64, credit, expose bool) error {
	for {
		c.mu.Lock()
		if c.failed {
			err := c.errClosedLocked()
			c.mu.Unlock()
			return err
		}
		need := n
		if expose {
			need += 2
		}
		if (!credit || c.sendCredits > 0) && c.freeSlotsLocked() >= need && (!expose || c.invReserved < c.depth/2) {
			if credit {
				c.sendCredits--
			}
			return nil
		}
		w := c.wakeCh
		c.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// queueSendLocked copies h and the payload, given as pieces (nil for a
// header-only message), into the next ring slot and queues a SEND. Caller
// holds c.mu and has reserved a slot; h.length is the pieces' total.
func (c *conn) queueSendLocked(h *header, pieces [][]byte) {
	h.credits = c.freed
	c.advertised = c.freed
	seq := c.sqHead
	c.sqHead++
	E := uint64(c.cfg.EagerSize)
	slot := seq & (c.depth - 1)
	buf := c.ring.mem[slot*E : (slot+1)*E]
	h.put(buf)
	n := headerSize
	for _, p := range pieces {
		n += copy(buf[n:], p)
	}
	flags := c.signalFlag(seq)
	if n <= c.maxInline {
		flags |= flagInline
	}
	c.pending = append(c.pending, wr{wr_id: C.uint64_t(sendID(c.id, seq)), laddr: C.uint64_t(c.ring.addr + slot*E),
		len: C.uint32_t(n), lkey: C.uint32_t(c.ring.lkey()), opcode: opSend, flags: flags})
	c.msgsSent.Add(1)
	c.bytesSent.Add(uint64(n))
}

// signalFlag is the flag of the send-side work request numbered seq that is
// not signaled for its own sake: one in every quarter of the send queue is
// signaled, so its completion frees the slots of the unsignaled ones before it.
func (c *conn) signalFlag(seq uint64) C.uint32_t {
	if seq&(c.depth/4-1) == c.depth/4-1 {
		return flagSignal
	}
	return 0
}

// flushLocked posts the queued work requests. One goroutine posts at a time,
// taking everything queued meanwhile in batches of up to maxBatch per cgo
// call; the others return at once. Caller holds c.mu; it may be released and
// retaken.
func (c *conn) flushLocked() {
	if c.posting {
		return
	}
	c.posting = true
	for len(c.pending) > 0 && !c.failed {
		batch := c.pending
		c.pending = c.spare[:0]
		c.mu.Unlock()
		var err error
		for len(batch) > 0 && err == nil {
			k := min(len(batch), maxBatch)
			var bad C.int
			if rc := C.wf_post_send(c.qp, &batch[0], C.int(k), &bad); rc != 0 {
				err = fmt.Errorf("posting %d work requests: %v", k, errnoErr(rc))
			}
			batch = batch[k:]
		}
		c.mu.Lock()
		c.spare = batch[:0]
		if err != nil {
			c.posting = false
			c.failLocked(err.Error())
			return
		}
	}
	c.posting = false
}

// sendMessage sends one message of type typ whose payload is the
// concatenation of pieces (n bytes in all), eagerly or by rendezvous; the
// pieces are copied straight into registered memory, and only read.
func (c *conn) sendMessage(ctx context.Context, typ uint8, method fabric.Method, id uint64, aux uint32, pieces [][]byte, n int) error {
	if n >= c.threshold {
		return c.sendRendezvous(ctx, typ, method, id, aux, pieces, n)
	}
	if err := c.reserve(ctx, 1, true, false); err != nil {
		return err
	}
	h := header{typ: typ, method: method, id: id, length: uint32(n), aux: aux}
	c.queueSendLocked(&h, pieces)
	c.flushLocked()
	c.mu.Unlock()
	return nil
}

// sendControl sends a header-only message about id (cancel, ack) or
// rendezvous id (FIN, done); it takes a credit like any message.
func (c *conn) sendControl(ctx context.Context, typ uint8, id uint64) error {
	h := header{typ: typ, id: id}
	if typ == msgFIN || typ == msgDone {
		h = header{typ: typ, rz: id}
	}
	return c.sendHeader(ctx, h)
}

// sendHeader sends a header-only message.
func (c *conn) sendHeader(ctx context.Context, h header) error {
	if err := c.reserve(ctx, 1, true, false); err != nil {
		return err
	}
	c.queueSendLocked(&h, nil)
	c.flushLocked()
	c.mu.Unlock()
	return nil
}

// exposeLocked makes reg[:n] reachable by the peer with the remote right
// access (mwRemoteRead or mwRemoteWrite) and returns the key to send it.
// For a region with a window it queues the bind of the window on this
// connection's QP, under a fresh key, ahead of whatever is queued next (the
// RTS or CTS that carries the key, which the QP executes after the bind),
// and sets aside the slot of the invalidation revokeLocked queues when the
// transfer ends; the caller reserved both slots (reserve with expose).
// Without a window the region's MR key is returned: it was registered with
// the right. Caller holds c.mu.
func (c *conn) exposeLocked(reg *region, n int, access C.uint32_t) uint32 {
	if reg.mw == nil {
		return reg.rkey()
	}
	reg.key = uint32(C.wf_inc_rkey(C.uint32_t(reg.key)))
	if reg.broken {
		return reg.key // tests: a key that was never bound, so the peer's access fails
	}
	seq := c.sqHead
	c.sqHead++
	c.pending = append(c.pending, wr{wr_id: C.uint64_t(sendID(c.id, seq)), laddr: C.uint64_t(reg.addr), len: C.uint32_t(n),
		mw: C.uint64_t(uintptr(unsafe.Pointer(reg.mw))), mr: C.uint64_t(uintptr(unsafe.Pointer(reg.mr))),
		rkey: C.uint32_t(reg.key), access: access, opcode: opBindMW, flags: c.signalFlag(seq)})
	reg.bound = true
	c.invReserved++
	c.windowsBound.Add(1)
	return reg.key
}

// revokeLocked ends the exposure of reg begun by exposeLocked: it queues
// the local invalidation of the window's key on this QP (in the slot set
// aside at the bind, so it never waits and may run on the poller) before
// the region can be reused or freed. On a failed connection it only
// releases the slot: the QP executes nothing more, and Close deallocates
// the window, which revokes the key. Caller holds c.mu.
func (c *conn) revokeLocked(reg *region) {
	if reg.mw == nil || !reg.bound {
		return
	}
	reg.bound = false
	c.invReserved--
	if c.failed {
		return
	}
	seq := c.sqHead
	c.sqHead++
	c.pending = append(c.pending, wr{wr_id: C.uint64_t(sendID(c.id, seq)), rkey: C.uint32_t(reg.key), opcode: opLocalInv, flags: c.signalFlag(seq)})
	c.windowsRevoked.Add(1)
	c.flushLocked()
}

// sendRendezvous copies the pieces (n bytes in all) one after another into
// a registered region of this connection and announces it; the peer READs
// it and answers FIN, or offers a region to WRITE it into.
func (c *conn) sendRendezvous(ctx context.Context, typ uint8, method fabric.Method, id uint64, aux uint32, pieces [][]byte, n int) error {
	reg, err := c.out.get(n)
	if err != nil {
		return err
	}
	off := 0
	for _, p := range pieces {
		off += copy(reg.mem[off:], p)
	}
	readMode := c.cfg.RendezvousMode == "read"
	if err := c.reserve(ctx, 1, true, readMode && reg.mw != nil); err != nil {
		c.out.put(reg)
		return err
	}
	c.nextRz++
	rz := c.nextRz
	c.rzOut[rz] = reg
	h := header{typ: msgRTW, inner: typ, method: method, id: id, length: uint32(n), rz: rz}
	if readMode {
		key := c.exposeLocked(reg, n, mwRemoteRead)
		h = header{typ: msgRTS, inner: typ, method: method, id: id, length: uint32(n), aux: key, addr: reg.addr, rz: rz}
	}
	c.queueSendLocked(&h, nil)
	c.flushLocked()
	c.mu.Unlock()
	c.rendezvous.Add(1)
	return nil
}

// transfer moves n bytes between local region reg and the peer's
// (raddr, rkey) with RDMA READs or WRITEs (op), in waves of
// cfg.ReadsInFlight work requests of cfg.ReadChunk bytes, the last of each
// wave signaled; it returns when all have completed.
func (c *conn) transfer(op C.uint32_t, reg *region, raddr uint64, rkey uint32, n int) error {
	chunk := min(c.t.maxMsg, c.cfg.ReadChunk)
	for off := 0; off < n; {
		k := min((n-off+chunk-1)/chunk, c.cfg.ReadsInFlight)
		if err := c.reserve(c.ctx, uint64(k), false, false); err != nil {
			return err
		}
		done := make(chan error, 1)
		for i := 0; i < k; i++ {
			l := min(chunk, n-off)
			seq := c.sqHead
			c.sqHead++
			flags := C.uint32_t(0)
			if i == k-1 {
				flags = flagSignal
				c.reads[seq] = done
			}
			c.pending = append(c.pending, wr{wr_id: C.uint64_t(sendID(c.id, seq)), laddr: C.uint64_t(reg.addr + uint64(off)),
				raddr: C.uint64_t(raddr + uint64(off)), len: C.uint32_t(l), lkey: C.uint32_t(reg.lkey()), rkey: C.uint32_t(rkey),
				opcode: op, flags: flags})
			off += l
		}
		c.flushLocked()
		c.mu.Unlock()
		if err := <-done; err != nil {
			return err
		}
	}
	return nil
}

// pull READs a peer's announced region (read mode) into a local registered
// region and sends FIN. The returned region belongs to the caller (put it
// back into c.in).
func (c *conn) pull(h header) (*region, error) {
	n := int(h.length)
	start := time.Now()
	reg, err := c.in.get(n)
	if err != nil {
		return nil, err
	}
	if err := c.transfer(opRead, reg, h.addr, h.aux, n); err != nil {
		c.in.put(reg)
		return nil, err
	}
	c.bytesRecv.Add(uint64(n))
	c.t.log.Debug("rdma: rendezvous pulled", "bytes", n, "took", time.Since(start))
	if err := c.sendControl(c.ctx, msgFIN, h.rz); err != nil {
		c.in.put(reg)
		return nil, err
	}
	return reg, nil
}

// onRTW (poller) answers a write-mode announcement: a region is allocated
// off the poller and offered with CTS; msgDone completes it.
func (c *conn) onRTW(h header) {
	p := &pendingWrite{h: h}
	if h.inner == msgCall || h.inner == msgOneWay {
		p.r = &rxReq{id: h.id, method: h.method, oneWay: h.inner == msgOneWay}
		c.arrive(p.r)
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		reg, err := c.in.get(int(h.length))
		if err == nil {
			p.reg = reg
			if err = c.offer(h, p); err != nil {
				c.in.put(reg)
			}
		}
		if err != nil {
			c.fail("rendezvous of " + fmt.Sprint(h.length) + " bytes: " + err.Error())
		}
	}()
}

// offer exposes p.reg for the peer to WRITE rendezvous h.rz into and sends
// the CTS that carries its address and key.
func (c *conn) offer(h header, p *pendingWrite) error {
	if err := c.reserve(c.ctx, 1, true, p.reg.mw != nil); err != nil {
		return err
	}
	c.rzW[h.rz] = p
	cts := header{typ: msgCTS, rz: h.rz, addr: p.reg.addr, length: h.length}
	cts.aux = c.exposeLocked(p.reg, int(h.length), mwRemoteWrite)
	c.queueSendLocked(&cts, nil)
	c.flushLocked()
	c.mu.Unlock()
	return nil
}

// onCTS (poller): the peer offers a region for rendezvous rz; WRITE the
// copy there off the poller, then send msgDone and release the copy.
func (c *conn) onCTS(h header) {
	c.mu.Lock()
	reg := c.rzOut[h.rz]
	delete(c.rzOut, h.rz)
	c.mu.Unlock()
	if reg == nil {
		c.fail(fmt.Sprintf("peer offered a region for unknown rendezvous %d", h.rz))
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if hook := c.t.testCTSHook; hook != nil {
			hook(h)
		}
		start := time.Now()
		n := int(h.length)
		if n > len(reg.mem) {
			c.out.put(reg)
			c.fail(fmt.Sprintf("peer asked for %d bytes of a %d-byte rendezvous", n, len(reg.mem)))
			return
		}
		err := c.transfer(opWrite, reg, h.addr, h.aux, n)
		if err == nil {
			err = c.sendControl(c.ctx, msgDone, h.rz)
		}
		c.out.put(reg)
		if err == nil {
			c.t.log.Debug("rdma: rendezvous written", "bytes", n, "took", time.Since(start))
		}
	}()
}

// onDone (poller): the peer has written rendezvous rz into our region.
func (c *conn) onDone(h header) {
	c.mu.Lock()
	p := c.rzW[h.rz]
	delete(c.rzW, h.rz)
	if p != nil {
		c.revokeLocked(p.reg)
	}
	c.mu.Unlock()
	if p == nil {
		c.fail(fmt.Sprintf("peer finished unknown rendezvous %d", h.rz))
		return
	}
	n := int(p.h.length)
	c.bytesRecv.Add(uint64(n))
	if p.r == nil {
		c.bg.Add(1)
		go func() { // the copy out of a large reply stays off the poller
			defer c.bg.Done()
			c.deliverReply(p.h, p.reg.mem[:n])
			c.in.put(p.reg)
		}()
		return
	}
	bp := c.holdIn(p.reg, n)
	c.rxMu.Lock()
	p.r.buf = bp
	p.r.ready = true
	c.drainRxLocked()
	c.rxMu.Unlock()
}

// onSendComplete runs on the poller for a signaled (or failed) send-side
// completion: it frees ring slots up to seq and wakes waiters.
func (c *conn) onSendComplete(seq32 uint32, status, opcode, vendor uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq := c.sqDone + uint64(seq32-uint32(c.sqDone))
	if seq >= c.sqHead {
		return // not ours (stale id)
	}
	if seq+1 > c.sqDone {
		c.sqDone = seq + 1
	}
	if status != wcSuccess {
		if status != wcFlushErr {
			c.errs.Add(1)
			c.t.wcErrors.Add(1)
		}
		c.failLocked(fmt.Sprintf("work completion error on QP %d: %s (vendor error %#x)", c.qpn, wcStatusString(status), vendor))
	} else if ch, ok := c.reads[seq]; ok {
		delete(c.reads, seq)
		ch <- nil
	}
	if c.drained != nil && c.sqDone >= c.drainAt {
		close(c.drained)
		c.drained = nil
	}
	if c.creditDue && !c.failed {
		c.sendCreditLocked()
	}
	c.wakeLocked()
}

// credit records n receive buffers freed for the peer (after the poller has
// reposted them) and returns credits by a credit message when half the
// grant is owed and no other message has carried them.
func (c *conn) credit(n uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freed += n
	if int(c.freed-c.advertised) >= c.cfg.Credits/2 && !c.failed {
		c.creditDue = true
		c.sendCreditLocked()
	}
}

// sendCreditLocked queues a credit message if a slot is free; otherwise it
// stays due and goes on the next send completion. It never blocks (it runs
// on the poller).
func (c *conn) sendCreditLocked() {
	if int(c.freed-c.advertised) == 0 {
		c.creditDue = false
		return
	}
	if c.freeSlotsLocked() == 0 {
		return
	}
	c.creditDue = false
	h := header{typ: msgCredit}
	c.queueSendLocked(&h, nil)
	c.msgsSent.Add(^uint64(0)) // credit messages are not counted as messages
	c.flushLocked()
}

// onRecv runs on the poller for one received message in a buffer that is
// reposted when it returns: everything kept is copied out. It reports
// whether the message consumed a credit.
func (c *conn) onRecv(b []byte) bool {
	h, body, err := parseMessage(b)
	if err != nil {
		c.errs.Add(1)
		c.fail("bad message from peer: " + err.Error())
		return false
	}
	c.mu.Lock()
	if d := h.credits - c.peerFreed; d != 0 {
		c.peerFreed = h.credits
		c.sendCredits += int(d)
		c.wakeLocked()
	}
	failed := c.failed
	c.mu.Unlock()
	if h.typ == msgCredit {
		return false
	}
	if (h.typ == msgRTS || h.typ == msgRTW) && int(h.length) > c.cfg.MaxMessageSize {
		c.errs.Add(1)
		c.fail(fmt.Sprintf("peer announced a %d-byte message, above this side's MaxMessageSize %d", h.length, c.cfg.MaxMessageSize))
		return true
	}
	c.msgsRecv.Add(1)
	c.bytesRecv.Add(uint64(len(b)))
	if (h.typ == msgCall || ((h.typ == msgRTS || h.typ == msgRTW) && h.inner == msgCall)) && h.method != fabric.MethodPing {
		c.t.callsIn.Add(1)
	}
	if failed {
		return true
	}
	switch h.typ {
	case msgCall, msgOneWay:
		bp := bufpool.Get(len(body))
		copy(*bp, body)
		c.arrive(&rxReq{id: h.id, method: h.method, oneWay: h.typ == msgOneWay, buf: bp, ready: true})
	case msgReply, msgError:
		c.deliverReply(h, body)
	case msgAck:
		c.mu.Lock()
		_, ok := c.sendsOut[h.id]
		delete(c.sendsOut, h.id)
		c.mu.Unlock()
		if ok {
			<-c.window
		}
	case msgCancel:
		c.cancelRequest(h.id)
	case msgFIN:
		c.mu.Lock()
		reg := c.rzOut[h.rz]
		delete(c.rzOut, h.rz)
		if reg != nil {
			c.revokeLocked(reg)
		}
		c.mu.Unlock()
		if reg != nil {
			c.out.put(reg)
		}
	case msgRTS:
		c.onRTS(h)
	case msgRTW:
		c.onRTW(h)
	case msgCTS:
		c.onCTS(h)
	case msgDone:
		c.onDone(h)
	}
	return true
}

// onRTS starts pulling an announced large message, off the poller. A
// request keeps its place in the arrival order while it is pulled.
func (c *conn) onRTS(h header) {
	var r *rxReq
	if h.inner == msgCall || h.inner == msgOneWay {
		r = &rxReq{id: h.id, method: h.method, oneWay: h.inner == msgOneWay}
		c.arrive(r)
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		reg, err := c.pull(h)
		if r == nil {
			if err == nil {
				c.deliverReply(h, reg.mem[:h.length])
				c.in.put(reg)
			}
			return // on error the conn has failed and its callers know
		}
		var bp *[]byte
		if err == nil {
			bp = c.holdIn(reg, int(h.length))
		}
		c.rxMu.Lock()
		r.buf, r.failed = bp, err != nil
		r.ready = true
		c.drainRxLocked()
		c.rxMu.Unlock()
	}()
}

// arrive queues a request behind any still being pulled and dispatches
// what is ready, in order.
func (c *conn) arrive(r *rxReq) {
	c.rxMu.Lock()
	c.rxq = append(c.rxq, r)
	c.drainRxLocked()
	c.rxMu.Unlock()
}

// drainRxLocked dispatches the ready requests at the head of the queue.
// Caller holds rxMu. Dispatch may give a payload back (releaseRequest)
// before it returns, so releaseRequest must never take rxMu: on the poller
// that would stop every connection's completions for good.
func (c *conn) drainRxLocked() {
	for len(c.rxq) > 0 && c.rxq[0].ready {
		r := c.rxq[0]
		c.rxq[0] = nil
		c.rxq = c.rxq[1:]
		if r.failed {
			continue
		}
		c.disp.Dispatch(r.id, r.method, *r.buf, r.oneWay, r.buf)
		if r.cancelled {
			c.disp.Cancel(r.id)
		}
	}
}

func (c *conn) cancelRequest(id uint64) {
	c.rxMu.Lock()
	defer c.rxMu.Unlock()
	for _, r := range c.rxq {
		if r.id == id {
			r.cancelled = true
			return
		}
	}
	c.disp.Cancel(id)
}

// holdIn records that the first n bytes of rendezvous region reg are a
// request payload, until releaseRequest gets it back, and returns it.
func (c *conn) holdIn(reg *region, n int) *[]byte {
	b := reg.mem[:n]
	c.rzMu.Lock()
	c.rzIn[&b] = reg
	c.rzMu.Unlock()
	return &b
}

// releaseRequest takes back a request payload once it has been answered or
// dropped; the dispatcher may call it with rxMu held (drainRxLocked).
func (c *conn) releaseRequest(bp *[]byte) {
	c.rzMu.Lock()
	reg, ok := c.rzIn[bp]
	delete(c.rzIn, bp)
	c.rzMu.Unlock()
	if ok {
		c.in.put(reg)
		return
	}
	bufpool.Put(bp)
}

// deliverReply hands a reply (copied: the caller owns it) to its call.
func (c *conn) deliverReply(h header, body []byte) {
	c.mu.Lock()
	ch := c.calls[h.id]
	delete(c.calls, h.id)
	c.mu.Unlock()
	if ch == nil {
		return // the caller gave up
	}
	inner := h.typ
	if inner == msgRTS || inner == msgRTW {
		inner = h.inner
	}
	if inner == msgError {
		ch <- result{err: &fabric.RemoteError{Code: fabric.Code(h.aux), Message: string(body)}}
		return
	}
	out := make([]byte, len(body))
	copy(out, body)
	ch <- result{data: out}
}

// respond sends the outcome of one request; the dispatcher calls it once
// per request after the handler returns. A one-way message is
// acknowledged so the sender's window opens. It returns once reply has been
// copied into registered memory.
func (c *conn) respond(id uint64, oneWay bool, reply []byte, err error) {
	switch {
	case oneWay:
		err = c.sendControl(c.ctx, msgAck, id)
	case err != nil:
		re := fabric.AsRemote(err)
		msg := re.Message
		if len(msg) >= c.threshold {
			msg = msg[:c.threshold-1]
		}
		err = c.sendMessage(c.ctx, msgError, 0, id, uint32(re.Code), [][]byte{[]byte(msg)}, len(msg))
	case len(reply) > c.cfg.MaxMessageSize:
		msg := fmt.Sprintf("reply of %d bytes exceeds the %d-byte limit", len(reply), c.cfg.MaxMessageSize)
		err = c.sendMessage(c.ctx, msgError, 0, id, uint32(fabric.CodeInternal), [][]byte{[]byte(msg)}, len(msg))
	default:
		err = c.sendMessage(c.ctx, msgReply, 0, id, 0, [][]byte{reply}, len(reply))
	}
	if err != nil && c.ctx.Err() == nil {
		c.t.log.Debug("rdma: sending a response failed", "peer", c.peer, "id", id, "err", err)
	}
}

// acquire takes a slot of the in-flight window.
func (c *conn) acquire(ctx context.Context) error {
	select {
	case c.window <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.errClosedLocked()
	}
}

// Call implements fabric.Conn.
func (c *conn) Call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	return c.call(ctx, method, [][]byte{payload}, len(payload))
}

// CallVector implements fabric.VectorCaller: Call with the payload given as
// pieces, which the peer's handler receives concatenated. Each piece is
// copied once, straight into registered memory (the send ring slot of an
// eager message, the rendezvous source region of a large one), never into
// an intermediate buffer. The pieces are only read, and only until
// CallVector returns; nil, empty and empty pieces are allowed. Errors,
// cancellation, the in-flight window, credits and counters are Call's.
func (c *conn) CallVector(ctx context.Context, method fabric.Method, payload [][]byte) ([]byte, error) {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	return c.call(ctx, method, payload, n)
}

// call runs a Call whose payload is the concatenation of pieces, n bytes.
func (c *conn) call(ctx context.Context, method fabric.Method, pieces [][]byte, n int) ([]byte, error) {
	if n > c.cfg.MaxMessageSize {
		return nil, fmt.Errorf("rdma: call payload of %d bytes exceeds %d: %w", n, c.cfg.MaxMessageSize, fabric.ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.calls_.Add(1)
	if err := c.acquire(ctx); err != nil {
		c.callErrs.Add(1)
		return nil, err
	}
	defer func() { <-c.window }()
	id := c.nextCall.Add(1)
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.failed {
		err := c.errClosedLocked()
		c.mu.Unlock()
		c.callErrs.Add(1)
		return nil, err
	}
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.sendMessage(ctx, msgCall, method, id, 0, pieces, n); err != nil {
		c.forget(id)
		c.callErrs.Add(1)
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			c.callErrs.Add(1)
		}
		return r.data, r.err
	case <-ctx.Done():
		c.callErrs.Add(1)
		if c.forget(id) {
			c.bg.Add(1)
			go func() {
				defer c.bg.Done()
				_ = c.sendControl(c.ctx, msgCancel, id)
			}()
		}
		return nil, ctx.Err()
	}
}

// forget drops a call's waiter; it reports whether the call was still open.
func (c *conn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.calls[id]
	delete(c.calls, id)
	return ok && !c.failed
}

// Send implements fabric.Conn.
func (c *conn) Send(ctx context.Context, method fabric.Method, payload []byte) error {
	if len(payload) > c.cfg.MaxMessageSize {
		return fmt.Errorf("rdma: send payload of %d bytes exceeds %d: %w", len(payload), c.cfg.MaxMessageSize, fabric.ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sends.Add(1)
	if err := c.acquire(ctx); err != nil {
		return err
	}
	id := c.nextCall.Add(1)
	c.mu.Lock()
	c.sendsOut[id] = struct{}{}
	c.mu.Unlock()
	if err := c.sendMessage(ctx, msgOneWay, method, id, 0, [][]byte{payload}, len(payload)); err != nil {
		c.mu.Lock()
		_, ok := c.sendsOut[id]
		delete(c.sendsOut, id)
		c.mu.Unlock()
		if ok {
			<-c.window
		}
		return err
	}
	return nil
}

// Stats implements fabric.Conn.
func (c *conn) Stats() fabric.ConnStats {
	return fabric.ConnStats{
		Transport: "rdma", Calls: c.calls_.Load(), CallErrors: c.callErrs.Load(), Sends: c.sends.Load(),
		BytesSent: c.bytesSent.Load(), BytesReceived: c.bytesRecv.Load(), InFlight: len(c.window),
	}
}

// RemoteAddr implements fabric.Conn.
func (c *conn) RemoteAddr() string { return c.peer }

func (c *conn) info() ConnInfo {
	c.mu.Lock()
	ci := ConnInfo{Peer: c.peer, Dialed: c.dialed, LocalQPN: c.qpn, RemoteQPN: c.rqpn, SendCredits: c.sendCredits,
		CreditsOwed: int(c.freed - c.advertised), FailureReason: c.failReason}
	if c.qp != nil {
		st := int(C.wf_qp_state(c.qp))
		ci.QPState = qpStateNames[st]
		if st < 0 {
			ci.QPState = "unknown: " + errnoErr(C.int(st)).Error()
		}
	} else {
		ci.QPState = "destroyed"
	}
	c.mu.Unlock()
	ci.MessagesSent, ci.MessagesRecv = c.msgsSent.Load(), c.msgsRecv.Load()
	ci.BytesSent, ci.BytesRecv = c.bytesSent.Load(), c.bytesRecv.Load()
	ci.Rendezvous, ci.Errors = c.rendezvous.Load(), c.errs.Load()
	ci.KeyScope, ci.WindowsBound, ci.WindowsRevoked = c.keyScope, c.windowsBound.Load(), c.windowsRevoked.Load()
	return ci
}

// fail moves the conn to failed (see failLocked); it reports whether this
// call did, rather than an earlier one.
func (c *conn) fail(reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failLocked(reason)
}

// failLocked moves the conn to failed: waiting callers get ErrClosed, handler
// contexts are cancelled, the QP goes to ERR (flushing its work requests)
// and the control connection is closed so the peer learns at once.
func (c *conn) failLocked(reason string) bool {
	if c.failed {
		return false
	}
	c.failed = true
	c.failReason = reason
	err := c.errClosedLocked()
	for id, ch := range c.calls {
		ch <- result{err: err}
		delete(c.calls, id)
	}
	for seq, ch := range c.reads {
		ch <- err
		delete(c.reads, seq)
	}
	c.cancel()
	c.disp.Close()
	if c.qp != nil {
		C.wf_qp_error(c.qp)
	}
	_ = c.ctl.Close()
	c.wakeLocked()
	if reason != "closed" {
		c.t.log.Debug("rdma: connection failed", "peer", c.peer, "qpn", c.qpn, "reason", reason)
	}
	return true
}

// Close implements fabric.Conn: it fails in-flight calls with ErrClosed,
// waits for the connection's goroutines, drains the QP, deregisters the
// connection's memory and hands the QP to the transport, which destroys it
// once the device says it takes no more receive buffers (retire.go). It is
// idempotent.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.fail("closed")
		c.bg.Wait()
		_ = c.disp.Wait(context.Background())
		c.drain()
		c.t.unregister(c)
		c.destroy()
		close(c.closed)
	})
	return nil
}

// drain waits (bounded) until every posted work request has completed:
// after the move to ERR they all flush, and a signaled marker posted last
// tells when.
func (c *conn) drain() {
	c.mu.Lock()
	if c.sqDone >= c.sqHead {
		c.mu.Unlock()
		return
	}
	done := make(chan struct{})
	c.drained, c.drainAt = done, c.sqHead
	if c.depth-(c.sqHead-c.sqDone) > 0 { // slots set aside for invalidations are free too: none will be posted
		seq := c.sqHead
		c.sqHead++
		c.drainAt = c.sqHead
		m := []wr{{wr_id: C.uint64_t(sendID(c.id, seq)), laddr: C.uint64_t(c.ring.addr), len: 0, lkey: C.uint32_t(c.ring.lkey()), opcode: opSend, flags: flagSignal}}
		var bad C.int
		if rc := C.wf_post_send(c.qp, &m[0], 1, &bad); rc != 0 {
			c.t.log.Debug("rdma: posting the drain marker failed; waiting for the work posted before it", "qpn", c.qpn, "err", errnoErr(rc))
			c.sqHead--
			c.drainAt = c.sqHead
			if c.sqDone >= c.drainAt {
				close(done)
				c.drained = nil
			}
		}
	}
	c.mu.Unlock()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		c.mu.Lock()
		head, doneSeq := c.sqHead, c.sqDone
		c.mu.Unlock()
		c.t.log.Warn("rdma: QP did not flush within 2s; destroying it anyway", "qpn", c.qpn,
			"state", qpStateNames[int(C.wf_qp_state(c.qp))], "posted", head, "completed", doneSeq)
	}
}

// destroy releases every region of the conn, then its QP and send ring
// (Transport.releaseQP). Caller guarantees nothing posted is still running
// (drained or never connected). It is idempotent.
func (c *conn) destroy() {
	c.mu.Lock()
	c.failed = true
	for c.posting { // a poster outside the lock may still be in ibv_post_send
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.mu.Lock()
	}
	if c.failReason == "" {
		c.failReason = "closed"
	}
	c.cancel()
	// Regions first: deallocating a window still bound to the QP drops its
	// hold on the QP, which the provider may wait for when destroying it.
	for rz, reg := range c.rzOut {
		c.out.release(reg)
		delete(c.rzOut, rz)
	}
	for rz, p := range c.rzW { // targets offered, transfer not done
		if p.reg != nil {
			c.in.release(p.reg)
		}
		delete(c.rzW, rz)
	}
	c.out.close()
	c.in.close()
	qp, ring, rtr := c.qp, c.ring, c.reachedRTR
	c.qp, c.ring = nil, nil
	c.mu.Unlock()
	switch {
	case qp != nil:
		c.t.releaseQP(c, qp, ring, rtr)
	case ring != nil:
		c.t.freeRegion(ring, "send ring")
	}
}

// rzCache keeps registered rendezvous regions of one connection for reuse,
// in power-of-two size classes from 64 KiB, up to limit bytes; its regions
// are deregistered when the connection closes.
type rzCache struct {
	pd      *C.struct_ibv_pd
	access  C.int
	windows bool // each region gets a type-2 memory window
	limit   int
	t       *Transport // logs what the device refuses to free

	mu     sync.Mutex
	free   map[int][]*region
	cached int
	closed bool

	// breakRegistration (tests only): while it is set, each new region is
	// deregistered right after allocation, so a peer's RDMA access fails.
	breakRegistration *atomic.Bool
}

func sizeClass(n int) int {
	c := 64 << 10
	for c < n {
		c <<= 1
	}
	return c
}

func (z *rzCache) get(n int) (*region, error) {
	cl := sizeClass(n)
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return nil, fmt.Errorf("rdma: connection closed: %w", fabric.ErrClosed)
	}
	if l := z.free[cl]; len(l) > 0 && (z.breakRegistration == nil || !z.breakRegistration.Load()) {
		r := l[len(l)-1]
		z.free[cl] = l[:len(l)-1]
		z.cached -= cl
		z.mu.Unlock()
		return r, nil
	}
	brk := z.breakRegistration != nil && z.breakRegistration.Load()
	z.mu.Unlock()
	r, err := newRegion(z.pd, cl, z.access)
	if err != nil {
		return nil, err
	}
	if z.windows {
		if err := r.addWindow(z.pd); err != nil {
			z.release(r)
			return nil, err
		}
	}
	switch {
	case brk && r.mw != nil:
		r.broken = true // exposed under a key never bound
	case brk:
		C.ibv_dereg_mr(r.mr)
		r.mr = nil
	}
	return r, nil
}

func (z *rzCache) put(r *region) {
	cl := len(r.mem)
	z.mu.Lock()
	if !z.closed && r.mr != nil && !r.broken && !r.bound && z.cached+cl <= z.limit {
		if z.free == nil {
			z.free = map[int][]*region{}
		}
		z.free[cl] = append(z.free[cl], r)
		z.cached += cl
		z.mu.Unlock()
		return
	}
	z.mu.Unlock()
	z.release(r)
}

// release frees r, logging what the device refused.
func (z *rzCache) release(r *region) { z.t.freeRegion(r, "rendezvous region") }

func (z *rzCache) close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	for _, l := range z.free {
		for _, r := range l {
			z.release(r)
		}
	}
	z.free, z.cached = nil, 0
}
