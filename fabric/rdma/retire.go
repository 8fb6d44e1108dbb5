//go:build linux && cgo && rdma

package rdma

/*
#include "wf_verbs.h"
*/
import "C"

import (
	"fmt"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// The life of a QP. Every QP is attached to the transport's shared receive
// queue, so it may hold receive buffers it took from the SRQ when it is
// closed. The verbs contract for such a QP is: move it to ERR, wait for the
// affiliated event IBV_EVENT_QP_LAST_WQE_REACHED (no more receive WQEs will
// be taken for it; those it took complete, flushed, on the CQ, where the
// poller reposts them), then destroy it. A QP destroyed earlier may lose
// the buffers it took, and the SRQ shrinks for good.
//
// So a connection's Close (which has moved the QP to ERR and drained its
// send queue) does not destroy a QP that reached RTR: it hands it over with
// its send ring to the transport (releaseQP), which destroys it when the
// event arrives (onLastWQE, from the event reader) or, if it never does,
// after Config.LastWQETimeout (reap, every asyncPollLimit), logging that.
// Close of the transport, and a rebuild after the device was lost, destroy
// every QP at once: the SRQ goes with them.
//
// t.live holds the connections that own a QP, t.creating counts those
// creating one; both under t.mu. The transport releases its device only
// when both are empty and every retired QP is destroyed.

// retiredQP is the QP of a closed connection waiting for
// IBV_EVENT_QP_LAST_WQE_REACHED, with the send ring its last work requests
// used.
type retiredQP struct {
	qp      *C.struct_ibv_qp
	ring    *region
	since   time.Time
	lastWQE bool // the event arrived
}

// admitQP lets a connection create a QP, or says why not (the transport is
// closed or its device is lost). Call admitted after the attempt.
func (t *Transport) admitQP() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("rdma: transport closed: %w", fabric.ErrClosed)
	}
	if t.lost {
		return t.refusing
	}
	t.creating++
	return nil
}

// admitted ends what admitQP began: c now owns the QP it created (c.qp and
// c.qpn set), or none.
func (t *Transport) admitted(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.creating--
	if c.qp != nil {
		t.live[c] = struct{}{}
	}
}

// releaseQP takes over the QP and send ring of c, which is being destroyed
// and whose QP is in ERR with nothing posted. A QP that never reached RTR
// took no receive buffers, and one whose event already arrived has none
// left: those are destroyed now, as is every QP while the transport closes
// or its device is lost. The others wait for the event (see above).
func (t *Transport) releaseQP(c *conn, qp *C.struct_ibv_qp, ring *region, reachedRTR bool) {
	t.mu.Lock()
	if reachedRTR && !c.lastWQE && !t.closed && !t.lost {
		t.retired[c.qpn] = &retiredQP{qp: qp, ring: ring, since: time.Now()}
		delete(t.live, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.destroyQP(c.qpn, qp, ring)
	t.mu.Lock()
	delete(t.live, c)
	t.mu.Unlock()
}

// onLastWQE records IBV_EVENT_QP_LAST_WQE_REACHED for QP qpn (retired, or
// still owned by a connection that failed and has not closed yet) and
// destroys the QP if it is retired.
func (t *Transport) onLastWQE(qpn uint32) {
	t.lastWQEEvents.Add(1)
	t.mu.Lock()
	if r := t.retired[qpn]; r != nil {
		r.lastWQE = true
	} else {
		for c := range t.live {
			if c.qpn == qpn {
				c.lastWQE = true
			}
		}
	}
	t.mu.Unlock()
	t.reap(time.Now(), false)
}

// reap destroys the retired QPs whose event arrived and, past
// Config.LastWQETimeout, those whose event never did (all of them with
// all set), logging each timeout: the first at warning level, the next
// ones at debug level (Info().LastWQETimeouts counts them all).
func (t *Transport) reap(now time.Time, all bool) {
	type done struct {
		qpn uint32
		r   *retiredQP
	}
	var ds []done
	t.mu.Lock()
	dev := t.devName
	for qpn, r := range t.retired {
		if all || r.lastWQE || now.Sub(r.since) >= t.cfg.LastWQETimeout {
			ds = append(ds, done{qpn, r})
			delete(t.retired, qpn)
		}
	}
	t.mu.Unlock()
	for _, d := range ds {
		if !d.r.lastWQE && !all {
			t.lastWQETimeouts.Add(1)
			msg := "rdma: IBV_EVENT_QP_LAST_WQE_REACHED did not arrive for a closed connection's QP; destroying it anyway: " +
				"receive buffers it took from the shared receive queue, if any, may be lost (a device may not raise the event at all: " +
				"rxe on Linux 6.1 does not); later ones are logged at debug level and counted in Info().LastWQETimeouts"
			args := []any{"device", dev, "qpn", d.qpn, "waited", now.Sub(d.r.since).Round(time.Millisecond), "timeout", t.cfg.LastWQETimeout}
			if t.lastWQEWarned.CompareAndSwap(false, true) {
				t.log.Warn(msg, args...)
			} else {
				t.log.Debug(msg, args...)
			}
		}
		t.destroyQP(d.qpn, d.r.qp, d.r.ring)
	}
}

// destroyQP destroys a QP that nothing refers to any more, then frees its
// send ring.
func (t *Transport) destroyQP(qpn uint32, qp *C.struct_ibv_qp, ring *region) {
	if rc := C.ibv_destroy_qp(qp); rc != 0 {
		t.log.Error("rdma: destroying a QP failed; its resources stay allocated", "qpn", qpn, "err", errnoErr(rc))
	}
	if ring != nil {
		t.freeRegion(ring, "send ring")
	}
}

// freeRegion frees r (what says what it is), logging what the device
// refused to release: whatever stays allocated keeps the device from
// being removed until the context is closed.
func (t *Transport) freeRegion(r *region, what string) {
	if err := r.free(); err != nil {
		t.log.Error("rdma: releasing a "+what+" failed; it stays allocated until the device context closes", "err", err)
	}
}

// retiredQPState reports the state (ibv_query_qp) of retired QP qpn and
// whether it is still waiting for its event; for tests.
func (t *Transport) retiredQPState(qpn uint32) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	r := t.retired[qpn]
	if r == nil {
		return "", false
	}
	return qpStateNames[int(C.wf_qp_state(r.qp))], true
}
