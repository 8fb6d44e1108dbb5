package fabricbench

import (
	"context"
	"fmt"
)

// PeerNames lists the names NewPeer knows, in the order the command runs
// them by default.
var PeerNames = []string{"raw", "grpc"}

// NewPeer builds a peer on loopback by name: "raw", "grpc".
func NewPeer(ctx context.Context, name string) (Peer, error) {
	switch name {
	case "raw":
		return NewRawPeer("127.0.0.1:0")
	case "grpc":
		return NewGRPCPeer("127.0.0.1:0")
	default:
		return nil, fmt.Errorf("fabricbench: unknown transport %q; known: %v", name, PeerNames)
	}
}
