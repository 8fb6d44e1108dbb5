package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/fabric"
)

// Every sentinel crosses the forwarding hop as its code and comes back as
// itself, keeping the leader's message; other errors stay internal.
func TestErrorsCrossTheFabric(t *testing.T) {
	for _, e := range errorCodes {
		t.Run(e.err.Error(), func(t *testing.T) {
			remote := toRemote(fmt.Errorf("create_index: %w: detail", e.err))
			var re *fabric.RemoteError
			require.ErrorAs(t, remote, &re)
			require.Equal(t, e.code, re.Code)
			back := fromRemote(remote)
			require.ErrorIs(t, back, e.err)
			require.Contains(t, back.Error(), "detail")
		})
	}
	plain := toRemote(errors.New("disk on fire"))
	require.ErrorIs(t, plain, &fabric.RemoteError{Code: fabric.CodeInternal})
	require.False(t, errors.Is(fromRemote(plain), ErrInvalidCommand))
}

func FuzzDecodeProposal(f *testing.F) {
	cmd, err := Command{SetSettings: &SetSettings{}}.normalized()
	require.NoError(f, err)
	data, err := cmd.Encode()
	require.NoError(f, err)
	good, err := json.Marshal(proposal{V: proposalVersion, From: "n1", ClusterUUID: "c", Command: data})
	require.NoError(f, err)
	f.Add(good)
	for _, c := range securitySeeds(f) {
		b, err := json.Marshal(proposal{V: proposalVersion, From: "n1", ClusterUUID: "c", Command: encode(f, c)})
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"v":2,"command":{}}`))
	f.Add([]byte(`{"v":1,"command":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, c, err := decodeProposal(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidCommand) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("error %v is no sentinel", err)
			}
			return
		}
		require.NoError(t, c.checkShape())
	})
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(meta{ID: "id", Name: "n", HTTPAddr: "h:1", FabricAddr: "f:2", RaftAddr: "r:3", RDMA: "rxe0", ClusterUUID: "c"}.encode())
	f.Add([]byte{metaVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	withDisk := meta{ID: "id", Name: "n", Disk: state.DiskUsage{UsedBytes: 1 << 40, TotalBytes: 1 << 41}}.encode()
	f.Add(withDisk)
	f.Add(withDisk[:len(withDisk)-1]) // truncated total
	strs := meta{ID: "id", Name: "n"}.encode()
	strs = strs[:len(strs)-2] // the strings alone, as an earlier build sends them
	f.Add(strs)
	f.Add(append(slices.Clone(strs), 0x05, 0x01))             // more used than total
	f.Add(append(slices.Clone(strs), 0x01, 0x02, 0x7f, 0x7f)) // a later version's trailing fields
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			require.ErrorIs(t, err, errMeta)
			return
		}
		again, err := decodeMeta(m.encode())
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}

// Disk usage rides after the strings: an earlier build's metadata (no
// usage) reads as unknown, and a reading that claims more used than there
// is, or is cut short, is refused.
func TestMetaDiskUsage(t *testing.T) {
	m := meta{ID: "id", Name: "n", Disk: state.DiskUsage{UsedBytes: 3 << 30, TotalBytes: 8 << 30}}
	b := m.encode()
	got, err := decodeMeta(b)
	require.NoError(t, err)
	require.Equal(t, m, got)

	strs := meta{ID: "id", Name: "n"}.encode()
	strs = strs[:len(strs)-2]
	got, err = decodeMeta(strs)
	require.NoError(t, err)
	require.False(t, got.Disk.Known())

	_, err = decodeMeta(append(slices.Clone(strs), 0x05, 0x01))
	require.ErrorIs(t, err, errMeta)
	_, err = decodeMeta(b[:len(b)-1])
	require.ErrorIs(t, err, errMeta)
}
