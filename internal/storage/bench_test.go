package storage

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// benchBatch is one uncompressed 16 KiB batch of 1 KiB records.
func benchBatch(b *testing.B) []byte {
	recs := make([]recordbatch.Record, 16)
	for i := range recs {
		recs[i] = recordbatch.Record{Value: bytes.Repeat([]byte{byte(i)}, 1024-12)}
	}
	batch, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkAppend appends the same 16 KiB batch (validated, patched,
// written, indexed) with default segment size and no forced fsync.
func BenchmarkAppend(b *testing.B) {
	batch := benchBatch(b)
	l, err := OpenLog(b.TempDir(), testConfig(), 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawWrite is the baseline: os.File.Write of the same bytes to a
// file in the same kind of temp dir.
func BenchmarkRawWrite(b *testing.B) {
	batch := benchBatch(b)
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadRandom reads one batch at a random offset of a
// 100-segment log.
func BenchmarkReadRandom(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 256 << 10
	l, err := OpenLog(b.TempDir(), cfg, 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var recs []recordbatch.Record
	for range 4 {
		recs = append(recs, recordbatch.Record{Value: bytes.Repeat([]byte{'r'}, 250)})
	}
	small, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		b.Fatal(err)
	}
	for l.NumSegments() < 100 {
		if _, err := l.Append(small, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewSource(1))
	b.ResetTimer()
	for range b.N {
		if _, err := l.Read(rng.Int63n(leo), 1, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecovery measures crash recovery (CRC of every batch, index
// rebuild) of a 64 MiB log, in MB/s.
func BenchmarkRecovery(b *testing.B) {
	batch := benchBatch(b)
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 20
	dir := b.TempDir()
	l, err := OpenLog(dir, cfg, 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	for l.Size() < 64<<20 {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	size := l.Size()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		l, err := OpenLog(dir, cfg, 0, 0, false, quietLogger())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if l.LogEndOffset() == 0 {
			b.Fatal("nothing recovered")
		}
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkReadTail is the consumer fetch path at the head of the log:
// Read of the batch just appended, then Bytes (what fetch.go sends).
func BenchmarkReadTail(b *testing.B) {
	batch := benchBatch(b)
	l, err := OpenLog(b.TempDir(), testConfig(), 0, 0, true, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for range 64 {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	last := l.LogEndOffset() - 1
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		r, err := l.Read(last, 1<<20, -1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Bytes(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadEvicted is BenchmarkReadRandom with one descriptor for the
// log's 100 segments: nearly every read reopens its segment, the cost
// paid when the segments in use outnumber weir.log.max.open.files.
func BenchmarkReadEvicted(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 256 << 10
	files := newFileCache(1)
	l, err := openLogWithFiles(b.TempDir(), cfg, 0, 0, true, quietLogger(), files)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b)
	for l.NumSegments() < 100 {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewSource(1))
	opened := files.opened.Load()
	b.ResetTimer()
	for range b.N {
		r, err := l.Read(rng.Int63n(leo), 1, -1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Bytes(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(files.opened.Load()-opened)/float64(b.N), "opens/op")
}
