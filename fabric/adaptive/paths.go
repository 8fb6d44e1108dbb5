package adaptive

import (
	"math"
	"slices"
	"time"
)

// Size buckets: powers of 4 from 64 B (bucket 0: up to 64 B) to 64 MiB.
const nBuckets = 11

// bucketOf returns the bucket of an n-byte message.
func bucketOf(n int) int {
	b := 0
	for size := 64; size < n && b < nBuckets-1; size <<= 2 {
		b++
	}
	return b
}

// bucketSize is the largest message of bucket b.
func bucketSize(b int) int { return 64 << (2 * b) }

// PathStats is one path of a connection with its measurements and the
// decision table: for each size bucket, the estimated round trip, the
// bandwidth it implies, whether this path is the one chosen and how many
// times the choice switched to it. It is JSON-able for `searchctl fabric
// paths`.
type PathStats struct {
	Path      string `json:"path"` // "tcp:127.0.0.2:7001"
	Transport string `json:"transport"`
	Addr      string `json:"addr"`
	Healthy   bool   `json:"healthy"`
	Failures  uint64 `json:"failures"`
	LastError string `json:"last_error,omitempty"`
	// NextProbe is when a failed path is re-probed next.
	NextProbe     time.Time     `json:"next_probe,omitzero"`
	Calls         uint64        `json:"calls"`
	BytesSent     uint64        `json:"bytes_sent"`
	BytesReceived uint64        `json:"bytes_received"`
	StripeMBps    float64       `json:"stripe_mb_per_s"`
	Buckets       []BucketStats `json:"buckets"`
}

// BucketStats is one row of the decision table for one path.
type BucketStats struct {
	MaxSize   int     `json:"max_size"`
	RTTns     int64   `json:"rtt_ns"`   // median of the latest 48 samples, or the probe model when Samples is 0
	MBps      float64 `json:"mb_per_s"` // MaxSize each way over RTTns
	Samples   uint64  `json:"samples"`
	Chosen    bool    `json:"chosen"`
	Switches  uint64  `json:"switches"` // times the choice moved to this path
	Estimated bool    `json:"estimated"`
}

// PathReporter is implemented by connections that choose between paths.
// Callers check for it at run time: if r, ok := conn.(adaptive.PathReporter).
type PathReporter interface {
	Paths() []PathStats
}

// window is how many of a bucket's latest round trips its estimate is the
// median of. A median, unlike a mean, is not moved by the odd stall (a
// garbage collection, a preempted vCPU, an emulator's timer): it takes
// more than half the window. One stall delays every call in flight at
// once, so the window is three times the deepest usual in-flight count
// (16).
const window = 48

type bucketStat struct {
	rtt     float64 // ns, median of the latest window samples
	lastRTT float64 // ns, the latest sample
	// recent holds the latest samples in arrival order (a ring), sorted
	// the same ones in order; both hold min(n, window) of them.
	recent, sorted [window]float32
	n              uint64 // samples so far
	tried          uint64 // calls sent to learn the bucket (see Conn.choose)
	warm           uint8  // 1 once the warm-up call's round trip was dropped
	last           int64  // Conn.clock of the last sample
	switches       uint64
}

// add records a round trip of d that ended at now (Conn.clock).
func (st *bucketStat) add(d time.Duration, now int64) {
	v := float32(d)
	s := st.sorted[:min(st.n, window)]
	slot := st.n % window
	if st.n >= window {
		i, _ := slices.BinarySearch(s, st.recent[slot])
		s = slices.Delete(s, i, i+1)
	}
	st.recent[slot] = v
	i, _ := slices.BinarySearch(s, v)
	s = slices.Insert(s, i, v) // in place: s has room in st.sorted
	st.n++
	st.last = now
	st.lastRTT = float64(d)
	k := len(s)
	st.rtt = (float64(s[(k-1)/2]) + float64(s[k/2])) / 2
}

// estimate returns the expected round trip of bucket b on p in ns. Buckets
// without samples use the probe model rtt = base + 2*size/bw. Called with
// the conn's mutex held.
func (p *path) estimate(b int) (float64, bool) {
	if st := &p.stats[b]; st.n > 0 {
		return st.rtt, false
	}
	base := p.baseRTT
	if p.stats[0].n > 0 {
		base = p.stats[0].rtt
	}
	if base == 0 {
		base = float64(time.Millisecond)
	}
	bw := p.probeBW // bytes per ns
	if bw <= 0 {
		return math.Inf(1), true
	}
	return base + 2*float64(bucketSize(b))/bw, true
}
