package server

import (
	"crypto/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// validProduceFrame is a Produce v9 frame (no size prefix) of parts
// partitions, each one valid batch of records of 1000 random bytes about
// size bytes long: what a franz-go producer sends under load.
func validProduceFrame(tb testing.TB, parts, size int) []byte {
	tb.Helper()
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 1
	t := kmsg.ProduceRequestTopic{Topic: "bench"}
	for i := range parts {
		var recs []recordbatch.Record
		for range size / 1010 {
			v := make([]byte, 1000)
			_, _ = rand.Read(v)
			recs = append(recs, recordbatch.Record{Value: v})
		}
		batch, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			tb.Fatal(err)
		}
		t.Partitions = append(t.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(i), Records: batch})
	}
	p.Topics = []kmsg.ProduceRequestTopic{t}
	return encodeRequest(p, 9, 1, strp("bench"))
}

// BenchmarkReadAndValidateProduce measures what the broker does with
// every byte of a large Produce before its append copies it into the
// log: framing it off the stream and validating every batch (CRC-32C and
// the walk of the records). The batches are validated as they arrive
// (the frame's scan), so the append only matches them (Checked.Covers).
// Eight partitions of 1 MiB: more than the CPU caches hold, as on a
// loaded broker.
func BenchmarkReadAndValidateProduce(b *testing.B) {
	benchReadFrames(b, validProduceFrame(b, 8, 1<<20), func(fm frame, vt *versionTable) {
		p := parseRequest(fm.buf, vt)
		for _, t := range p.req.(*kmsg.ProduceRequest).Topics {
			for _, rp := range t.Partitions {
				if fm.checked.lookup(rp.Records).Covers(rp.Records) {
					continue
				}
				if _, err := recordbatch.Validate(rp.Records); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
