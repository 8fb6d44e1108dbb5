package adaptive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsearch/weft/fabric"
)

// span is one chunk of a striped transfer: bytes [off, off+n).
type span struct{ off, n int }

// chunkFunc moves one chunk over one path.
type chunkFunc func(ctx context.Context, p *path, conn fabric.Conn, s span) error

// plan splits [0, total) among paths in proportion to their striping
// bandwidth and cuts each share into that path's chunk size.
func (c *Conn) plan(total int, ps []*path) [][]span {
	c.mu.Lock()
	w := make([]float64, len(ps))
	sum := 0.0
	for i, p := range ps {
		w[i] = p.stripeBW
		if w[i] <= 0 {
			w[i] = 1e-3
		}
		sum += w[i]
	}
	c.mu.Unlock()
	out := make([][]span, len(ps))
	off := 0
	for i, p := range ps {
		share := int(float64(total) * w[i] / sum)
		if i == len(ps)-1 {
			share = total - off
		}
		size := c.cfg.chunkFor(p.addr.Transport)
		for end := off + share; off < end; {
			n := min(size, end-off)
			out[i] = append(out[i], span{off, n})
			off += n
		}
	}
	return out
}

// reassign spreads chunks left over by failed paths: each goes to the path
// whose queue would finish first at its measured bandwidth.
func (c *Conn) reassign(left []span, ps []*path) [][]span {
	c.mu.Lock()
	w := make([]float64, len(ps))
	for i, p := range ps {
		w[i] = max(p.stripeBW, 1e-3)
	}
	c.mu.Unlock()
	out := make([][]span, len(ps))
	load := make([]float64, len(ps))
	for _, s := range left {
		best := 0
		for i := range ps {
			if (load[i]+float64(s.n))/w[i] < (load[best]+float64(s.n))/w[best] {
				best = i
			}
		}
		out[best] = append(out[best], s)
		load[best] += float64(s.n)
	}
	return out
}

// spread moves total bytes in chunks over every healthy path, StripeWindow
// chunks in flight per path. Chunks of a path that breaks are moved to the
// others in a further round. A remote error or the caller's context ends
// it. It updates each path's striping bandwidth from what it measured.
func (c *Conn) spread(ctx context.Context, total int, do chunkFunc) error {
	var left []span
	for round := 0; ; round++ {
		ps, cs := c.healthy()
		if len(ps) == 0 {
			return fmt.Errorf("adaptive: no healthy path to %s for a striped transfer: %w", c.remote, fabric.ErrClosed)
		}
		var work [][]span
		if round == 0 {
			work = c.plan(total, ps)
		} else {
			work = c.reassign(left, ps)
		}
		rctx, cancel := context.WithCancel(ctx)
		var (
			mu    sync.Mutex
			fatal error
			wg    sync.WaitGroup
		)
		left = nil
		for i, p := range ps {
			if len(work[i]) == 0 {
				continue
			}
			q := make(chan span, len(work[i]))
			for _, s := range work[i] {
				q <- s
			}
			close(q)
			var moved int64
			start := time.Now()
			var pwg sync.WaitGroup
			for range min(c.cfg.StripeWindow, len(work[i])) {
				pwg.Go(func() {
					for s := range q {
						err := rctx.Err()
						if err == nil {
							err = do(rctx, p, cs[i], s)
						}
						mu.Lock()
						switch {
						case err == nil:
							moved += int64(s.n)
						case (isRemote(err) || errors.Is(err, fabric.ErrTooLarge)) && fatal == nil:
							fatal = err
							cancel()
						case ctx.Err() != nil && fatal == nil:
							fatal = ctx.Err()
							cancel()
						case fatal == nil:
							left = append(left, s)
						}
						mu.Unlock()
						if err != nil && !isRemote(err) && !errors.Is(err, fabric.ErrTooLarge) && ctx.Err() == nil && !c.isClosed() {
							c.fail(p, cs[i], err)
						}
					}
				})
			}
			wg.Go(func() {
				pwg.Wait()
				if d := time.Since(start); moved > 0 && d > 0 {
					c.mu.Lock()
					bw := float64(moved) / float64(d)
					p.stripeBW += c.cfg.EWMAAlpha * (bw - p.stripeBW)
					c.mu.Unlock()
				}
			})
		}
		wg.Wait()
		cancel()
		if fatal != nil {
			return fatal
		}
		if c.isClosed() {
			return c.closedErr()
		}
		if len(left) == 0 {
			return nil
		}
	}
}

// striped sends a large request in chunks over every healthy path, then
// asks the server to run it.
func (c *Conn) striped(ctx context.Context, id uint64, method fabric.Method, payload []byte) ([]byte, error) {
	c.fence(ctx, nil)
	h := c.header(kindChunk, method, id)
	h.Total = uint64(len(payload))
	err := c.spread(ctx, len(payload), func(ctx context.Context, p *path, conn fabric.Conn, s span) error {
		env := c.bufs.envelope()
		defer c.bufs.release(env)
		hh := h
		hh.Offset = uint64(s.off)
		hh.put(env.hdr[:])
		if _, err := c.send(ctx, conn, env, payload[s.off:s.off+s.n]); err != nil {
			return err
		}
		p.calls.Add(1)
		p.bytesSent.Add(uint64(headerSize + s.n))
		return nil
	})
	if err != nil {
		return nil, err
	}
	eh := c.header(kindExec, method, id)
	eh.Total = uint64(len(payload))
	env := c.bufs.envelope()
	eh.put(env.hdr[:])
	resp, err := c.roundTrip(ctx, id, -1, env, nil)
	c.bufs.release(env)
	return c.reply(ctx, id, resp, err)
}

// fetch pulls a striped reply of total bytes over every healthy path, then
// lets the server drop it.
func (c *Conn) fetch(ctx context.Context, id uint64, total int) ([]byte, error) {
	out := make([]byte, total)
	err := c.spread(ctx, total, func(ctx context.Context, p *path, conn fabric.Conn, s span) error {
		buf := make([]byte, headerSize)
		h := c.header(kindFetch, 0, id)
		h.Offset, h.Length = uint64(s.off), uint32(s.n)
		h.put(buf)
		resp, err := conn.Call(ctx, MethodEnvelope, buf)
		if err != nil {
			return err
		}
		if len(resp) != s.n {
			return fabric.Errorf(fabric.CodeInternal, "adaptive: fetch of %d bytes at %d returned %d", s.n, s.off, len(resp))
		}
		copy(out[s.off:], resp)
		p.calls.Add(1)
		p.bytesRecv.Add(uint64(len(resp)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ps, cs := c.healthy(); len(ps) > 0 {
		buf := make([]byte, headerSize)
		h := c.header(kindRelease, 0, id)
		h.put(buf)
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = cs[0].Send(sctx, MethodEnvelope, buf)
		cancel()
	}
	return out, nil
}
