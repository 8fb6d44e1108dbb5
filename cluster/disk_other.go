//go:build !unix

package cluster

import "github.com/weftsearch/weft/cluster/state"

// statfsUsage reports nothing where there is no statfs: the usage is
// unknown, and the disk watermarks never apply to the node.
func statfsUsage(string) (state.DiskUsage, error) { return state.DiskUsage{}, nil }
