package limits

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// TestInternalTopicsNotCreatable: CreateTopics of an internal topic is
// refused with INVALID_REQUEST and Kafka's "Creation of internal topic X
// is prohibited.", validate-only too, and the broker still creates
// __consumer_offsets itself, with offsets.topic.num.partitions, when a
// group needs it.
func TestInternalTopicsNotCreatable(t *testing.T) {
	b, _ := startBroker(t, "group.initial.rebalance.delay.ms=0")
	c := b.Dial()
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata"} {
		for _, validate := range []bool{true, false} {
			st := createTopics(c, validate, newTopic(name, 1)).Topics[0]
			expectCode(t, "create "+name, st.ErrorCode, kerr.InvalidRequest)
			if want := "Creation of internal topic " + name + " is prohibited."; deref(st.ErrorMessage) != want {
				t.Fatalf("create %s: message %q, want %q", name, deref(st.ErrorMessage), want)
			}
		}
		expectCode(t, "metadata of "+name, topicCode(c, name), kerr.UnknownTopicOrPartition)
	}

	mustCreate(t, c, "work", 1)
	ctx := harness.Ctx(t, opTimeout)
	cl := b.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("work"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "work", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("group consumer read nothing")
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	td, err := kadm.NewClient(b.Client()).ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if d := td["__consumer_offsets"]; d.Err != nil || !d.IsInternal || len(d.Partitions) != 50 {
		t.Fatalf("__consumer_offsets: err %v internal %v, %d partitions, want an internal topic of 50", d.Err, d.IsInternal, len(d.Partitions))
	}
}
