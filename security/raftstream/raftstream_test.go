package raftstream_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftsearch/weft/internal/logadapt"
	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/security/certs"
	"github.com/weftsearch/weft/security/raftstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// members admits the nodes of a Raft configuration.
func members(names ...string) func(string) error {
	return func(node string) error {
		for _, n := range names {
			if n == node {
				return nil
			}
		}
		return errors.New("not a server of the Raft configuration")
	}
}

// layer listens on loopback as b's node, expecting node names from names
// (address to node) when dialling.
func layer(t *testing.T, b *certs.Bundle, admit func(string) error, names map[raft.ServerAddress]string) *raftstream.Layer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := raftstream.New(ln, raftstream.Config{
		Server:     certs.ServerConfig(b, admit),
		Client:     certs.ClientConfig(b, ""),
		ServerName: func(a raft.ServerAddress) string { return names[a] },
		Identify:   certs.PeerNode,
		Logger:     testlog.New(t),
	})
	require.NoError(t, err)
	return l
}

func transport(t *testing.T, l raft.StreamLayer) *raft.NetworkTransport {
	t.Helper()
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: l, MaxPool: 2, Timeout: 5 * time.Second, Logger: logadapt.Hclog(testlog.New(t), "raft"),
	})
	t.Cleanup(func() {
		tr.CloseStreams() // pooled connections, so the peer's readers end
		require.NoError(t, tr.Close())
	})
	return tr
}

func appendEntries(id string, term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: []byte(id)},
		Term:      term,
	}
}

// serveOne answers the next RPC on tr's consumer and returns its request.
func serveOne(t *testing.T, tr *raft.NetworkTransport) <-chan any {
	got := make(chan any, 1)
	go func() {
		select {
		case rpc := <-tr.Consumer():
			got <- rpc.Command
			rpc.Respond(&raft.AppendEntriesResponse{Term: rpc.Command.(*raft.AppendEntriesRequest).Term, Success: true}, nil)
		case <-time.After(10 * time.Second):
			close(got)
		}
	}()
	return got
}

func TestRaftOverMutualTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, []string{"n1", "n2"}, nil, nil)
	require.NoError(t, err)
	n1, err := certs.Load(dir, "n1")
	require.NoError(t, err)
	n2, err := certs.Load(dir, "n2")
	require.NoError(t, err)

	l1 := layer(t, n1, members("n1", "n2"), nil)
	addr1 := raft.ServerAddress(l1.Addr().String())
	t1 := transport(t, l1)
	t2 := transport(t, layer(t, n2, members("n1", "n2"), map[raft.ServerAddress]string{addr1: "n1"}))

	got := serveOne(t, t1)
	var resp raft.AppendEntriesResponse
	require.NoError(t, t2.AppendEntries("n1", addr1, appendEntries("n2", 5), &resp))
	require.True(t, resp.Success)
	req, ok := (<-got).(*raft.AppendEntriesRequest)
	require.True(t, ok)
	require.Equal(t, uint64(5), req.Term)
}

// A forged AppendEntries with a high term, from a plain TCP Raft transport,
// from a node of another cluster, or from a node not in the configuration,
// never reaches Raft: the next RPC Raft sees is the real leader's.
func TestRaftDropsPeersWithoutTheClusterCertificate(t *testing.T) {
	root := t.TempDir()
	_, err := certs.CreateCluster(filepath.Join(root, "a"), []string{"n1", "n2", "n3"}, nil, nil)
	require.NoError(t, err)
	_, err = certs.CreateCluster(filepath.Join(root, "b"), []string{"n2"}, nil, nil)
	require.NoError(t, err)
	load := func(sub, node string) *certs.Bundle {
		b, err := certs.Load(filepath.Join(root, sub), node)
		require.NoError(t, err)
		return b
	}
	n1 := load("a", "n1")
	l1 := layer(t, n1, members("n1", "n2"), nil)
	addr1 := raft.ServerAddress(l1.Addr().String())
	t1 := transport(t, l1)
	expect := map[raft.ServerAddress]string{addr1: "n1"}

	strangerCA := load("b", "n2")
	strangerCA.Pool = n1.Pool // it trusts our CA; only our check can refuse it
	for _, tc := range []struct {
		name  string
		forge func(t *testing.T) raft.Transport
	}{
		{"plain TCP", func(t *testing.T) raft.Transport {
			tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
			require.NoError(t, err)
			t.Cleanup(func() {
				tr.CloseStreams()
				require.NoError(t, tr.Close())
			})
			return tr
		}},
		{"certificate of another CA", func(t *testing.T) raft.Transport {
			return transport(t, layer(t, strangerCA, nil, expect))
		}},
		{"node not in the configuration", func(t *testing.T) raft.Transport {
			return transport(t, layer(t, load("a", "n3"), nil, expect))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forger := tc.forge(t)
			var resp raft.AppendEntriesResponse
			require.Error(t, forger.AppendEntries("n2", addr1, appendEntries("n2", 1000), &resp))

			got := serveOne(t, t1)
			leader := transport(t, layer(t, load("a", "n2"), nil, expect))
			require.NoError(t, leader.AppendEntries("n1", addr1, appendEntries("n2", 5), &resp))
			req, ok := (<-got).(*raft.AppendEntriesRequest)
			require.True(t, ok)
			require.Equal(t, uint64(5), req.Term, "the forged term-1000 request must never reach Raft")
		})
	}
}

func TestLayerNamesThePeer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, []string{"n1", "n2"}, nil, nil)
	require.NoError(t, err)
	n1, err := certs.Load(dir, "n1")
	require.NoError(t, err)
	n2, err := certs.Load(dir, "n2")
	require.NoError(t, err)
	l1 := layer(t, n1, nil, nil)
	defer l1.Close()
	addr1 := raft.ServerAddress(l1.Addr().String())
	l2 := layer(t, n2, nil, map[raft.ServerAddress]string{addr1: "n1"})
	defer l2.Close()

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l1.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	dialled, err := l2.Dial(addr1, 5*time.Second)
	require.NoError(t, err)
	defer dialled.Close()
	require.Equal(t, "n1", dialled.(*raftstream.Conn).PeerName())
	c, ok := <-accepted
	require.True(t, ok)
	defer c.Close()
	require.Equal(t, "n2", c.(*raftstream.Conn).PeerName())

	l3 := layer(t, n2, nil, map[raft.ServerAddress]string{addr1: "n2"})
	defer l3.Close()
	_, err = l3.Dial(addr1, 5*time.Second)
	require.Error(t, err, "n1 is not the node n2 expected at this address")
}

// sameName is a SpeaksFor under which a node's Raft server id is its name.
func sameName(peer string, id raft.ServerID) error {
	if string(id) != peer {
		return errors.New("the certificate names another node")
	}
	return nil
}

// gatedLayer is layer with SpeaksFor set.
func gatedLayer(t *testing.T, b *certs.Bundle, speaksFor func(string, raft.ServerID) error) *raftstream.Layer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := raftstream.New(ln, raftstream.Config{
		Server: certs.ServerConfig(b, nil), Client: certs.ClientConfig(b, ""),
		Identify: certs.PeerNode, SpeaksFor: speaksFor, Logger: testlog.New(t),
	})
	require.NoError(t, err)
	return l
}

// A node of the cluster that sends an RPC in another node's name — a
// forged AppendEntries with a high term in the leader's name — is dropped
// before Raft reads it; RPCs in its own name, one after another on one
// connection and with a snapshot's data behind them, reach Raft whole.
func TestRaftDropsRPCsForAnotherServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	_, err := certs.CreateCluster(dir, []string{"n1", "n2", "n3"}, nil, nil)
	require.NoError(t, err)
	load := func(node string) *certs.Bundle {
		b, err := certs.Load(dir, node)
		require.NoError(t, err)
		return b
	}
	l1 := gatedLayer(t, load("n1"), sameName)
	addr1 := raft.ServerAddress(l1.Addr().String())
	t1 := transport(t, l1)
	expect := map[raft.ServerAddress]string{addr1: "n1"}
	leader := transport(t, layer(t, load("n2"), nil, expect))
	forger := transport(t, layer(t, load("n3"), nil, expect))

	var resp raft.AppendEntriesResponse
	got := serveOne(t, t1) // a forged RPC that reached Raft would be answered
	require.Error(t, forger.AppendEntries("n1", addr1, appendEntries("n2", 1000), &resp), "n3 speaking for n2")
	for term := uint64(5); term < 8; term++ {
		if term > 5 {
			got = serveOne(t, t1)
		}
		require.NoError(t, leader.AppendEntries("n1", addr1, appendEntries("n2", term), &resp))
		req, ok := (<-got).(*raft.AppendEntriesRequest)
		require.True(t, ok)
		require.Equal(t, term, req.Term, "the forged term-1000 request must never reach Raft")
	}

	data := []byte("a snapshot's bytes, passed through unchecked after its checked request")
	snapshot := make(chan []byte, 1)
	go func() {
		select {
		case rpc := <-t1.Consumer():
			b, _ := io.ReadAll(rpc.Reader)
			snapshot <- b
			rpc.Respond(&raft.InstallSnapshotResponse{Term: 9, Success: true}, nil)
		case <-time.After(10 * time.Second):
			close(snapshot)
		}
	}()
	var sresp raft.InstallSnapshotResponse
	require.NoError(t, leader.InstallSnapshot("n1", addr1, &raft.InstallSnapshotRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("n2")},
		Term:      9, Size: int64(len(data)),
	}, &sresp, bytes.NewReader(data)))
	require.Equal(t, data, <-snapshot)
	got = serveOne(t, t1)
	require.NoError(t, leader.AppendEntries("n1", addr1, appendEntries("n2", 10), &resp))
	req, ok := (<-got).(*raft.AppendEntriesRequest)
	require.True(t, ok)
	require.Equal(t, uint64(10), req.Term, "the RPC after a snapshot is read whole")

	require.Error(t, forger.AppendEntries("n1", addr1, appendEntries("", 1000), &resp), "an RPC naming no server")
}
