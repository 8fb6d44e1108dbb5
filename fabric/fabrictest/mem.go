// Package fabrictest holds what every fabric transport is tested with: an
// in-memory transport ("mem") whose network can delay, drop, corrupt and
// partition messages and kill peers, and RunConformance, the one suite that
// every transport (mem, tcp, rdma, adaptive) must pass unchanged.
package fabrictest

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/fabric/internal/dispatch"
)

// Config bounds the in-memory transport the way a real one is bounded.
type Config struct {
	// MaxInFlight is the per-connection window: calls and one-way messages
	// not yet answered by the peer. A full window blocks Call and Send.
	MaxInFlight int
	// MaxMessageSize is the largest payload accepted; larger gets
	// fabric.ErrTooLarge.
	MaxMessageSize int
	// DrainTimeout bounds how long Listener.Close waits for handlers.
	DrainTimeout time.Duration
}

// DefaultConfig returns the limits NewNetwork uses.
func DefaultConfig() Config {
	return Config{MaxInFlight: 256, MaxMessageSize: fabric.MaxMessageSize, DrainTimeout: 5 * time.Second}
}

// Validate reports the first field out of bounds.
func (c Config) Validate() error {
	switch {
	case c.MaxInFlight < 1 || c.MaxInFlight > 1<<20:
		return fmt.Errorf("fabrictest: Config.MaxInFlight %d is outside [1, %d]", c.MaxInFlight, 1<<20)
	case c.MaxMessageSize < 1 || c.MaxMessageSize > fabric.MaxMessageSize:
		return fmt.Errorf("fabrictest: Config.MaxMessageSize %d is outside [1, %d]", c.MaxMessageSize, fabric.MaxMessageSize)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("fabrictest: Config.DrainTimeout %v must be positive", c.DrainTimeout)
	}
	return nil
}

// Message describes one message on the in-memory wire, for fault rules.
type Message struct {
	From, To string // node names, or listener addresses, of both ends
	Method   fabric.Method
	Reply    bool // a reply travelling back to the caller
	OneWay   bool
	Size     int
}

// Action is what a fault rule does to one message. The zero Action
// delivers it untouched.
type Action struct {
	// Delay holds the message back. Messages in one direction of one
	// connection stay in order, so a delay also delays those behind it.
	Delay time.Duration
	// Drop loses the message: a dropped request or reply leaves its Call
	// waiting for its context, as packet loss without retransmission would.
	Drop bool
	// Corrupt flips a byte in transit. The receiver's CRC32C check catches
	// it and breaks the connection: in-flight calls fail with
	// fabric.ErrClosed; nothing corrupt is delivered.
	Corrupt bool
}

// FaultFunc decides the fate of a message. It is called for every request
// and reply (not for flow-control messages) from many goroutines.
type FaultFunc func(Message) Action

// Network is a set of in-memory nodes. Its methods are safe for concurrent
// use; fault rules apply to messages sent after they change.
type Network struct {
	cfg Config

	mu         sync.Mutex
	listeners  map[string]*memListener
	conns      map[*memConn]struct{}
	rules      map[int]rule
	nextRule   int
	partitions map[int][2][]string
	autoPort   int
}

type rule struct {
	from, to string
	f        FaultFunc
}

// NewNetwork returns an empty network with DefaultConfig.
func NewNetwork() *Network {
	n, err := NewNetworkWithConfig(DefaultConfig())
	if err != nil {
		panic(err) // DefaultConfig is valid.
	}
	return n
}

// NewNetworkWithConfig returns an empty network with cfg, or cfg's
// Validate error.
func NewNetworkWithConfig(cfg Config) (*Network, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Network{
		cfg:        cfg,
		listeners:  make(map[string]*memListener),
		conns:      make(map[*memConn]struct{}),
		rules:      make(map[int]rule),
		partitions: make(map[int][2][]string),
	}, nil
}

// Node returns the transport of the node called name. Connections it dials
// come from name; listeners it opens belong to name.
func (n *Network) Node(name string) *Transport { return &Transport{net: n, node: name} }

// AddFault installs f for messages from one end to another; from and to
// are node names or listener addresses, "*" matches any. It returns a
// function that removes the rule.
func (n *Network) AddFault(from, to string, f FaultFunc) (remove func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextRule
	n.nextRule++
	n.rules[id] = rule{from: from, to: to, f: f}
	return func() {
		n.mu.Lock()
		delete(n.rules, id)
		n.mu.Unlock()
	}
}

// SetDelay delays every message from one end to another by d (one
// direction only); it returns a function that removes the delay.
func (n *Network) SetDelay(from, to string, d time.Duration) (remove func()) {
	return n.AddFault(from, to, func(Message) Action { return Action{Delay: d} })
}

// Partition drops every message between any end in a and any end in b, in
// both directions, and refuses dials across it, until heal is called.
func (n *Network) Partition(a, b []string) (heal func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextRule
	n.nextRule++
	n.partitions[id] = [2][]string{slices.Clone(a), slices.Clone(b)}
	return func() {
		n.mu.Lock()
		delete(n.partitions, id)
		n.mu.Unlock()
	}
}

// Kill simulates the death of a peer: every listener whose address or node
// is target stops without goodbye, and every connection to it or dialled
// from node target breaks; their callers' in-flight calls fail at once with
// fabric.ErrClosed. The dead side's handler contexts are cancelled but not
// waited for (Listener.Close still waits). The address is free to listen on
// again.
func (n *Network) Kill(target string) {
	n.mu.Lock()
	var ls []*memListener
	for addr, l := range n.listeners {
		if addr == target || l.node == target {
			ls = append(ls, l)
			delete(n.listeners, addr)
		}
	}
	var cs []*memConn
	for c := range n.conns {
		if c.local == target {
			cs = append(cs, c)
		}
	}
	n.mu.Unlock()
	for _, l := range ls {
		l.kill()
	}
	for _, c := range cs {
		c.fail(fmt.Errorf("fabrictest: node %s was killed: %w", target, fabric.ErrClosed))
	}
}

// ends lists the names a message end matches: its node and its address.
func matches(pattern string, names ...string) bool {
	if pattern == "*" {
		return true
	}
	return slices.Contains(names, pattern)
}

func (n *Network) partitioned(fromNames, toNames []string) bool {
	in := func(set []string, names []string) bool {
		for _, s := range set {
			if matches(s, names...) {
				return true
			}
		}
		return false
	}
	for _, p := range n.partitions {
		if (in(p[0], fromNames) && in(p[1], toNames)) || (in(p[1], fromNames) && in(p[0], toNames)) {
			return true
		}
	}
	return false
}

// fate combines every rule that matches m.
func (n *Network) fate(m Message, fromNames, toNames []string) Action {
	n.mu.Lock()
	if n.partitioned(fromNames, toNames) {
		n.mu.Unlock()
		return Action{Drop: true}
	}
	var fs []FaultFunc
	for _, r := range n.rules {
		if matches(r.from, fromNames...) && matches(r.to, toNames...) {
			fs = append(fs, r.f)
		}
	}
	n.mu.Unlock()
	var act Action
	for _, f := range fs {
		a := f(m)
		act.Delay += a.Delay
		act.Drop = act.Drop || a.Drop
		act.Corrupt = act.Corrupt || a.Corrupt
	}
	return act
}

// Transport is one node's view of a Network. It implements
// fabric.Transport with the name "mem".
type Transport struct {
	net  *Network
	node string
}

var _ fabric.Transport = (*Transport)(nil)

// Name returns "mem".
func (t *Transport) Name() string { return "mem" }

// Listen serves h on addr, any non-empty name unique in the network; an
// empty addr or one ending in ":0" gets a fresh "node:N" name.
func (t *Transport) Listen(ctx context.Context, addr string, h fabric.Handler) (fabric.Listener, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := t.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr == "" || len(addr) > 2 && addr[len(addr)-2:] == ":0" {
		n.autoPort++
		addr = t.node + ":" + strconv.Itoa(n.autoPort)
	}
	if _, taken := n.listeners[addr]; taken {
		return nil, fmt.Errorf("fabrictest: listen on %s: address already in use; close the other listener or pick another name", addr)
	}
	l := &memListener{net: n, node: t.node, addr: addr, h: h, sessions: make(map[*memConn]struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dial connects to the listener at addr.
func (t *Transport) Dial(ctx context.Context, addr string) (fabric.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := t.net
	n.mu.Lock()
	l := n.listeners[addr]
	if l == nil {
		n.mu.Unlock()
		return nil, fmt.Errorf("fabrictest: dial %s from %s: nothing listens there: %w", addr, t.node, fabric.ErrClosed)
	}
	if n.partitioned([]string{t.node}, []string{l.node, l.addr}) {
		n.mu.Unlock()
		return nil, fmt.Errorf("fabrictest: dial %s from %s: a partition separates them: %w", addr, t.node, fabric.ErrClosed)
	}
	c := &memConn{
		net: n, local: t.node, remote: addr, l: l,
		sem:     make(chan struct{}, n.cfg.MaxInFlight),
		pending: make(map[uint64]*memCall),
		done:    make(chan struct{}),
	}
	c.fromNames = []string{t.node}
	c.toNames = []string{l.node, l.addr}
	c.toServer = newWire(&c.wg)
	c.toClient = newWire(&c.wg)
	if !l.add(c) {
		n.mu.Unlock()
		return nil, fmt.Errorf("fabrictest: dial %s from %s: listener is closing: %w", addr, t.node, fabric.ErrClosed)
	}
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	c.d = dispatch.New(context.Background(), l.h, t.node, c.respond, nil)
	return c, nil
}

type memListener struct {
	net  *Network
	node string
	addr string
	h    fabric.Handler

	mu       sync.Mutex
	closed   bool
	sessions map[*memConn]struct{}
	all      []*memConn // every session ever, for Close to wait on
}

func (l *memListener) Addr() string { return l.addr }

func (l *memListener) add(c *memConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.sessions[c] = struct{}{}
	l.all = append(l.all, c)
	return true
}

func (l *memListener) stop() []*memConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	cs := make([]*memConn, 0, len(l.sessions))
	for c := range l.sessions {
		cs = append(cs, c)
	}
	return cs
}

func (l *memListener) kill() {
	for _, c := range l.stop() {
		c.fail(fmt.Errorf("fabrictest: peer %s was killed: %w", l.addr, fabric.ErrClosed))
	}
}

// Close stops the listener, fails its connections' in-flight calls with
// fabric.ErrClosed and waits (up to Config.DrainTimeout) for its handlers.
func (l *memListener) Close() error {
	l.net.mu.Lock()
	if l.net.listeners[l.addr] == l {
		delete(l.net.listeners, l.addr)
	}
	l.net.mu.Unlock()
	for _, c := range l.stop() {
		c.fail(fmt.Errorf("fabrictest: listener %s closed: %w", l.addr, fabric.ErrClosed))
	}
	l.mu.Lock()
	all := slices.Clone(l.all)
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.net.cfg.DrainTimeout)
	defer cancel()
	var errs []error
	for _, c := range all {
		c.wg.Wait() // wires first: they may still be dispatching
		if err := c.d.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type memCall struct {
	oneWay bool
	ch     chan memResult
}

type memResult struct {
	reply []byte
	err   error
}

// memConn is both ends of one in-memory connection: the client's Conn and
// the server's session.
type memConn struct {
	net                *Network
	local, remote      string
	fromNames, toNames []string
	l                  *memListener
	d                  *dispatch.Dispatcher
	sem                chan struct{}
	toServer, toClient *wire
	wg                 sync.WaitGroup

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*memCall
	err     error // set once broken
	done    chan struct{}

	calls, callErrs, sends, sent, received atomic.Uint64
}

var _ fabric.Conn = (*memConn)(nil)

func (c *memConn) RemoteAddr() string { return c.remote }

func (c *memConn) Stats() fabric.ConnStats {
	c.mu.Lock()
	inFlight := len(c.pending)
	c.mu.Unlock()
	return fabric.ConnStats{
		Transport: "mem", Calls: c.calls.Load(), CallErrors: c.callErrs.Load(), Sends: c.sends.Load(),
		BytesSent: c.sent.Load(), BytesReceived: c.received.Load(), InFlight: inFlight,
	}
}

func (c *memConn) Close() error {
	c.fail(fmt.Errorf("fabrictest: connection to %s closed: %w", c.remote, fabric.ErrClosed))
	c.wg.Wait()
	return nil
}

// fail breaks the connection with err (which wraps fabric.ErrClosed).
func (c *memConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	close(c.done)
	c.mu.Unlock()
	for _, p := range pending {
		if !p.oneWay {
			p.ch <- memResult{err: err}
		}
	}
	c.toServer.stop()
	c.toClient.stop()
	c.d.Close()
	c.l.mu.Lock()
	delete(c.l.sessions, c)
	c.l.mu.Unlock()
	c.net.mu.Lock()
	delete(c.net.conns, c)
	c.net.mu.Unlock()
}

func (c *memConn) begin(ctx context.Context, payload []byte, oneWay bool) (uint64, *memCall, error) {
	if len(payload) > c.net.cfg.MaxMessageSize {
		return 0, nil, fmt.Errorf("fabrictest: payload of %d bytes exceeds the %d-byte limit; use fabric.SendStream: %w",
			len(payload), c.net.cfg.MaxMessageSize, fabric.ErrTooLarge)
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-c.done:
		return 0, nil, c.brokenErr()
	}
	p := &memCall{oneWay: oneWay}
	if !oneWay {
		p.ch = make(chan memResult, 1)
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		<-c.sem
		return 0, nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = p
	c.mu.Unlock()
	return id, p, nil
}

func (c *memConn) brokenErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// forget removes id from the pending set and returns its window slot.
func (c *memConn) forget(id uint64) {
	c.mu.Lock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		<-c.sem
	}
}

// transmit puts a request on the wire to the server, applying faults. It
// reports whether the message was dropped.
func (c *memConn) transmit(id uint64, method fabric.Method, payload []byte, oneWay bool) (dropped bool) {
	act := c.net.fate(Message{From: c.local, To: c.remote, Method: method, OneWay: oneWay, Size: len(payload)},
		c.fromNames, c.toNames)
	if act.Drop {
		return true
	}
	p, sum := seal(payload, act.Corrupt)
	c.sent.Add(uint64(len(payload)))
	c.toServer.push(act.Delay, func() {
		if crc32.Checksum(p, castagnoli) != sum {
			c.fail(fmt.Errorf("fabrictest: request %d to %s failed its CRC32C check (corrupted in transit): %w",
				id, c.remote, fabric.ErrClosed))
			return
		}
		c.d.Dispatch(id, method, p, oneWay, &p) // p is this request's own copy: lendable
	})
	return false
}

// seal copies payload (the caller owns it again after the call) and
// returns the copy with its checksum, flipping a byte after summing when
// corrupt is set.
func seal(payload []byte, corrupt bool) ([]byte, uint32) {
	p := slices.Clone(payload)
	if p == nil {
		p = []byte{}
	}
	sum := crc32.Checksum(p, castagnoli)
	if corrupt {
		if len(p) > 0 {
			p[len(p)/2] ^= 0x40
		} else {
			sum ^= 1
		}
	}
	return p, sum
}

func (c *memConn) Call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	c.calls.Add(1)
	reply, err := c.call(ctx, method, payload)
	if err != nil {
		c.callErrs.Add(1)
	}
	return reply, err
}

func (c *memConn) call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	id, p, err := c.begin(ctx, payload, false)
	if err != nil {
		return nil, err
	}
	defer c.forget(id)
	c.transmit(id, method, payload, false)
	select {
	case r := <-p.ch:
		return r.reply, r.err
	case <-ctx.Done():
		c.toServer.push(0, func() { c.d.Cancel(id) })
		return nil, ctx.Err()
	}
}

func (c *memConn) Send(ctx context.Context, method fabric.Method, payload []byte) error {
	c.sends.Add(1)
	id, _, err := c.begin(ctx, payload, true)
	if err != nil {
		return err
	}
	if c.transmit(id, method, payload, true) {
		c.forget(id)
	}
	return nil
}

// respond runs on the server side when a handler returns.
func (c *memConn) respond(id uint64, oneWay bool, reply []byte, err error) {
	if oneWay {
		c.toClient.push(0, func() { c.forget(id) })
		return
	}
	var re *fabric.RemoteError
	if err != nil {
		re = fabric.AsRemote(err)
		reply = nil
	}
	act := c.net.fate(Message{From: c.remote, To: c.local, Reply: true, Size: len(reply)}, c.toNames, c.fromNames)
	if act.Drop {
		return
	}
	p, sum := seal(reply, act.Corrupt)
	c.toClient.push(act.Delay, func() {
		if crc32.Checksum(p, castagnoli) != sum {
			c.fail(fmt.Errorf("fabrictest: reply %d from %s failed its CRC32C check (corrupted in transit): %w",
				id, c.remote, fabric.ErrClosed))
			return
		}
		c.mu.Lock()
		pc := c.pending[id]
		c.mu.Unlock()
		if pc == nil {
			return // the caller gave up
		}
		c.received.Add(uint64(len(p)))
		if re != nil {
			pc.ch <- memResult{err: re}
		} else {
			pc.ch <- memResult{reply: p}
		}
	})
}

// wire delivers functions in order, each not before its time, on one
// goroutine owned by the connection.
type wire struct {
	mu     sync.Mutex
	q      []envelope
	last   time.Time
	kick   chan struct{}
	stopCh chan struct{}
	once   sync.Once
}

type envelope struct {
	at      time.Time
	deliver func()
}

func newWire(wg *sync.WaitGroup) *wire {
	w := &wire{kick: make(chan struct{}, 1), stopCh: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run()
	}()
	return w
}

func (w *wire) push(delay time.Duration, f func()) {
	at := time.Now().Add(delay)
	w.mu.Lock()
	if at.Before(w.last) {
		at = w.last
	}
	w.last = at
	w.q = append(w.q, envelope{at: at, deliver: f})
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *wire) stop() { w.once.Do(func() { close(w.stopCh) }) }

func (w *wire) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.mu.Lock()
		if len(w.q) == 0 {
			w.mu.Unlock()
			select {
			case <-w.kick:
				continue
			case <-w.stopCh:
				return
			}
		}
		e := w.q[0]
		w.mu.Unlock()
		if d := time.Until(e.at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-w.stopCh:
				return
			}
		}
		select {
		case <-w.stopCh:
			return
		default:
		}
		w.mu.Lock()
		w.q[0] = envelope{}
		w.q = w.q[1:]
		w.mu.Unlock()
		e.deliver()
	}
}
