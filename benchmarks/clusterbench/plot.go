package clusterbench

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/weftsearch/weft/benchmarks/fabricbench"
)

// Plot draws r into a PNG at path: query p50 and QPS against clients, one
// line per setup (the three-node ones dashed), and, when r has a recovery
// part, each transport's median recovery and stream MB/s beside
// fabricbench's raw and tcp MB/s at 1 MiB and the disk's write rate.
func Plot(path string, r *Result) error {
	lat := plot.New()
	lat.Title.Text = "query p50"
	lat.Y.Label.Text = "µs"
	qps := plot.New()
	qps.Title.Text = "queries per second"
	qps.Y.Label.Text = "QPS"
	for _, p := range []*plot.Plot{lat, qps} {
		p.X.Label.Text = "concurrent clients"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	var setups []string
	p50s, rates := map[string]plotter.XYs{}, map[string]plotter.XYs{}
	for _, s := range r.Search {
		if _, ok := p50s[s.Setup]; !ok {
			setups = append(setups, s.Setup)
		}
		p50s[s.Setup] = append(p50s[s.Setup], plotter.XY{X: float64(s.Clients), Y: s.Latency.P50})
		rates[s.Setup] = append(rates[s.Setup], plotter.XY{X: float64(s.Clients), Y: s.QPS})
	}
	for i, name := range setups {
		c := fabricbench.Palette[i%len(fabricbench.Palette)]
		dashed := !strings.HasPrefix(name, "1 node")
		if err := fabricbench.AddLine(lat, p50s[name], c, dashed, name); err != nil {
			return err
		}
		if err := fabricbench.AddLine(qps, rates[name], c, dashed, name); err != nil {
			return err
		}
	}
	qps.Legend = plot.NewLegend() // the lines would hide it; the colours are the left panel's
	qps.Title.Text += " (colours as on the left)"
	plots := []*plot.Plot{lat, qps}
	if rec := r.Recovery; rec != nil {
		bars, err := recoveryBars(rec)
		if err != nil {
			return err
		}
		plots = append(plots, bars)
	}
	return fabricbench.SaveRow(path, plots...)
}

// recoveryBars is a bar chart of the recovery's MB/s per transport (whole
// recovery and stream), fabricbench's raw and tcp MB/s at 1 MiB and the
// disk's write rate.
func recoveryBars(rec *RecoveryResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "recovery vs raw path (1 MiB messages)"
	p.Y.Label.Text = "MB/s"
	var names []string
	var vals plotter.Values
	for _, t := range recoveryTransports(rec) {
		var stream []float64
		for _, run := range rec.Runs {
			if run.Transport == t {
				stream = append(stream, run.StreamMBPerS())
			}
		}
		names = append(names, "recovery\n"+t, "stream\n"+t)
		vals = append(vals, recoveryMBPerS(rec, t), median(stream))
	}
	for _, t := range []string{"raw", "tcp"} {
		names = append(names, "fabricbench\n"+t)
		vals = append(vals, rawMBPerS(rec.Raw, t, 1<<20))
	}
	names = append(names, "disk\nwrite")
	vals = append(vals, median(rec.DiskMBPerS))
	bars, err := plotter.NewBarChart(vals, vg.Centimeter)
	if err != nil {
		return nil, fmt.Errorf("clusterbench: plot recovery: %w", err)
	}
	bars.Color = fabricbench.Palette[0]
	p.Add(bars)
	p.NominalX(names...)
	return p, nil
}
