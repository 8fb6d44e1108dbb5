// Package membudget is a node's one memory budget: how much memory the node
// may use (--memory-limit; by default a share of its cgroup's or machine's
// memory), how that limit is split among the parts of the node that bound
// what they hold, and the accounting those parts do against their share
// (IndexingPressure, for the bytes of writes in flight).
//
// Accounting never blocks: a part reserves bytes before it holds them and
// is refused at once (a trip, counted) when its share would be exceeded;
// it releases them when it lets go.
package membudget

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// DefaultPercent is the share of the memory available to the process (its
// cgroup's limit if it has one, else the machine's physical memory) that a
// node takes as its memory limit when --memory-limit is not given. The
// rest is left to the page cache, which the indexes' files live in, and to
// what the Go heap does not count (goroutine stacks, the runtime).
const DefaultPercent = 50

// IndexingPressurePercent is the share of the memory limit that the bytes
// of write requests in flight may take, Elasticsearch's default for
// indexing_pressure.memory.limit (10% of the heap).
const IndexingPressurePercent = 10

// InFlightRequestsPercent is the share of the memory limit that the bodies
// of the HTTP requests a node is reading or serving may take together (its
// in_flight_requests breaker). Elasticsearch's defaults to the whole heap
// under a parent breaker at 95%; Weft has no parent breaker yet, so the
// share is set so that bodies, writes in flight and the working room
// cannot together pass the limit by much.
const InFlightRequestsPercent = 25

// Split is how a node's memory limit is shared out. It is the one place
// the shares are written down:
//
//   - Total, the whole limit, is also Go's soft memory limit
//     (debug.SetMemoryLimit): past it the collector runs as often as it
//     must to stay under it.
//   - IndexingPressure (IndexingPressurePercent of Total) bounds the bytes
//     of writes in flight at the coordinating and primary stages; the
//     replica stage may take 1.5 times as much (see IndexingPressure).
//   - InFlightRequests (InFlightRequestsPercent of Total) is the limit of
//     the in_flight_requests breaker: the bodies of HTTP requests held at
//     once.
//   - The rest is the working room of everything not accounted yet: the
//     indexes (bleve's segments and caches), searches, the fabric's
//     buffers. Circuit breakers for searches will take their share of it
//     here.
type Split struct {
	Total            int64
	IndexingPressure int64
	InFlightRequests int64
}

// SplitLimit shares total out.
func SplitLimit(total int64) Split {
	return Split{Total: total, IndexingPressure: total / 100 * IndexingPressurePercent, InFlightRequests: total / 100 * InFlightRequestsPercent}
}

// Available returns the memory available to this process, read from fsys
// (the root of the file system: os.DirFS("/") in production): the least of
// the physical memory (proc/meminfo's MemTotal) and the memory limits of
// the process's cgroups, v2 (memory.max) and v1
// (memory.limit_in_bytes), at the path proc/self/cgroup names and at the
// root of the cgroup file system (where a container sees its own). source
// names the file the figure came from.
func Available(fsys fs.FS) (bytes int64, source string, err error) {
	total, err := memTotal(fsys)
	if err != nil {
		return 0, "", err
	}
	bytes, source = total, "proc/meminfo"
	for _, p := range cgroupLimitFiles(fsys) {
		if n, ok := readLimit(fsys, p); ok && n < bytes {
			bytes, source = n, p
		}
	}
	return bytes, source, nil
}

// memTotal reads MemTotal from proc/meminfo.
func memTotal(fsys fs.FS) (int64, error) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("membudget: reading the physical memory: %w; set --memory-limit", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if !ok || err != nil || n <= 0 || n > 1<<52 {
			return 0, fmt.Errorf("membudget: proc/meminfo has a MemTotal line %q that is not a size in kB; set --memory-limit", sc.Text())
		}
		return n << 10, nil
	}
	return 0, errors.New("membudget: proc/meminfo has no MemTotal line; set --memory-limit")
}

// cgroupLimitFiles lists the files that may hold this process's cgroup
// memory limits.
func cgroupLimitFiles(fsys fs.FS) []string {
	files := []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return files
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controllers:path; v2 is "0::path".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, path.Join("sys/fs/cgroup", parts[2], "memory.max"))
		case containsController(parts[1], "memory"):
			files = append(files, path.Join("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
		}
	}
	return files
}

func containsController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit: a number of bytes; "max" (v2) or
// a file that is missing or unreadable is no limit.
func readLimit(fsys fs.FS, p string) (int64, bool) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
