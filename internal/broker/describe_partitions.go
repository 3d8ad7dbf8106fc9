package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/metadata"
)

// maxDescribePartitions caps a DescribeTopicPartitions answer whatever the
// request's limit: Kafka's max.request.partition.size.limit default.
const maxDescribePartitions = 2000

// handleDescribeTopicPartitions answers DescribeTopicPartitions (KIP-966):
// Metadata's partition view plus the eligible leader replicas, paged.
//
// Version notes: v0 is the only version. Topics are answered in name
// order; an empty list means every topic. At most
// min(ResponsePartitionLimit, 2000) partitions are answered; where the
// limit cut the answer, NextCursor names the first partition left out and
// the client sends the request again with it as Cursor. A cursor's topic
// must be among the named topics, as Kafka requires (INVALID_REQUEST).
// A named topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION
// (INVALID_TOPIC_EXCEPTION for a name no topic could have) and takes no
// room. LastKnownELR (unclean recovery, KIP-966 part 2) is always empty:
// weir does not keep it. A partition without a leader has leader -1 and
// no error code, as Kafka answers here (Metadata says LEADER_NOT_AVAILABLE).
//
// Kafka answers a response limit below 1 with an empty page whose cursor
// points at the first topic, which a client paging through would ask for
// forever; weir answers it INVALID_REQUEST, as it does a negative cursor
// partition.
func (b *Broker) handleDescribeTopicPartitions(req *kmsg.DescribeTopicPartitionsRequest) *kmsg.DescribeTopicPartitionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.meta.Image()

	var names []string
	if len(req.Topics) == 0 {
		names = img.SortedTopicNames()
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	var cursor kmsg.DescribeTopicPartitionsRequestCursor
	if c := req.Cursor; c != nil {
		cursor = *c
		i, found := slices.BinarySearch(names, c.Topic)
		if (!found && len(req.Topics) > 0) || c.Partition < 0 {
			return invalidDescribePartitions(resp, names)
		}
		names = names[i:]
	}
	if req.ResponsePartitionLimit < 1 {
		return invalidDescribePartitions(resp, names)
	}

	room := min(int(req.ResponsePartitionLimit), maxDescribePartitions)
	for _, name := range names {
		if room == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		t := img.TopicByName(name)
		if t == nil {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = &name
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if config.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		start := int32(0)
		if name == cursor.Topic {
			start = cursor.Partition
		}
		rt, next := describePartitionsTopic(img, t, start, room)
		room -= len(rt.Partitions)
		resp.Topics = append(resp.Topics, rt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
	}
	return resp
}

// describePartitionsTopic answers up to room of t's partitions from start
// on, and the first one left out (-1: none).
func describePartitionsTopic(img *metadata.Image, t *metadata.Topic, start int32, room int) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	rt.Topic, rt.TopicID = &name, t.ID
	rt.IsInternal = isInternalTopic(name)
	rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	next := int32(-1)
	for _, p := range t.Partitions {
		if p.Partition < start {
			continue
		}
		if len(rt.Partitions) == room {
			next = p.Partition
			break
		}
		rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
		rp.Replicas = slices.Clone(p.Replicas)
		rp.ISR = slices.Clone(p.ISR)
		rp.EligibleLeaderReplicas = slices.Clone(p.ELR)
		if rp.EligibleLeaderReplicas == nil {
			rp.EligibleLeaderReplicas = []int32{}
		}
		rp.LastKnownELR = []int32{}
		rp.OfflineReplicas = offlineReplicas(img, p.Replicas)
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt, next
}

// invalidDescribePartitions is the answer to a request Kafka refuses as a
// whole: every topic it names, INVALID_REQUEST.
func invalidDescribePartitions(resp *kmsg.DescribeTopicPartitionsResponse, names []string) *kmsg.DescribeTopicPartitionsResponse {
	for _, name := range names {
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = &name
		rt.ErrorCode = kerr.InvalidRequest.Code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
