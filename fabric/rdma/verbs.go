//go:build linux && cgo && rdma

package rdma

/*
#cgo LDFLAGS: -libverbs
#include "wf_verbs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const maxBatch = C.WF_MAX_BATCH

// Work request opcodes and flags, as the C helper takes them.
const (
	opSend     = C.IBV_WR_SEND
	opRead     = C.IBV_WR_RDMA_READ
	opWrite    = C.IBV_WR_RDMA_WRITE
	opBindMW   = C.IBV_WR_BIND_MW
	opLocalInv = C.IBV_WR_LOCAL_INV
	flagSignal = C.IBV_SEND_SIGNALED
	flagInline = C.IBV_SEND_INLINE
)

// Completion statuses and opcodes used by the poller.
const (
	wcSuccess  = C.IBV_WC_SUCCESS
	wcFlushErr = C.IBV_WC_WR_FLUSH_ERR
	wcRecv     = C.IBV_WC_RECV
	wcRead     = C.IBV_WC_RDMA_READ
)

type wr = C.wf_wr
type wc = C.wf_wc

func wcStatusString(s uint32) string {
	return C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(s)))
}

func mtuBytes(e C.enum_ibv_mtu) int { return 128 << int(e) }

func mtuEnum(bytes int) C.enum_ibv_mtu {
	switch bytes {
	case 256:
		return C.IBV_MTU_256
	case 512:
		return C.IBV_MTU_512
	case 1024:
		return C.IBV_MTU_1024
	case 2048:
		return C.IBV_MTU_2048
	default:
		return C.IBV_MTU_4096
	}
}

func portStateString(s C.enum_ibv_port_state) string {
	switch s {
	case C.IBV_PORT_DOWN:
		return "DOWN"
	case C.IBV_PORT_INIT:
		return "INIT"
	case C.IBV_PORT_ARMED:
		return "ARMED"
	case C.IBV_PORT_ACTIVE:
		return "ACTIVE"
	case C.IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER"
	}
	return "NOP"
}

var qpStateNames = map[int]string{
	C.IBV_QPS_RESET: "RESET", C.IBV_QPS_INIT: "INIT", C.IBV_QPS_RTR: "RTR", C.IBV_QPS_RTS: "RTS",
	C.IBV_QPS_SQD: "SQD", C.IBV_QPS_SQE: "SQE", C.IBV_QPS_ERR: "ERR",
}

// errnoErr turns a verbs return code (errno, or -errno) into an error.
func errnoErr(rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	if rc == 0 {
		return nil
	}
	return syscall.Errno(rc)
}

// region is an mmap'd piece of memory, outside the Go heap, optionally
// registered with the PD. A rendezvous region of a connection that scopes
// its keys with memory windows also owns a type-2 window (mw): its MR then
// carries no remote rights at all, and the peer reaches the region only
// through the window, bound on the connection's QP for one transfer.
type region struct {
	mem    []byte
	mr     *C.struct_ibv_mr
	addr   uint64
	lk, rk uint32

	mw    *C.struct_ibv_mw
	key   uint32 // the window's key as of its last bind (or allocation)
	bound bool   // a bind is queued or done and no invalidation yet
	// broken (tests only): exposed under a key that was never bound.
	broken bool
}

func (r *region) lkey() uint32 { return r.lk }
func (r *region) rkey() uint32 { return r.rk }

// newRegion maps size bytes and registers them with access rights.
func newRegion(pd *C.struct_ibv_pd, size int, access C.int) (*region, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rdma: mmap of %d bytes for a buffer pool: %w", size, err)
	}
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	mr, err := C.wf_reg_mr(pd, C.uint64_t(addr), C.size_t(size), access)
	if mr == nil {
		_ = unix.Munmap(mem)
		if errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("rdma: registering %d bytes failed (%v); the locked-memory limit is probably too low: raise it with ulimit -l or LimitMEMLOCK=", size, err)
		}
		return nil, fmt.Errorf("rdma: registering %d bytes of buffer memory: %v", size, err)
	}
	return &region{mem: mem, mr: mr, addr: addr, lk: uint32(mr.lkey), rk: uint32(mr.rkey)}, nil
}

// addWindow allocates the region's type-2 memory window on pd.
func (r *region) addWindow(pd *C.struct_ibv_pd) error {
	mw, err := C.wf_alloc_mw2(pd)
	if mw == nil {
		return fmt.Errorf("rdma: allocating a type-2 memory window for a %d-byte rendezvous region: %v", len(r.mem), err)
	}
	r.mw, r.key = mw, uint32(mw.rkey)
	return nil
}

// free deallocates the region's window (which revokes its key, bound or
// not), then deregisters and unmaps the region. The caller guarantees that
// no work request still refers to it. It reports what the device refused:
// a window or registration it could not release stays allocated, and keeps
// the device from being removed until the context is closed.
func (r *region) free() error {
	var errs []error
	if r.mw != nil {
		if rc := C.wf_dealloc_mw(r.mw); rc != 0 {
			errs = append(errs, fmt.Errorf("deallocating the memory window of a %d-byte region: %w", len(r.mem), errnoErr(rc)))
		}
		r.mw, r.bound = nil, false
	}
	if r.mr != nil {
		if rc := C.ibv_dereg_mr(r.mr); rc != 0 {
			errs = append(errs, fmt.Errorf("deregistering a %d-byte region: %w", len(r.mem), errnoErr(rc)))
		}
		r.mr = nil
	}
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem = nil
	}
	return errors.Join(errs...)
}

const (
	accessLocal       = C.IBV_ACCESS_LOCAL_WRITE
	accessMWBind      = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_MW_BIND
	mwRemoteRead      = C.IBV_ACCESS_REMOTE_READ
	mwRemoteWrite     = C.IBV_ACCESS_REMOTE_WRITE
	accessRemoteRead  = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_READ
	accessRemoteWrite = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_WRITE
)
