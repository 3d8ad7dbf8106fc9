package scrape

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

const page = `# HELP t_seconds x
# TYPE t_seconds histogram
t_seconds_bucket{request="Produce",version="9",le="0.001"} 50
t_seconds_bucket{request="Produce",version="9",le="0.01"} 90
t_seconds_bucket{request="Produce",version="9",le="0.1"} 100
t_seconds_bucket{request="Produce",version="9",le="+Inf"} 100
t_seconds_bucket{request="Produce",version="10",le="0.001"} 0
t_seconds_bucket{request="Produce",version="10",le="0.01"} 0
t_seconds_bucket{request="Produce",version="10",le="0.1"} 0
t_seconds_bucket{request="Produce",version="10",le="+Inf"} 100
t_seconds_bucket{request="Fetch",le="0.001"} 7
t_seconds_bucket{request="Fetch",le="+Inf"} 7
t_seconds_sum{request="Produce",version="9"} 1
`

func TestGetSumsSeriesAndQuantile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, page) }))
	defer srv.Close()
	h, err := Get(context.Background(), srv.URL, "t_seconds", "request", "Produce")
	if err != nil {
		t.Fatal(err)
	}
	if h[0.001] != 50 || h[math.Inf(1)] != 200 {
		t.Fatalf("buckets %v", h)
	}
	// 200 observations: the median is the 100th, at the top of (0, 0.001]
	// ... 50 there, 40 more in (0.001, 0.01], 10 in (0.01, 0.1], 100 above.
	if q := h.Quantile(0.25); math.Abs(q-0.001) > 1e-9 {
		t.Errorf("p25 = %v, want 0.001", q)
	}
	if q := h.Quantile(0.99); q != 0.1 {
		t.Errorf("p99 = %v, want the highest finite bound 0.1", q)
	}
	d := h.Sub(Histogram{0.001: 50, 0.01: 90, 0.1: 100, math.Inf(1): 100})
	if q := d.Quantile(0.99); q != 0.1 {
		t.Errorf("p99 of the difference = %v", q)
	}
	if q := (Histogram{0.001: 0, math.Inf(1): 0}).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("quantile of nothing = %v, want NaN", q)
	}
	if h, err := Get(context.Background(), srv.URL, "t_seconds", "request", "Metadata"); err != nil || len(h) != 0 {
		t.Errorf("a series not observed yet: %v, %v; want empty", h, err)
	}
	if _, err := Get(context.Background(), "http://127.0.0.1:1/metrics", "t_seconds", "request", "Produce"); err == nil {
		t.Error("a scrape of nothing succeeded")
	}
}

func TestQuantileInterpolates(t *testing.T) {
	h := Histogram{0.001: 0, 0.005: 100, math.Inf(1): 100}
	if q := h.Quantile(0.5); math.Abs(q-0.003) > 1e-9 {
		t.Errorf("p50 = %v, want 0.003", q)
	}
}
