package storage

import (
	"context"
	"math/rand"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// BenchmarkClean measures one full cleaning pass over a 16 MiB log of 10
// record batches (200-byte values, 5000 keys each written several times,
// 5% tombstones), as MB/s of log read. "none" mostly rewrites batches whose
// records are partly gone; "zstd" adds decompression and recompression.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []recordbatch.Compression{recordbatch.CompressionNone, recordbatch.CompressionZstd} {
		b.Run(map[recordbatch.Compression]string{recordbatch.CompressionNone: "none", recordbatch.CompressionZstd: "zstd"}[codec], func(b *testing.B) {
			cfg := compactConfig()
			cfg.SegmentBytes = 4 << 20
			template := filepath.Join(b.TempDir(), "t-0")
			l, err := OpenLog(template, cfg, 0, 0, true, quietLogger())
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			val := make([]byte, 200)
			for i := 0; l.Size() < 16<<20; i++ {
				recs := make([]kv, 10)
				for j := range recs {
					n := (i*10 + j) * 7919 % 5000
					for k := range val {
						val[k] = 'a' + byte(rng.Intn(16)) // compresses about 2:1, like JSON-ish data
					}
					recs[j] = kv{key: "key-" + strconv.Itoa(n), value: string(val), tomb: (i+j)%20 == 0}
				}
				if _, err := l.Append(keyedBatch(b, batchOpts{ts: t0.UnixMilli(), codec: codec}, recs...), 0); err != nil {
					b.Fatal(err)
				}
			}
			forceRoll(b, l)
			size := l.Size()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ResetTimer()
			var st CleanStats
			for i := range b.N {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "p-"+strconv.Itoa(i))
				copyDir(b, template, dir)
				c, err := OpenLog(dir, cfg, 0, 0, true, quietLogger())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if st, err = c.Clean(context.Background(), CleanOptions{Now: t0}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(st.BytesWritten)/float64(st.BytesRead), "out/in")
			b.ReportMetric(float64(st.RecordsRead)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
