package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/cluster/state"
)

func encode(t testing.TB, c Command) []byte {
	c, err := c.normalized()
	require.NoError(t, err)
	b, err := c.Encode()
	require.NoError(t, err)
	return b
}

func TestFSMApplyPublishesAndAnswers(t *testing.T) {
	f := newFSM()
	ch, stop := f.Watch()
	defer stop()

	res := f.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: encode(t, Command{SetClusterUUID: &SetClusterUUID{UUID: "c1"}})})
	require.NoError(t, res.(fsmResult).err)
	require.Equal(t, "c1", f.State().ClusterUUID)
	require.EqualValues(t, 3, f.State().Version)

	res = f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: []byte(`{"v":1,"type":"nope"}`)})
	require.ErrorIs(t, res.(fsmResult).err, ErrUnknownCommand)
	require.EqualValues(t, 4, f.State().Version, "a refused command still counts as applied")

	// Two commands, one signal: watchers coalesce and never block Apply.
	require.Len(t, ch, 1)
	<-ch
}

func TestFSMSnapshotRestoreRoundTrip(t *testing.T) {
	f := newFSM()
	f.publish(fixture())
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	require.True(t, sink.closed)

	g := newFSM()
	require.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, fixture(), g.State())

	require.Error(t, g.Restore(io.NopCloser(bytes.NewReader([]byte("{")))))
	require.Equal(t, fixture(), g.State(), "a bad snapshot leaves the state alone")
}

type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func TestDecodeCommand(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"valid", `{"v":1,"type":"node_left","node_left":{"node_id":"n","at_ms":1}}`, nil},
		{"newer version", `{"v":2,"type":"node_left","node_left":{}}`, ErrUnknownCommand},
		{"unknown type", `{"v":1,"type":"launch"}`, ErrUnknownCommand},
		{"body of another type", `{"v":1,"type":"node_left","set_settings":{}}`, ErrInvalidCommand},
		{"two bodies", `{"v":1,"type":"node_left","node_left":{},"set_settings":{}}`, ErrInvalidCommand},
		{"not JSON", `v=1`, ErrInvalidCommand},
		{"trailing data", `{"v":1,"type":"set_settings","set_settings":{}} {}`, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCommand([]byte(tc.in))
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
}

// FuzzDecodeCommand: any bytes decode to a well-formed command or a
// sentinel error, never a panic; a decoded command re-encodes to one that
// decodes the same, and applying it to a state never panics either.
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []Command{
		{CreateIndex: &CreateIndex{Index: state.Index{Name: "i", UUID: "u", NumberOfShards: 1, Shards: []state.Shard{{PrimaryTerm: 1}}}}},
		{MoveCopy: &MoveCopy{IndexUUID: "u-logs", AllocationID: "a0", ToNode: "n3", TargetAllocationID: "t"}},
		{UpdateIndexSettings: &UpdateIndexSettings{Index: "logs", UUID: "u-logs", Settings: map[string]json.RawMessage{"x": json.RawMessage(`null`)}}},
		{FailCopy: &FailCopy{IndexUUID: "u-logs", AllocationID: "a0"}},
		{UpdateAliases: &UpdateAliases{Actions: []state.AliasAction{{Type: state.AliasAdd, Index: "logs", UUID: "u-logs", Alias: "a",
			Spec: state.Alias{Filter: json.RawMessage(`{"term":{"f":"v"}}`), IsWriteIndex: new(bool)}}, {Type: state.AliasRemove, Index: "logs", UUID: "u-logs", Alias: "b"}}}},
		{SetIndexClosed: &SetIndexClosed{Index: "logs", UUID: "u-logs", Closed: true}},
	} {
		f.Add(encode(f, c))
	}
	for _, c := range securitySeeds(f) {
		f.Add(encode(f, c))
	}
	f.Add([]byte(`{"v":1,"type":"put_mapping","put_mapping":{"mapping":[}}`))
	f.Add([]byte(`{"v":1,"type":"put_user","put_user":{"user":{"username":"x","roles":"r"}}}`))
	f.Add([]byte(`{"v":1,"type":"put_role","put_role":{"name":"r","role":{"indices":[{"names":"a","privileges":"read","extra":1}]}}}`))
	sec := secFixture(f).Security // immutable: apply never changes it
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidCommand) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("error %v is no sentinel", err)
			}
			return
		}
		again, err := c.Encode()
		require.NoError(t, err)
		c2, err := DecodeCommand(again)
		require.NoError(t, err)
		require.Equal(t, c.Type, c2.Type)
		s := fixture()
		s.Security = sec
		next, err := apply(s, 9, c)
		if err == nil {
			require.NoError(t, checkInvariants(next))
		}
	})
}
