package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsearch/weft/cluster"
	"github.com/weftsearch/weft/fabric"
)

// peerDialTimeout bounds one dial of another node's fabric.
const peerDialTimeout = 5 * time.Second

// peers is the node's pool of fabric connections to the other nodes, one
// per node ID, addressed from the cluster's node records: the fabric.Caller
// of the data node, the coordinator and the cluster. A connection that breaks
// is dropped, and the next call dials again (to the node's current
// address). Safe for concurrent use.
type peers struct {
	dial    func(ctx context.Context, addr string) (fabric.Conn, error)
	resolve func(nodeID string) (addr string, ok bool)

	mu     sync.Mutex
	conns  map[string]*peerConn
	closed bool
	done   chan struct{} // closed by Close
}

// peerConn is one node's connection, or the dial in progress.
type peerConn struct {
	addr  string
	ready chan struct{} // closed once conn or err is set
	conn  fabric.Conn
	err   error
}

func newPeers(dial func(context.Context, string) (fabric.Conn, error), resolve func(string) (string, bool)) *peers {
	return &peers{dial: dial, resolve: resolve, conns: map[string]*peerConn{}, done: make(chan struct{})}
}

// forgetDeparted drops, after every change of the cluster state until
// Close, the connections to the nodes it says are not live, and once more
// when such a node is live again: a node that left or failed and comes
// back is a new process, and a connection to its old one (even one dialled
// while it was going away) would fail the first call made to it.
func (p *peers) forgetDeparted(c *cluster.Cluster) {
	changed, unwatch := c.Watch()
	go func() {
		defer unwatch()
		down := map[string]bool{}
		for {
			for id, n := range c.State().Nodes {
				if !n.Live || down[id] {
					p.forget(id)
				}
				down[id] = !n.Live
			}
			select {
			case <-changed:
			case <-p.done:
				return
			}
		}
	}()
}

// forget drops the node's connection, if there is one.
func (p *peers) forget(nodeID string) {
	p.mu.Lock()
	pc := p.conns[nodeID]
	delete(p.conns, nodeID)
	p.mu.Unlock()
	if pc != nil {
		go pc.close() // after its dial, if one is under way
	}
}

// Call sends one call to the node's fabric. A transport failure closes the
// connection so that the next call dials again.
func (p *peers) Call(ctx context.Context, nodeID string, method fabric.Method, payload []byte) ([]byte, error) {
	pc, err := p.conn(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	reply, err := pc.conn.Call(ctx, method, payload)
	if err != nil && errors.Is(err, fabric.ErrClosed) {
		p.drop(nodeID, pc)
	}
	return reply, err
}

// conn returns the node's connection, dialling it (once, for every caller
// waiting) when there is none or the node moved.
func (p *peers) conn(ctx context.Context, nodeID string) (*peerConn, error) {
	addr, ok := p.resolve(nodeID)
	if !ok || addr == "" {
		return nil, fmt.Errorf("node: no fabric address known for node %s: %w", nodeID, fabric.ErrClosed)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fabric.ErrClosed
	}
	pc := p.conns[nodeID]
	if pc != nil && pc.addr != addr {
		delete(p.conns, nodeID)
		go pc.close()
		pc = nil
	}
	if pc == nil {
		pc = &peerConn{addr: addr, ready: make(chan struct{})}
		p.conns[nodeID] = pc
		go func() {
			dctx, cancel := context.WithTimeout(context.Background(), peerDialTimeout)
			defer cancel()
			pc.conn, pc.err = p.dial(dctx, addr)
			close(pc.ready)
			if pc.err != nil {
				p.drop(nodeID, pc)
			}
		}()
	}
	p.mu.Unlock()
	select {
	case <-pc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if pc.err != nil {
		return nil, fmt.Errorf("node: dialling node %s at %s: %w", nodeID, addr, pc.err)
	}
	return pc, nil
}

// drop forgets pc (if it is still the node's) and closes it.
func (p *peers) drop(nodeID string, pc *peerConn) {
	p.mu.Lock()
	if p.conns[nodeID] == pc {
		delete(p.conns, nodeID)
	}
	p.mu.Unlock()
	pc.close()
}

// close closes the connection once the dial is over.
func (pc *peerConn) close() {
	<-pc.ready
	if pc.conn != nil {
		_ = pc.conn.Close()
	}
}

// Close closes every connection; later calls fail with fabric.ErrClosed.
func (p *peers) Close() {
	p.mu.Lock()
	if !p.closed {
		close(p.done)
	}
	p.closed = true
	conns := p.conns
	p.conns = map[string]*peerConn{}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close()
	}
}
