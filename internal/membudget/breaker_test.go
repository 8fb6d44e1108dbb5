package membudget

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBreakerRefusesPastItsLimitAndCountsTrips(t *testing.T) {
	b := NewBreaker("in_flight_requests", 100)
	r1, err := b.Reserve(60, "<http_request>")
	require.NoError(t, err)
	_, err = b.Reserve(41, "<http_request>")
	var be *BreakingError
	require.True(t, errors.As(err, &be), "%v", err)
	require.Equal(t, BreakingError{Breaker: "in_flight_requests", Label: "<http_request>", Wanted: 101, Limit: 100}, *be)
	require.Equal(t, "[in_flight_requests] Data too large, data for [<http_request>] would be [101/101b], which is larger than the limit of [100/100b]", err.Error())
	r2, err := b.Reserve(40, "<http_request>")
	require.NoError(t, err, "up to the limit passes")
	require.Equal(t, BreakerStats{Name: "in_flight_requests", Limit: 100, Estimated: 100, Tripped: 1}, b.Stats())
	r1()
	r1() // a second release gives nothing back twice
	r2()
	require.Zero(t, b.Stats().Estimated)
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0b", 512: "512b", 1024: "1kb", 1536: "1.5kb", 100 << 20: "100mb", 3 << 30: "3gb"} {
		require.Equal(t, want, HumanBytes(n), "%d", n)
	}
}
