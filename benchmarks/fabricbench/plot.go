package fabricbench

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot draws two panels into a PNG at path: RTT p50 against payload size
// (calls in flight = 1) and bandwidth against size, one line per transport
// and in-flight count (solid 1, dashed more), both on log axes. Points
// spread over several peers (fan-out) are left out.
func Plot(path string, rs []Result) error {
	lat := plot.New()
	lat.Title.Text = "RTT p50 (1 in flight)"
	lat.X.Label.Text = "payload bytes"
	lat.Y.Label.Text = "µs"
	bw := plot.New()
	bw.Title.Text = "bandwidth (one direction)"
	bw.X.Label.Text = "payload bytes"
	bw.Y.Label.Text = "MB/s"
	for _, p := range []*plot.Plot{lat, bw} {
		p.X.Scale = plot.LogScale{}
		p.Y.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Legend.Left = true
	}

	type key struct {
		transport string
		inflight  int
	}
	series := make(map[key]plotter.XYs)
	var names []string
	seen := make(map[string]bool)
	for _, r := range rs {
		if r.Error != "" || r.Size == 0 || r.peers() > 1 {
			continue
		}
		k := key{r.Transport, r.InFlight}
		series[k] = append(series[k], plotter.XY{X: float64(r.Size), Y: 0})
		series[k][len(series[k])-1].Y = float64(r.RTTP50ns) / 1e3
		if !seen[r.Transport] {
			seen[r.Transport] = true
			names = append(names, r.Transport)
		}
	}
	bwSeries := make(map[key]plotter.XYs)
	for _, r := range rs {
		if r.Error != "" || r.Size == 0 || r.MBPerS <= 0 || r.peers() > 1 {
			continue
		}
		k := key{r.Transport, r.InFlight}
		bwSeries[k] = append(bwSeries[k], plotter.XY{X: float64(r.Size), Y: r.MBPerS})
	}
	keys := make([]key, 0, len(bwSeries))
	for k := range bwSeries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].transport != keys[j].transport {
			return indexOf(names, keys[i].transport) < indexOf(names, keys[j].transport)
		}
		return keys[i].inflight < keys[j].inflight
	})
	for _, k := range keys {
		c := Palette[indexOf(names, k.transport)%len(Palette)]
		dashed := k.inflight > 1
		label := fmt.Sprintf("%s ×%d", k.transport, k.inflight)
		if err := AddLine(bw, bwSeries[k], c, dashed, label); err != nil {
			return err
		}
		if k.inflight == 1 {
			if err := AddLine(lat, series[k], c, false, k.transport); err != nil {
				return err
			}
		}
	}
	return SaveRow(path, lat, bw)
}

// Palette is the colours of the benchmarks' plots, one per series.
var Palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// SaveRow draws plots side by side, each 16 × 11 cm, into a PNG at path.
func SaveRow(path string, plots ...*plot.Plot) error {
	const w, h = 16 * vg.Centimeter, 11 * vg.Centimeter
	img := vgimg.New(vg.Length(len(plots))*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Centimeter / 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return saveTo(path, vgimg.PngCanvas{Canvas: img})
}

// AddLine adds xys (sorted by X here) to p as a line with points in colour
// c, dashed or solid, with a legend entry.
func AddLine(p *plot.Plot, xys plotter.XYs, c color.Color, dashed bool, label string) error {
	sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("fabricbench: plot %s: %w", label, err)
	}
	l.Color = c
	pts.Color = c
	pts.Radius = vg.Points(2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, pts)
	p.Legend.Add(label, l, pts)
	return nil
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return len(names)
}
