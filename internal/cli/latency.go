package cli

import (
	"math"
	"math/bits"
	"time"
)

// latencyHistogram records durations in microseconds in log-linear buckets
// (like HdrHistogram): values below 128µs are exact, larger ones land in one
// of 64 buckets per power of two, so a percentile is off by at most 1/128
// of its value. Memory is fixed (~30 KiB) however many records a benchmark
// sends, unlike keeping every latency.
type latencyHistogram struct {
	counts [histBuckets]uint64
	n      uint64
	sumUS  float64
	maxUS  uint64
}

const (
	histSubBits = 7                                      // exact below 1<<histSubBits
	histHalf    = 1 << (histSubBits - 1)                 // buckets per power of two above that
	histBuckets = (64-histSubBits+1)*histHalf + histHalf // covers all of uint64
)

// bucketOf maps a value to its bucket index; bucketRange is its inverse.
func bucketOf(v uint64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits // >= 1
	top := v >> uint(shift)              // in [histHalf, 2*histHalf)
	return (shift+1)*histHalf + int(top-histHalf)
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 1<<histSubBits {
		return uint64(i), uint64(i)
	}
	shift := i/histHalf - 1
	top := uint64(i%histHalf + histHalf)
	lo = top << uint(shift)
	return lo, lo + (1 << uint(shift)) - 1
}

func (h *latencyHistogram) record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	v := uint64(us)
	h.counts[bucketOf(v)]++
	h.n++
	h.sumUS += float64(v)
	h.maxUS = max(h.maxUS, v)
}

func (h *latencyHistogram) count() uint64 { return h.n }

// meanMs is the average latency in milliseconds (0 when empty).
func (h *latencyHistogram) meanMs() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sumUS / float64(h.n) / 1000
}

func (h *latencyHistogram) maxMs() float64 { return float64(h.maxUS) / 1000 }

// percentileMs returns the latency in milliseconds below or at which a
// fraction q of the samples fall (nearest-rank), using the middle of the
// bucket it lands in, never more than the maximum seen.
func (h *latencyHistogram) percentileMs(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := min(lo+(hi-lo)/2, h.maxUS)
			return float64(mid) / 1000
		}
	}
	return h.maxMs()
}

// merge adds other's samples into h (for per-window and total figures).
func (h *latencyHistogram) merge(other *latencyHistogram) {
	for i, c := range other.counts {
		h.counts[i] += c
	}
	h.n += other.n
	h.sumUS += other.sumUS
	h.maxUS = max(h.maxUS, other.maxUS)
}

func (h *latencyHistogram) reset() { *h = latencyHistogram{} }
