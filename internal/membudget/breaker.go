package membudget

import (
	"fmt"
	"sync/atomic"
)

// Breaker is one of a node's circuit breakers, as Elasticsearch has them:
// it estimates the bytes one kind of work holds and refuses more work of
// that kind past its limit, rather than let the node run out of memory.
// Reserve never blocks. Safe for concurrent use.
type Breaker struct {
	name  string
	limit int64
	used  atomic.Int64
	trips atomic.Int64
}

// NewBreaker returns the breaker called name (Elasticsearch's name, e.g.
// "in_flight_requests") with the given limit in bytes.
func NewBreaker(name string, limit int64) *Breaker { return &Breaker{name: name, limit: limit} }

// BreakingError is a breaker's refusal: the work labelled Label would
// have taken the breaker's estimate to Wanted bytes, past Limit. It is
// transient: the same work may pass once other work has released its
// bytes.
type BreakingError struct {
	Breaker       string
	Label         string
	Wanted, Limit int64
}

func (e *BreakingError) Error() string {
	return fmt.Sprintf("[%s] Data too large, data for [%s] would be [%d/%s], which is larger than the limit of [%d/%s]",
		e.Breaker, e.Label, e.Wanted, HumanBytes(e.Wanted), e.Limit, HumanBytes(e.Limit))
}

// Reserve adds n bytes (n >= 0) of the work labelled label to the
// estimate, or, when that would pass the limit, counts a trip and returns
// a *BreakingError. The returned release gives the bytes back; it may be
// called more than once and is nil only with an error.
func (b *Breaker) Reserve(n int64, label string) (release func(), err error) {
	if err := b.Add(n, label); err != nil {
		return nil, err
	}
	var released atomic.Bool
	return func() {
		if released.CompareAndSwap(false, true) {
			b.Sub(n)
		}
	}, nil
}

// Add adds n bytes (n >= 0) of the work labelled label to the estimate,
// or, when that would pass the limit, counts a trip and returns a
// *BreakingError. The caller gives the bytes back with Sub; Reserve is the
// same with a release that gives them back once.
func (b *Breaker) Add(n int64, label string) error {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			b.trips.Add(1)
			return &BreakingError{Breaker: b.name, Label: label, Wanted: used + n, Limit: b.limit}
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// Sub gives back n bytes that Add took.
func (b *Breaker) Sub(n int64) { b.used.Add(-n) }

// BreakerStats is a breaker's state, as _nodes/stats reports it.
type BreakerStats struct {
	Name             string
	Limit, Estimated int64
	Tripped          int64
}

// Stats reads the breaker's state.
func (b *Breaker) Stats() BreakerStats {
	return BreakerStats{Name: b.name, Limit: b.limit, Estimated: b.used.Load(), Tripped: b.trips.Load()}
}

// HumanBytes writes n as Elasticsearch writes a byte size ("512b",
// "1.5kb", "2gb"): the largest unit it reaches, with one decimal when it
// has one.
func HumanBytes(n int64) string {
	units := []string{"b", "kb", "mb", "gb", "tb", "pb"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 || v == float64(int64(v)) {
		return fmt.Sprintf("%d%s", int64(v), units[u])
	}
	return fmt.Sprintf("%.1f%s", v, units[u])
}
