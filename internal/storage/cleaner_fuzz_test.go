package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// FuzzCleanerFilter feeds arbitrary batches (CRC fixed up, as the cleaner
// only meets batches that passed their CRC) to the cleaner's per-batch
// rewrite: it must never panic, and whatever it writes must be a valid
// batch with the same offsets, producer fields and no more records.
func FuzzCleanerFilter(f *testing.F) {
	o := batchOpts{ts: t0.UnixMilli()}
	f.Add(keyedBatch(f, o, kv{key: "a", value: "1"}, kv{key: "b", tomb: true}, kv{key: "c", value: "3"}), int64(0), false)
	o.codec, o.pid, o.seq = recordbatch.CompressionZstd, 4, 7
	f.Add(keyedBatch(f, o, kv{key: "b", value: "2"}, kv{key: "a", tomb: true}), int64(5000), true)
	o.codec, o.txn = recordbatch.CompressionGzip, true
	f.Add(keyedBatch(f, o, kv{key: "a", value: "x"}), int64(-1), true)
	horizon, err := recordbatch.Build(recordbatch.BuildOptions{BaseTimestamp: t0.UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		KeepOffsetDeltas: true, LastOffsetDelta: 4, MaxTimestamp: t0.UnixMilli(), DeleteHorizon: true, Compression: recordbatch.CompressionSnappy},
		[]recordbatch.Record{{OffsetDelta: 2, Key: []byte("b")}, {OffsetDelta: 4, Key: []byte("c"), Value: []byte("v")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(horizon, int64(10), false)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)

	f.Fuzz(func(t *testing.T, b []byte, nowDelta int64, keep bool) {
		h, err := recordbatch.ParseHeader(b)
		if err != nil || h.Size() != int64(len(b)) {
			return
		}
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
		m := newOffsetMap(0)
		m.put([]byte("a"), h.BaseOffset+1)
		m.put([]byte("b"), math.MaxInt64)
		w := rewriter{cfg: compactConfig(), m: m, end: math.MaxInt64, now: t0.UnixMilli() + nowDelta}
		var st CleanStats
		nb, err := w.filter(b, h, keep, &st)
		if err != nil || nb == nil || bytes.Equal(nb, b) {
			return // dropped, refused, or copied as it is (control batches)
		}
		nh, err := recordbatch.ParseHeader(nb)
		if err != nil || recordbatch.CheckCRC(nb) != nil || nh.Size() != int64(len(nb)) {
			t.Fatalf("cleaned batch does not parse: %v", err)
		}
		if nh.BaseOffset != h.BaseOffset || nh.LastOffsetDelta != h.LastOffsetDelta || nh.ProducerID != h.ProducerID ||
			nh.ProducerEpoch != h.ProducerEpoch || nh.BaseSequence != h.BaseSequence || nh.Control() != h.Control() ||
			nh.Transactional() != h.Transactional() || nh.PartitionLeaderEpoch != h.PartitionLeaderEpoch {
			t.Fatalf("cleaned header %+v differs from %+v", nh, h)
		}
		recs, err := recordbatch.Records(nb)
		if err != nil {
			t.Fatalf("cleaned batch records: %v", err)
		}
		if len(recs) > int(max(h.RecordCount, 0)) || st.RecordsKept > st.RecordsRead {
			t.Fatalf("cleaned batch has %d records, the original %d", len(recs), h.RecordCount)
		}
	})
}
