// Package limits proves that the real weir binary holds its limits against
// careless or hostile clients: capped partition counts, topic creation
// that either completes or leaves nothing behind, partitions that come up
// by themselves once what blocked them is gone, internal topics clients
// cannot make, and requests naming the same thing many times that get no
// bigger answer than naming it once.
package limits

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 60 * time.Second

// Safety limits for the broker under attack (the machine is shared).
const (
	maxRSS = 2 << 30
	maxFDs = 5000
)

// startBroker starts a broker guarded by the safety limits.
func startBroker(t *testing.T, overrides ...string) (*harness.Broker, *harness.ResourceWatch) {
	t.Helper()
	b := harness.StartBroker(t, overrides...)
	return b, b.Watch(t, maxRSS, maxFDs)
}

// createTopics sends one CreateTopics for the given topics (name ->
// partitions) and returns the response.
func createTopics(c *harness.RawConn, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(opTimeout / time.Millisecond)
	req.ValidateOnly = validateOnly
	req.Topics = topics
	resp, _ := c.Request(req)
	return resp.(*kmsg.CreateTopicsResponse)
}

func newTopic(name string, partitions int32) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	return rt
}

// mustCreate creates a topic and fails the test unless it is created.
func mustCreate(t *testing.T, c *harness.RawConn, name string, partitions int32) {
	t.Helper()
	st := createTopics(c, false, newTopic(name, partitions)).Topics[0]
	if st.ErrorCode != 0 {
		t.Fatalf("create %s: %v %s", name, kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage))
	}
}

// metadata asks for the named topics without creating them (v12).
func metadata(c *harness.RawConn, topics ...string) (*kmsg.MetadataResponse, int) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, size := c.Request(req)
	return resp.(*kmsg.MetadataResponse), size
}

// topicCode is the error code Metadata gives for one topic.
func topicCode(c *harness.RawConn, name string) int16 {
	resp, _ := metadata(c, name)
	return resp.Topics[0].ErrorCode
}

// produceOne produces one small record to a partition with acks=1 and
// returns the partition's answer.
func produceOne(t *testing.T, c *harness.RawConn, topic string, partition int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp, _ := c.Request(produceRequest(t, topic, partition))
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// produceRequest is a Produce v9 (acks=1) of one one-record batch to each
// listed partition of topic, in order, repeats included.
func produceRequest(t *testing.T, topic string, partitions ...int32) *kmsg.ProduceRequest {
	t.Helper()
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// expectCode fails unless got is want's code (nil: NONE).
func expectCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	code, name := int16(0), "NONE"
	if want != nil {
		code, name = want.Code, want.Message
	}
	if got != code {
		t.Fatalf("%s: %v, want %s", what, kerr.ErrorForCode(got), name)
	}
}
