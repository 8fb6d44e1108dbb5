package coord

import (
	"sort"
	"sync"
	"time"

	"github.com/weftsearch/weft/cluster/state"
)

// copySelector ranks the copies of a shard for a search by what this node
// measured of their nodes — adaptive replica selection, reduced from
// Elasticsearch's: an exponentially weighted average of response times,
// made worse by the requests still outstanding there (queueing), so load
// spreads away from slow or busy nodes. A node never measured ranks first,
// so every copy gets tried. Safe for concurrent use.
type copySelector struct {
	mu    sync.Mutex
	nodes map[string]*nodeLoad
}

type nodeLoad struct {
	ewma        float64 // seconds
	outstanding int
	measured    bool
}

// arsAlpha weighs the newest response time in the average.
const arsAlpha = 0.3

func newCopySelector() *copySelector { return &copySelector{nodes: map[string]*nodeLoad{}} }

// order returns the copies, best first.
func (s *copySelector) order(copies []state.Copy) []state.Copy {
	out := append([]state.Copy(nil), copies...)
	s.mu.Lock()
	score := make(map[string]float64, len(out))
	for _, c := range out {
		if l := s.nodes[c.NodeID]; l != nil && l.measured {
			q := float64(1 + l.outstanding)
			score[c.NodeID] = l.ewma * q * q
		}
	}
	s.mu.Unlock()
	sort.SliceStable(out, func(a, b int) bool { return score[out[a].NodeID] < score[out[b].NodeID] })
	return out
}

// begin counts a request to node as outstanding; the returned func records
// how it went (a failure counts as a slow answer).
func (s *copySelector) begin(node string) func(took time.Duration, failed bool) {
	s.mu.Lock()
	l := s.nodes[node]
	if l == nil {
		l = &nodeLoad{}
		s.nodes[node] = l
	}
	l.outstanding++
	s.mu.Unlock()
	return func(took time.Duration, failed bool) {
		sec := took.Seconds()
		if failed {
			sec = max(sec, 1)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		l.outstanding--
		if !l.measured {
			l.ewma, l.measured = sec, true
			return
		}
		l.ewma = arsAlpha*sec + (1-arsAlpha)*l.ewma
	}
}
