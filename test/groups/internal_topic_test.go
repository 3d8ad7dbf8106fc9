package groups

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// A client asking Metadata for __consumer_offsets before any group exists
// must not get an ordinary auto-created topic (num.partitions, delete
// policy): the broker creates it with the offsets topic's own settings, as
// Kafka's auto-creation does. __transaction_state is never auto-created.
func TestMetadataCreatesOffsetsTopicWithItsOwnSettings(t *testing.T) {
	b := startBroker(t, "num.partitions=2")
	cl := b.Client()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for _, name := range []string{"__consumer_offsets", "__transaction_state"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range resp.Topics {
		switch *mt.Topic {
		case "__consumer_offsets":
			if mt.ErrorCode != 0 || !mt.IsInternal || len(mt.Partitions) != 5 {
				t.Fatalf("__consumer_offsets: error %v internal %v partitions %d, want created internal with offsets.topic.num.partitions=5",
					kerr.ErrorForCode(mt.ErrorCode), mt.IsInternal, len(mt.Partitions))
			}
		case "__transaction_state":
			if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("__transaction_state: error %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(mt.ErrorCode))
			}
		}
	}
	adm := newAdmin(t, b)
	cfgs, err := adm.DescribeTopicConfigs(harness.Ctx(t, opTimeout), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On("__consumer_offsets", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Fatalf("__consumer_offsets cleanup.policy = %v, want compact", c.Value)
		}
	}
}
