package clusterbench

import (
	"context"
	"time"

	"github.com/weftsearch/weft/fabric"
	"github.com/weftsearch/weft/internal/ctl"
)

// counters are a node's outbound fabric connections' totals by the address
// dialled (GET /_weft/fabric/conns): what the node sent as a caller and
// received in reply.
type counters map[string]fabric.ConnStats

// readCounters asks the node behind c for its outbound fabric counters.
func readCounters(ctx context.Context, c *ctl.Client) (counters, error) {
	rep, _, err := c.FabricConns(ctx)
	if err != nil {
		return nil, err
	}
	out := counters{}
	for _, pc := range rep.Conns {
		if pc.Direction == "outbound" && pc.Totals != nil {
			st := out[pc.Peer]
			st.BytesSent += pc.Totals.BytesSent
			st.BytesReceived += pc.Totals.BytesReceived
			out[pc.Peer] = st
		}
	}
	return out, nil
}

// grown sums what of pick grew from before to after, connection by
// connection. A connection absent before, or whose count went down (it was
// replaced by a new one to the same peer), counts from zero.
func grown(before, after counters, pick func(fabric.ConnStats) uint64) uint64 {
	var sum uint64
	for peer, a := range after {
		b, ok := before[peer]
		if !ok || pick(a) < pick(b) {
			sum += pick(a)
			continue
		}
		sum += pick(a) - pick(b)
	}
	return sum
}

func sentAndReceived(s fabric.ConnStats) uint64 { return s.BytesSent + s.BytesReceived }

func sent(s fabric.ConnStats) uint64 { return s.BytesSent }

// sample is one reading of a node's cumulative outbound bytes sent.
type sample struct {
	at    time.Time
	bytes uint64
}

// poll reads the node's outbound fabric bytes sent every interval until
// ctx ends, and returns the cumulative readings (the first is zero at the
// start). Failed readings are skipped.
func poll(ctx context.Context, c *ctl.Client, interval time.Duration) []sample {
	prev, _ := readCounters(ctx, c)
	out := []sample{{at: time.Now()}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		cur, err := readCounters(ctx, c)
		if err != nil {
			continue
		}
		out = append(out, sample{at: time.Now(), bytes: out[len(out)-1].bytes + grown(prev, cur, sent)})
		prev = cur
	}
}

// streamWindow finds the span of samples in which the bytes grew by more
// than minStep per reading: from the reading before the first such step to
// the reading after the last, and the bytes grown in it. It returns zeros
// when no step is that large.
func streamWindow(samples []sample, minStep uint64) (uint64, time.Duration) {
	first, last := -1, -1
	for i := 1; i < len(samples); i++ {
		if samples[i].bytes-samples[i-1].bytes > minStep {
			if first < 0 {
				first = i - 1
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0
	}
	return samples[last].bytes - samples[first].bytes, samples[last].at.Sub(samples[first].at)
}
