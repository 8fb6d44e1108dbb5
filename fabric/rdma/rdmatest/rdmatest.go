// Package rdmatest drives the RDMA device of the Soft-RoCE guest
// (scripts/softroce/run.sh) for tests that take it away and bring it back:
// an rxe link deleted and added again with iproute2's rdma tool. Only tests
// running in the guest (WEFT_RDMA_GUEST set), which owns the device, may
// use it.
package rdmatest

import (
	"fmt"
	"os"
	"os/exec"
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

// DeleteLink starts `rdma link delete dev` and returns at once; the
// command's outcome arrives on the channel. With a driver that cannot
// detach user contexts (rxe) the deletion waits in the kernel until every
// process has closed the device, so it completes only once the transports
// on it let go; it gives up after limit.
func DeleteLink(dev string, limit time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		cmd := exec.Command("timeout", fmt.Sprint(int(limit.Seconds())), rdmaTool(), "link", "delete", dev)
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("rdma link delete %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
		}
		done <- err
	}()
	return done
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
