package state_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
)

const gb = 1 << 30

func TestParseDiskWatermarks(t *testing.T) {
	for _, tc := range []struct {
		name             string
		low, high, flood string
		wantErr          string
	}{
		{name: "defaults", low: "85%", high: "90%", flood: "95%"},
		{name: "ratios", low: "0.5", high: "0.6", flood: "0.7"},
		{name: "ratios and percentages mix", low: "0.5", high: "60%", flood: "0.7"},
		{name: "equal is fine", low: "90%", high: "90%", flood: "90%"},
		{name: "free bytes, falling", low: "100gb", high: "50gb", flood: "10gb"},
		{name: "low above high", low: "91%", high: "90%", flood: "95%", wantErr: "must not exceed high"},
		{name: "high above flood", low: "85%", high: "96%", flood: "95%", wantErr: "must not exceed flood stage"},
		{name: "free bytes rising", low: "10gb", high: "50gb", flood: "100gb", wantErr: "must be at least high"},
		{name: "kinds mixed", low: "85%", high: "10gb", flood: "95%", wantErr: "all be percentages"},
		{name: "over 100%", low: "85%", high: "90%", flood: "101%", wantErr: "flood_stage"},
		{name: "ratio over 1", low: "1.5", high: "90%", flood: "95%", wantErr: "ratio between"},
		{name: "garbage", low: "lots", high: "90%", flood: "95%", wantErr: "watermark.low"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := state.ParseDiskWatermarks(tc.low, tc.high, tc.flood)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, state.ErrWatermarks)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestWatermarkExceeded(t *testing.T) {
	disk := func(usedGB, totalGB uint64) state.DiskUsage {
		return state.DiskUsage{UsedBytes: usedGB * gb, TotalBytes: totalGB * gb}
	}
	pct, err := state.ParseWatermark("90%")
	require.NoError(t, err)
	free, err := state.ParseWatermark("10gb")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		w    state.Watermark
		u    state.DiskUsage
		want bool
	}{
		{"share below", pct, disk(89, 100), false},
		{"share at is not past", pct, disk(90, 100), false},
		{"share past", pct, disk(91, 100), true},
		{"unknown never past", pct, state.DiskUsage{}, false},
		{"free above", free, disk(89, 100), false},
		{"free exactly", free, disk(90, 100), false},
		{"free below", free, disk(91, 100), true},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, tc.w.Exceeded(tc.u)) })
	}
}

func TestSettingsDiskWatermarks(t *testing.T) {
	def := state.Settings{}.DiskWatermarks()
	require.True(t, def.Enabled)
	require.InDelta(t, 0.85, def.Low.Ratio, 1e-9)
	require.InDelta(t, 0.90, def.High.Ratio, 1e-9)
	require.InDelta(t, 0.95, def.FloodStage.Ratio, 1e-9)

	set := state.Settings{Values: map[string]string{state.DiskLowSetting: "30gb", state.DiskHighSetting: "20gb",
		state.DiskFloodStageSetting: "5gb", state.DiskThresholdEnabledSetting: "false"}}.DiskWatermarks()
	require.False(t, set.Enabled)
	require.True(t, set.FloodStage.Bytes)
	require.EqualValues(t, 5*gb, set.FloodStage.FreeBytes)

	bad := state.Settings{Values: map[string]string{state.DiskLowSetting: "99%"}}.DiskWatermarks()
	require.Equal(t, def, bad, "a set that does not fit together falls back to the defaults")
}

func TestReadOnlyAllowDelete(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{{`"true"`, true}, {`true`, true}, {`"false"`, false}, {`false`, false}, {``, false}} {
		ix := &state.Index{}
		if tc.raw != "" {
			ix.Settings = map[string]json.RawMessage{state.ReadOnlyAllowDeleteSetting: json.RawMessage(tc.raw)}
		}
		require.Equal(t, tc.want, ix.ReadOnlyAllowDelete(), tc.raw)
	}
}
