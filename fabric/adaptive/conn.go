package adaptive

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// path is one way to reach the peer.
type path struct {
	idx  int
	addr PathAddr
	tr   fabric.Transport

	// Guarded by Conn.mu.
	conn      fabric.Conn // nil while down
	failures  uint64
	nextProbe time.Time
	lastErr   string
	stats     [nBuckets]bucketStat
	baseRTT   float64 // ns, smallest probe
	probeBW   float64 // bytes per ns, from the largest probe
	stripeBW  float64 // bytes per ns, EWMA over striped transfers

	calls, bytesSent, bytesRecv atomic.Uint64
	// busy counts this connection's envelope calls in flight on the path.
	busy atomic.Int64
	// sent counts one-way messages that went out on this path; fenced is
	// the count known to have entered the peer's handler.
	sent, fenced atomic.Uint64
}

// Conn is an adaptive connection: one logical connection over every path
// of the peer. All methods are safe for concurrent use.
type Conn struct {
	cfg     Config
	bufs    *bufPool
	remote  string
	session uint64
	paths   []*path
	ctx     context.Context // ends at Close; parent of re-probes
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// epoch is when the connection was made: every time the selector
	// keeps is nanoseconds since it (clock), one monotonic clock read
	// where time.Now costs two (a system call each where the clock source
	// has no vDSO, e.g. HPET in an emulator).
	epoch time.Time

	mu           sync.Mutex
	closed       bool
	choice       [nBuckets]int
	streak       [nBuckets]int
	lastExplore  [nBuckets]int64 // clock
	sinceExplore [nBuckets]int
	// exploreGap is the bucket's current time between explores: it
	// doubles, up to maxExploreBackoff × ExploreInterval, each time an
	// explore finds the other path worse by more than SwitchMargin, and
	// is ExploreInterval again when one finds it within the margin.
	exploreGap  [nBuckets]int64
	streakStart [nBuckets]int64               // clock
	stripe      [nBuckets][nLoads]stripeState // StripeAuto, per bucket and load
	confirm     [nBuckets]int                 // path to sample before switching, or -1
	// Request ids: nextID is the next to issue; finished[head+i] says
	// whether id low+i has finished, for every id in [low, nextID).
	nextID   uint64
	finished []bool
	head     int

	// low is the watermark: every id below it has finished. Written under
	// mu, read without it by every envelope header.
	low atomic.Uint64
	// acked is the latest call whose whole reply of ackMinReply bytes or
	// more arrived, to be named in the next call's header (header.Offset)
	// so the server drops its copy; 0 once sent. Acks that a later one
	// overwrites, and smaller replies, wait for the watermark.
	acked atomic.Uint64

	inFlight                                     atomic.Int64
	largeInFlight                                atomic.Int64 // calls of StripeThreshold bytes or more
	calls, callErrs, sends, bytesSent, bytesRecv atomic.Uint64
}

var (
	_ fabric.Conn  = (*Conn)(nil)
	_ PathReporter = (*Conn)(nil)
)

// Dial connects every path of addr and probes each with MethodPing. Paths
// that cannot be reached are left down and re-probed in the background; it
// fails only when no path can be reached.
func (t *Transport) Dial(ctx context.Context, addr string) (fabric.Conn, error) {
	ps, trs, err := t.lookup(addr)
	if err != nil {
		return nil, err
	}
	var sid [8]byte
	if _, err := rand.Read(sid[:]); err != nil {
		return nil, fmt.Errorf("adaptive: session id: %w", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		cfg: t.cfg, bufs: &t.bufs, remote: addr, session: binary.BigEndian.Uint64(sid[:]) | 1,
		ctx: cctx, cancel: cancel, epoch: time.Now(), nextID: 1,
	}
	c.low.Store(1)
	for i, p := range ps {
		c.paths = append(c.paths, &path{idx: i, addr: p, tr: trs[i]})
	}
	errs := make([]error, len(c.paths))
	var wg sync.WaitGroup
	for i, p := range c.paths {
		wg.Go(func() { errs[i] = c.connect(ctx, p) })
	}
	wg.Wait()
	up := 0
	now := time.Now()
	c.mu.Lock()
	for i, p := range c.paths {
		if errs[i] == nil {
			up++
			continue
		}
		p.failures++
		p.lastErr = errs[i].Error()
		p.nextProbe = now.Add(t.cfg.ReprobeMin)
	}
	for b := range nBuckets {
		c.choice[b], c.confirm[b] = c.bestLocked(b, false), -1
	}
	c.mu.Unlock()
	if up == 0 {
		cancel()
		return nil, fmt.Errorf("adaptive: dial %s: no path could be reached: %w", addr, errors.Join(errs...))
	}
	c.wg.Go(c.reprobeLoop)
	return c, nil
}

// connect dials one path, probes it and, on success, puts it in service.
func (c *Conn) connect(ctx context.Context, p *path) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	conn, err := p.tr.Dial(ctx, p.addr.Addr)
	if err != nil {
		return fmt.Errorf("path %s: %w", p.addr, err)
	}
	base, bw, err := probe(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("path %s: probe: %w", p.addr, err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		return fabric.ErrClosed
	}
	p.conn = conn
	p.baseRTT, p.probeBW = base, bw
	if p.stripeBW == 0 {
		p.stripeBW = bw
	}
	p.lastErr = ""
	p.nextProbe = time.Time{}
	for b := range p.stats {
		// Re-learn from live traffic after a failure.
		p.stats[b].n, p.stats[b].tried, p.stats[b].warm = 0, 0, 0
	}
	c.mu.Unlock()
	return nil
}

// probe measures a path: the best of three 64-byte pings for its base round
// trip, and the better of two 256 KiB pings (the first warms a fresh
// connection) for its bandwidth.
func probe(ctx context.Context, conn fabric.Conn) (baseNs, bytesPerNs float64, err error) {
	small := make([]byte, 64)
	base := time.Duration(math.MaxInt64)
	for range 3 {
		t0 := time.Now()
		if _, err := conn.Call(ctx, fabric.MethodPing, small); err != nil {
			return 0, 0, err
		}
		base = min(base, time.Since(t0))
	}
	big := make([]byte, 256<<10)
	bigRTT := time.Duration(math.MaxInt64)
	for range 2 {
		t0 := time.Now()
		if _, err := conn.Call(ctx, fabric.MethodPing, big); err != nil {
			return 0, 0, err
		}
		bigRTT = min(bigRTT, time.Since(t0))
	}
	d := max(bigRTT-base, time.Microsecond)
	return float64(base), 2 * float64(len(big)) / float64(d), nil
}

func (c *Conn) reprobeLoop() {
	t := time.NewTicker(c.cfg.ReprobeMin)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			c.mu.Lock()
			var due []*path
			for _, p := range c.paths {
				if p.conn == nil && !now.Before(p.nextProbe) {
					due = append(due, p)
					p.nextProbe = now.Add(time.Hour) // being probed
				}
			}
			c.mu.Unlock()
			for _, p := range due {
				err := c.connect(c.ctx, p)
				c.mu.Lock()
				if err != nil {
					p.failures++
					p.lastErr = err.Error()
					p.nextProbe = time.Now().Add(c.backoff(p.failures))
				}
				c.mu.Unlock()
				if err != nil {
					c.cfg.Logger.Debug("adaptive: path still down", "path", p.addr.String(), "err", err)
				} else {
					c.cfg.Logger.Info("adaptive: path back in service", "path", p.addr.String())
				}
			}
		}
	}
}

// clock returns the nanoseconds since the connection was made.
func (c *Conn) clock() int64 { return int64(time.Since(c.epoch)) }

func (c *Conn) backoff(failures uint64) time.Duration {
	d := c.cfg.ReprobeMin
	for i := uint64(1); i < failures && d < c.cfg.ReprobeMax; i++ {
		d *= 2
	}
	return min(d, c.cfg.ReprobeMax)
}

// fail takes p out of service if conn is still its connection, and closes
// conn so its other in-flight calls fail over too.
func (c *Conn) fail(p *path, conn fabric.Conn, err error) {
	c.mu.Lock()
	if p.conn != conn {
		c.mu.Unlock()
		return
	}
	p.conn = nil
	p.failures++
	p.lastErr = err.Error()
	p.nextProbe = time.Now().Add(c.backoff(p.failures))
	closed := c.closed
	c.mu.Unlock()
	if !closed {
		c.cfg.Logger.Warn("adaptive: path failed; its calls move to the other paths", "path", p.addr.String(), "err", err)
	}
	_ = conn.Close()
}

// bestLocked returns the healthy path with the lowest estimate for bucket
// b, or -1. measured limits it to paths with live samples of b, so that a
// switch compares like with like (the probe model is optimistic: pings
// skip the handler).
func (c *Conn) bestLocked(b int, measured bool) int {
	best, bestEst := -1, math.Inf(1)
	for _, p := range c.paths {
		if p.conn == nil || measured && p.stats[b].n == 0 {
			continue
		}
		if est, _ := p.estimate(b); best < 0 || est < bestEst {
			best, bestEst = p.idx, est
		}
	}
	return best
}

// exploreEvery is the fewest calls of a bucket between two explores.
const exploreEvery = 8

// stripeWarmup is how many samples StripeAuto takes of each way before it
// compares them.
const stripeWarmup = 3

// StripeAuto learns separately for a large call made alone (loadAlone) and
// one made while other large calls are in flight (loadBusy): striping one
// call over idle paths can halve its round trip, while with every path
// already busy it only adds chunking work, and a choice learnt at one load
// would be wrong at the other.
const (
	loadAlone = iota
	loadBusy
	nLoads
)

// stripeState is StripeAuto's view of one size bucket at one load.
type stripeState struct {
	on       bool       // the current choice
	since    int        // calls since the last trial of the losing way
	trial    bool       // a striped call is in flight as a trial
	explored int64      // clock
	striped  bucketStat // striped round trips
	whole    bucketStat // round trips of the same calls sent whole
}

// learnSamples is how many round trips of a bucket each healthy path
// contributes before the bucket's choice is made from live measurements
// (see choose); the path's first call of the bucket before them is a
// warm-up and not counted (a fresh connection's first use of a size can
// be several times slower: buffers, registrations).
const learnSamples = 4

// maxExploreBackoff bounds the growth of the time between explores of a
// path that keeps being clearly worse: an explore is a whole call on the
// slower path, and a large one on a path several times slower (rdma under
// an emulator, or a congested link) slows the calls around it too.
const maxExploreBackoff = 32

// choose picks the path for one message of bucket b: the pinned path when
// Config.Pin names a healthy one, else the bucket's current choice, or
// another healthy path so its estimate stays fresh (explore).
// With explore set it first learns the bucket: every healthy path in turn
// carries learnSamples+1 consecutive calls of b, so the first choice rests
// on a median of live round trips of each path, not on one probe or one
// unlucky call. It returns nil when no path is healthy.
func (c *Conn) choose(b int, explore bool) (*path, fabric.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pinnedLocked(); p != nil {
		return p, p.conn
	}
	cur := c.paths[c.choice[b]]
	if cur.conn == nil {
		i := c.bestLocked(b, false)
		if i < 0 {
			return nil, nil
		}
		c.choice[b], c.streak[b] = i, 0
		cur = c.paths[i]
	}
	if explore {
		// Learn one path at a time: a path's round trip can depend on how
		// recently it was used (rdma's poller spins only for a while after
		// a completion, then sleeps until an interrupt), and calls spread
		// one by one over the paths would measure every path cold.
		var next *path
		for _, p := range c.paths {
			if t := p.stats[b].tried; p.conn != nil && t < learnSamples+1 && (next == nil || t > 0 && next.stats[b].tried == 0) {
				next = p
			}
		}
		if next != nil {
			next.stats[b].tried++
			return next, next.conn
		}
	}
	if i := c.confirm[b]; explore && i >= 0 {
		c.confirm[b] = -1
		if p := c.paths[i]; p.conn != nil && p != cur {
			return p, p.conn
		}
	}
	// Explore at most once per ExploreInterval per bucket and never more
	// than one call in exploreEvery, so rare buckets do not alternate.
	c.sinceExplore[b]++
	if explore && c.cfg.ExploreInterval > 0 && c.sinceExplore[b] >= exploreEvery {
		now := c.clock()
		if now-c.lastExplore[b] > max(c.exploreGap[b], int64(c.cfg.ExploreInterval)) {
			var stalest *path
			for _, p := range c.paths {
				if p != cur && p.conn != nil && (stalest == nil || p.stats[b].last < stalest.stats[b].last) {
					stalest = p
				}
			}
			if stalest != nil {
				c.lastExplore[b], c.sinceExplore[b] = now, 0
				return stalest, stalest.conn
			}
		}
	}
	return cur, cur.conn
}

// observe records a round trip of bucket b on p and applies the
// hysteresis: the bucket's choice moves only when another healthy path has
// been better by SwitchMargin for SwitchAfter samples in a row, and a fresh
// sample of that path, taken after the streak began, confirms it. The
// confirmation keeps a load spike that slows every path from being read as
// the current path getting slower than the others' older estimates. The
// one exception is the end of learning (see choose): the sample that
// completes it moves the choice at once to a path better by SwitchMargin.
//
// now is the clock when the round trip ended.
func (c *Conn) observe(p *path, b int, d time.Duration, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &p.stats[b]
	if st.warm == 0 {
		st.warm = 1 // the path's first round trip of the bucket; see learnSamples
		return
	}
	st.add(d, now)
	cur := c.paths[c.choice[b]]
	if p != cur && cur.conn != nil && cur.stats[b].n > 0 && st.n > learnSamples {
		// An explore or confirmation: back off while it finds p clearly
		// worse.
		curEst, _ := cur.estimate(b)
		if st.rtt*(1-c.cfg.SwitchMargin) > curEst {
			c.exploreGap[b] = min(2*max(c.exploreGap[b], int64(c.cfg.ExploreInterval)), maxExploreBackoff*int64(c.cfg.ExploreInterval))
		} else {
			c.exploreGap[b] = int64(c.cfg.ExploreInterval)
		}
	}
	best := c.bestLocked(b, false)
	if best < 0 || best == cur.idx || cur.conn == nil || cur.stats[b].n == 0 {
		c.streak[b], c.confirm[b] = 0, -1
		return
	}
	curEst, _ := cur.estimate(b)
	alt := c.paths[best]
	bar := curEst * (1 - c.cfg.SwitchMargin)
	if altEst, _ := alt.estimate(b); altEst >= bar {
		c.streak[b], c.confirm[b] = 0, -1
		return
	}
	if st.n == learnSamples && c.learnedLocked(b) {
		c.choice[b], c.streak[b], c.confirm[b] = best, 0, -1
		alt.stats[b].switches++
		return
	}
	if alt.stats[b].n == 0 {
		// Only the probe model says alt is better: measure it first.
		c.confirm[b] = best
		return
	}
	if c.streak[b] == 0 {
		c.streakStart[b] = now
	}
	c.streak[b]++
	if c.streak[b] < c.cfg.SwitchAfter {
		return
	}
	if alt.stats[b].last > c.streakStart[b] && alt.stats[b].lastRTT < bar {
		c.choice[b], c.streak[b], c.confirm[b] = best, 0, -1
		alt.stats[b].switches++
		return
	}
	c.confirm[b] = best // the next call of b samples alt
}

// learnedLocked reports whether every healthy path has learnSamples
// samples of bucket b.
func (c *Conn) learnedLocked(b int) bool {
	for _, p := range c.paths {
		if p.conn != nil && p.stats[b].n < learnSamples {
			return false
		}
	}
	return true
}

// preferStripe decides whether a call of large bucket b, made at load
// (loadAlone or loadBusy), is striped. Under StripeAuto both ways are
// tried at each load, the faster is kept with SwitchMargin of hysteresis,
// and the other is re-tried at a quarter of the explore rate. Striping
// needs two healthy paths.
func (c *Conn) preferStripe(b, load int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	healthy := 0
	for _, p := range c.paths {
		if p.conn != nil {
			healthy++
		}
	}
	switch {
	case c.cfg.Stripe == StripeNever || healthy < 2 || c.pinnedLocked() != nil:
		return false
	case c.cfg.Stripe == StripeAlways:
		return true
	}
	s := &c.stripe[b][load]
	// One trial of the other way at a time: with many calls in flight,
	// exploring must not send them all the slow way.
	trial := func(stripe bool) bool {
		if s.trial {
			return !stripe
		}
		if stripe {
			s.trial = true
		}
		return stripe
	}
	// Both ways get stripeWarmup samples before either is preferred: one
	// noisy first sample must not decide for the life of the connection.
	switch {
	case s.striped.n < stripeWarmup && (s.whole.n >= s.striped.n || s.trial):
		return trial(true)
	case s.whole.n < stripeWarmup:
		return false
	}
	if s.on && s.whole.rtt < s.striped.rtt*(1-c.cfg.SwitchMargin) {
		s.on = false
	} else if !s.on && s.striped.rtt < s.whole.rtt*(1-c.cfg.SwitchMargin) {
		s.on = true
	}
	now := c.clock()
	// A trial of the losing way costs a whole large call, so it is made
	// four times less often than a path explore.
	s.since++
	if c.cfg.ExploreInterval > 0 && s.since >= 4*exploreEvery && now-s.explored > int64(4*c.cfg.ExploreInterval) {
		s.explored, s.since = now, 0
		if !s.on {
			return trial(true)
		}
		return false
	}
	return s.on
}

// observeStripe ends a large call of bucket b made at load; d is its
// round trip, or 0 when it failed.
func (c *Conn) observeStripe(b, load int, striped bool, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.stripe[b][load]
	if striped {
		s.trial = false
	}
	if d <= 0 {
		return
	}
	now := c.clock()
	if striped {
		s.striped.add(d, now)
	} else {
		s.whole.add(d, now)
	}
}

// fence makes sure every one-way message sent on a path other than target
// has entered the peer's handler, so a message on target cannot overtake
// it. A path that fails its fence is failed; its messages are lost with it.
func (c *Conn) fence(ctx context.Context, target *path) {
	for _, p := range c.paths {
		if p == target {
			continue
		}
		sent := p.sent.Load()
		if sent <= p.fenced.Load() {
			continue
		}
		c.mu.Lock()
		conn := p.conn
		c.mu.Unlock()
		if conn == nil {
			continue
		}
		if _, err := conn.Call(ctx, fabric.MethodPing, nil); err != nil {
			if ctx.Err() == nil {
				c.fail(p, conn, err)
			}
			continue
		}
		for {
			f := p.fenced.Load()
			if f >= sent || p.fenced.CompareAndSwap(f, sent) {
				break
			}
		}
	}
}

func (c *Conn) begin() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, fmt.Errorf("adaptive: connection to %s: %w", c.remote, fabric.ErrClosed)
	}
	id := c.nextID
	c.nextID++
	c.finished = append(c.finished, false)
	return id, nil
}

// end marks id finished and advances the watermark past every finished id.
func (c *Conn) end(id uint64) {
	c.mu.Lock()
	low := c.low.Load()
	c.finished[c.head+int(id-low)] = true
	h := c.head
	for h < len(c.finished) && c.finished[h] {
		h++
	}
	if h > c.head {
		c.low.Store(low + uint64(h-c.head))
		// Reuse the array: empty it when nothing is outstanding, or move
		// the outstanding tail to the front once the finished head is the
		// larger part, so a steady stream of calls does not allocate.
		switch {
		case h == len(c.finished):
			c.finished, h = c.finished[:0], 0
		case h > 64 && h > len(c.finished)/2:
			n := copy(c.finished, c.finished[h:])
			c.finished, h = c.finished[:n], 0
		}
		c.head = h
	}
	c.mu.Unlock()
}

// ackMinReply is the smallest reply a call acknowledges early (see
// Conn.acked): below it, what the server keeps is not worth the lookup an
// acknowledgement costs it on every call.
const ackMinReply = 4 << 10

func (c *Conn) header(kind byte, method fabric.Method, id uint64) header {
	return header{Kind: kind, Method: method, Session: c.session, ID: id, Watermark: c.low.Load()}
}

func (c *Conn) closedErr() error {
	return fmt.Errorf("adaptive: connection to %s: %w", c.remote, fabric.ErrClosed)
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Call sends payload to the peer's handler on the best path (or striped
// over all paths when large) and waits for the reply. A path that breaks
// under the call is taken out and the call re-sent on another; the server
// runs it once.
func (c *Conn) Call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	c.calls.Add(1)
	reply, err := c.call(ctx, method, payload)
	if err != nil {
		c.callErrs.Add(1)
		return nil, err
	}
	c.bytesSent.Add(uint64(len(payload)))
	c.bytesRecv.Add(uint64(len(reply)))
	return reply, nil
}

func (c *Conn) call(ctx context.Context, method fabric.Method, payload []byte) ([]byte, error) {
	if len(payload) > c.cfg.MaxMessageSize {
		return nil, fmt.Errorf("adaptive: payload of %d bytes exceeds %d; use a stream: %w", len(payload), c.cfg.MaxMessageSize, fabric.ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if method == fabric.MethodPing {
		return c.ping(ctx, payload)
	}
	id, err := c.begin()
	if err != nil {
		return nil, err
	}
	defer c.end(id)
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	b := bucketOf(len(payload))
	large := len(payload) >= c.cfg.StripeThreshold
	load := loadAlone
	if large {
		if c.largeInFlight.Add(1) > 1 {
			load = loadBusy
		}
		defer c.largeInFlight.Add(-1)
		if c.preferStripe(b, load) {
			t0 := c.clock()
			reply, err := c.striped(ctx, id, method, payload)
			d := time.Duration(c.clock() - t0)
			if err != nil {
				d = 0
			}
			c.observeStripe(b, load, true, d)
			return reply, err
		}
	}
	var t0 int64
	if large {
		t0 = c.clock()
	}
	env := c.bufs.envelope()
	h := c.header(kindCall, method, id)
	if large {
		h.Length = inlineReply
	}
	if c.acked.Load() != 0 {
		h.Offset = c.acked.Swap(0)
	}
	h.put(env.hdr[:])
	resp, err := c.roundTrip(ctx, id, b, env, payload)
	c.bufs.release(env)
	reply, err := c.reply(ctx, id, resp, err)
	if err == nil && len(reply) >= ackMinReply {
		c.acked.Store(id)
	}
	if large && c.cfg.Stripe == StripeAuto {
		d := time.Duration(c.clock() - t0)
		if err != nil {
			d = 0
		}
		c.observeStripe(b, load, false, d)
	}
	return reply, err
}

// ping answers MethodPing through the chosen path's own ping (no envelope:
// pings are idempotent and re-sent freely).
func (c *Conn) ping(ctx context.Context, payload []byte) ([]byte, error) {
	for {
		p, conn := c.choose(bucketOf(len(payload)), false)
		if p == nil {
			return nil, c.closedErr()
		}
		reply, err := conn.Call(ctx, fabric.MethodPing, payload)
		if err == nil || ctx.Err() != nil || isRemote(err) || errors.Is(err, fabric.ErrTooLarge) {
			return reply, err
		}
		if c.isClosed() {
			return nil, c.closedErr()
		}
		c.fail(p, conn, err)
	}
}

func isRemote(err error) bool {
	var re *fabric.RemoteError
	return errors.As(err, &re)
}

// roundTrip sends one envelope (env's header, then body) on the path
// chosen for bucket b, re-sending it on another path each time a path
// breaks under it. b < 0 (the exec of a striped call, whose time is mostly
// the handler's) uses bucket 0's choice and is not measured.
func (c *Conn) roundTrip(ctx context.Context, id uint64, b int, env *envelope, body []byte) ([]byte, error) {
	measure := b >= 0
	b = max(b, 0)
	for {
		p, conn := c.choose(b, measure)
		if p == nil {
			return nil, fmt.Errorf("adaptive: no healthy path to %s: %w", c.remote, fabric.ErrClosed)
		}
		c.fence(ctx, p)
		k := p.busy.Add(1)
		t0 := c.clock()
		resp, err := c.send(ctx, conn, env, body)
		p.busy.Add(-1)
		if _, striped := isStripedReply(err); err == nil || striped {
			if measure {
				// A round trip counts divided by the calls the path was
				// carrying when it was sent: with many in flight, one
				// call sent to an idle path would otherwise be compared
				// with calls queued behind each other on the busy one,
				// and look faster only for being alone.
				now := c.clock()
				c.observe(p, b, time.Duration(now-t0)/time.Duration(k), now)
			}
			p.calls.Add(1)
			p.bytesSent.Add(uint64(headerSize + len(body)))
			p.bytesRecv.Add(uint64(len(resp)))
			return resp, err
		}
		if c.isClosed() {
			// Close ends the session's handlers before it closes the
			// paths; what they answer is not the caller's business.
			return nil, c.closedErr()
		}
		if isRemote(err) || errors.Is(err, fabric.ErrTooLarge) {
			return nil, err // the path is fine
		}
		if ctx.Err() != nil {
			c.sendCancel(p, conn, id)
			return nil, ctx.Err()
		}
		c.fail(p, conn, err)
	}
}

// send makes one envelope call on conn: header and body as two pieces
// when conn is a fabric.VectorCaller, else copied into one buffer (kept in
// env for re-sends on other paths).
func (c *Conn) send(ctx context.Context, conn fabric.Conn, env *envelope, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return conn.Call(ctx, MethodEnvelope, env.hdr[:])
	}
	if vc, ok := conn.(fabric.VectorCaller); ok {
		env.vec = [2][]byte{env.hdr[:], body}
		resp, err := vc.CallVector(ctx, MethodEnvelope, env.vec[:])
		env.vec = [2][]byte{}
		return resp, err
	}
	if env.flat == nil {
		env.flat = c.bufs.get(headerSize + len(body))
		copy(*env.flat, env.hdr[:])
		copy((*env.flat)[headerSize:], body)
	}
	return conn.Call(ctx, MethodEnvelope, *env.flat)
}

// sendCancel tells the server, on the path the call took, that its caller
// gave up, so the handler's context ends now rather than after ResendGrace.
func (c *Conn) sendCancel(p *path, conn fabric.Conn, id uint64) {
	buf := make([]byte, headerSize)
	h := c.header(kindCancel, 0, id)
	h.put(buf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := conn.Send(ctx, MethodEnvelope, buf); err != nil {
		c.cfg.Logger.Debug("adaptive: cancel not delivered", "path", p.addr.String(), "id", id, "err", err)
	}
}

// reply turns an envelope call's outcome into the caller's: a striped
// reply marker makes it fetch the reply in chunks.
func (c *Conn) reply(ctx context.Context, id uint64, resp []byte, err error) ([]byte, error) {
	if n, ok := isStripedReply(err); ok {
		return c.fetch(ctx, id, n)
	}
	return resp, err
}

// Send delivers a one-way message on the path chosen for its size, after
// fencing the other paths. It is not re-sent if the path breaks.
func (c *Conn) Send(ctx context.Context, method fabric.Method, payload []byte) error {
	c.sends.Add(1)
	if len(payload) > c.cfg.MaxMessageSize {
		return fmt.Errorf("adaptive: payload of %d bytes exceeds %d; use a stream: %w", len(payload), c.cfg.MaxMessageSize, fabric.ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.isClosed() {
		return c.closedErr()
	}
	p, conn := c.choose(bucketOf(len(payload)), false)
	if p == nil {
		return fmt.Errorf("adaptive: no healthy path to %s: %w", c.remote, fabric.ErrClosed)
	}
	c.fence(ctx, p)
	if err := conn.Send(ctx, method, payload); err != nil {
		if ctx.Err() == nil && !errors.Is(err, fabric.ErrTooLarge) && !c.isClosed() {
			c.fail(p, conn, err)
		}
		if c.isClosed() {
			return c.closedErr()
		}
		return err
	}
	p.sent.Add(1)
	p.bytesSent.Add(uint64(len(payload)))
	c.bytesSent.Add(uint64(len(payload)))
	return nil
}

// Stats returns the logical connection's counters (payload bytes, not
// envelope bytes); per-path counters are in Paths.
func (c *Conn) Stats() fabric.ConnStats {
	return fabric.ConnStats{
		Transport: "adaptive", Calls: c.calls.Load(), CallErrors: c.callErrs.Load(), Sends: c.sends.Load(),
		BytesSent: c.bytesSent.Load(), BytesReceived: c.bytesRecv.Load(), InFlight: int(c.inFlight.Load()),
	}
}

// RemoteAddr returns the path list that was dialled.
func (c *Conn) RemoteAddr() string { return c.remote }

// Close tells the server the session is over (its handlers' contexts end),
// closes every path, fails in-flight calls with fabric.ErrClosed and stops
// re-probing. It is idempotent.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var conns []fabric.Conn
	for _, p := range c.paths {
		if p.conn != nil {
			conns = append(conns, p.conn)
			p.conn = nil
		}
	}
	c.mu.Unlock()
	c.cancel()
	buf := make([]byte, headerSize)
	(&header{Kind: kindBye, Session: c.session}).put(buf)
	for _, conn := range conns {
		// A call, not a one-way send: closing the path right after a send
		// could drop the goodbye before it is delivered.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := conn.Call(ctx, MethodEnvelope, buf)
		cancel()
		if err == nil {
			break
		}
	}
	for _, conn := range conns {
		_ = conn.Close()
	}
	c.wg.Wait()
	return nil
}

// Paths returns the decision table: each path's health, counters and, per
// size bucket, estimate, choice and switch count. The "stripe:*" row shows
// striped round trips of calls made with no other large call in flight.
func (c *Conn) Paths() []PathStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]PathStats, 0, len(c.paths))
	for _, p := range c.paths {
		ps := PathStats{
			Path: p.addr.String(), Transport: p.addr.Transport, Addr: p.addr.Addr, Healthy: p.conn != nil,
			Failures: p.failures, LastError: p.lastErr, Calls: p.calls.Load(),
			BytesSent: p.bytesSent.Load(), BytesReceived: p.bytesRecv.Load(), StripeMBps: p.stripeBW * 1e3,
		}
		if p.conn == nil {
			ps.NextProbe = p.nextProbe
		}
		for b := range nBuckets {
			est, model := p.estimate(b)
			bs := BucketStats{MaxSize: bucketSize(b), Samples: p.stats[b].n, Chosen: c.choice[b] == p.idx,
				Switches: p.stats[b].switches, Estimated: model}
			if !math.IsInf(est, 0) {
				bs.RTTns = int64(est)
				bs.MBps = float64(bucketSize(b)) / est * 1e3
			}
			ps.Buckets = append(ps.Buckets, bs)
		}
		out = append(out, ps)
	}
	if c.cfg.Stripe != StripeNever {
		ps := PathStats{Path: "stripe:*", Transport: "stripe", Addr: "all healthy paths"}
		ps.Healthy = true
		for b := range nBuckets {
			s := &c.stripe[b][loadAlone]
			bs := BucketStats{MaxSize: bucketSize(b), Samples: s.striped.n}
			if bucketSize(b) >= c.cfg.StripeThreshold {
				bs.Chosen = c.cfg.Stripe == StripeAlways || s.on || s.striped.n == 0
			}
			if st := s.striped; st.n > 0 {
				bs.RTTns = int64(st.rtt)
				bs.MBps = float64(bucketSize(b)) / st.rtt * 1e3
			}
			ps.Buckets = append(ps.Buckets, bs)
		}
		out = append(out, ps)
	}
	return out
}

// healthy returns the paths in service with their connections.
func (c *Conn) healthy() ([]*path, []fabric.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []*path
	var cs []fabric.Conn
	for _, p := range c.paths {
		if p.conn != nil {
			ps = append(ps, p)
			cs = append(cs, p.conn)
		}
	}
	return ps, cs
}
