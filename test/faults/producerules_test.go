package faults

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestProduceRecordsRules checks Kafka's request-level rules for the
// records of Produce v3+: exactly one whole batch of magic 2 per
// partition, and zstd only from v7. Nothing is appended when one fails.
func TestProduceRecordsRules(t *testing.T) {
	b := harness.StartBroker(t)
	const topic = "rules"
	createTopic(t, b, topic, 1, nil)
	c := dialRaw(t, b.Addr)

	zstd, err := recordbatch.Build(recordbatch.BuildOptions{
		Compression: recordbatch.CompressionZstd,
		ProducerID:  -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Value: []byte("zstd")}})
	if err != nil {
		t.Fatal(err)
	}
	magic1 := buildBatch(t, 1, 5)
	magic1[16] = 1
	whole := buildBatch(t, 2, 5)

	for _, tc := range []struct {
		name    string
		version int16
		records []byte
		want    *kerr.Error
	}{
		{"two batches", 9, append(buildBatch(t, 1, 5), buildBatch(t, 2, 5)...), kerr.InvalidRecord},
		{"magic 1", 9, magic1, kerr.InvalidRecord},
		{"no records", 9, []byte{}, kerr.InvalidRecord},
		{"half a batch", 9, whole[:len(whole)/2], kerr.InvalidRecord},
		{"eleven bytes", 9, whole[:11], kerr.InvalidRecord},
		{"zstd at v5", 5, zstd, kerr.UnsupportedCompressionType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := endOffsets(t, b, topic)[0]
			req := produceRequest(topic, 0, 1, tc.records)
			req.SetVersion(tc.version)
			resp := c.roundTrip(req).(*kmsg.ProduceResponse)
			expectCode(t, tc.name, resp.Topics[0].Partitions[0].ErrorCode, tc.want)
			if after := endOffsets(t, b, topic)[0]; after != before {
				t.Fatalf("end offset moved from %d to %d", before, after)
			}
		})
	}

	t.Run("zstd at v7", func(t *testing.T) {
		req := produceRequest(topic, 0, 1, zstd)
		req.SetVersion(7)
		resp := c.roundTrip(req).(*kmsg.ProduceResponse)
		expectCode(t, "zstd at v7", resp.Topics[0].Partitions[0].ErrorCode, nil)
	})
	assertServes(t, b)
}
