package replica

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"testing"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BenchmarkAppendAsLeader measures the leader's produce path with and
// without idempotence, in the same run: 16 records of 100 bytes per batch
// (a typical small producer batch, where a per-batch cost shows most).
func BenchmarkAppendAsLeader(b *testing.B) {
	for _, mode := range []struct {
		name       string
		idempotent bool
	}{{"plain", false}, {"idempotent", true}} {
		b.Run(mode.name, func(b *testing.B) {
			log, err := storage.OpenLog(b.TempDir(), storage.DefaultConfig(), 0, 0, true, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer log.Close()
			p, err := Open(storage.TopicPartition{Topic: "bench"}, log, 1, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1}, LeaderEpoch: 0, ISR: []int32{1}, MinISR: 1}); err != nil {
				b.Fatal(err)
			}
			recs := make([]recordbatch.Record, 16)
			for i := range recs {
				recs[i] = recordbatch.Record{TimestampDelta: int64(i), Value: bytes.Repeat([]byte{'x'}, 100)}
			}
			opts := recordbatch.BuildOptions{BaseTimestamp: 1_700_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
			if mode.idempotent {
				opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 1000, 0, 0
			}
			tmpl, err := recordbatch.Build(opts, recs)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, len(tmpl))
			b.SetBytes(int64(len(tmpl)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, tmpl)
				// The sequence is inside the CRC: both modes re-sum it so
				// they differ only in the broker's work.
				if mode.idempotent {
					binary.BigEndian.PutUint32(buf[53:], uint32(i*16))
				}
				binary.BigEndian.PutUint32(buf[17:], crc32.Checksum(buf[21:], castagnoli))
				if _, err := p.AppendAsLeader(buf, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
