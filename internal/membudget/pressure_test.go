package membudget

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCoordinatingAndPrimaryShareTheLimit(t *testing.T) {
	p := NewIndexingPressure(1000)
	c, err := p.Reserve(Coordinating, 600)
	require.NoError(t, err)
	_, err = p.Reserve(Primary, 401)
	require.ErrorIs(t, err, ErrRejected)
	require.EqualError(t, err, "rejected execution: rejected execution of primary operation [coordinating_and_primary_bytes=600, replica_bytes=0, all_bytes=600, primary_operation_bytes=401, max_coordinating_and_primary_bytes=1000]")
	pr, err := p.Reserve(Primary, 400)
	require.NoError(t, err, "exactly at the limit is allowed")
	st := p.Stats()
	require.Equal(t, StageBytes{Combined: 1000, Coordinating: 600, Primary: 400, All: 1000}, st.Current)
	require.Equal(t, int64(1), st.PrimaryRejections)
	c.Release()
	pr.Release()
	require.Equal(t, StageBytes{}, p.Stats().Current)
	require.Equal(t, StageBytes{Combined: 1000, Coordinating: 600, Primary: 400, All: 1000}, p.Stats().Total)
}

func TestReplicaBytesCountAgainstNewWork(t *testing.T) {
	p := NewIndexingPressure(1000)
	r, err := p.Reserve(Replica, 900)
	require.NoError(t, err)
	_, err = p.Reserve(Coordinating, 101)
	require.ErrorIs(t, err, ErrRejected)
	require.Contains(t, err.Error(), "rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=900, all_bytes=900, coordinating_operation_bytes=101")
	require.Equal(t, int64(1), p.Stats().CoordinatingRejections)
	r.Release()
	_, err = p.Reserve(Coordinating, 101)
	require.NoError(t, err)
}

func TestReplicaLimitIsOneAndAHalfTimes(t *testing.T) {
	p := NewIndexingPressure(1000)
	c, err := p.Reserve(Coordinating, 1000)
	require.NoError(t, err)
	defer c.Release()
	r, err := p.Reserve(Replica, 1500)
	require.NoError(t, err, "replica work is not refused for coordinating bytes")
	_, err = p.Reserve(Replica, 1)
	require.ErrorIs(t, err, ErrRejected)
	require.EqualError(t, err, "rejected execution: rejected execution of replica operation [replica_bytes=1500, replica_operation_bytes=1, max_replica_bytes=1500]")
	require.Equal(t, int64(1), p.Stats().ReplicaRejections)
	r.Release()
	require.Equal(t, StageBytes{Combined: 1000, Coordinating: 1000, All: 1000}, p.Stats().Current)
}

func TestLocalPrimaryIsCountedOnceAndNeverRefused(t *testing.T) {
	p := NewIndexingPressure(1000)
	c, err := p.Reserve(Coordinating, 1000)
	require.NoError(t, err)
	l := p.PrimaryLocal(1000)
	st := p.Stats()
	require.Equal(t, StageBytes{Combined: 1000, Coordinating: 1000, Primary: 1000, All: 1000}, st.Current)
	require.Zero(t, st.PrimaryRejections)
	l.Release()
	c.Release()
	require.Equal(t, StageBytes{}, p.Stats().Current)
}

func TestGrowChargesAsItGoes(t *testing.T) {
	p := NewIndexingPressure(1000)
	r, err := p.Reserve(Coordinating, 0)
	require.NoError(t, err)
	for range 10 {
		require.NoError(t, r.Grow(100))
	}
	err = r.Grow(1)
	require.ErrorIs(t, err, ErrRejected)
	require.Contains(t, err.Error(), "coordinating_operation_bytes=1001,", "the message counts the whole request")
	require.Equal(t, int64(1000), r.Bytes(), "a refused Grow leaves the reservation as it was")
	r.Release()
	r.Release() // idempotent
	require.Equal(t, StageBytes{}, p.Stats().Current)
	require.Error(t, r.Grow(1), "Grow after Release")
	var none *Reservation
	none.Release()
	require.NoError(t, none.Grow(5))
}

func TestForcedWorkIsCountedNotRefused(t *testing.T) {
	p := NewIndexingPressure(1000)
	r := p.ReserveForced(Replica, 5000)
	require.Equal(t, int64(5000), p.Stats().Current.Replica)
	_, err := p.Reserve(Replica, 1)
	require.ErrorIs(t, err, ErrRejected, "forced bytes count against later work")
	_, err = p.Reserve(Coordinating, 1)
	require.ErrorIs(t, err, ErrRejected)
	r.Release()
	require.Equal(t, StageBytes{}, p.Stats().Current)
	require.Equal(t, int64(1), p.Stats().ReplicaRejections, "only the refused work counts as a rejection")
}
