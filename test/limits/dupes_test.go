package limits

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestMetadataDuplicateTopics: a Metadata request naming one topic of 300
// partitions a thousand times (about 6 KB) is answered like one naming it
// once, by name (v1) and by id (v12). It used to make an 8 MB answer (and
// with 10000 partitions, 260 MB and 3.4 GiB of broker memory).
func TestMetadataDuplicateTopics(t *testing.T) {
	b, guard := startBroker(t)
	c := b.Dial()
	mustCreate(t, c, "wide", 300)
	for _, byID := range []bool{false, true} {
		version := int16(1)
		var id [16]byte
		if byID {
			version = 12
			resp, _ := metadata(c, "wide")
			id = resp.Topics[0].TopicID
		}
		sizeFor := func(copies int) (int, *kmsg.MetadataResponse) {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(version)
			for range copies {
				rt := kmsg.NewMetadataRequestTopic()
				if byID {
					rt.TopicID = id
				} else {
					rt.Topic = kmsg.StringPtr("wide")
				}
				req.Topics = append(req.Topics, rt)
			}
			resp, size := c.Request(req)
			return size, resp.(*kmsg.MetadataResponse)
		}
		once, _ := sizeFor(1)
		many, resp := sizeFor(1000)
		if many != once || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 300 {
			t.Fatalf("byID=%v: named 1000 times: %d bytes, %d topics; named once: %d bytes", byID, many, len(resp.Topics), once)
		}
		t.Logf("v%d, by id %v: %d bytes named once or a thousand times", version, byID, once)
	}
	fds, rss := guard.Max()
	t.Logf("broker peak: RSS %d MiB, %d fds", rss>>20, fds)
}

// TestDuplicatePartitions: partition-level requests with a partition named
// twice: Produce and ListOffsets refuse every copy with INVALID_REQUEST
// (Kafka's rule for ListOffsets), OffsetForLeaderEpoch and DeleteRecords
// answer it once.
func TestDuplicatePartitions(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	mustCreate(t, c, "dup", 2)
	expectCode(t, "seed produce", produceOne(t, c, "dup", 0).ErrorCode, nil)

	t.Run("Produce", func(t *testing.T) {
		resp, _ := c.Request(produceRequest(t, "dup", 0, 1, 0))
		ps := resp.(*kmsg.ProduceResponse).Topics[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("%d partition answers, want one per entry", len(ps))
		}
		for i, want := range []*kerr.Error{kerr.InvalidRequest, nil, kerr.InvalidRequest} {
			expectCode(t, "entry "+itoa(i), ps[i].ErrorCode, want)
		}
		if end := listOffset(t, c, "dup", 0, -1); end != 1 {
			t.Fatalf("end offset of the refused partition %d, want 1 (nothing appended)", end)
		}
	})
	t.Run("ListOffsets", func(t *testing.T) {
		req := listOffsetsRequest("dup", 0, 1, 0)
		resp, _ := c.Request(req)
		ps := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions
		if len(ps) != 3 {
			t.Fatalf("%d answers, want 3", len(ps))
		}
		for i, want := range []*kerr.Error{kerr.InvalidRequest, nil, kerr.InvalidRequest} {
			expectCode(t, "entry "+itoa(i), ps[i].ErrorCode, want)
		}
	})
	t.Run("OffsetForLeaderEpoch", func(t *testing.T) {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(4)
		req.ReplicaID = -1
		for range 2 { // the topic twice, partition 0 in both
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "dup"
			for range 500 {
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, 0
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, _ := c.Request(req)
		ts := resp.(*kmsg.OffsetForLeaderEpochResponse).Topics
		if len(ts) != 1 || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].ErrorCode != 0 || ts[0].Partitions[0].EndOffset != 1 {
			n := 0
			for _, rt := range ts {
				n += len(rt.Partitions)
			}
			t.Fatalf("%d topics, %d partitions answered; want partition 0 once, end offset 1", len(ts), n)
		}
	})
	t.Run("DeleteRecords", func(t *testing.T) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(2)
		req.TimeoutMillis = 30000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "dup"
		for _, off := range []int64{0, 1} { // the last copy wins, as in Kafka
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = 0, off
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, _ := c.Request(req)
		ps := resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions
		if len(ps) != 1 || ps[0].ErrorCode != 0 || ps[0].LowWatermark != 1 {
			t.Fatalf("answer %+v, want partition 0 once with low watermark 1", ps)
		}
	})
}

// TestDuplicateTopicAdmin: CreateTopics, CreatePartitions and DeleteTopics
// answer a topic named twice once, INVALID_REQUEST "Duplicate topic
// name.", and do nothing to it, as Kafka's controller.
func TestDuplicateTopicAdmin(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	resp := createTopics(c, false, newTopic("twice", 1), newTopic("single", 1), newTopic("twice", 2))
	if len(resp.Topics) != 2 {
		t.Fatalf("%d answers, want one per name", len(resp.Topics))
	}
	for _, st := range resp.Topics {
		switch st.Topic {
		case "twice":
			expectCode(t, "create twice", st.ErrorCode, kerr.InvalidRequest)
			if deref(st.ErrorMessage) != "Duplicate topic name." {
				t.Fatalf("message %q", deref(st.ErrorMessage))
			}
		default:
			expectCode(t, "create single", st.ErrorCode, nil)
		}
	}
	expectCode(t, "metadata of the duplicated topic", topicCode(c, "twice"), kerr.UnknownTopicOrPartition)

	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	req.TimeoutMillis = 30000
	for _, n := range []int32{2, 3} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "single", n
		req.Topics = append(req.Topics, rt)
	}
	presp, _ := c.Request(req)
	if ts := presp.(*kmsg.CreatePartitionsResponse).Topics; len(ts) != 1 || ts[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("create partitions twice: %+v, want one INVALID_REQUEST", ts)
	}
	if mresp, _ := metadata(c, "single"); len(mresp.Topics[0].Partitions) != 1 {
		t.Fatalf("a refused CreatePartitions grew the topic to %d", len(mresp.Topics[0].Partitions))
	}

	dreq := kmsg.NewPtrDeleteTopicsRequest()
	dreq.SetVersion(6)
	dreq.TimeoutMillis = 30000
	for range 3 {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("single")
		dreq.Topics = append(dreq.Topics, rt)
	}
	dresp, _ := c.Request(dreq)
	if ts := dresp.(*kmsg.DeleteTopicsResponse).Topics; len(ts) != 1 || ts[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete thrice: %+v, want one INVALID_REQUEST", ts)
	}
	expectCode(t, "metadata after the refused delete", topicCode(c, "single"), nil)
}

func listOffsetsRequest(topic string, partitions ...int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// listOffset is ListOffsets of one partition at a timestamp (-1 latest).
func listOffset(t *testing.T, c *harness.RawConn, topic string, partition int32, ts int64) int64 {
	t.Helper()
	req := listOffsetsRequest(topic, partition)
	req.Topics[0].Partitions[0].Timestamp = ts
	resp, _ := c.Request(req)
	p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	expectCode(t, "list offsets", p.ErrorCode, nil)
	return p.Offset
}
