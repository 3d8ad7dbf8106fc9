package verify

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Charts are inline SVG written here by hand: two plots over the run's
// time, throughput and latency, with fault windows shaded (one colour per
// kind) and anomalies marked. No dependency, one file, any browser.

// faultColors is the shading of each kind of fault.
var faultColors = map[string]string{
	FaultKill:       "#f4a6a6",
	FaultPause:      "#a6c8f4",
	FaultPartition:  "#f4d9a6",
	FaultOneWay:     "#f4c08f",
	FaultSlow:       "#e6d2b8",
	FaultTorn:       "#d3a6f4",
	FaultPower:      "#c9b38f",
	FaultDiskFull:   "#a6f4c1",
	FaultController: "#f4a6e0",
	FaultCascade:    "#8fb3c9",
	FaultWipe:       "#9c8f7a",
	FaultRestart:    "#f4f0a6",
	FaultMove:       "#a6f4ee",
	FaultLose:       "#bbbbbb",
}

func faultColor(kind string) string {
	if c, ok := faultColors[kind]; ok {
		return c
	}
	return "#dddddd"
}

// series is one line of a plot.
type series struct {
	name  string
	color string
	y     []float64 // one per bucket; NaN: no point
}

type plot struct {
	title   string
	unit    string
	log     bool // logarithmic y axis
	w, h    int
	res     *Result
	series  []series
	markers []Anomaly
}

const (
	padL, padR, padT, padB = 64, 16, 28, 36
)

func (p *plot) x(t float64) float64 {
	span := math.Max(p.res.Duration, 1)
	return padL + t/span*float64(p.w-padL-padR)
}

// yRange is the axis range over every series.
func (p *plot) yRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range p.series {
		for _, v := range s.y {
			if math.IsNaN(v) || (p.log && v <= 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if p.log {
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
		return lo, hi
	}
	return 0, niceCeil(hi)
}

func (p *plot) y(v, lo, hi float64) float64 {
	top, bottom := float64(padT), float64(p.h-padB)
	f := 0.0
	if p.log {
		f = (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
	} else if hi > lo {
		f = (v - lo) / (hi - lo)
	}
	return bottom - f*(bottom-top)
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	m := math.Pow(10, math.Floor(math.Log10(v)))
	for _, s := range []float64{1, 2, 5, 10} {
		if v <= s*m {
			return s * m
		}
	}
	return 10 * m
}

// svg renders the plot.
func (p *plot) svg() template.HTML {
	var b strings.Builder
	lo, hi := p.yRange()
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 %d %d" style="width:100%%;max-width:%dpx;height:auto">`, p.w, p.h, p.w)
	fmt.Fprintf(&b, `<text x="%d" y="18" class="title">%s</text>`, padL, esc(p.title))
	// Fault windows.
	for _, f := range p.res.Faults {
		end := f.End
		if end < 0 {
			end = p.res.Duration
		}
		x0, x1 := p.x(f.Start), p.x(end)
		fmt.Fprintf(&b, `<rect class="fault" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			x0, padT, math.Max(x1-x0, 1), p.h-padT-padB, faultColor(f.Fault),
			esc(fmt.Sprintf("%s node %d, %.1f–%.1f s: %s", f.Fault, f.Node, f.Start, end, f.Detail)))
	}
	// Axes and grid.
	x0, x1, yb, yt := float64(padL), float64(p.w-padR), float64(p.h-padB), float64(padT)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, yb, x1, yb)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, yb, x0, yt)
	for _, v := range p.ticks(lo, hi) {
		y := p.y(v, lo, hi)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, y, x1, y)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x0-4, y+4, fmtTick(v))
	}
	step := niceCeil(p.res.Duration / 10)
	for t := 0.0; t <= p.res.Duration; t += step {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%.0fs</text>`, p.x(t), yb+16, t)
	}
	fmt.Fprintf(&b, `<text class="tick" x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (yb+yt)/2, (yb+yt)/2, esc(p.unit))
	// Lines.
	for _, s := range p.series {
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`,
					s.color, strings.Join(pts, " "), esc(s.name))
				pts = nil
			}
		}
		for i, v := range s.y {
			if math.IsNaN(v) || (p.log && v <= 0) {
				flush()
				continue
			}
			t := p.res.Timeline[i].T + p.res.Bucket/2
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", p.x(t), p.y(v, lo, hi)))
		}
		flush()
	}
	// Anomalies: a red mark at the top, at the time each showed.
	for _, a := range p.markers {
		x := p.x(a.T)
		fmt.Fprintf(&b, `<path class="anomaly" d="M%.1f %.1f l-5 -9 h10 z" fill="#d00000"><title>%s</title></path>`,
			x, yt, esc(fmt.Sprintf("%.2fs %s %s-%d: %s", a.T, a.Kind, a.Topic, a.Partition, a.Detail)))
	}
	// Legend.
	lx := float64(p.w - padR)
	for i := len(p.series) - 1; i >= 0; i-- {
		s := p.series[i]
		lx -= float64(10 + 7*len(s.name) + 16)
		fmt.Fprintf(&b, `<rect x="%.1f" y="8" width="10" height="10" fill="%s"/><text class="tick" x="%.1f" y="17">%s</text>`, lx, s.color, lx+14, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func (p *plot) ticks(lo, hi float64) []float64 {
	var out []float64
	if p.log {
		for v := lo; v <= hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceCeil(hi / 5)
	for v := 0.0; v <= hi*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

func fmtTick(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1 || v == 0:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// charts are the report's two plots.
func charts(res *Result) []template.HTML {
	n := len(res.Timeline)
	acked, failed, p50, p99, mx := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, b := range res.Timeline {
		acked[i] = float64(b.Acked) / res.Bucket
		failed[i] = float64(b.Failed) / res.Bucket
		p50[i], p99[i], mx[i] = math.NaN(), math.NaN(), math.NaN()
		if b.Acked > 0 {
			p50[i], p99[i], mx[i] = b.P50, b.P99, b.Max
		}
	}
	var marks []Anomaly
	for _, t := range res.Topics {
		if !t.Safety {
			continue
		}
		for _, a := range t.Anomalies {
			if a.Kind != KUnseen {
				marks = append(marks, a)
			}
		}
	}
	thr := &plot{title: "Throughput of the judged topics: sends completed per second", unit: "sends/s", w: 1100, h: 300, res: res, markers: marks,
		series: []series{{"acknowledged", "#1f77b4", acked}, {"failed or indeterminate", "#d62728", failed}}}
	lat := &plot{title: "Acknowledgement latency (log scale)", unit: "ms", log: true, w: 1100, h: 300, res: res, markers: marks,
		series: []series{{"p50", "#2ca02c", p50}, {"p99", "#ff7f0e", p99}, {"max", "#7f7f7f", mx}}}
	return []template.HTML{thr.svg(), lat.svg()}
}
