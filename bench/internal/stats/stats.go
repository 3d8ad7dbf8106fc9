// Package stats summarises the rounds of a benchmark case: the median and
// the spread of a figure, the ratio of two brokers' figures round by round,
// and latency percentiles.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary is the median and the spread (min–max) of a figure over rounds.
type Summary struct {
	N                int
	Median, Min, Max float64
}

// Summarize returns the summary of xs; NaN values (a round that measured
// nothing) are left out. An empty input gives N=0.
func Summarize(xs []float64) Summary {
	var vals []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return Summary{}
	}
	slices.Sort(vals)
	return Summary{N: len(vals), Median: median(vals), Min: vals[0], Max: vals[len(vals)-1]}
}

// median of sorted, non-empty vals: the middle one, or the mean of the
// two middle ones.
func median(vals []float64) float64 {
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

// Ratios divides a by b round by round (pairs taken in the same round
// share the machine's state, so their ratio is steadier than a ratio of
// medians). Rounds missing on either side, or with b zero, give NaN.
func Ratios(a, b []float64) []float64 {
	n := max(len(a), len(b))
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
		if i < len(a) && i < len(b) && b[i] != 0 && !math.IsNaN(a[i]) && !math.IsNaN(b[i]) {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

// Percentile returns the nearest-rank q-quantile (0 < q <= 1) of sorted
// durations, 0 when empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Latencies is the p50, p99 and p99.9 of a run's end-to-end latencies.
type Latencies struct {
	N              int
	P50, P99, P999 time.Duration
	Max            time.Duration
}

// LatencyPercentiles sorts ds in place and takes its percentiles.
func LatencyPercentiles(ds []time.Duration) Latencies {
	slices.Sort(ds)
	l := Latencies{N: len(ds), P50: Percentile(ds, 0.50), P99: Percentile(ds, 0.99), P999: Percentile(ds, 0.999)}
	if len(ds) > 0 {
		l.Max = ds[len(ds)-1]
	}
	return l
}

// PerGB is seconds of CPU per GB (10^9 bytes) moved; NaN for no bytes.
func PerGB(cpu time.Duration, bytes int64) float64 {
	if bytes <= 0 {
		return math.NaN()
	}
	return cpu.Seconds() / (float64(bytes) / 1e9)
}

// MBps is megabytes (10^6 bytes) per second; NaN for an empty interval.
func MBps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(bytes) / 1e6 / d.Seconds()
}
