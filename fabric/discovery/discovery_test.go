package discovery

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeSys builds a sysfs tree shaped like a VM with a virtio NIC (eth0,
// MTU 1500), lo, and a Soft-RoCE device rxe0 bound to eth0, as rdma_rxe
// lays it out: a link-local and an IPv4-mapped GID, each as RoCE v1 and v2,
// and unused zero entries whose gid_attrs cannot be read.
func fakeSys(t *testing.T, withRDMA bool) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content+"\n"), 0o644))
	}
	link := func(target, rel string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	eth := "devices/pci0000:00/0000:00:03.0/virtio2/net/eth0"
	write(eth+"/mtu", "1500")
	write(eth+"/speed", "10000")
	write(eth+"/operstate", "up")
	write(eth+"/statistics/rx_bytes", "123456")
	write(eth+"/statistics/tx_bytes", "654321")
	link("../../../../../bus/virtio/drivers/virtio_net", "devices/pci0000:00/0000:00:03.0/virtio2/driver")
	link("../../../virtio2", eth+"/device")
	link("../../"+eth, "class/net/eth0")

	lo := "devices/virtual/net/lo"
	write(lo+"/mtu", "65536")
	write(lo+"/operstate", "unknown")
	write(lo+"/statistics/rx_bytes", "0")
	write(lo+"/statistics/tx_bytes", "0")
	link("../../"+lo, "class/net/lo")

	if !withRDMA {
		return root
	}
	rxe := "devices/virtual/infiniband/rxe0"
	write(rxe+"/node_type", "1: CA")
	write(rxe+"/node_guid", "5054:00ff:fe12:3456")
	p := rxe + "/ports/1"
	write(p+"/state", "4: ACTIVE")
	write(p+"/phys_state", "5: LinkUp")
	write(p+"/link_layer", "Ethernet")
	write(p+"/rate", "100 Gb/sec (4X EDR)")
	gids := []struct{ gid, typ string }{
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"},
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"},
		{"0000:0000:0000:0000:0000:ffff:0a00:0002", "IB/RoCE v1"},
		{"0000:0000:0000:0000:0000:ffff:0a00:0002", "RoCE v2"},
	}
	for i, g := range gids {
		idx := string(rune('0' + i))
		write(p+"/gids/"+idx, g.gid)
		write(p+"/gid_attrs/types/"+idx, g.typ)
		write(p+"/gid_attrs/ndevs/"+idx, "eth0")
	}
	for _, idx := range []string{"4", "5", "6", "7"} {
		write(p+"/gids/"+idx, "0000:0000:0000:0000:0000:0000:0000:0000")
		// The kernel answers EINVAL for unused entries; a directory in
		// their place makes reads fail the same way here.
		require.NoError(t, os.MkdirAll(filepath.Join(root, p, "gid_attrs/types", idx), 0o755))
	}
	link("../../"+rxe, "class/infiniband/rxe0")
	return root
}

func noAddrs(string) ([]string, error) { return []string{"10.0.0.2/24"}, nil }

func TestListParsesInterfaces(t *testing.T) {
	rep, err := List(Options{SysRoot: fakeSys(t, false), Addrs: noAddrs})
	require.NoError(t, err)
	require.Equal(t, []Interface{
		{Name: "eth0", Driver: "virtio_net", MTU: 1500, SpeedMbps: 10000, OperState: "up",
			Addrs: []string{"10.0.0.2/24"}, RxBytes: 123456, TxBytes: 654321, CarriesTraffic: true},
		{Name: "lo", Virtual: true, MTU: 65536, SpeedMbps: -1, OperState: "unknown",
			Addrs: []string{"10.0.0.2/24"}},
	}, rep.Interfaces)
	require.Empty(t, rep.RDMA, "no class/infiniband means no RDMA devices")
}

func TestListParsesSoftRoCEDevice(t *testing.T) {
	rep, err := List(Options{SysRoot: fakeSys(t, true), Addrs: noAddrs})
	require.NoError(t, err)
	require.Len(t, rep.RDMA, 1)
	dev := rep.RDMA[0]
	require.Equal(t, "rxe0", dev.Name)
	require.Equal(t, "CA", dev.NodeType)
	require.Len(t, dev.Ports, 1)
	port := dev.Ports[0]
	require.Equal(t, 1, port.Num)
	require.Equal(t, "ACTIVE", port.State)
	require.Equal(t, "LinkUp", port.PhysState)
	require.Equal(t, "Ethernet", port.LinkLayer)
	require.Equal(t, 1024, port.ActiveMTU, "eth0 MTU 1500 gives RoCE MTU 1024")
	require.Equal(t, []GID{
		{Index: 0, GID: "fe80:0000:0000:0000:5054:00ff:fe12:3456", Type: "IB/RoCE v1", NetDev: "eth0"},
		{Index: 1, GID: "fe80:0000:0000:0000:5054:00ff:fe12:3456", Type: "RoCE v2", RoCEv2: true, NetDev: "eth0"},
		{Index: 2, GID: "0000:0000:0000:0000:0000:ffff:0a00:0002", Type: "IB/RoCE v1", NetDev: "eth0"},
		{Index: 3, GID: "0000:0000:0000:0000:0000:ffff:0a00:0002", Type: "RoCE v2", RoCEv2: true, NetDev: "eth0"},
	}, port.GIDs, "zero GIDs are skipped")
}

func TestRoCEMTU(t *testing.T) {
	tests := []struct {
		name string
		mtu  int
		want int
	}{
		{"standard ethernet", 1500, 1024},
		{"jumbo", 9000, 4096},
		{"exactly 2048 plus headers", 2048 + 96, 2048},
		{"one byte short of 2048", 2048 + 95, 1024},
		{"too small", 300, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, RoCEMTU(tt.mtu))
		})
	}
}

func TestListRejectsNonSysfsRoot(t *testing.T) {
	_, err := List(Options{SysRoot: t.TempDir()})
	require.ErrorIs(t, err, ErrNoSysfs)
}

func TestListHostSysfs(t *testing.T) {
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Skip("no host sysfs here")
	}
	rep, err := List(Options{})
	require.NoError(t, err)
	var lo *Interface
	for i := range rep.Interfaces {
		if rep.Interfaces[i].Name == "lo" {
			lo = &rep.Interfaces[i]
		}
	}
	require.NotNil(t, lo, "the host's lo is listed")
	require.True(t, lo.Virtual)
	require.Contains(t, lo.Addrs, "127.0.0.1/8")
	if _, err := os.Stat("/sys/class/infiniband"); err != nil {
		require.Empty(t, rep.RDMA, "no RDMA on this host: the list says none")
	}
}
