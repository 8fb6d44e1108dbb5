// Package clustertest partitions cluster nodes in tests, across the three
// layers a node talks over at once: Raft's stream layer, memberlist's
// transport and the fabric (a fabrictest network). Hook a node with
// RaftLayer and GossipWrap (cluster.Config's test hooks) and give it a
// transport of the fabrictest network under the same name.
package clustertest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/weftsearch/weft/fabric/fabrictest"
)

// Faults is a set of partitions between named nodes. Its methods are safe
// for concurrent use.
type Faults struct {
	fab *fabrictest.Network // may be nil

	mu      sync.Mutex
	owners  map[string]string         // raft or gossip address → node name
	blocked map[[2]string]int         // ordered name pair → partitions holding it
	conns   map[*trackedConn]struct{} // Raft connections, to cut on Partition
}

// New returns a Faults with no partitions; fab (may be nil) is partitioned
// with the same names.
func New(fab *fabrictest.Network) *Faults {
	return &Faults{fab: fab, owners: map[string]string{}, blocked: map[[2]string]int{}, conns: map[*trackedConn]struct{}{}}
}

// ErrPartitioned is what a dial across a partition fails with.
var ErrPartitioned = errors.New("clustertest: partitioned")

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Partition cuts every node in a off from every node in b, in both
// directions, on all three layers, until heal is called: dials fail,
// packets are dropped and open Raft connections between them are closed.
func (f *Faults) Partition(a, b []string) (heal func()) {
	var fabHeal func()
	if f.fab != nil {
		fabHeal = f.fab.Partition(a, b)
	}
	f.mu.Lock()
	var pairs [][2]string
	for _, x := range a {
		for _, y := range b {
			if x != y {
				p := pair(x, y)
				f.blocked[p]++
				pairs = append(pairs, p)
			}
		}
	}
	var cut []*trackedConn
	for c := range f.conns {
		if f.blocked[pair(c.from, f.owners[c.to])] > 0 {
			cut = append(cut, c)
		}
	}
	f.mu.Unlock()
	for _, c := range cut {
		_ = c.Close()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			for _, p := range pairs {
				if f.blocked[p]--; f.blocked[p] == 0 {
					delete(f.blocked, p)
				}
			}
			f.mu.Unlock()
			if fabHeal != nil {
				fabHeal()
			}
		})
	}
}

// cut reports whether node from may not reach the node at address to.
func (f *Faults) cut(from, to string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	owner, ok := f.owners[to]
	return ok && f.blocked[pair(from, owner)] > 0
}

func (f *Faults) own(addr, node string) {
	f.mu.Lock()
	f.owners[addr] = node
	f.mu.Unlock()
}

// RaftLayer returns the hook for node's cluster.Config.RaftLayer.
func (f *Faults) RaftLayer(node string) func(raft.StreamLayer) raft.StreamLayer {
	return func(inner raft.StreamLayer) raft.StreamLayer {
		f.own(inner.Addr().String(), node)
		return &faultLayer{StreamLayer: inner, f: f, node: node}
	}
}

type faultLayer struct {
	raft.StreamLayer
	f    *Faults
	node string
}

func (l *faultLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	to := string(address)
	if l.f.cut(l.node, to) {
		return nil, fmt.Errorf("%w: %s to %s", ErrPartitioned, l.node, to)
	}
	conn, err := l.StreamLayer.Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	c := &trackedConn{Conn: conn, f: l.f, from: l.node, to: to}
	l.f.mu.Lock()
	l.f.conns[c] = struct{}{}
	l.f.mu.Unlock()
	return c, nil
}

// trackedConn is a Raft connection a partition can cut.
type trackedConn struct {
	net.Conn
	f        *Faults
	from, to string
	once     sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}

// GossipWrap returns the hook for node's cluster.Config.GossipWrap.
func (f *Faults) GossipWrap(node string) func(memberlist.Transport) memberlist.Transport {
	return func(inner memberlist.Transport) memberlist.Transport {
		if ip, port, err := inner.FinalAdvertiseAddr("", 0); err == nil {
			f.own(net.JoinHostPort(ip.String(), fmt.Sprint(port)), node)
		}
		t := &faultTransport{Transport: inner, f: f, node: node, packets: make(chan *memberlist.Packet), stop: make(chan struct{})}
		t.wg.Add(1)
		go t.filter()
		return t
	}
}

type faultTransport struct {
	memberlist.Transport
	f       *Faults
	node    string
	packets chan *memberlist.Packet
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// filter passes on the packets that do not come across a partition.
func (t *faultTransport) filter() {
	defer t.wg.Done()
	in := t.Transport.PacketCh()
	for {
		select {
		case <-t.stop:
			return
		case p := <-in:
			if p.From != nil && t.f.cut(t.node, p.From.String()) {
				continue
			}
			select {
			case t.packets <- p:
			case <-t.stop:
				return
			}
		}
	}
}

func (t *faultTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *faultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.f.cut(t.node, addr) {
		return time.Now(), nil // dropped on the way, as UDP may be
	}
	return t.Transport.WriteTo(b, addr)
}

func (t *faultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.f.cut(t.node, addr) {
		return nil, fmt.Errorf("%w: %s to %s", ErrPartitioned, t.node, addr)
	}
	return t.Transport.DialTimeout(addr, timeout)
}

// Shutdown shuts the inner transport down first, passing packets on
// meanwhile (memberlist reads until then, and the inner transport waits
// for its packets to be taken), then stops the filter.
func (t *faultTransport) Shutdown() error {
	err := t.Transport.Shutdown()
	t.once.Do(func() { close(t.stop) })
	t.wg.Wait()
	return err
}
