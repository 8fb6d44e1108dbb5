//go:build linux && cgo && rdma

package rdma

/*
#include "wf_verbs.h"
*/
import "C"

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Asynchronous events that the transport acts on.
const (
	evQPFatal      = C.IBV_EVENT_QP_FATAL
	evQPReqErr     = C.IBV_EVENT_QP_REQ_ERR
	evQPAccessErr  = C.IBV_EVENT_QP_ACCESS_ERR
	evPathMigErr   = C.IBV_EVENT_PATH_MIG_ERR
	evLastWQE      = C.IBV_EVENT_QP_LAST_WQE_REACHED
	evCQErr        = C.IBV_EVENT_CQ_ERR
	evSRQErr       = C.IBV_EVENT_SRQ_ERR
	evDeviceFatal  = C.IBV_EVENT_DEVICE_FATAL
	evPortActive   = C.IBV_EVENT_PORT_ACTIVE
	evPortErr      = C.IBV_EVENT_PORT_ERR
	evGIDChange    = C.IBV_EVENT_GID_CHANGE
	evCommEst      = C.IBV_EVENT_COMM_EST
	evSQDrained    = C.IBV_EVENT_SQ_DRAINED
	evSRQLimit     = C.IBV_EVENT_SRQ_LIMIT_REACHED
	asyncPollLimit = 200 // ms; the goroutine also wakes on asyncWake
)

var eventNames = map[int]string{
	evQPFatal: "IBV_EVENT_QP_FATAL", evQPReqErr: "IBV_EVENT_QP_REQ_ERR", evQPAccessErr: "IBV_EVENT_QP_ACCESS_ERR",
	evPathMigErr: "IBV_EVENT_PATH_MIG_ERR", evLastWQE: "IBV_EVENT_QP_LAST_WQE_REACHED", evCQErr: "IBV_EVENT_CQ_ERR",
	evSRQErr: "IBV_EVENT_SRQ_ERR", evDeviceFatal: "IBV_EVENT_DEVICE_FATAL", evPortActive: "IBV_EVENT_PORT_ACTIVE",
	evPortErr: "IBV_EVENT_PORT_ERR", evGIDChange: "IBV_EVENT_GID_CHANGE", evCommEst: "IBV_EVENT_COMM_EST",
	evSQDrained: "IBV_EVENT_SQ_DRAINED", evSRQLimit: "IBV_EVENT_SRQ_LIMIT_REACHED",
}

// eventName names an event type as libibverbs' header does, or as
// ibv_event_type_str describes it.
func eventName(typ int) string {
	if n, ok := eventNames[typ]; ok {
		return n
	}
	return fmt.Sprintf("%s (event %d)", C.GoString(C.ibv_event_type_str(C.enum_ibv_event_type(typ))), typ)
}

// events is the transport's asynchronous-event goroutine, which also owns
// the device's life: it starts the poller, sleeps in poll(2) on the device
// context's async fd (non-blocking) and asyncWake, at most asyncPollLimit at
// a time, handles and acknowledges each event, destroys retired QPs whose
// time has come (retire.go), checks that the device is still there, and
// rebuilds the transport when the device was lost (rebuild.go). It ends,
// stopping the poller, when the transport stops.
func (t *Transport) events() {
	defer close(t.eventsDone)
	t.startPoller()
	defer t.stopPoller()
	for !t.stop.Load() {
		if t.isLost() {
			t.rebuild()
			continue
		}
		var typ, port C.int
		var qpn C.uint32_t
		rc := C.wf_async_next(t.ctx, C.int(t.asyncWake), asyncPollLimit, &typ, &qpn, &port)
		switch {
		case rc < 0:
			t.log.Error("rdma: reading asynchronous events failed; retrying", "device", t.devName, "err", errnoErr(rc))
			time.Sleep(asyncPollLimit * time.Millisecond)
		case rc > 0:
			t.onEvent(int(typ), uint32(qpn), int(port))
		}
		t.reap(time.Now(), false)
		t.checkPresent()
	}
}

// wakeEvents wakes the event reader from its poll(2).
func (t *Transport) wakeEvents() {
	_, _ = unix.Write(t.asyncWake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// onEvent acts on one asynchronous event: a QP error fails its
// connection; the port going down fails every connection and refuses new
// ones until it is ACTIVE again; a CQ, SRQ or device error loses the
// device: every connection fails, new ones are refused, and the event
// reader rebuilds the transport on a fresh context once the device is back;
// the last WQE of a closed connection's QP lets it be destroyed.
func (t *Transport) onEvent(typ int, qpn uint32, port int) {
	name := eventName(typ)
	t.asyncEvents.Add(1)
	t.mu.Lock()
	t.lastEvent = fmt.Sprintf("%s at %s", name, time.Now().UTC().Format(time.RFC3339Nano))
	t.mu.Unlock()
	switch typ {
	case evQPFatal, evQPReqErr, evQPAccessErr, evPathMigErr:
		t.mu.RLock()
		c := t.byQPN[qpn]
		t.mu.RUnlock()
		t.log.Warn("rdma: asynchronous QP error", "event", name, "qpn", qpn, "known", c != nil)
		if c != nil {
			c.errs.Add(1)
			if c.fail(fmt.Sprintf("%s on QP %d", name, qpn)) {
				t.eventFailed.Add(1)
			}
		}
	case evPortErr:
		if port != t.port {
			t.log.Info("rdma: another port went down", "event", name, "device", t.devName, "port", port)
			return
		}
		reason := fmt.Sprintf("%s port %d went down (%s)", t.devName, port, name)
		t.log.Warn("rdma: port down: failing every connection and refusing new ones until it is ACTIVE again",
			"event", name, "device", t.devName, "port", port)
		t.refuse(fmt.Errorf("rdma: %s at %s; connections resume when the port is ACTIVE again: %w", reason, time.Now().UTC().Format(time.RFC3339), ErrPortDown))
		t.failAll(reason)
	case evPortActive:
		if port != t.port {
			return
		}
		t.mu.Lock()
		was := t.refusing
		if !t.lost {
			t.refusing = nil
		}
		t.mu.Unlock()
		t.rereadGIDs()
		t.log.Info("rdma: port ACTIVE again; accepting connections", "event", name, "device", t.devName, "port", port, "was", errString(was))
	case evGIDChange:
		if port == t.port {
			t.rereadGIDs()
		}
		t.log.Info("rdma: GID table changed", "event", name, "device", t.devName, "port", port)
	case evCQErr, evSRQErr, evDeviceFatal:
		t.deviceLost(fmt.Sprintf("%s reported %s", t.devName, name))
	case evLastWQE:
		t.log.Debug("rdma: asynchronous event", "event", name, "qpn", qpn)
		t.onLastWQE(qpn)
	case evCommEst, evSQDrained, evSRQLimit:
		t.log.Debug("rdma: asynchronous event", "event", name, "qpn", qpn)
	default:
		t.log.Info("rdma: asynchronous event", "event", name, "device", t.devName, "port", port, "qpn", qpn)
	}
}

// refuse makes new connections fail with err until the port is back,
// unless the device is lost, which says more.
func (t *Transport) refuse(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lost {
		t.refusing = err
	}
}

// failAll fails every live connection of the transport with reason.
func (t *Transport) failAll(reason string) {
	t.mu.RLock()
	cs := make([]*conn, 0, len(t.byID))
	for _, c := range t.byID {
		cs = append(cs, c)
	}
	t.mu.RUnlock()
	for _, c := range cs {
		if c.fail(reason) {
			t.eventFailed.Add(1)
		}
	}
}

// usable reports why new connections are refused now, or nil.
func (t *Transport) usable() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.refusing
}

// rereadGIDs refreshes the port's GID table after the port came back or
// the table changed, keeping the chosen GID if it can no longer be chosen.
func (t *Transport) rereadGIDs() {
	gids, err := readGIDs(sysfsRoot, t.devName, t.port)
	if err != nil {
		t.log.Warn("rdma: re-reading the GID table failed; keeping the old one", "device", t.devName, "err", err)
		return
	}
	g, err := chooseGID(gids, t.cfg.GIDIndex, nil, t.linkLayer)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gids = gids
	if err == nil {
		t.gid = g
	}
}

// Info describes the transport as a whole, for diagnostics.
func (t *Transport) Info() TransportInfo {
	ti := TransportInfo{AsyncEvents: t.asyncEvents.Load(), ConnsFailedByEvents: t.eventFailed.Load(),
		LastWQETimeouts: t.lastWQETimeouts.Load(), Rebuilds: t.rebuilds.Load()}
	t.mu.RLock()
	defer t.mu.RUnlock()
	ti.Device, ti.Port, ti.KeyScope = t.devName, t.port, t.keyScope
	var pa C.struct_ibv_port_attr
	// The context is released only under t.mu, after closed is set or
	// while the device is lost.
	if !t.closed && t.ctx != nil && C.wf_query_port(t.ctx, C.uint8_t(t.port), &pa) == 0 {
		ti.PortState = portStateString(pa.state)
	}
	ti.LastAsyncEvent = t.lastEvent
	ti.Refusing = errString(t.refusing)
	ti.GIDIndex = t.gid.Index
	ti.QPsAwaitingLastWQE = len(t.retired)
	ti.LastRebuild = t.lastRebuild
	return ti
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
