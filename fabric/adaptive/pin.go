package adaptive

import "sync/atomic"

// Pin holds the name of one path transport ("tcp", "rdma") that carries
// every call of the connections whose Config.Pin it is, or "" for none.
// It exists to measure one path through the adaptive layer — envelopes,
// exactly-once and all — side by side with the others in one run
// (benchmarks); production leaves Config.Pin nil. A nil *Pin is "".
// Set may be called at any time, from any goroutine; one Pin may be
// shared by several transports.
type Pin struct {
	name atomic.Pointer[string]
}

// Set pins calls to the paths of transport name; "" unpins them.
func (p *Pin) Set(name string) { p.name.Store(&name) }

// Name is the pinned transport, or "".
func (p *Pin) Name() string {
	if p == nil {
		return ""
	}
	if s := p.name.Load(); s != nil {
		return *s
	}
	return ""
}

// pinnedLocked returns the healthy path of the pinned transport, or nil
// when nothing is pinned or that path is down (then the adaptive choice
// applies, so a pinned connection still survives the loss of its path).
// c.mu is held.
func (c *Conn) pinnedLocked() *path {
	name := c.cfg.Pin.Name()
	if name == "" {
		return nil
	}
	for _, p := range c.paths {
		if p.addr.Transport == name && p.conn != nil {
			return p
		}
	}
	return nil
}
