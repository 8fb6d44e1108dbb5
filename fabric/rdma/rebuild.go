//go:build linux && cgo && rdma

package rdma

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A transport loses its device when the device reports a fatal error
// (IBV_EVENT_DEVICE_FATAL, or CQ_ERR / SRQ_ERR for the shared queues every
// connection uses) or is removed: its uverbs node disappears from sysfs.
// A device whose driver cannot detach user contexts (rxe, for one) raises
// no event on removal and waits, in the kernel, until every process closed
// it; the transport notices the missing node (checkPresent) and lets go.
//
// Then every connection fails, dials and accepts are refused with an error
// wrapping ErrDeviceLost, and the event reader rebuilds the transport: it
// closes every connection, stops the poller, releases the device context
// and everything on it, and opens the device again (by the configured name,
// or the first with an ACTIVE port) until it succeeds: the device is back,
// its port ACTIVE, its RoCE v2 GID present. Listeners stay open throughout
// and serve the new context; the adaptive transport above re-probes its
// RDMA path until a dial succeeds, so a node's RDMA path comes back by
// itself.

// deviceLost marks the device lost for reason: every connection fails, new
// ones are refused, and the event reader is woken to rebuild. Later calls
// until the rebuild is done do nothing.
func (t *Transport) deviceLost(reason string) {
	t.mu.Lock()
	if t.lost || t.closed {
		t.mu.Unlock()
		return
	}
	t.lost, t.lostReason = true, reason
	dev := t.devName
	t.refusing = fmt.Errorf("rdma: %s at %s; the transport is being rebuilt and takes connections again once %s is back: %w",
		reason, time.Now().UTC().Format(time.RFC3339), dev, ErrDeviceLost)
	t.mu.Unlock()
	t.log.Error("rdma: device lost: failing every connection and rebuilding the transport on a fresh context once the device is back",
		"device", dev, "reason", reason)
	t.failAll(reason)
	t.wakeEvents()
}

func (t *Transport) isLost() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.lost
}

// checkPresent marks the device lost when its uverbs node has gone from
// sysfs (the device is being removed). Only the event reader calls it.
func (t *Transport) checkPresent() {
	if t.devPath == "" {
		return
	}
	if _, err := os.Stat(t.devPath); errors.Is(err, fs.ErrNotExist) {
		t.deviceLost(fmt.Sprintf("%s was removed (its verbs device %s is gone)", t.devName, t.devPath))
	}
}

// rebuild runs on the event reader while the device is lost: it closes
// every connection and destroys every QP, stops the poller, releases the
// device, then opens it again, with a backoff from 50 ms to 2 s between
// attempts, until it succeeds or the transport stops. Then it restarts the
// poller and takes connections again.
func (t *Transport) rebuild() {
	start := time.Now()
	t.mu.RLock()
	reason, dev := t.lostReason, t.devName
	t.mu.RUnlock()
	for !t.dropConns(reason) {
		if t.stop.Load() {
			return
		}
		t.log.Warn("rdma: connections still own QPs on the lost device; waiting for them before releasing it", "device", dev)
	}
	t.stopPoller()
	t.reap(time.Now(), true)
	t.mu.Lock()
	t.releaseDevice()
	t.mu.Unlock()
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if t.stop.Load() {
			return
		}
		t.mu.Lock()
		err := t.open()
		if err != nil {
			t.releaseDevice()
		}
		t.mu.Unlock()
		if err == nil {
			break
		}
		if attempt == 1 {
			t.log.Warn("rdma: the lost device cannot be opened yet; retrying until it is back", "device", dev, "err", err)
		} else {
			t.log.Debug("rdma: the lost device cannot be opened yet", "device", dev, "attempt", attempt, "err", err)
		}
		t.sleepEvents(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
	t.startPoller()
	took := time.Since(start).Round(time.Millisecond)
	t.mu.Lock()
	t.lost, t.lostReason, t.refusing = false, "", nil
	t.lastRebuild = fmt.Sprintf("%s after %s, in %v", time.Now().UTC().Format(time.RFC3339), reason, took)
	gid := t.gid
	t.mu.Unlock()
	t.rebuilds.Add(1)
	t.log.Info("rdma: device back; transport rebuilt on a fresh context and taking connections again",
		"device", t.devName, "gid_index", gid.Index, "gid", gid.GID.String(), "reason", reason, "took", took)
}

// dropConns fails every connection that owns a QP with reason (a
// connection still in its handshake then fails it, and destroys its QP),
// closes the established ones, all at once, and waits until no connection
// owns or creates a QP. It reports false if some still do after
// HandshakeTimeout plus 5 s.
func (t *Transport) dropConns(reason string) bool {
	t.mu.RLock()
	live := make([]*conn, 0, len(t.live))
	for c := range t.live {
		live = append(live, c)
	}
	established := make([]*conn, 0, len(t.byID))
	for _, c := range t.byID {
		established = append(established, c)
	}
	t.mu.RUnlock()
	for _, c := range live {
		c.fail(reason)
	}
	var wg sync.WaitGroup
	for _, c := range established {
		wg.Go(func() { _ = c.Close() })
	}
	wg.Wait()
	deadline := time.Now().Add(t.cfg.HandshakeTimeout + 5*time.Second)
	for {
		t.mu.RLock()
		n := len(t.live) + t.creating
		t.mu.RUnlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startPoller starts the completion poller; stopPoller stops it and waits
// for it. Only the event reader calls them.
func (t *Transport) startPoller() {
	t.pollQuit.Store(false)
	t.pollerDone = make(chan struct{})
	t.pollerUp = true
	go t.poll(t.pollerDone)
}

// While the poller does not stop (it is inside the handling of a
// completion), the device can be neither released nor, with rxe, removed:
// stopPoller logs that as an error every 10 s it waits.
func (t *Transport) stopPoller() {
	if !t.pollerUp {
		return
	}
	t.pollQuit.Store(true)
	t.wake()
	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-t.pollerDone:
			waiting = false
		case <-tick.C:
			t.log.Error("rdma: the completion poller has not stopped; the device cannot be released until it does",
				"device", t.devName, "waited", time.Since(start).Round(time.Second))
		}
	}
	t.pollerUp = false
}

// sleepEvents waits for d, or less if the event reader is woken (Close).
func (t *Transport) sleepEvents(d time.Duration) {
	fds := []unix.PollFd{{Fd: int32(t.asyncWake), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, int(d/time.Millisecond)); n > 0 {
		var b [8]byte
		_, _ = unix.Read(t.asyncWake, b[:])
	}
}
