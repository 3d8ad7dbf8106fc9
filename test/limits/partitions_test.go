package limits

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestDefaultPartitionLimit: with default settings, a topic of 25000
// partitions (which used to exhaust the broker's file descriptors and
// answer KAFKA_STORAGE_ERROR with the topic created anyway) is refused
// with POLICY_VIOLATION naming max.broker.partitions, validate-only too,
// and nothing is created.
func TestDefaultPartitionLimit(t *testing.T) {
	b, guard := startBroker(t)
	c := b.Dial()
	for _, validate := range []bool{true, false} {
		st := createTopics(c, validate, newTopic("huge", 25000)).Topics[0]
		expectCode(t, "25000 partitions", st.ErrorCode, kerr.PolicyViolation)
		if msg := deref(st.ErrorMessage); !strings.Contains(msg, "max.broker.partitions=4000") {
			t.Fatalf("validateOnly=%v: message %q does not name the limit", validate, msg)
		}
	}
	expectCode(t, "metadata of the refused topic", topicCode(c, "huge"), kerr.UnknownTopicOrPartition)
	if fds, _ := guard.Max(); fds > 500 {
		t.Fatalf("the broker opened %d files for a refused topic", fds)
	}
}

// TestPartitionLimits: max.broker.partitions and max.partitions bound
// CreateTopics, CreatePartitions (validate-only included) and
// auto-creation; the internal __consumer_offsets is exempt, so groups keep
// working at the limit.
func TestPartitionLimits(t *testing.T) {
	b, _ := startBroker(t, "max.broker.partitions=20", "max.partitions=100", "num.partitions=1",
		"group.initial.rebalance.delay.ms=0")
	c := b.Dial()
	mustCreate(t, c, "fifteen", 15)
	for _, validate := range []bool{true, false} {
		st := createTopics(c, validate, newTopic("six", 6)).Topics[0]
		expectCode(t, "create past max.broker.partitions", st.ErrorCode, kerr.PolicyViolation)
		expectCode(t, "grow past max.broker.partitions", createPartitions(c, validate, "fifteen", 21).ErrorCode, kerr.PolicyViolation)
	}
	expectCode(t, "grow to the limit", createPartitions(c, false, "fifteen", 19).ErrorCode, nil)
	mustCreate(t, c, "one", 1) // 20: exactly the limit
	// Auto-creation is bound too (Metadata v1 always allows it).
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, rt)
	resp, _ := c.Request(req)
	expectCode(t, "auto-create past the limit", resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.PolicyViolation)

	// A consumer group still works: __consumer_offsets (50 partitions)
	// is created past the limit.
	cl := b.Client(kgo.ConsumerGroup("at-the-limit"), kgo.ConsumeTopics("one"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(harness.Ctx(t, opTimeout), &kgo.Record{Topic: "one", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce at the limit: %v", err)
	}
	ctx := harness.Ctx(t, opTimeout)
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("group consumer read nothing at the partition limit")
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit at the partition limit: %v", err)
	}
	td, err := kadm.NewClient(b.Client()).ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil || len(td["__consumer_offsets"].Partitions) != 50 {
		t.Fatalf("__consumer_offsets: %v, %d partitions, want 50", err, len(td["__consumer_offsets"].Partitions))
	}
	// ... and counts: the broker holds 70 partitions now.
	expectCode(t, "create with the internal partitions counted", createTopics(c, false, newTopic("more", 1)).Topics[0].ErrorCode, kerr.PolicyViolation)
}

// TestClusterPartitionLimit: max.partitions is the cap when it is the
// smaller one.
func TestClusterPartitionLimit(t *testing.T) {
	b, _ := startBroker(t, "max.partitions=12")
	c := b.Dial()
	mustCreate(t, c, "ten", 10)
	st := createTopics(c, true, newTopic("three", 3)).Topics[0]
	expectCode(t, "create past max.partitions", st.ErrorCode, kerr.PolicyViolation)
	if msg := deref(st.ErrorMessage); !strings.Contains(msg, "max.partitions=12") {
		t.Fatalf("message %q does not name max.partitions", msg)
	}
	mustCreate(t, c, "two", 2)
}

func createPartitions(c *harness.RawConn, validateOnly bool, topic string, count int32) kmsg.CreatePartitionsResponseTopic {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	req.TimeoutMillis, req.ValidateOnly = int32(opTimeout.Milliseconds()), validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp, _ := c.Request(req)
	return resp.(*kmsg.CreatePartitionsResponse).Topics[0]
}
