package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/weir-project/weir/bench/internal/stats"
)

// Chart is a drawn PNG: its path relative to the page, and a caption.
type Chart struct {
	File, Caption string
}

// palette colours the series the same way in every chart.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// Charts draws the run's charts into dir (which the page refers to as
// rel) and returns them.
func Charts(r *Run, dir, rel string) ([]Chart, error) {
	type spec struct {
		name, caption string
		draw          func() (*plot.Plot, bool)
	}
	specs := []spec{
		{"produce.png", "Produce throughput, median MB/s per case and broker", func() (*plot.Plot, bool) {
			return caseBars(r, Produce, "Produce, median MB/s", "MB/s", false)
		}},
		{"produce-cpu.png", "Broker CPU seconds per GB produced", func() (*plot.Plot, bool) {
			return caseBars(r, Produce, "Produce, broker CPU s/GB", "CPU s/GB", true)
		}},
		{"consume.png", "Consume throughput (page cache and cold), median MB/s", func() (*plot.Plot, bool) {
			return caseBars(r, "consume*", "Consume, median MB/s", "MB/s", false)
		}},
		{"consume-cpu.png", "Broker CPU seconds per GB consumed", func() (*plot.Plot, bool) {
			return caseBars(r, "consume*", "Consume, broker CPU s/GB", "CPU s/GB", true)
		}},
		{"latency.png", "End-to-end latency percentiles at half of each broker's peak", func() (*plot.Plot, bool) {
			return latencyBars(r)
		}},
		{"sustained.png", "Sustained produce, MB/s each second, against the disk's write bandwidth", func() (*plot.Plot, bool) {
			return sustainedLine(r)
		}},
	}
	var out []Chart
	for _, s := range specs {
		pl, ok := s.draw()
		if !ok {
			continue
		}
		if err := pl.Save(32*vg.Centimeter, 14*vg.Centimeter, filepath.Join(dir, s.name)); err != nil {
			return nil, fmt.Errorf("draw %s: %w", s.name, err)
		}
		out = append(out, Chart{File: rel + "/" + s.name, Caption: s.caption})
	}
	return out, nil
}

// kindMatches reports whether a case kind is selected ("consume*" takes
// both consume kinds).
func kindMatches(kind, want string) bool {
	if want == "consume*" {
		return kind == Consume || kind == ConsumeCold
	}
	return kind == want
}

// caseBars is a grouped bar chart: one group per case, one bar per broker
// (median over rounds).
func caseBars(r *Run, kind, title, ylabel string, cpu bool) (*plot.Plot, bool) {
	var cases []*Case
	for i := range r.Cases {
		if kindMatches(r.Cases[i].Kind, kind) {
			cases = append(cases, &r.Cases[i])
		}
	}
	if len(cases) == 0 {
		return nil, false
	}
	peers, _ := peerNames(cases)
	pl := plot.New()
	pl.Title.Text = title
	pl.Y.Label.Text = ylabel
	w := vg.Points(min(60/float64(len(peers)), 14))
	var labels []string
	for _, c := range cases {
		labels = append(labels, c.shortLabel())
	}
	for i, name := range peers {
		vals := make(plotter.Values, len(cases))
		for j, c := range cases {
			vals[j] = 0
			if s := c.Peer(name); s != nil {
				xs := s.MBps
				if cpu {
					xs = s.CPUPerGB
				}
				if m := stats.Summarize(xs); m.N > 0 && !math.IsNaN(m.Median) {
					vals[j] = m.Median
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, false
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(peers)-1)/2)
		pl.Add(bars)
		pl.Legend.Add(name, bars)
	}
	frame(pl, len(cases))
	pl.NominalX(labels...)
	pl.X.Tick.Label.Font.Size = vg.Points(7)
	pl.X.Label.Text = "p: partitions, c: producers"
	return pl, true
}

// shortLabel is a case's workload in two short lines, for a chart axis.
func (c Case) shortLabel() string {
	first := fmt.Sprintf("%s p%d", SizeLabel(c.RecordSize), c.Partitions)
	switch c.Kind {
	case Consume:
		return first + "\npage cache"
	case ConsumeCold:
		return first + "\ncold"
	}
	return fmt.Sprintf("%s\nc%d acks=%d", first, c.Producers, c.Acks)
}

// latencyBars groups p50/p99/p99.9 (median over rounds) per broker.
func latencyBars(r *Run) (*plot.Plot, bool) {
	if len(r.Latency) == 0 {
		return nil, false
	}
	pl := plot.New()
	pl.Title.Text = "End-to-end latency at half of peak (median of rounds)"
	pl.Y.Label.Text = "ms"
	pcts := []struct {
		name string
		get  func(LatencyRound) time.Duration
	}{
		{"p50", func(l LatencyRound) time.Duration { return l.P50 }},
		{"p99", func(l LatencyRound) time.Duration { return l.P99 }},
		{"p99.9", func(l LatencyRound) time.Duration { return l.P999 }},
	}
	w := vg.Points(18)
	var labels []string
	for _, l := range r.Latency {
		name := l.Peer
		if l.Minimal {
			name += " min."
		}
		switch {
		case l.PeakMBps == 0:
			labels = append(labels, fmt.Sprintf("%s\n%.0f/s", name, l.Rate))
		case l.EndToEnd:
			labels = append(labels, name+"\nhalf e2e")
		default:
			labels = append(labels, name+"\nhalf of peak")
		}
	}
	for i, pc := range pcts {
		vals := make(plotter.Values, len(r.Latency))
		for j, l := range r.Latency {
			var ds []time.Duration
			for _, rd := range l.Rounds {
				ds = append(ds, pc.get(rd))
			}
			vals[j] = durSummary(ds).Median
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, false
		}
		bars.Color = palette[i]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(i-1)
		pl.Add(bars)
		pl.Legend.Add(pc.name, bars)
	}
	frame(pl, len(r.Latency))
	pl.NominalX(labels...)
	return pl, true
}

// frame leaves room around n groups of bars and above them for the
// legend.
func frame(pl *plot.Plot, n int) {
	pl.Legend.Top = true
	pl.X.Min, pl.X.Max = -0.6, float64(n)-0.4
	pl.Y.Min = 0
	pl.Y.Max *= 1.25
}

// sustainedLine plots the per-second rate of the sustained run and the
// disk's bandwidth.
func sustainedLine(r *Run) (*plot.Plot, bool) {
	s := r.Sustain
	if s == nil || len(s.Timeline) == 0 {
		return nil, false
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("Sustained produce (%s, %s, %d partitions, acks=1)", s.Peer, SizeLabel(s.RecordSize), s.Partitions)
	pl.X.Label.Text = "s"
	pl.Y.Label.Text = "MB/s"
	pts := make(plotter.XYs, len(s.Timeline))
	for i, v := range s.Timeline {
		pts[i] = plotter.XY{X: float64(i + 1), Y: v}
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, false
	}
	line.Color = palette[0]
	pl.Add(line)
	pl.Legend.Add(s.Peer+" produce", line)
	disk, err := plotter.NewLine(plotter.XYs{{X: 1, Y: s.DiskMBps}, {X: float64(len(s.Timeline)), Y: s.DiskMBps}})
	if err == nil {
		disk.Color = palette[3]
		disk.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		pl.Add(disk)
		pl.Legend.Add("disk write bandwidth (fsynced)", disk)
	}
	top := s.DiskMBps
	for _, v := range s.Timeline {
		top = max(top, v)
	}
	pl.Y.Min, pl.Y.Max = 0, top*1.3
	pl.Legend.Top = true
	return pl, true
}
