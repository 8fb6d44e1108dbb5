// Package rdmatest drives the RDMA device of the Soft-RoCE guest
// (scripts/softroce/run.sh) for tests that take it away and bring it back:
// an rxe link deleted and added again with iproute2's rdma tool. Only tests
// running in the guest (WEFT_RDMA_GUEST set), which owns the device, may
// use it.
package rdmatest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// rdmaTool is iproute2's rdma, by path in the guest, where busybox's
// applets come first in PATH.
func rdmaTool() string {
	if _, err := os.Stat("/usr/bin/rdma"); err == nil {
		return "/usr/bin/rdma"
	}
	return "rdma"
}

// Deletion is an `rdma link delete` started by DeleteLink.
type Deletion struct {
	done chan struct{}
	err  error
}

// Done is closed once the deletion has finished or its limit has passed;
// Err then says which.
func (d *Deletion) Done() <-chan struct{} { return d.done }

// Err is nil once the device is deleted, else why not (see DeleteLink); it
// may be read only after Done is closed.
func (d *Deletion) Err() error { return d.err }

// DeleteLink starts `rdma link delete dev` and returns at once. With a
// driver that cannot detach user contexts (rxe) the deletion waits in the
// kernel until every process has closed the device, so it completes only
// once the transports on it let go; until then the device is still listed
// (Exists), and AddRxe must not run before Done. If it has not finished
// after limit, Err says what still holds the device (Holders), where the
// command waits in the kernel and where this process's transports are; the
// command itself is left behind: a task blocked in the kernel cannot be
// killed, and the device cannot be used again.
func DeleteLink(dev string, limit time.Duration) *Deletion {
	d := &Deletion{done: make(chan struct{})}
	var out bytes.Buffer
	cmd := exec.Command(rdmaTool(), "link", "delete", dev)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		d.err = fmt.Errorf("rdma link delete %s: %w", dev, err)
		close(d.done)
		return d
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	go func() {
		defer close(d.done)
		select {
		case err := <-exited:
			if err != nil {
				d.err = fmt.Errorf("rdma link delete %s: %w: %s", dev, err, strings.TrimSpace(out.String()))
			}
		case <-time.After(limit):
			d.err = fmt.Errorf("rdma link delete %s did not finish within %v; it waits in the kernel at:\n%s\nthis process still holds: %s\nits goroutines in fabric/rdma:\n%s",
				dev, limit, kernelStack(cmd.Process.Pid), Holders(), rdmaGoroutines())
		}
	}()
	return d
}

// Holders lists this process's open files on RDMA devices (uverbs command
// files, and the anonymous event files of completion channels and
// asynchronous events), each of which keeps a device from being removed.
func Holders() string {
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		return err.Error()
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if strings.HasPrefix(target, "/dev/infiniband/") || strings.Contains(target, "infinibandevent") {
			held = append(held, filepath.Base(fd)+" -> "+target)
		}
	}
	if len(held) == 0 {
		return "no RDMA device files"
	}
	return strings.Join(held, ", ")
}

// rdmaGoroutines returns the stacks of this process's goroutines that are
// in the RDMA transport (a verbs call that never returns shows there).
func rdmaGoroutines() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "weft/fabric/rdma.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// kernelStack is where task pid waits in the kernel (/proc/PID/stack, root
// only), or why that is unknown.
func kernelStack(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stack", pid))
	if err != nil {
		return fmt.Sprintf("(kernel stack of pid %d unknown: %v)", pid, err)
	}
	return strings.TrimSpace(string(b))
}

// Restore leaves dev in place after a test that deleted it with d (nil:
// the deletion was never started): it waits for d to finish (bounded by
// its limit) and adds the device on netdev again if it is gone. A deletion
// still hanging leaves the device unusable, and Restore says why.
func Restore(d *Deletion, dev, netdev string) error {
	if d != nil {
		<-d.Done()
		if err := d.Err(); err != nil && Exists(dev) {
			return fmt.Errorf("cannot bring %s back: %w", dev, err)
		}
	}
	return AddRxe(dev, netdev)
}

// AddRxe adds the Soft-RoCE device dev on netdev (`rdma link add dev type
// rxe netdev netdev`) unless a device of that name exists.
func AddRxe(dev, netdev string) error {
	if Exists(dev) {
		return nil
	}
	out, err := exec.Command(rdmaTool(), "link", "add", dev, "type", "rxe", "netdev", netdev).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rdma link add %s type rxe netdev %s: %w: %s", dev, netdev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Exists reports whether the kernel lists an RDMA device named dev.
func Exists(dev string) bool {
	_, err := os.Stat("/sys/class/infiniband/" + dev)
	return err == nil
}
