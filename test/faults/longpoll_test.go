package faults

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestLongPollOverManyPartitionEntries: a Fetch at the log end with a
// long max wait and 65535 partition entries used to panic in the broker
// (reflect.Select allows 65536 cases) and close the connection, so a
// consumer of that many partitions was disconnected on every empty poll.
// Now one waiter serves the whole request, and the entries (all naming
// one partition here) are a set, as in Kafka: the answer names the
// partition once, and a record produced meanwhile wakes the poll.
func TestLongPollOverManyPartitionEntries(t *testing.T) {
	b := harness.StartBroker(t)
	createTopic(t, b, "poll", 1, nil)

	c := dialRaw(t, b.Addr)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MinBytes, req.MaxBytes = -1, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "poll"
	for range 65535 {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, 1<<20
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	// The log is empty: the broker must wait out the max wait (the path
	// that panicked), then answer with nothing, naming the partition once.
	req.MaxWaitMillis = 300
	empty := c.roundTrip(req).(*kmsg.FetchResponse)
	if len(empty.Topics) != 1 {
		t.Fatalf("empty poll: %d topics answered, want 1", len(empty.Topics))
	}
	if n := len(empty.Topics[0].Partitions); n != 1 {
		t.Fatalf("empty poll: the partition named 65535 times is answered %d times, want once", n)
	}
	if n := len(empty.Topics[0].Partitions[0].RecordBatches); n != 0 {
		t.Fatalf("empty poll returned %d bytes of records", n)
	}

	// Far beyond the test's patience: only a wake-up answers in time.
	req.MaxWaitMillis = int32((10 * time.Minute) / time.Millisecond)
	type result struct {
		resp *kmsg.FetchResponse
	}
	done := make(chan result, 1)
	go func() {
		done <- result{c.roundTrip(req).(*kmsg.FetchResponse)}
	}()

	// Produce until the poll answers: the first record may land before
	// the broker registered the poll (then the poll answers at once),
	// or after (then it wakes it). Either way it must answer with data.
	cl := b.Client(kgo.DefaultProduceTopic("poll"))
	var r result
	deadline := time.After(opTimeout)
	for got := false; !got; {
		if err := cl.ProduceSync(harness.Ctx(t, opTimeout), kgo.StringRecord("wake")).FirstErr(); err != nil {
			t.Fatal(err)
		}
		select {
		case r = <-done:
			got = true
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("long poll not woken by a produce within %s", opTimeout)
		}
	}
	if r.resp.ErrorCode != 0 || len(r.resp.Topics) != 1 {
		t.Fatalf("fetch: error %d, %d topics", r.resp.ErrorCode, len(r.resp.Topics))
	}
	parts := r.resp.Topics[0].Partitions
	if len(parts) != 1 {
		t.Fatalf("the partition named 65535 times is answered %d times, want once", len(parts))
	}
	if parts[0].ErrorCode != 0 || len(parts[0].RecordBatches) == 0 {
		t.Fatalf("partition answer: error %d, %d bytes of records", parts[0].ErrorCode, len(parts[0].RecordBatches))
	}
}
