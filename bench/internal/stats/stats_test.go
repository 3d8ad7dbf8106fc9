package stats

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		in   []float64
		want Summary
	}{
		{nil, Summary{}},
		{[]float64{3}, Summary{N: 1, Median: 3, Min: 3, Max: 3}},
		{[]float64{5, 1, 3}, Summary{N: 3, Median: 3, Min: 1, Max: 5}},
		{[]float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Min: 1, Max: 4}},
		{[]float64{math.NaN(), 2, 6}, Summary{N: 2, Median: 4, Min: 2, Max: 6}},
		{[]float64{math.NaN()}, Summary{}},
	}
	for _, c := range cases {
		if got := Summarize(c.in); got != c.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestRatios(t *testing.T) {
	got := Ratios([]float64{2, 3, 4, math.NaN()}, []float64{1, 0, 2, 1, 5})
	want := []float64{2, math.NaN(), 2, math.NaN(), math.NaN()}
	if len(got) != len(want) {
		t.Fatalf("len %d, want %d", len(got), len(want))
	}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && got[i] != want[i]) {
			t.Errorf("ratio %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := LatencyPercentiles(ds)
	if l.N != 1000 || l.P50 != 500*time.Millisecond || l.P99 != 990*time.Millisecond || l.P999 != 999*time.Millisecond {
		t.Errorf("percentiles %+v", l)
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("empty percentile not 0")
	}
	one := []time.Duration{7}
	if Percentile(one, 0.999) != 7 || Percentile(one, 0.0001) != 7 {
		t.Error("single sample percentile")
	}
}

func TestPerGBAndMBps(t *testing.T) {
	if got := PerGB(2*time.Second, 4e9); got != 0.5 {
		t.Errorf("PerGB = %v", got)
	}
	if !math.IsNaN(PerGB(time.Second, 0)) {
		t.Error("PerGB of no bytes not NaN")
	}
	if got := MBps(500e6, 2*time.Second); got != 250 {
		t.Errorf("MBps = %v", got)
	}
	if !math.IsNaN(MBps(1, 0)) {
		t.Error("MBps of no time not NaN")
	}
}
