package membudget

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

const meminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\n"

func TestAvailable(t *testing.T) {
	phys := int64(16384000) << 10
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		source string
	}{
		{"physical memory without cgroups", map[string]string{}, phys, "proc/meminfo"},
		{"cgroup v2 at the root (a container)", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "2147483648\n"}, 2 << 30, "sys/fs/cgroup/memory.max"},
		{"cgroup v2 at the process's path (a systemd unit)", map[string]string{
			"proc/self/cgroup": "0::/system.slice/weft.service\n", "sys/fs/cgroup/system.slice/weft.service/memory.max": "1073741824\n"},
			1 << 30, "sys/fs/cgroup/system.slice/weft.service/memory.max"},
		{"cgroup v2 without a limit", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}, phys, "proc/meminfo"},
		{"cgroup v1 at the process's path", map[string]string{
			"proc/self/cgroup": "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "536870912\n"}, 512 << 20, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"cgroup v1 unlimited (a huge number)", map[string]string{
			"proc/self/cgroup": "4:memory:/\n", "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, phys, "proc/meminfo"},
		{"a limit above the physical memory", map[string]string{
			"sys/fs/cgroup/memory.max": "99999999999999\n"}, phys, "proc/meminfo"},
		{"the least of several limits", map[string]string{
			"proc/self/cgroup":         "0::/a\n",
			"sys/fs/cgroup/memory.max": "4294967296\n", "sys/fs/cgroup/a/memory.max": "3221225472\n"}, 3 << 30, "sys/fs/cgroup/a/memory.max"},
		{"garbage in a limit file is no limit", map[string]string{
			"sys/fs/cgroup/memory.max": "lots\n"}, phys, "proc/meminfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"proc/meminfo": {Data: []byte(meminfo)}}
			for p, data := range tc.files {
				fsys[p] = &fstest.MapFile{Data: []byte(data)}
			}
			got, source, err := Available(fsys)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.source, source)
		})
	}
}

func TestAvailableWithoutMeminfo(t *testing.T) {
	_, _, err := Available(fstest.MapFS{})
	require.ErrorContains(t, err, "--memory-limit")
	_, _, err = Available(fstest.MapFS{"proc/meminfo": {Data: []byte("MemTotal: lots\n")}})
	require.ErrorContains(t, err, "not a size in kB")
}

func TestSplitLimit(t *testing.T) {
	s := SplitLimit(4 << 30)
	require.Equal(t, int64(4<<30), s.Total)
	require.InDelta(t, float64(4<<30)/10, float64(s.IndexingPressure), 100)
}
