package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka answers INVALID_REQUEST for a topic named twice in one
// DeleteTopics request, and deletes nothing for those entries.
func TestDeleteTopicsDuplicateNames(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("dup", 1, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(5)
	req.TopicNames = []string{"dup", "dup"}
	resp := c.request(req).(*kmsg.DeleteTopicsResponse)
	for _, st := range resp.Topics {
		if st.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("duplicate delete of %v: error %d, want INVALID_REQUEST", st.Topic, st.ErrorCode)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("dup")
	meta.Topics = append(meta.Topics, rt)
	if mr := c.request(meta).(*kmsg.MetadataResponse); mr.Topics[0].ErrorCode != 0 {
		t.Fatalf("topic deleted by a refused request: error %d", mr.Topics[0].ErrorCode)
	}
}

// An IncrementalAlterConfigs SET with a null value is refused (Kafka:
// "Null value not supported"); removing an override is DELETE's job.
func TestIncrementalAlterNullSetRefused(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("nullset", 1, map[string]string{"retention.ms": "1234"})
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "nullset"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, nil
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	resp := c.request(req).(*kmsg.IncrementalAlterConfigsResponse)
	if got := resp.Resources[0].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("null SET: error %d, want INVALID_REQUEST", got)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "nullset", []string{"retention.ms"}
	dreq.Resources = append(dreq.Resources, dr)
	dresp := c.request(dreq).(*kmsg.DescribeConfigsResponse)
	if cs := dresp.Resources[0].Configs; len(cs) != 1 || cs[0].Value == nil || *cs[0].Value != "1234" {
		t.Fatalf("override changed by a refused request: %+v", cs)
	}
}

// ListOffsets v0 returns at most MaxNumOffsets offsets: none for 0.
func TestListOffsetsV0MaxNumOffsets(t *testing.T) {
	b := startTestBroker(t)
	c := b.dial()
	c.createTopic("v0", 1, nil)
	for _, n := range []int32{0, 1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(0)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "v0"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.MaxNumOffsets = -1, n
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.request(req).(*kmsg.ListOffsetsResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || len(sp.OldStyleOffsets) != int(n) {
			t.Fatalf("MaxNumOffsets %d: error %d offsets %v", n, sp.ErrorCode, sp.OldStyleOffsets)
		}
	}
}
