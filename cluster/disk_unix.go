//go:build unix

package cluster

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/weftsearch/weft/cluster/state"
)

// statfsUsage reads the usage of the filesystem that holds dir: used is
// everything an unprivileged writer cannot use (reserved blocks count as
// used, as Elasticsearch counts them).
func statfsUsage(dir string) (state.DiskUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return state.DiskUsage{}, fmt.Errorf("cluster: reading the disk usage of %s: %w", dir, err)
	}
	bs := uint64(st.Bsize) //nolint:unconvert // int64 or uint32 by platform
	total, avail := uint64(st.Blocks)*bs, uint64(st.Bavail)*bs
	return state.DiskUsage{UsedBytes: total - min(avail, total), TotalBytes: total}, nil
}
