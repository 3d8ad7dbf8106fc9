package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// testBatch builds one uncompressed batch of n records.
func testBatch(t *testing.T, n int, size int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: make([]byte, size)}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceReq(version int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProduceToInternalTopicRefused: like Kafka (ReplicaManager's "Cannot
// append to internal topic"), a client may not write __consumer_offsets:
// the group coordinator replays it, so a client batch there would forge
// committed offsets or group state.
func TestProduceToInternalTopicRefused(t *testing.T) {
	b := startTestBroker(t, "offsets.topic.num.partitions=1")
	c := b.dial()

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(7)
	md.AllowAutoTopicCreation = true
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(offsetsTopic)}}
	mresp := c.request(md).(*kmsg.MetadataResponse)
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %+v", offsetsTopic, mresp.Topics)
	}

	resp := c.request(produceReq(7, offsetsTopic, 0, testBatch(t, 1, 10))).(*kmsg.ProduceResponse)
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to %s: error code %d (base offset %d), want INVALID_TOPIC_EXCEPTION (%d)",
			offsetsTopic, sp.ErrorCode, sp.BaseOffset, kerr.InvalidTopicException.Code)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(1)
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = offsetsTopic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lresp := c.request(lo).(*kmsg.ListOffsetsResponse)
	if off := lresp.Topics[0].Partitions[0].Offset; off != 0 {
		t.Fatalf("%s-0 latest offset %d after a refused produce, want 0", offsetsTopic, off)
	}
}

// TestProduceManyPartitionsInParallel: a request large enough to be
// appended by several goroutines (one batch of ~100 KiB to each of 8
// partitions, plus a partition that fails and a missing one) answers
// every partition as a serial append would: each batch at offset 0 then
// 3, in order, the bad ones with their own error. Run with -race, it is
// also the check that the appends share nothing.
func TestProduceManyPartitionsInParallel(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("wide", 8, nil)
	batch := testBatch(t, 3, 32<<10)
	for round := range 2 {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "wide"
		for p := range int32(9) { // partition 8 does not exist
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			if p == 5 {
				rp.Records = batch[:len(batch)-1] // a torn batch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		if total := 9 * len(batch); total < parallelAppendBytes {
			t.Fatalf("request of %d bytes would be appended serially", total)
		}
		resp := c.request(req).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 9 {
			t.Fatalf("round %d: answer %+v", round, resp.Topics)
		}
		for i, sp := range resp.Topics[0].Partitions {
			switch {
			case sp.Partition != int32(i):
				t.Errorf("round %d: answer %d is for partition %d", round, i, sp.Partition)
			case i == 5:
				if sp.ErrorCode == 0 || sp.BaseOffset != -1 {
					t.Errorf("round %d: torn batch answered %+v", round, sp)
				}
			case i == 8:
				if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Errorf("round %d: missing partition answered error %d", round, sp.ErrorCode)
				}
			case sp.ErrorCode != 0 || sp.BaseOffset != int64(3*round):
				t.Errorf("round %d: partition %d answered error %d at offset %d, want offset %d", round, i, sp.ErrorCode, sp.BaseOffset, 3*round)
			}
		}
	}
}
