package recordbatch

import (
	"fmt"
	"hash/crc32"
	"testing"
)

// batch16K is a 16 KiB uncompressed batch of 1 KiB records.
func batch16K(b *testing.B, codec Compression) []byte {
	recs := make([]Record, 16)
	for i := range recs {
		v := make([]byte, 1024-20)
		for j := range v {
			v[j] = byte(i*7 + j%13)
		}
		recs[i] = Record{TimestampDelta: int64(i), Key: []byte("key-0001"), Value: v}
	}
	opts := defaultOpts()
	opts.Compression = codec
	return mustBuild(b, opts, recs)
}

func BenchmarkValidate16KiB(b *testing.B) {
	for _, codec := range allCodecs {
		b.Run(codecName(codec), func(b *testing.B) {
			batch := batch16K(b, codec)
			// Throughput in uncompressed bytes, so codecs compare.
			b.SetBytes(int64(len(batch16K(b, CompressionNone))))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCRC32C(b *testing.B) {
	data := make([]byte, 1<<20)
	table := crc32.MakeTable(crc32.Castagnoli)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		crc32.Checksum(data, table)
	}
}

func BenchmarkRecords16KiB(b *testing.B) {
	batch := batch16K(b, CompressionNone)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Records(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate1MiB validates what a producer under load sends: one
// uncompressed batch of about 1 MiB, of 1 KiB or of 100-byte records
// (the workloads), where the per-record walk shows.
func BenchmarkValidate1MiB(b *testing.B) {
	for _, size := range []int{1024, 100} {
		b.Run(fmt.Sprintf("record=%dB", size), func(b *testing.B) {
			n := (1 << 20) / (size + 10)
			recs := make([]Record, n)
			v := make([]byte, size)
			for i := range v {
				v[i] = byte('A' + i%26)
			}
			for i := range recs {
				recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i / 100), Value: v}
			}
			batch := mustBuild(b, defaultOpts(), recs)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}
