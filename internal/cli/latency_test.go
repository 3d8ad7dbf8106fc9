package cli

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBucketsCoverValues(t *testing.T) {
	// Every value lands in a bucket whose range holds it, and buckets are
	// ordered: larger values never land in smaller buckets.
	prev := -1
	check := func(v uint64) {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of [0,%d)", v, i, histBuckets)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d,%d]", v, i, lo, hi)
		}
		if hi-lo > lo/64 {
			t.Fatalf("bucket %d = [%d,%d] wider than 1/64 of its value", i, lo, hi)
		}
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d after %d", v, i, prev)
		}
		prev = i
	}
	for v := uint64(0); v < 100000; v++ {
		check(v)
	}
	for _, v := range []uint64{1 << 40, 1<<40 + 12345, math.MaxInt64, math.MaxUint64 - 1, math.MaxUint64} {
		prev = -1
		check(v)
	}
}

func TestPercentilesExactBelow128us(t *testing.T) {
	var h latencyHistogram
	for us := 1; us <= 100; us++ {
		h.record(time.Duration(us) * time.Microsecond)
	}
	for _, tc := range []struct{ q, wantMs float64 }{
		{0.50, 0.050}, {0.95, 0.095}, {0.99, 0.099}, {0.999, 0.100}, {1, 0.100}, {0, 0.001},
	} {
		if got := h.percentileMs(tc.q); got != tc.wantMs {
			t.Errorf("p%v = %v ms, want %v", tc.q*100, got, tc.wantMs)
		}
	}
	if h.meanMs() != 0.0505 || h.maxMs() != 0.1 || h.count() != 100 {
		t.Errorf("mean %v max %v count %d", h.meanMs(), h.maxMs(), h.count())
	}
}

// TestPercentilesMatchSorted compares against exact nearest-rank
// percentiles over a skewed random sample, allowing the bucket error.
func TestPercentilesMatchSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h latencyHistogram
	var all []int64
	for range 50000 {
		// Log-normal-ish: mostly ~1ms, a tail to ~1s.
		us := int64(math.Exp(r.NormFloat64()*1.5 + 7))
		all = append(all, us)
		h.record(time.Duration(us) * time.Microsecond)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
		exact := float64(all[int(math.Ceil(q*float64(len(all))))-1]) / 1000
		got := h.percentileMs(q)
		if math.Abs(got-exact) > exact/100+0.001 {
			t.Errorf("p%v = %v ms, exact %v ms", q*100, got, exact)
		}
	}
	if want := float64(all[len(all)-1]) / 1000; h.maxMs() != want {
		t.Errorf("max = %v, want %v", h.maxMs(), want)
	}
}

func TestHistogramMergeResetEmpty(t *testing.T) {
	var a, b latencyHistogram
	if a.percentileMs(0.99) != 0 || a.meanMs() != 0 {
		t.Error("empty histogram should report zeros")
	}
	a.record(2 * time.Millisecond)
	b.record(4 * time.Millisecond)
	b.record(-time.Millisecond) // clock went backwards: counted as 0
	a.merge(&b)
	if a.count() != 3 || a.maxMs() != 4 || a.meanMs() != 2 {
		t.Errorf("merged: count %d max %v mean %v", a.count(), a.maxMs(), a.meanMs())
	}
	if p := a.percentileMs(1); math.Abs(p-4) > 4.0/128 {
		t.Errorf("p100 = %v, want ~4", p)
	}
	a.reset()
	if a.count() != 0 || a.maxMs() != 0 {
		t.Error("reset did not clear")
	}
}
