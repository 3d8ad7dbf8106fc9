package broker

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchAll(topic string, maxBytes, partitionMaxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, partitionMaxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchResponseSizeCapped: Kafka bounds a fetch response by the
// broker's fetch.max.bytes (55 MiB) whatever the client asks, and a
// MaxBytes of 0 still yields one batch (the first partition with data).
// Without the cap one consumer asking for 2 GiB makes the broker buffer
// that much, twice (read and encode), and fall over.
func TestFetchResponseSizeCapped(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("big", 1, nil)
	const batches, valueSize = 60, 1000000 // ~60 MB, each batch under message.max.bytes
	batch := testBatch(t, 1, valueSize)
	for i := 0; i < batches; i++ {
		resp := c.request(produceReq(7, "big", 0, append([]byte(nil), batch...))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce %d: error code %d", i, code)
		}
	}

	resp := c.request(fetchAll("big", math.MaxInt32, math.MaxInt32)).(*kmsg.FetchResponse)
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || len(sp.RecordBatches) == 0 {
		t.Fatalf("fetch: error %d, %d bytes", sp.ErrorCode, len(sp.RecordBatches))
	}
	if n := len(sp.RecordBatches); n > defaultFetchMaxBytes {
		t.Fatalf("fetch asking for 2 GiB got %d bytes, more than fetch.max.bytes %d", n, defaultFetchMaxBytes)
	}

	resp = c.request(fetchAll("big", 0, math.MaxInt32)).(*kmsg.FetchResponse)
	sp = resp.Topics[0].Partitions[0]
	if n := len(sp.RecordBatches); n != len(batch) {
		t.Fatalf("fetch with MaxBytes 0 got %d bytes, want exactly the first batch (%d)", n, len(batch))
	}
}

// TestFetchMaxBytesConfigured: fetch.max.bytes from the configuration caps
// responses below what the client asks for.
func TestFetchMaxBytesConfigured(t *testing.T) {
	const limit = 64 << 10
	b := startTestBroker(t, "fetch.max.bytes=65536")
	c := b.dial()
	c.createTopic("capped", 1, nil)
	batch := testBatch(t, 1, 10000)
	for i := 0; i < 20; i++ {
		resp := c.request(produceReq(7, "capped", 0, append([]byte(nil), batch...))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce %d: error code %d", i, code)
		}
	}
	resp := c.request(fetchAll("capped", math.MaxInt32, math.MaxInt32)).(*kmsg.FetchResponse)
	sp := resp.Topics[0].Partitions[0]
	if n := len(sp.RecordBatches); n == 0 || n > limit {
		t.Fatalf("fetch with fetch.max.bytes=%d got %d bytes", limit, n)
	}
}
