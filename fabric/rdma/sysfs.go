package rdma

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// sysfsRoot is where the kernel lists verbs devices.
const sysfsRoot = "/sys/class/infiniband"

// readGIDs lists the populated GID entries of dev/port under root (the
// kernel's gids, gid_attrs/types and gid_attrs/ndevs files). Entries whose
// type cannot be read are unpopulated and skipped.
func readGIDs(root, dev string, port int) ([]GIDInfo, error) {
	dir := filepath.Join(root, dev, "ports", strconv.Itoa(port))
	ents, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		return nil, fmt.Errorf("rdma: listing GIDs of %s port %d: %w", dev, port, err)
	}
	var out []GIDInfo
	for _, e := range ents {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "gids", e.Name()))
		if err != nil {
			continue
		}
		gid := net.ParseIP(strings.TrimSpace(string(raw)))
		if gid == nil || gid.IsUnspecified() {
			continue
		}
		typ, err := os.ReadFile(filepath.Join(dir, "gid_attrs", "types", e.Name()))
		if err != nil {
			continue
		}
		ndev, _ := os.ReadFile(filepath.Join(dir, "gid_attrs", "ndevs", e.Name()))
		out = append(out, GIDInfo{Index: idx, GID: gid, Type: strings.TrimSpace(string(typ)), Netdev: strings.TrimSpace(string(ndev))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// chooseGID picks the GID to source traffic from. A non-negative index is
// taken as given (it must be populated). Otherwise it is the first RoCE v2
// entry whose GID is IPv4-mapped, preferring one equal to want when want is
// set; on InfiniBand (no RoCE types) the first entry.
func chooseGID(gids []GIDInfo, index int, want net.IP, linkLayer string) (GIDInfo, error) {
	if index >= 0 {
		for _, g := range gids {
			if g.Index == index {
				return g, nil
			}
		}
		return GIDInfo{}, fmt.Errorf("rdma: GID index %d is not populated; see `rdma link` and the gids under %s, or set GIDIndex to -1", index, sysfsRoot)
	}
	if linkLayer == "InfiniBand" {
		if len(gids) == 0 {
			return GIDInfo{}, fmt.Errorf("rdma: the InfiniBand port has no GID")
		}
		return gids[0], nil
	}
	var first *GIDInfo
	for i := range gids {
		g := &gids[i]
		if g.Type != "RoCE v2" || g.GID.To4() == nil {
			continue
		}
		if want != nil && want.To4() != nil && g.GID.Equal(want) {
			return *g, nil
		}
		if first == nil {
			first = g
		}
	}
	if first == nil {
		return GIDInfo{}, fmt.Errorf("rdma: no IPv4-mapped RoCE v2 GID on the port (%d entries); give the bound netdev an IPv4 address", len(gids))
	}
	return *first, nil
}
