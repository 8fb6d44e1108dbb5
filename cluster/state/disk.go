package state

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftsearch/weft/internal/bytesize"
)

// DiskUsage is a node's data directory filesystem as the node last read it:
// Total bytes, of which Used are not available to the node (Total minus
// what an unprivileged writer may still use, so reserved blocks count as
// used). The zero value means unknown.
type DiskUsage struct {
	UsedBytes  uint64 `json:"used_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
}

// Known reports whether the usage was read.
func (u DiskUsage) Known() bool { return u.TotalBytes > 0 }

// FreeBytes is what the node may still write.
func (u DiskUsage) FreeBytes() uint64 { return u.TotalBytes - min(u.UsedBytes, u.TotalBytes) }

// Percent is the share used, 0 to 100 (0 when unknown).
func (u DiskUsage) Percent() float64 {
	if !u.Known() {
		return 0
	}
	return 100 * float64(min(u.UsedBytes, u.TotalBytes)) / float64(u.TotalBytes)
}

// The disk-based allocation settings (Elasticsearch's names), kept in
// Settings.Values as strings.
const (
	DiskThresholdEnabledSetting = "cluster.routing.allocation.disk.threshold_enabled"
	DiskLowSetting              = "cluster.routing.allocation.disk.watermark.low"
	DiskHighSetting             = "cluster.routing.allocation.disk.watermark.high"
	DiskFloodStageSetting       = "cluster.routing.allocation.disk.watermark.flood_stage"
)

// Their defaults, as Elasticsearch's.
const (
	DefaultDiskLow        = "85%"
	DefaultDiskHigh       = "90%"
	DefaultDiskFloodStage = "95%"
)

// ReadOnlyAllowDeleteSetting is the index block the leader puts on every
// index with a copy on a node past the flood stage watermark, and takes
// off once none of its copies is on a node past the high watermark. While
// it is set the index refuses document writes (deletes of documents too,
// as Elasticsearch does: they grow the index before they shrink it); the
// index itself may still be deleted.
const ReadOnlyAllowDeleteSetting = "index.blocks.read_only_allow_delete"

// ReadOnlyAllowDelete reports whether the index carries the
// read_only_allow_delete block (the setting is true, as a JSON string or
// boolean).
func (ix *Index) ReadOnlyAllowDelete() bool {
	v, ok := ix.Settings[ReadOnlyAllowDeleteSetting]
	if !ok {
		return false
	}
	v = bytes.TrimSpace(v)
	return string(v) == "true" || string(v) == `"true"`
}

// WriteBlock returns the error, wrapping ErrIndexBlocked, that a document
// write (index, create, update or delete) to the index gets while it
// carries the read_only_allow_delete block, with Elasticsearch's reason;
// nil without the block.
func (ix *Index) WriteBlock() error {
	if !ix.ReadOnlyAllowDelete() {
		return nil
	}
	return fmt.Errorf("%w: index [%s] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];", ErrIndexBlocked, ix.Name)
}

// Watermark is one disk watermark: either a share of the disk used
// (Ratio, from "85%" or "0.85") or, as Elasticsearch reads a byte value
// ("10gb"), the free space that must remain (FreeBytes).
type Watermark struct {
	Ratio     float64 // used share in [0, 1]; meaningful when !Bytes
	FreeBytes uint64  // free space to keep; meaningful when Bytes
	Bytes     bool
}

// Exceeded reports whether u is past the watermark: more than Ratio used,
// or less than FreeBytes free. Unknown usage is never past it.
func (w Watermark) Exceeded(u DiskUsage) bool {
	if !u.Known() {
		return false
	}
	if w.Bytes {
		return u.FreeBytes() < w.FreeBytes
	}
	return float64(min(u.UsedBytes, u.TotalBytes)) > w.Ratio*float64(u.TotalBytes)
}

// ParseWatermark reads a percentage ("85%", "85.5%"), a ratio ("0.85") or
// a byte size of free space ("10gb", "500mb").
func ParseWatermark(s string) (Watermark, error) {
	str := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(str, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return Watermark{}, fmt.Errorf("[%s] is not a percentage between 0%% and 100%%", s)
		}
		return Watermark{Ratio: f / 100}, nil
	}
	if f, err := strconv.ParseFloat(str, 64); err == nil {
		if f < 0 || f > 1 {
			return Watermark{}, fmt.Errorf("[%s] is not a ratio between 0.0 and 1.0", s)
		}
		return Watermark{Ratio: f}, nil
	}
	n, err := bytesize.Parse(str)
	if err != nil {
		return Watermark{}, fmt.Errorf("[%s] is neither a percentage (85%%), a ratio (0.85) nor a byte value of free space (10gb)", s)
	}
	return Watermark{FreeBytes: uint64(n), Bytes: true}, nil
}

// DiskWatermarks are the disk-based allocation settings in force.
type DiskWatermarks struct {
	Enabled               bool
	Low, High, FloodStage Watermark
}

// ErrWatermarks: the three watermarks do not fit together.
var ErrWatermarks = errors.New("invalid disk watermarks")

// ParseDiskWatermarks reads the three watermarks and checks that they are
// of one kind (all shares or all byte values, as Elasticsearch requires)
// and in order: low ≤ high ≤ flood stage for shares, low ≥ high ≥ flood
// stage for free bytes.
func ParseDiskWatermarks(low, high, flood string) (DiskWatermarks, error) {
	w := DiskWatermarks{Enabled: true}
	for _, f := range []struct {
		name, val string
		into      *Watermark
	}{{DiskLowSetting, low, &w.Low}, {DiskHighSetting, high, &w.High}, {DiskFloodStageSetting, flood, &w.FloodStage}} {
		wm, err := ParseWatermark(f.val)
		if err != nil {
			return DiskWatermarks{}, fmt.Errorf("%w: setting [%s]: %v", ErrWatermarks, f.name, err)
		}
		*f.into = wm
	}
	if w.Low.Bytes != w.High.Bytes || w.High.Bytes != w.FloodStage.Bytes {
		return DiskWatermarks{}, fmt.Errorf("%w: low [%s], high [%s] and flood stage [%s] must all be percentages (or ratios) or all byte values", ErrWatermarks, low, high, flood)
	}
	if w.Low.Bytes {
		if w.Low.FreeBytes < w.High.FreeBytes || w.High.FreeBytes < w.FloodStage.FreeBytes {
			return DiskWatermarks{}, fmt.Errorf("%w: as free space, low [%s] must be at least high [%s], which must be at least flood stage [%s]", ErrWatermarks, low, high, flood)
		}
	} else if w.Low.Ratio > w.High.Ratio || w.High.Ratio > w.FloodStage.Ratio {
		return DiskWatermarks{}, fmt.Errorf("%w: low [%s] must not exceed high [%s], which must not exceed flood stage [%s]", ErrWatermarks, low, high, flood)
	}
	return w, nil
}

// DiskWatermarks returns the watermarks these settings give: the stored
// values, else the defaults. Values that do not parse together (the API
// refuses them, so only a hand-made state has them) give the defaults.
func (s Settings) DiskWatermarks() DiskWatermarks {
	get := func(key, def string) string {
		if v, ok := s.Values[key]; ok {
			return v
		}
		return def
	}
	w, err := ParseDiskWatermarks(get(DiskLowSetting, DefaultDiskLow), get(DiskHighSetting, DefaultDiskHigh), get(DiskFloodStageSetting, DefaultDiskFloodStage))
	if err != nil {
		w, _ = ParseDiskWatermarks(DefaultDiskLow, DefaultDiskHigh, DefaultDiskFloodStage)
	}
	w.Enabled = s.Values[DiskThresholdEnabledSetting] != "false"
	return w
}
