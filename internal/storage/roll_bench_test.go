package storage

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkAppendAcrossRoll appends 16 KiB batches to a log with 32 MiB
// segments, so a roll comes every 2048 appends with a whole segment of
// dirty pages behind it. Besides the mean (ns/op) it reports the latency
// of the appends that rolled (roll-ms, their mean) and the worst and the
// 99.9th percentile append (max-ms, p999-ms): with the old segment's
// fsync under the log lock, the append that rolls (and every producer
// queued behind it) waits for the whole segment to reach the disk.
// Run with -benchtime=20480x (10 rolls) or more.
func BenchmarkAppendAcrossRoll(b *testing.B) {
	batch := benchBatch(b)
	cfg := testConfig()
	cfg.SegmentBytes = 32 << 20
	l, err := OpenLog(b.TempDir(), cfg, 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	lat := make([]time.Duration, 0, b.N)
	var rollLat []time.Duration
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		segs := l.NumSegments()
		start := time.Now()
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		lat = append(lat, d)
		if l.NumSegments() != segs {
			rollLat = append(rollLat, d)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(lat[len(lat)*999/1000]), "p999-ms")
	if len(rollLat) > 0 {
		var sum time.Duration
		for _, d := range rollLat {
			sum += d
		}
		b.ReportMetric(ms(sum/time.Duration(len(rollLat))), "roll-ms")
	}
	b.ReportMetric(float64(len(rollLat)), "rolls")
}

// BenchmarkAppendNewEpochManyPartitions is one Produce to 1000
// partitions right after an election made this broker their leader: each
// partition's leader epoch cache has the new epoch in memory only (Begin,
// as replica.Partition.Update does), so its first append writes
// leader-epoch-checkpoint before the record. One op is the whole request
// (1000 appends, one after another as the broker does them); appends-ms
// is the same request in an epoch already written, for comparison.
func BenchmarkAppendNewEpochManyPartitions(b *testing.B) {
	const parts = 1000
	batch := benchBatch(b)
	files := newFileCache(DefaultMaxOpenFiles())
	dir := b.TempDir()
	logs := make([]*Log, parts)
	for i := range logs {
		l, err := openLogWithFiles(filepath.Join(dir, "t-"+strconv.Itoa(i)), testConfig(), 0, 0, true, quietLogger(), files)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	var steady time.Duration
	b.ResetTimer()
	for n := range b.N {
		epoch := int32(n + 1)
		b.StopTimer()
		for _, l := range logs {
			if err := l.LeaderEpochs().Begin(epoch, l.LogEndOffset()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for _, l := range logs {
			if _, err := l.Append(batch, epoch); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		start := time.Now()
		for _, l := range logs {
			if _, err := l.Append(batch, epoch); err != nil {
				b.Fatal(err)
			}
		}
		steady += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer() // not the deferred Closes
	b.ReportMetric(float64(steady)/float64(b.N)/float64(time.Millisecond), "appends-ms")
}
