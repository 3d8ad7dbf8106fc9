package producerstate

import (
	"testing"

	"github.com/weir-project/weir/internal/storage"
)

// BenchmarkCheckAndRecord is the idempotence work per produced batch: the
// leader's Check, then OnBatch when the log appends it, with 1000
// producers known to the partition.
func BenchmarkCheckAndRecord(b *testing.B) {
	s := &State{producers: make(map[int64]*entry)}
	const producers = 1000
	for id := int64(0); id < producers; id++ {
		s.OnBatch(batch(id, 0, 0, 1))
	}
	seqs := make([]int32, producers)
	for i := range seqs {
		seqs[i] = 1
	}
	one := make([]storage.BatchInfo, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := int64(i % producers)
		bi := batch(id, 0, seqs[id], 16)
		one[0] = bi
		if _, dup, err := s.Check(one); err != nil || dup {
			b.Fatalf("check: %v %v", dup, err)
		}
		bi.FirstOffset, bi.LastOffset = int64(i)*16, int64(i)*16+15
		s.OnBatch(bi)
		seqs[id] += 16
	}
}
