package recordbatch

import (
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
