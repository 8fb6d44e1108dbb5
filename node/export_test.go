package node

import "github.com/hashicorp/raft"

// FabricNameOf and RaftNameOf expose the TLS layers' name look-ups to the
// tests of package node_test.
func (n *Node) FabricNameOf(addr string) string { return n.fabricNameOf(addr) }

func (n *Node) RaftNameOf(addr string) string { return n.raftNameOf(raft.ServerAddress(addr)) }
