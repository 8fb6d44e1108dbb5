//go:build linux && cgo && rdma

package rdma

/*
#include "wf_verbs.h"
*/
import "C"

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/weftsearch/weft/fabric"
)

// Available reports whether this build carries the verbs transport.
const Available = true

// wr_id layout: kind in bits 56..63; for sends the connection id in bits
// 32..55 and the send sequence number (mod 2^32) below; for receives the
// buffer index.
const (
	kindSend = 1
	kindRecv = 2
)

func sendID(conn uint32, seq uint64) uint64 {
	return kindSend<<56 | uint64(conn&0xffffff)<<32 | seq&0xffffffff
}

// Transport is a fabric.Transport over one verbs device port. It owns the
// device context, its protection domain, completion channel and queue,
// shared receive queue and eager receive pool, the goroutine that polls
// completions and the one that reads the device's asynchronous events.
// Create it with New and release it with Close. When the device is lost (a
// fatal event, or its removal) the transport rebuilds itself on a fresh
// context once the device is back (rebuild.go); its listeners stay.
type Transport struct {
	cfg Config
	log *slog.Logger

	// The device: written by open (in New, and by a rebuild under mu while
	// no connection owns or creates a QP and the poller is stopped), read
	// by connections admitted by admitQP, the poller and the event reader.
	ctx       *C.struct_ibv_context
	pd        *C.struct_ibv_pd
	ch        *C.struct_ibv_comp_channel
	cq        *C.struct_ibv_cq
	srq       *C.struct_ibv_srq
	recv      *region
	wakefd    int
	devName   string
	devPath   string // the device's uverbs node in sysfs: gone when the device is removed
	port      int
	linkLayer string
	activeMTU int
	lid       uint16
	gids      []GIDInfo
	gid       GIDInfo
	maxMsg    int // largest single RDMA READ
	rdAtomic  int
	keyScope  string // KeyScopeWindow or KeyScopeRegion
	keyWhy    string // why KeyScopeRegion, for the log

	mu        sync.RWMutex
	byQPN     map[uint32]*conn
	byID      map[uint32]*conn
	nextID    uint32
	reserved  int // receive buffers promised to live connections
	listeners map[*listener]struct{}
	closed    bool

	// QPs (retire.go): the conns that own one, those creating one, and the
	// QPs of closed conns waiting for IBV_EVENT_QP_LAST_WQE_REACHED.
	live            map[*conn]struct{}
	creating        int
	retired         map[uint32]*retiredQP
	lastWQEEvents   atomic.Uint64 // IBV_EVENT_QP_LAST_WQE_REACHED seen, for tests
	lastWQETimeouts atomic.Uint64
	lastWQEWarned   atomic.Bool

	// Asynchronous events (events.go): refusing, when set, is why new
	// connections are refused (port down, or device lost until rebuilt).
	asyncWake   int
	eventsDone  chan struct{}
	asyncEvents atomic.Uint64
	eventFailed atomic.Uint64 // connections failed by an asynchronous event
	lastEvent   string
	refusing    error
	// Device loss (rebuild.go): lost from the fatal event (or removal)
	// until the rebuild is done; lostReason says why.
	lost        bool
	lostReason  string
	rebuilds    atomic.Uint64
	lastRebuild string

	wcErrors atomic.Uint64 // work completions with an error status (not flushes)
	// The poller's spins that ended in a sleep: how many, the shortest
	// (ns), and the latest one's length (ns) and empty polls; for tests and
	// calibration.
	pollSleeps    atomic.Uint64
	shortestSpin  atomic.Int64
	lastSpin      atomic.Int64
	lastSpinPolls atomic.Uint64
	callsIn       atomic.Uint64 // calls other than pings that arrived, for tests
	// breakOut, breakIn (tests only): while set, every rendezvous region
	// handed out (sender copies, receiver targets) is deregistered right
	// after allocation, so the peer's RDMA access fails: a QP error mid-call.
	breakOut, breakIn atomic.Bool
	// testCTSHook (tests only; set before any connection exists) runs in the
	// sender's goroutine for each CTS before it WRITEs the rendezvous.
	testCTSHook func(h header)
	// The poller is started and stopped by the event reader (pollerDone,
	// pollerUp are that goroutine's); pollQuit stops it for a rebuild.
	pollerDone chan struct{}
	pollerUp   bool
	pollQuit   atomic.Bool
	stop       atomic.Bool
	closeOnce  sync.Once
}

var _ fabric.Transport = (*Transport)(nil)

// New opens the device named by cfg (or the first with an active port),
// checks that it can run (port active, a RoCE v2 GID, enough locked memory),
// registers the receive pool and starts the completion poller. Errors that
// mean "RDMA cannot run here" wrap fabric.ErrNotSupported, so a caller can
// fall back to TCP. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	need := int64(cfg.RecvBuffers)*int64(cfg.EagerSize) + 4<<20
	if err := checkMemlock(need); err != nil {
		return nil, err
	}
	t := newTransport(cfg, logger)
	err := t.openFDs()
	if err == nil {
		err = t.open()
	}
	if err != nil {
		t.releaseDevice()
		t.closeFDs()
		return nil, err
	}
	go t.events()
	t.log.Info("rdma transport ready", "device", t.devName, "port", t.port, "gid_index", t.gid.Index,
		"gid", t.gid.GID.String(), "mtu", t.activeMTU, "recv_buffers", cfg.RecvBuffers, "key_scope", t.keyScope)
	if t.keyScope == KeyScopeWindow {
		t.log.Info("rdma: rendezvous keys are type-2 memory windows bound to one connection's QP for one transfer", "device", t.devName)
	} else {
		t.log.Warn("rdma: rendezvous keys are memory-region keys, valid on every connection of this transport while registered; "+t.keyWhy,
			"device", t.devName, "key_scope", t.keyScope)
	}
	return t, nil
}

// newTransport is a transport with nothing open yet: no eventfds, no
// device, no goroutines.
func newTransport(cfg Config, logger *slog.Logger) *Transport {
	t := &Transport{
		cfg: cfg, log: logger.With("transport", "rdma"), wakefd: -1, asyncWake: -1, eventsDone: make(chan struct{}),
		byQPN: map[uint32]*conn{}, byID: map[uint32]*conn{}, listeners: map[*listener]struct{}{},
		live: map[*conn]struct{}{}, retired: map[uint32]*retiredQP{},
	}
	t.shortestSpin.Store(math.MaxInt64)
	return t
}

// openFDs creates the eventfds that wake the poller and the event reader;
// they live as long as the transport.
func (t *Transport) openFDs() error {
	var err error
	if t.wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("rdma: eventfd for the poller: %w", err)
	}
	if t.asyncWake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fmt.Errorf("rdma: eventfd for the event reader: %w", err)
	}
	return nil
}

func (t *Transport) closeFDs() {
	for _, fd := range []*int{&t.wakefd, &t.asyncWake} {
		if *fd >= 0 {
			_ = unix.Close(*fd)
			*fd = -1
		}
	}
}

// open opens the device named by the config and creates everything the
// transport needs on it; on error the caller releases what it made
// (releaseDevice).
func (t *Transport) open() error {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil || n == 0 {
		if list != nil {
			C.ibv_free_device_list(list)
		}
		return fmt.Errorf("rdma: no RDMA device found (is a driver such as mlx5_ib or rdma_rxe loaded? `rdma link` lists devices): %w", fabric.ErrNotSupported)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	var names []string
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	pick := -1
	for i, name := range names {
		if t.cfg.Device == "" || t.cfg.Device == name {
			pick = i
			break
		}
	}
	if pick < 0 {
		return fmt.Errorf("rdma: device %q not found; devices here: %s: %w", t.cfg.Device, strings.Join(names, ", "), fabric.ErrNotSupported)
	}
	t.devName = names[pick]
	t.devPath = C.GoString(&devs[pick].dev_path[0])
	t.port = t.cfg.Port
	t.ctx = C.ibv_open_device(devs[pick])
	if t.ctx == nil {
		return fmt.Errorf("rdma: opening device %s failed (is /dev/infiniband/uverbs* accessible?): %w", t.devName, fabric.ErrNotSupported)
	}
	var dattr C.struct_ibv_device_attr
	if rc := C.ibv_query_device(t.ctx, &dattr); rc != 0 {
		return fmt.Errorf("rdma: querying device %s: %v", t.devName, errnoErr(rc))
	}
	if t.port > int(dattr.phys_port_cnt) {
		return fmt.Errorf("rdma: device %s has %d ports, config asks for port %d: %w", t.devName, dattr.phys_port_cnt, t.port, fabric.ErrNotSupported)
	}
	var pattr C.struct_ibv_port_attr
	if rc := C.wf_query_port(t.ctx, C.uint8_t(t.port), &pattr); rc != 0 {
		return fmt.Errorf("rdma: querying %s port %d: %v", t.devName, t.port, errnoErr(rc))
	}
	if pattr.state != C.IBV_PORT_ACTIVE {
		return fmt.Errorf("rdma: %s port %d is %s, not ACTIVE; check the link and the bound netdev (`rdma link`): %w", t.devName, t.port, portStateString(pattr.state), fabric.ErrNotSupported)
	}
	t.activeMTU = mtuBytes(pattr.active_mtu)
	t.lid = uint16(pattr.lid)
	t.linkLayer = "Ethernet"
	if pattr.link_layer == C.IBV_LINK_LAYER_INFINIBAND {
		t.linkLayer = "InfiniBand"
	}
	if t.activeMTU < 256 {
		return fmt.Errorf("rdma: %s port %d active MTU %d is unusable: %w", t.devName, t.port, t.activeMTU, fabric.ErrNotSupported)
	}
	gids, err := readGIDs(sysfsRoot, t.devName, t.port)
	if err != nil {
		return fmt.Errorf("%w: %w", err, fabric.ErrNotSupported)
	}
	t.gids = gids
	if t.gid, err = chooseGID(gids, t.cfg.GIDIndex, nil, t.linkLayer); err != nil {
		return fmt.Errorf("%w: %w", err, fabric.ErrNotSupported)
	}
	t.maxMsg = int(pattr.max_msg_sz)
	if t.maxMsg <= 0 || t.maxMsg > 1<<30 {
		t.maxMsg = 1 << 30
	}
	t.rdAtomic = min(int(dattr.max_qp_rd_atom), 16)
	if t.rdAtomic < 1 {
		t.rdAtomic = 1
	}
	if t.cfg.RecvBuffers > int(dattr.max_srq_wr) {
		return fmt.Errorf("rdma: config RecvBuffers %d exceeds %s's shared receive queue limit %d; lower RecvBuffers", t.cfg.RecvBuffers, t.devName, dattr.max_srq_wr)
	}
	if t.cfg.SendQueueDepth > int(dattr.max_qp_wr) {
		return fmt.Errorf("rdma: config SendQueueDepth %d exceeds %s's limit %d; lower SendQueueDepth", t.cfg.SendQueueDepth, t.devName, dattr.max_qp_wr)
	}

	if t.pd = C.ibv_alloc_pd(t.ctx); t.pd == nil {
		return fmt.Errorf("rdma: allocating a protection domain on %s failed", t.devName)
	}
	t.keyScope, t.keyWhy = t.chooseKeyScope(dattr.device_cap_flags)
	if t.ch = C.ibv_create_comp_channel(t.ctx); t.ch == nil {
		return fmt.Errorf("rdma: creating a completion channel on %s failed", t.devName)
	}
	if rc := C.wf_set_nonblock(t.ch.fd); rc != 0 {
		return fmt.Errorf("rdma: making the completion channel non-blocking: %v", errnoErr(rc))
	}
	maxConns := t.cfg.RecvBuffers / (t.cfg.Credits + creditReserve)
	cqe := min(t.cfg.RecvBuffers+maxConns*t.cfg.SendQueueDepth+64, int(dattr.max_cqe))
	if t.cq = C.ibv_create_cq(t.ctx, C.int(cqe), nil, t.ch, 0); t.cq == nil {
		return fmt.Errorf("rdma: creating a completion queue of %d entries on %s failed", cqe, t.devName)
	}
	var sattr C.struct_ibv_srq_init_attr
	sattr.attr.max_wr = C.uint32_t(t.cfg.RecvBuffers)
	sattr.attr.max_sge = 1
	if t.srq = C.ibv_create_srq(t.pd, &sattr); t.srq == nil {
		return fmt.Errorf("rdma: creating a shared receive queue of %d entries on %s failed", t.cfg.RecvBuffers, t.devName)
	}
	if t.recv, err = newRegion(t.pd, t.cfg.RecvBuffers*t.cfg.EagerSize, accessLocal); err != nil {
		return err
	}
	idx := make([]int, t.cfg.RecvBuffers)
	for i := range idx {
		idx[i] = i
	}
	if err := t.postRecv(idx); err != nil {
		return err
	}
	if rc := C.wf_set_nonblock(C.wf_async_fd(t.ctx)); rc != 0 {
		return fmt.Errorf("rdma: making the asynchronous event fd of %s non-blocking: %v", t.devName, errnoErr(rc))
	}
	return nil
}

// chooseKeyScope decides how rendezvous keys are scoped: type-2 memory
// windows when the device has them (capability flags, then one window
// allocated and freed on the PD as proof) and the config allows, else
// memory-region keys, with the reason.
func (t *Transport) chooseKeyScope(caps C.uint) (scope, why string) {
	if t.cfg.DisableMemoryWindows {
		return KeyScopeRegion, "Config.DisableMemoryWindows is set"
	}
	if caps&(C.IBV_DEVICE_MEM_WINDOW_TYPE_2A|C.IBV_DEVICE_MEM_WINDOW_TYPE_2B) == 0 {
		return KeyScopeRegion, fmt.Sprintf("%s has no type-2 memory windows (device_cap_flags %#x)", t.devName, uint(caps))
	}
	mw, err := C.wf_alloc_mw2(t.pd)
	if mw == nil {
		return KeyScopeRegion, fmt.Sprintf("%s advertises type-2 memory windows but allocating one failed: %v", t.devName, err)
	}
	C.wf_dealloc_mw(mw)
	return KeyScopeWindow, ""
}

// postRecv posts eager receive buffers (by index) to the shared receive queue.
func (t *Transport) postRecv(idx []int) error {
	var ids, addrs [maxBatch]C.uint64_t
	E := t.cfg.EagerSize
	for len(idx) > 0 {
		k := min(len(idx), maxBatch)
		for i := 0; i < k; i++ {
			ids[i] = C.uint64_t(kindRecv<<56 | uint64(idx[i]))
			addrs[i] = C.uint64_t(t.recv.addr + uint64(idx[i]*E))
		}
		if rc := C.wf_post_srq(t.srq, &ids[0], &addrs[0], C.uint32_t(E), C.uint32_t(t.recv.lkey()), C.int(k)); rc != 0 {
			return fmt.Errorf("rdma: posting %d receive buffers: %v", k, errnoErr(rc))
		}
		idx = idx[k:]
	}
	return nil
}

// releaseDevice frees the device resources; only with no QP left (none
// owned, none retired) and no poller running. Where others may read the
// fields (Info), the caller holds t.mu.
//
// Every object is released even if one before it was refused, and each
// refusal is logged: a device whose driver cannot detach user contexts
// (rxe) cannot be removed while this process holds any of its files.
// Closing the context destroys whatever it still holds in the kernel, but
// a completion channel is a file of its own, which libibverbs closes only
// once no CQ refers to it.
func (t *Transport) releaseDevice() {
	var errs []error
	if t.srq != nil {
		if rc := C.ibv_destroy_srq(t.srq); rc != 0 {
			errs = append(errs, fmt.Errorf("destroying the shared receive queue: %w", errnoErr(rc)))
		}
		t.srq = nil
	}
	if t.recv != nil {
		if err := t.recv.free(); err != nil {
			errs = append(errs, fmt.Errorf("receive pool: %w", err))
		}
		t.recv = nil
	}
	if t.cq != nil {
		if rc := C.ibv_destroy_cq(t.cq); rc != 0 {
			errs = append(errs, fmt.Errorf("destroying the completion queue: %w", errnoErr(rc)))
		}
		t.cq = nil
	}
	if t.ch != nil {
		if rc := C.ibv_destroy_comp_channel(t.ch); rc != 0 {
			errs = append(errs, fmt.Errorf("destroying the completion channel (its file keeps the device from being removed): %w", errnoErr(rc)))
		}
		t.ch = nil
	}
	if t.pd != nil {
		if rc := C.ibv_dealloc_pd(t.pd); rc != 0 {
			errs = append(errs, fmt.Errorf("deallocating the protection domain: %w", errnoErr(rc)))
		}
		t.pd = nil
	}
	if t.ctx != nil {
		if rc := C.ibv_close_device(t.ctx); rc != 0 {
			errs = append(errs, fmt.Errorf("closing the device context: %w", errnoErr(rc)))
		}
		t.ctx = nil
	}
	if len(errs) > 0 {
		t.log.Error("rdma: the device refused to release some of the transport's resources; the context is closed all the same",
			"device", t.devName, "err", errors.Join(errs...))
	}
}

// Name returns "rdma".
func (t *Transport) Name() string { return "rdma" }

// closeLimit bounds how long Close waits for the event reader and the
// poller to stop; a var for tests.
var closeLimit = 30 * time.Second

// Close closes every listener and connection of the transport, stops the
// poller and the event reader (ending a rebuild in progress) and releases
// the device. It is idempotent and returns within about closeLimit (plus
// the wait for connections' QPs to drain): if the event reader or the
// poller has not stopped by then (a bug: one is stuck in a handler or a
// verbs call), it logs that and leaves the device context, the QPs and the
// eventfds to them rather than free what they may still use.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		ls := make([]*listener, 0, len(t.listeners))
		for l := range t.listeners {
			ls = append(ls, l)
		}
		t.mu.Unlock()
		for _, l := range ls {
			_ = l.Close()
		}
		drained := t.dropConns("transport closed")
		t.stop.Store(true)
		t.wake()
		t.wakeEvents()
		select {
		case <-t.eventsDone: // it stops the poller
		case <-time.After(closeLimit):
			t.log.Error("rdma: the event reader or the completion poller did not stop within the close limit; leaking the device context and what is on it rather than freeing what they may still use",
				"device", t.devName, "limit", closeLimit)
			return
		}
		t.reap(time.Now(), true)
		if !drained {
			t.log.Error("rdma: connections still own QPs after the transport closed; leaking the device context rather than freeing what they use",
				"device", t.devName)
		} else {
			t.mu.Lock()
			t.releaseDevice()
			t.mu.Unlock()
		}
		t.closeFDs()
	})
	return nil
}

func (t *Transport) wake() {
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(t.wakefd, one[:])
}

// poll is the transport's one completion goroutine: it polls in batches
// and, once the queue is empty, keeps polling for cfg.SpinTime of wall-clock
// time after the last completion (checking the clock at each empty poll),
// then arms the queue and sleeps on the completion channel. It ends, closing
// done, when the transport stops or a rebuild stops it (pollQuit).
func (t *Transport) poll(done chan struct{}) {
	defer close(done)
	var wcs [maxBatch]wc
	var idle time.Time // when the queue was first found empty; zero after a completion
	polls := uint64(0)
	for {
		n := int(C.wf_poll(t.cq, &wcs[0], maxBatch))
		if n > 0 {
			t.handle(wcs[:n])
			idle = time.Time{}
			continue
		}
		if n < 0 {
			t.log.Error("rdma: polling the completion queue failed", "rc", n)
		}
		if t.stop.Load() || t.pollQuit.Load() {
			return
		}
		now := time.Now()
		if idle.IsZero() {
			idle, polls = now, 0
		}
		spun := now.Sub(idle)
		if spun < t.cfg.SpinTime {
			polls++
			if polls&63 == 0 {
				runtime.Gosched()
			}
			continue
		}
		t.noteSpin(spun, polls)
		if rc := C.wf_arm(t.cq); rc != 0 {
			t.log.Error("rdma: arming the completion queue failed", "err", errnoErr(rc))
		}
		if n = int(C.wf_poll(t.cq, &wcs[0], maxBatch)); n > 0 {
			t.handle(wcs[:n])
			idle = time.Time{}
			continue
		}
		if rc := C.wf_wait(t.ch, C.int(t.wakefd), 200); rc < 0 {
			t.log.Error("rdma: waiting on the completion channel failed", "err", errnoErr(rc))
		}
		idle = time.Time{}
	}
}

// noteSpin records a spin of d (polls empty polls) that ended in a sleep.
func (t *Transport) noteSpin(d time.Duration, polls uint64) {
	t.pollSleeps.Add(1)
	t.lastSpin.Store(int64(d))
	t.lastSpinPolls.Store(polls)
	if ns := int64(d); ns < t.shortestSpin.Load() {
		t.shortestSpin.Store(ns) // only the poller writes it
	}
}

// handle dispatches one batch of completions. Receive buffers are reposted
// in one call at the end, before any credit is returned for them.
func (t *Transport) handle(batch []wc) {
	var repost [maxBatch]int
	var credited [maxBatch]*conn
	nr, nc := 0, 0
	E := t.cfg.EagerSize
	for i := range batch {
		w := &batch[i]
		id := uint64(w.wr_id)
		switch id >> 56 {
		case kindRecv:
			idx := int(id & 0xffffffff)
			repost[nr] = idx
			nr++
			if uint32(w.status) != wcSuccess {
				if uint32(w.status) != wcFlushErr {
					t.log.Warn("rdma: receive completed with an error", "status", wcStatusString(uint32(w.status)), "qpn", uint32(w.qp_num))
				}
				continue
			}
			t.mu.RLock()
			c := t.byQPN[uint32(w.qp_num)]
			t.mu.RUnlock()
			if c == nil {
				continue
			}
			off := idx * E
			if c.onRecv(t.recv.mem[off : off+int(w.byte_len)]) {
				credited[nc] = c
				nc++
			}
		case kindSend:
			cid := uint32(id>>32) & 0xffffff
			t.mu.RLock()
			c := t.byID[cid]
			t.mu.RUnlock()
			if c != nil {
				c.onSendComplete(uint32(id), uint32(w.status), uint32(w.opcode), uint32(w.vendor_err))
			}
		}
	}
	if nr > 0 {
		if err := t.postRecv(repost[:nr]); err != nil {
			t.log.Error("rdma: reposting receive buffers failed; the receive queue shrinks", "err", err)
		}
	}
	for _, c := range credited[:nc] {
		c.credit(1)
	}
}

// register admits c: it reserves its receive credits and maps its QP.
func (t *Transport) register(c *conn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("rdma: transport closed: %w", fabric.ErrClosed)
	}
	if t.refusing != nil {
		return t.refusing
	}
	need := t.cfg.Credits + creditReserve
	if t.reserved+need > t.cfg.RecvBuffers {
		return fmt.Errorf("rdma: no receive buffers left for another connection (%d of %d promised, %d per connection); raise RecvBuffers", t.reserved, t.cfg.RecvBuffers, need)
	}
	t.reserved += need
	for {
		t.nextID = (t.nextID + 1) & 0xffffff
		if _, busy := t.byID[t.nextID]; !busy && t.nextID != 0 {
			break
		}
	}
	c.id = t.nextID
	t.byID[c.id] = c
	t.byQPN[c.qpn] = c
	return nil
}

func (t *Transport) unregister(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[c.id] == c {
		delete(t.byID, c.id)
		delete(t.byQPN, c.qpn)
		t.reserved -= t.cfg.Credits + creditReserve
	}
}

// gidFor picks the source GID for a connection whose control connection
// runs from local: the GID equal to that IP if there is one, else the
// transport's default.
func (t *Transport) gidFor(local net.Addr) GIDInfo {
	t.mu.RLock() // the event reader refreshes the GIDs when the port comes back
	defer t.mu.RUnlock()
	if t.cfg.GIDIndex >= 0 {
		return t.gid
	}
	if ta, ok := local.(*net.TCPAddr); ok {
		if g, err := chooseGID(t.gids, -1, ta.IP, t.linkLayer); err == nil {
			return g
		}
	}
	return t.gid
}

// Conns describes the transport's live connections, for diagnostics.
func (t *Transport) Conns() []ConnInfo {
	t.mu.RLock()
	cs := make([]*conn, 0, len(t.byID))
	for _, c := range t.byID {
		cs = append(cs, c)
	}
	t.mu.RUnlock()
	out := make([]ConnInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.info())
	}
	return out
}

// Devices lists the verbs devices of this host with their ports and GIDs.
func Devices() ([]DeviceInfo, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("rdma: listing devices: no verbs support in this kernel: %w", fabric.ErrNotSupported)
	}
	defer C.ibv_free_device_list(list)
	var out []DeviceInfo
	for _, d := range unsafe.Slice(list, int(n)) {
		di := DeviceInfo{Name: C.GoString(C.ibv_get_device_name(d))}
		ctx := C.ibv_open_device(d)
		if ctx == nil {
			out = append(out, di)
			continue
		}
		var dattr C.struct_ibv_device_attr
		if C.ibv_query_device(ctx, &dattr) == 0 {
			di.MemoryWindowType2 = dattr.device_cap_flags&(C.IBV_DEVICE_MEM_WINDOW_TYPE_2A|C.IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0
			for p := 1; p <= int(dattr.phys_port_cnt); p++ {
				var pa C.struct_ibv_port_attr
				if C.wf_query_port(ctx, C.uint8_t(p), &pa) != 0 {
					continue
				}
				pi := PortInfo{Port: p, State: portStateString(pa.state), ActiveMTU: mtuBytes(pa.active_mtu), MaxMTU: mtuBytes(pa.max_mtu), LinkLayer: "Ethernet"}
				if pa.link_layer == C.IBV_LINK_LAYER_INFINIBAND {
					pi.LinkLayer = "InfiniBand"
				}
				pi.GIDs, _ = readGIDs(sysfsRoot, di.Name, p)
				di.Ports = append(di.Ports, pi)
			}
		}
		C.ibv_close_device(ctx)
		out = append(out, di)
	}
	return out, nil
}

// checkMemlock fails when the locked-memory limit is below need bytes and
// the process lacks CAP_IPC_LOCK (which lifts the limit for registration).
func checkMemlock(need int64) error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return nil
	}
	if rl.Cur == unix.RLIM_INFINITY || int64(rl.Cur) >= need || hasCapIPCLock() {
		return nil
	}
	return fmt.Errorf("rdma: memlock limit %d KiB is below the %d MiB needed for the receive pool; raise it with ulimit -l or LimitMEMLOCK= (or lower RecvBuffers): %w",
		rl.Cur>>10, need>>20, fabric.ErrNotSupported)
}

func hasCapIPCLock() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_IPC_LOCK) != 0
		}
	}
	return false
}

var errTransportClosed = errors.New("rdma: transport closed")
