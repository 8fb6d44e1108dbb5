package node

import (
	"github.com/hashicorp/raft"
	"github.com/weftsearch/weft/internal/vfs"
)

// FabricNameOf and RaftNameOf expose the TLS layers' name look-ups to the
// tests of package node_test.
func (n *Node) FabricNameOf(addr string) string { return n.fabricNameOf(addr) }

func (n *Node) RaftNameOf(addr string) string { return n.raftNameOf(raft.ServerAddress(addr)) }

// LoadMeta exposes loadMeta to the tests of package node_test: the node ID
// it reads or creates.
func LoadMeta(fs vfs.FS, dir string) (string, error) {
	m, err := loadMeta(fs, dir)
	return m.NodeID, err
}
