// Package fabricdiag holds a node's fabric diagnostics: the JSON reports a
// node serves under /_weft/fabric/ and `searchctl fabric` reads, and
// Counting, the path-transport wrapper that counts a listener's inbound
// traffic per peer (the path transports keep no per-connection counters on
// the serving side).
//
// It sits under fabric/, above the transports it describes and below both
// the node that fills the reports and searchctl that decodes them, so
// neither has to import the other. No other package under fabric/ imports it.
package fabricdiag

import (
	"context"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/adaptive"
	"github.com/weftsearch/weft/fabric/discovery"
	"github.com/weftsearch/weft/fabric/rdma"
)

// DevicesReport is GET /_weft/fabric/devices.
type DevicesReport struct {
	// Interfaces are the host's network interfaces (sysfs class/net).
	Interfaces []discovery.Interface `json:"interfaces"`
	// RDMADevices are the RDMA devices from sysfs class/infiniband, listed
	// in every build; empty when the host has none.
	RDMADevices []discovery.RDMADevice `json:"rdma_devices"`
	// RDMA sums the RDMA side up in words: "2 devices, 1 with an ACTIVE
	// port", or "none: ..." saying why.
	RDMA string `json:"rdma"`
	// VerbsDevices is what libibverbs reports (max MTU included); only in
	// builds with RDMA support (rdma.Available) on a host with verbs.
	VerbsDevices []rdma.DeviceInfo `json:"verbs_devices"`
	// VerbsError says why VerbsDevices is empty, when it is.
	VerbsError string `json:"verbs_error,omitempty"`
	// RDMAPath says whether the node's fabric has an RDMA path: "on", or
	// "off: reason" (the same words as ConnsReport.RDMA).
	RDMAPath string `json:"rdma_path"`
	// RDMATransport is the node's RDMA transport as a whole
	// (rdma.Transport.Info): device and port, the port's state now, the key
	// scope of its rendezvous keys, why it refuses new connections (empty
	// while it accepts them), its asynchronous events. Null when the node
	// has no RDMA path; RDMAPath says why.
	RDMATransport *rdma.TransportInfo `json:"rdma_transport"`
}

// ConnsReport is GET /_weft/fabric/conns.
type ConnsReport struct {
	// Fabric is "on" when the node serves the fabric, "off" otherwise.
	Fabric string `json:"fabric"`
	// ListenAddr is the adaptive path list peers dial, e.g.
	// "tcp:127.0.0.1:9300,rdma:127.0.0.1:40123"; "" when off.
	ListenAddr string `json:"listen_addr,omitempty"`
	// RDMA says whether the node has an RDMA path: "on", or "off: reason".
	RDMA string `json:"rdma"`
	// RDMATransport is the node's RDMA transport as a whole, as in
	// DevicesReport; null when the node has no RDMA path.
	RDMATransport *rdma.TransportInfo `json:"rdma_transport"`
	// Conns lists each peer: inbound ones by remote host, outbound ones by
	// the address dialled. Never nil.
	Conns []PeerConn `json:"conns"`
	// RDMAQPs lists every RDMA queue pair of the node's RDMA transport,
	// inbound and outbound. Never nil.
	RDMAQPs []rdma.ConnInfo `json:"rdma_qps"`
}

// PeerConn is one peer of the node.
type PeerConn struct {
	Peer string `json:"peer"`
	// Direction is "inbound" (the peer dialled this node) or "outbound".
	Direction string `json:"direction"`
	// Paths are the path connections to the peer with their counters.
	Paths []PathCounters `json:"paths"`
	// Totals are the whole connection's counters (fabric.Conn.Stats), on
	// outbound peers only.
	Totals *fabric.ConnStats `json:"totals,omitempty"`
	// DecisionTable is the adaptive transport's per-path, per-size table;
	// only the dialling side keeps one, so it is set on outbound peers.
	DecisionTable []adaptive.PathStats `json:"decision_table,omitempty"`
}

// PathCounters are the counters of one path connection. Inbound messages
// are the requests and one-way messages that reached the node's handler
// (probes the transport answers itself, MethodPing, are not counted);
// outbound messages are the calls the adaptive transport finished on the
// path (calls answered with a remote error count in Totals only) and
// outbound errors are the path's failures.
type PathCounters struct {
	Transport     string    `json:"transport"`
	Remote        string    `json:"remote"`
	Messages      uint64    `json:"messages"`
	BytesReceived uint64    `json:"bytes_received"`
	BytesSent     uint64    `json:"bytes_sent"`
	Errors        uint64    `json:"errors"`
	LastSeen      time.Time `json:"last_seen,omitzero"`
	// QP is the RDMA queue pair of an rdma path, when the node's RDMA
	// transport knows one for this remote.
	QP *rdma.ConnInfo `json:"qp,omitempty"`
}

// MaxPeers bounds the inbound counters a Counting keeps; beyond it the
// entry seen longest ago is dropped, so peers that come and go do not grow
// the table without end.
const MaxPeers = 1024

// Counting wraps path transports so that whatever they serve is counted per
// (transport, remote address). Make one per listener; it is safe for
// concurrent use.
type Counting struct {
	mu      sync.Mutex
	entries map[counterKey]*counter
}

type counterKey struct{ transport, remote string }

type counter struct {
	messages, bytesIn, bytesOut, errors atomic.Uint64
	lastSeen                            atomic.Int64
}

// NewCounting returns an empty counter table.
func NewCounting() *Counting { return &Counting{entries: make(map[counterKey]*counter)} }

// Wrap returns tr with its Listen handlers counted by c; Dial and Name pass
// through. Give the wrapped transports to adaptive.New.
func (c *Counting) Wrap(tr fabric.Transport) fabric.Transport { return &countedTransport{tr, c} }

func (c *Counting) get(transport, remote string) *counter {
	k := counterKey{transport, remote}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil {
		if len(c.entries) >= MaxPeers {
			c.evictLocked()
		}
		e = &counter{}
		c.entries[k] = e
	}
	return e
}

func (c *Counting) evictLocked() {
	var oldest counterKey
	first, oldestT := true, int64(0)
	for k, e := range c.entries {
		if t := e.lastSeen.Load(); first || t < oldestT {
			oldest, oldestT, first = k, t, false
		}
	}
	delete(c.entries, oldest)
}

// Peers returns the counters grouped by remote host, sorted by host, then
// transport and remote address.
func (c *Counting) Peers() []PeerConn {
	c.mu.Lock()
	byHost := make(map[string][]PathCounters)
	for k, e := range c.entries {
		host, _, err := net.SplitHostPort(k.remote)
		if err != nil {
			host = k.remote
		}
		pc := PathCounters{Transport: k.transport, Remote: k.remote, Messages: e.messages.Load(),
			BytesReceived: e.bytesIn.Load(), BytesSent: e.bytesOut.Load(), Errors: e.errors.Load()}
		if t := e.lastSeen.Load(); t != 0 {
			pc.LastSeen = time.Unix(0, t).UTC()
		}
		byHost[host] = append(byHost[host], pc)
	}
	c.mu.Unlock()
	out := make([]PeerConn, 0, len(byHost))
	for host, paths := range byHost {
		sort.Slice(paths, func(i, j int) bool {
			if paths[i].Transport != paths[j].Transport {
				return paths[i].Transport < paths[j].Transport
			}
			return paths[i].Remote < paths[j].Remote
		})
		out = append(out, PeerConn{Peer: host, Direction: "inbound", Paths: paths})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

type countedTransport struct {
	fabric.Transport
	c *Counting
}

func (t *countedTransport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	return t.Transport.Listen(ctx, addr, &countedHandler{h: h, c: t.c, transport: t.Name()})
}

type countedHandler struct {
	h         fabric.Handler
	c         *Counting
	transport string
}

func (h *countedHandler) ServeFabric(ctx context.Context, req *fabric.Request) ([]byte, error) {
	e := h.c.get(h.transport, req.Peer)
	e.lastSeen.Store(time.Now().UnixNano())
	e.messages.Add(1)
	e.bytesIn.Add(uint64(len(req.Payload)))
	reply, err := h.h.ServeFabric(ctx, req)
	if err != nil {
		e.errors.Add(1)
	} else if !req.OneWay {
		e.bytesOut.Add(uint64(len(reply)))
	}
	return reply, err
}
