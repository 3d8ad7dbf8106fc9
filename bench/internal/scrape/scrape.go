// Package scrape reads histograms from a broker's Prometheus /metrics
// page, so a benchmark can set the broker's own view of a run (request
// times as the broker measured them) beside what its clients saw.
package scrape

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Histogram is one histogram series' cumulative bucket counts by upper
// bound (+Inf included).
type Histogram map[float64]float64

// Get fetches url (a /metrics page) and returns the histogram name whose
// labels include label="value", summed over its other labels' series.
func Get(ctx context.Context, url, name, label, value string) (Histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	h := Histogram{}
	want := fmt.Sprintf(`%s="%s"`, label, value)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name+"_bucket{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok || !hasLabel(labels, want) {
			continue
		}
		le, ok := labelValue(labels, "le")
		if !ok {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		count, err2 := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("scrape %s: bad bucket line %q", url, line)
		}
		h[bound] += count
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return h, nil // empty if nothing was observed yet: the series appear with their first observation
}

func hasLabel(labels, want string) bool {
	for _, l := range strings.Split(labels, ",") {
		if l == want {
			return true
		}
	}
	return false
}

func labelValue(labels, key string) (string, bool) {
	for _, l := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// Sub is h minus an earlier scrape of the same series: what happened in
// between.
func (h Histogram) Sub(earlier Histogram) Histogram {
	out := Histogram{}
	for b, c := range h {
		out[b] = c - earlier[b]
	}
	return out
}

// Quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket that holds it, the highest finite bound
// if that is +Inf. NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	bounds := make([]float64, 0, len(h))
	for b := range h {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN()
	}
	total := h[bounds[len(bounds)-1]]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		c := h[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(c-below)
		}
		lower, below = b, c
	}
	return lower
}
