// Package discovery lists the network interfaces and RDMA devices of a host
// from sysfs, so a node can tell operators (and the adaptive transport) which
// fabric paths exist: each netdev's driver, MTU, speed, link state, addresses
// and whether it carries traffic, and each RDMA device's ports, state, active
// MTU and GIDs with their RoCE type and bound netdev.
//
// Everything is read from a sysfs root given by the caller ("/sys" on a real
// host, a fake tree in tests). A host without RDMA support (no
// class/infiniband directory) yields an empty RDMA list, not an error.
package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Options says where to read from.
type Options struct {
	// SysRoot is the sysfs mount point; "" means "/sys".
	SysRoot string
	// Addrs returns the addresses (CIDR form) of an interface by name. Nil
	// means: look the name up on this host with package net, which is right
	// only when SysRoot is the host's own sysfs. Tests pass their own.
	Addrs func(ifname string) ([]string, error)
}

// Report is everything List found. It is JSON-able for `searchctl fabric`.
type Report struct {
	Interfaces []Interface  `json:"interfaces"`
	RDMA       []RDMADevice `json:"rdma"`
}

// Interface is one network device from class/net.
type Interface struct {
	Name string `json:"name"`
	// Driver is the kernel driver bound to the device (device/driver link);
	// "" for virtual devices such as lo, veth or bridges.
	Driver  string `json:"driver,omitempty"`
	Virtual bool   `json:"virtual"`
	MTU     int    `json:"mtu"`
	// SpeedMbps is the link speed; -1 when the device does not report one
	// (lo, virtual devices, link down).
	SpeedMbps int      `json:"speed_mbps"`
	OperState string   `json:"operstate"`
	Addrs     []string `json:"addrs,omitempty"`
	RxBytes   uint64   `json:"rx_bytes"`
	TxBytes   uint64   `json:"tx_bytes"`
	// CarriesTraffic: the link is up (or "unknown", as lo reports) and has
	// moved bytes in either direction.
	CarriesTraffic bool `json:"carries_traffic"`
}

// RDMADevice is one device from class/infiniband (an HCA, or a Soft-RoCE
// rxe device).
type RDMADevice struct {
	Name     string     `json:"name"`
	NodeType string     `json:"node_type,omitempty"`
	NodeGUID string     `json:"node_guid,omitempty"`
	Ports    []RDMAPort `json:"ports"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Num       int    `json:"num"`
	State     string `json:"state"`      // e.g. "ACTIVE", "DOWN"
	PhysState string `json:"phys_state"` // e.g. "LinkUp"
	LinkLayer string `json:"link_layer"` // "Ethernet" (RoCE) or "InfiniBand"
	Rate      string `json:"rate,omitempty"`
	// ActiveMTU is the RoCE path MTU in bytes (256..4096), derived from the
	// bound netdev's MTU as the kernel does (iboe_get_mtu); 0 when unknown
	// (InfiniBand link layer or no bound netdev).
	ActiveMTU int   `json:"active_mtu"`
	GIDs      []GID `json:"gids"`
}

// GID is one populated entry of a port's GID table.
type GID struct {
	Index int    `json:"index"`
	GID   string `json:"gid"`
	// Type is the kernel's text: "RoCE v2", "IB/RoCE v1", or "" if unread.
	Type string `json:"type,omitempty"`
	// RoCEv2 is true for "RoCE v2" entries, the ones Weft uses.
	RoCEv2 bool   `json:"rocev2"`
	NetDev string `json:"netdev,omitempty"`
}

// ErrNoSysfs is returned when SysRoot has no class/net directory, which
// means it is not a sysfs tree.
var ErrNoSysfs = errors.New("discovery: no class/net under sysfs root")

// List reads the interfaces and RDMA devices under opts.SysRoot. It blocks
// only on sysfs reads. A missing class/infiniband means "no RDMA" (empty
// list); unreadable single attributes are left at their zero value.
func List(opts Options) (*Report, error) {
	root := opts.SysRoot
	if root == "" {
		root = "/sys"
	}
	addrs := opts.Addrs
	if addrs == nil {
		addrs = hostAddrs
	}
	netDir := filepath.Join(root, "class", "net")
	names, err := dirNames(netDir)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v; pass the sysfs mount point (usually /sys)", ErrNoSysfs, netDir, err)
	}
	rep := &Report{Interfaces: []Interface{}, RDMA: []RDMADevice{}}
	mtus := make(map[string]int)
	for _, name := range names {
		ifc := readInterface(netDir, name, addrs)
		mtus[name] = ifc.MTU
		rep.Interfaces = append(rep.Interfaces, ifc)
	}
	ibDir := filepath.Join(root, "class", "infiniband")
	devs, err := dirNames(ibDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return rep, nil
		}
		return nil, fmt.Errorf("discovery: reading %s: %w", ibDir, err)
	}
	for _, name := range devs {
		rep.RDMA = append(rep.RDMA, readRDMA(filepath.Join(ibDir, name), name, mtus))
	}
	return rep, nil
}

func readInterface(netDir, name string, addrs func(string) ([]string, error)) Interface {
	dir := filepath.Join(netDir, name)
	ifc := Interface{Name: name, SpeedMbps: -1}
	if target, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		ifc.Driver = filepath.Base(target)
	}
	if target, err := os.Readlink(dir); err == nil {
		ifc.Virtual = strings.Contains(target, "/virtual/")
	} else if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
		ifc.Virtual = true
	}
	ifc.MTU = readInt(filepath.Join(dir, "mtu"), 0)
	if s := readInt(filepath.Join(dir, "speed"), -1); s > 0 {
		ifc.SpeedMbps = s
	}
	ifc.OperState = readString(filepath.Join(dir, "operstate"))
	ifc.RxBytes = readUint(filepath.Join(dir, "statistics", "rx_bytes"))
	ifc.TxBytes = readUint(filepath.Join(dir, "statistics", "tx_bytes"))
	up := ifc.OperState == "up" || ifc.OperState == "unknown"
	ifc.CarriesTraffic = up && ifc.RxBytes+ifc.TxBytes > 0
	if a, err := addrs(name); err == nil {
		ifc.Addrs = a
	}
	return ifc
}

func readRDMA(dir, name string, mtus map[string]int) RDMADevice {
	dev := RDMADevice{
		Name:     name,
		NodeType: afterColon(readString(filepath.Join(dir, "node_type"))),
		NodeGUID: readString(filepath.Join(dir, "node_guid")),
		Ports:    []RDMAPort{},
	}
	ports, _ := dirNames(filepath.Join(dir, "ports"))
	for _, p := range ports {
		num, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		dev.Ports = append(dev.Ports, readPort(filepath.Join(dir, "ports", p), num, mtus))
	}
	sort.Slice(dev.Ports, func(i, j int) bool { return dev.Ports[i].Num < dev.Ports[j].Num })
	return dev
}

func readPort(dir string, num int, mtus map[string]int) RDMAPort {
	port := RDMAPort{
		Num:       num,
		State:     afterColon(readString(filepath.Join(dir, "state"))),
		PhysState: afterColon(readString(filepath.Join(dir, "phys_state"))),
		LinkLayer: readString(filepath.Join(dir, "link_layer")),
		Rate:      readString(filepath.Join(dir, "rate")),
		GIDs:      []GID{},
	}
	entries, _ := dirNames(filepath.Join(dir, "gids"))
	for _, e := range entries {
		idx, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		g := readString(filepath.Join(dir, "gids", e))
		if g == "" || isZeroGID(g) {
			continue
		}
		gid := GID{
			Index:  idx,
			GID:    g,
			Type:   readString(filepath.Join(dir, "gid_attrs", "types", e)),
			NetDev: readString(filepath.Join(dir, "gid_attrs", "ndevs", e)),
		}
		gid.RoCEv2 = strings.EqualFold(gid.Type, "RoCE v2")
		port.GIDs = append(port.GIDs, gid)
		if port.ActiveMTU == 0 && port.LinkLayer == "Ethernet" && gid.NetDev != "" {
			port.ActiveMTU = RoCEMTU(mtus[gid.NetDev])
		}
	}
	sort.Slice(port.GIDs, func(i, j int) bool { return port.GIDs[i].Index < port.GIDs[j].Index })
	return port
}

// RoCEMTU returns the largest InfiniBand MTU (256, 512, 1024, 2048, 4096)
// that fits in a RoCE packet on an Ethernet link of netdevMTU bytes, as the
// kernel's iboe_get_mtu computes it (96 bytes of GRH, UDP, BTH and extension
// headers plus ICRC); 0 when not even 256 fits.
func RoCEMTU(netdevMTU int) int {
	const overhead = 40 + 8 + 12 + 4 + 28 + 4
	avail := netdevMTU - overhead
	for _, m := range []int{4096, 2048, 1024, 512, 256} {
		if avail >= m {
			return m
		}
	}
	return 0
}

func isZeroGID(g string) bool {
	return strings.Trim(g, "0:") == ""
}

// afterColon turns sysfs' "4: ACTIVE" into "ACTIVE".
func afterColon(s string) string {
	if i := strings.Index(s, ":"); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

func dirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(path string, def int) int {
	v, err := strconv.Atoi(readString(path))
	if err != nil {
		return def
	}
	return v
}

func readUint(path string) uint64 {
	v, _ := strconv.ParseUint(readString(path), 10, 64)
	return v
}

func hostAddrs(name string) ([]string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out, nil
}
