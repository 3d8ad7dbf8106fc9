package replication

import (
	"bytes"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// BenchmarkFollowerCatchUp measures a follower copying 16 MiB from a
// leader through the in-process twin (which encodes every response as on
// the wire): fetch rounds, appends and the follower's epoch bookkeeping.
func BenchmarkFollowerCatchUp(b *testing.B) {
	const batches, recordsPerBatch, valueSize = 1024, 16, 1000
	value := bytes.Repeat([]byte("x"), valueSize)
	b.SetBytes(batches * recordsPerBatch * valueSize)
	for range b.N {
		b.StopTimer()
		c := newCluster(b, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{MaxWait: time.Second})
		c.elect(1)
		c.crash(2)
		recs := make([]recordbatch.Record, recordsPerBatch)
		for i := range recs {
			recs[i] = recordbatch.Record{Value: value}
		}
		for range batches {
			batch, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.leaderPart(tpA).AppendAsLeader(batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		c.start(2, -1)
		c.waitInSync()
		b.StopTimer()
		c.crash(1)
		c.crash(2)
	}
}
