package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// Special ListOffsets timestamps.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3 // v7+
	listEarliestLocal = -4 // v8+: no tiered storage, so the log start
	listLatestTiered  = -5 // v9+: nothing is tiered
)

// handleListOffsets answers earliest, latest, max-timestamp and by-time
// lookups. Consumers only see committed data, so "latest" is the high
// watermark and time lookups never return an offset at or past it.
//
// From v1, every copy of a partition named more than once is answered
// INVALID_REQUEST, as Kafka does (ListOffsetsRequest.duplicatePartitions);
// v0 answers each copy, as in Kafka, with at most one offset.
//
// Unlike Kafka, a leader out of its session (mayBeStale) answers a
// consumer NOT_LEADER_OR_FOLLOWER, every version.
func (b *Broker) handleListOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	img := b.meta.Image()
	var dups map[partitionKey]bool
	if req.Version >= 1 {
		_, dups = distinctPartitions(req.Topics, func(rt kmsg.ListOffsetsRequestTopic) topicKey { return topicByName(rt.Topic) },
			func(rt kmsg.ListOffsetsRequestTopic) []kmsg.ListOffsetsRequestTopicPartition { return rt.Partitions },
			func(rp kmsg.ListOffsetsRequestTopicPartition) int32 { return rp.Partition })
	}
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		topic, topicErr := lookupTopic(img, false, rt.Topic, [16]byte{})
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			switch {
			case dups[partitionKey{topicByName(rt.Topic), rp.Partition}]:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case topicErr != nil:
				sp.ErrorCode = topicErr.Code
			default:
				b.listOffset(req.Version, req.ReplicaID, storage.TopicPartition{Topic: topic.Name, Partition: rp.Partition}, rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) listOffset(version int16, replicaID int32, tp storage.TopicPartition, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	p := b.replicas.Get(tp)
	if p == nil {
		sp.ErrorCode = b.missingPartitionCode(tp)
		return
	}
	if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	if replicaID < 0 && b.mayBeStale() {
		// A consumer sets its position from this answer (a reset, a
		// start), and a stale leader's may be behind its successor's:
		// its log start below a DeleteRecords the successor completed
		// without it (it was fenced), its high watermark below offsets
		// committed since. Refused as OffsetForLeaderEpoch is.
		sp.ErrorCode = errorCode(replica.ErrNotLeader)
		return
	}
	o := p.Offsets()
	ts, off := int64(-1), int64(-1)
	switch rp.Timestamp {
	case listLatest:
		off = o.HighWater
	case listEarliest, listEarliestLocal:
		off = o.LogStart
	case listLatestTiered:
		// Nothing is in remote storage: Kafka answers offset -1.
	case listMaxTimestamp:
		ts, off = p.Log().MaxTimestamp()
		if off >= o.HighWater {
			ts, off = -1, -1
		}
	default:
		if rp.Timestamp < 0 {
			sp.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		t, found := int64(-1), false
		var err error
		off, t, found, err = p.Log().OffsetForTimestamp(rp.Timestamp)
		if err != nil {
			sp.ErrorCode = errorCode(err)
			return
		}
		if !found || off >= o.HighWater {
			off, t = -1, -1
		}
		ts = t
	}
	if version == 0 {
		if off >= 0 && rp.MaxNumOffsets > 0 {
			sp.OldStyleOffsets = []int64{off}
		}
		return
	}
	sp.Timestamp, sp.Offset = ts, off
	if off >= 0 {
		sp.LeaderEpoch = o.LeaderEpoch
	}
}

// handleOffsetForLeaderEpoch tells a consumer (or, later, a follower)
// where a leader epoch ended, from the leader epoch cache (KIP-101/279).
//
// Each partition is answered once, under the first entry of its topic,
// for its last copy. Kafka answers every copy (ReplicaManager.
// lastOffsetForLeaderEpoch walks the request as given); copies tell a
// client nothing more and cost the broker a lookup each.
func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := b.meta.Image()
	topics, _ := distinctPartitions(req.Topics, func(rt kmsg.OffsetForLeaderEpochRequestTopic) topicKey { return topicByName(rt.Topic) },
		func(rt kmsg.OffsetForLeaderEpochRequestTopic) []kmsg.OffsetForLeaderEpochRequestTopicPartition {
			return rt.Partitions
		},
		func(rp kmsg.OffsetForLeaderEpochRequestTopicPartition) int32 { return rp.Partition })
	for _, g := range topics {
		rt := g.topic
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		topic, topicErr := lookupTopic(img, false, rt.Topic, [16]byte{})
		for _, rp := range g.parts {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			var p *replica.Partition
			switch {
			case topicErr != nil:
				sp.ErrorCode = topicErr.Code
			default:
				tp := storage.TopicPartition{Topic: topic.Name, Partition: rp.Partition}
				if p = b.replicas.Get(tp); p == nil {
					sp.ErrorCode = b.missingPartitionCode(tp)
				} else if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = errorCode(err)
				} else if req.ReplicaID < 0 && b.mayBeStale() {
					// A consumer validating its position (KIP-320) would
					// take a stale leader's epoch end for a truncation.
					sp.ErrorCode = errorCode(replica.ErrNotLeader)
				} else {
					sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
