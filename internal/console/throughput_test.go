package console

import (
	"bytes"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The ring keeps the newest samples, oldest first, and never more than
// its size.
func TestRing(t *testing.T) {
	r := newRing(3)
	if got := r.samples(); len(got) != 0 {
		t.Fatalf("empty ring: %d samples", len(got))
	}
	for i := range int64(5) {
		r.add(trafficSample{in: i})
		got := r.samples()
		if want := min(int(i)+1, 3); len(got) != want {
			t.Fatalf("after %d adds: %d samples, want %d", i+1, len(got), want)
		}
		if got[len(got)-1].in != i || got[0].in != max(0, i-2) {
			t.Fatalf("after %d adds: %+v", i+1, got)
		}
	}
	s := r.samples()
	s[0].in = 99 // a copy: the ring is not changed
	if r.samples()[0].in == 99 {
		t.Error("samples shares the ring's memory")
	}
}

func TestRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss := []trafficSample{
		{at: t0, in: 0, out: 0},
		{at: t0.Add(2 * time.Second), in: 2000, out: 500},
		{at: t0.Add(2 * time.Second), in: 3000, out: 600},  // no time passed: skipped
		{at: t0.Add(4 * time.Second), in: 1000, out: 1600}, // in went back: 0
	}
	got := rates(ss)
	want := []rate{{in: 1000, out: 250}, {in: 0, out: 500}}
	if len(got) != len(want) {
		t.Fatalf("rates %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rate %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := rates(ss[:1]); len(got) != 0 {
		t.Errorf("one sample gave rates %+v", got)
	}
}

// renderSparkline executes the overview's "sparkline" template, as the
// page does.
func renderSparkline(t *testing.T, sp sparkline) string {
	t.Helper()
	s := &Server{pages: map[string]*template.Template{}}
	if err := s.parseTemplates(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.pages["overview"].ExecuteTemplate(&buf, "sparkline", sp); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var pointsRE = regexp.MustCompile(`<polyline class="in" points="([^"]*)"`)

// points are the in line's coordinates.
func points(t *testing.T, svg string) [][2]float64 {
	t.Helper()
	m := pointsRE.FindStringSubmatch(svg)
	if m == nil {
		return nil
	}
	var out [][2]float64
	for _, p := range strings.Fields(m[1]) {
		x, y, ok := strings.Cut(p, ",")
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("point %q in %q", p, m[1])
		}
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

func TestSparklineEmpty(t *testing.T) {
	svg := renderSparkline(t, newSparkline("bytes", nil, 10))
	if strings.Contains(svg, "<polyline") || strings.Contains(svg, "<circle") {
		t.Errorf("no rates yet, but lines drawn:\n%s", svg)
	}
	if !strings.Contains(svg, "collecting") || !strings.Contains(svg, "<svg") {
		t.Errorf("an empty graph does not say it is collecting:\n%s", svg)
	}
}

// One rate is one point at the right edge, with its dot; an idle broker
// (all zero) draws at the bottom, no division by zero.
func TestSparklineOnePoint(t *testing.T) {
	for _, r := range []rate{{in: 0, out: 0}, {in: 5000, out: 0}} {
		svg := renderSparkline(t, newSparkline("bytes", []rate{r}, 10))
		pts := points(t, svg)
		if len(pts) != 1 || pts[0][0] != sparkWidth-sparkPad {
			t.Fatalf("rate %+v: points %v, want one at x=%d\n%s", r, pts, sparkWidth-sparkPad, svg)
		}
		wantY := float64(sparkHeight - sparkPad) // zero: the bottom
		if r.in > 0 {
			wantY = sparkPad // the peak: the top
		}
		if pts[0][1] != wantY {
			t.Errorf("rate %+v: y %v, want %v", r, pts[0][1], wantY)
		}
		if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
			t.Errorf("rate %+v: %s", r, svg)
		}
		if n := strings.Count(svg, "<circle"); n != 2 {
			t.Errorf("rate %+v: %d dots, want 2 (in, out)", r, n)
		}
	}
}

// The newest rate is at the right edge, one slot per interval to its
// left; more rates than slots keep the newest.
func TestSparklineLayout(t *testing.T) {
	rs := []rate{{in: 10}, {in: 20}, {in: 40}, {in: 30}}
	sp := newSparkline("bytes", rs, 3)
	if sp.Points != 3 || sp.NowIn != 30 || sp.PeakIn != 40 || sp.Top != 40 {
		t.Fatalf("%+v", sp)
	}
	pts := points(t, renderSparkline(t, sp))
	want := [][2]float64{{sparkPad, float64(sparkHeight-sparkPad) - 0.5*float64(sparkHeight-2*sparkPad)}, {300, sparkPad}, {sparkWidth - sparkPad, float64(sparkHeight-sparkPad) - 0.75*float64(sparkHeight-2*sparkPad)}}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, pts[i], want[i])
		}
	}
}

// The label is text in the SVG, escaped as such.
func TestSparklineEscapes(t *testing.T) {
	svg := renderSparkline(t, newSparkline(`<script>alert(1)</script> & "q"`, []rate{{in: 1}}, 10))
	if strings.Contains(svg, "<script>") || strings.Contains(svg, `"q"`) {
		t.Errorf("label not escaped:\n%s", svg)
	}
	if !strings.Contains(svg, "&lt;script&gt;") {
		t.Errorf("label missing:\n%s", svg)
	}
}
