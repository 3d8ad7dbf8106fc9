package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// handleDeleteRecords raises log start offsets (offset -1: the high
// watermark), and answers each partition once the low watermark has
// reached its offset: the leader and every replica on a live broker have
// raised theirs (see package replica, DeleteRecordsBefore), so that no
// failover can make the records readable again. LowWatermark is that low
// watermark. A partition whose replicas do not get there within
// TimeoutMillis is answered REQUEST_TIMED_OUT (the leader's own log start
// stays raised, as in Kafka); one whose leader moved meanwhile,
// NOT_LEADER_OR_FOLLOWER.
//
// A partition named more than once is handled once, with the offset of its
// last copy, and answered once: Kafka keeps the request in a map by
// partition (KafkaApis.handleDeleteRecordsRequest).
//
// Versions: v0–v2; v2 is the first flexible one. No field differs.
func (b *Broker) handleDeleteRecords(ctx context.Context, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.meta.Image()
	topics, _ := distinctPartitions(req.Topics, func(rt kmsg.DeleteRecordsRequestTopic) topicKey { return topicByName(rt.Topic) },
		func(rt kmsg.DeleteRecordsRequestTopic) []kmsg.DeleteRecordsRequestTopicPartition {
			return rt.Partitions
		},
		func(rp kmsg.DeleteRecordsRequestTopicPartition) int32 { return rp.Partition })
	var waits []deleteWait
	for _, g := range topics {
		rt := g.topic
		resp.Topics = append(resp.Topics, kmsg.NewDeleteRecordsResponseTopic())
		st := &resp.Topics[len(resp.Topics)-1]
		st.Topic = rt.Topic
		topic, topicErr := lookupTopic(img, false, rt.Topic, [16]byte{})
		for _, rp := range g.parts {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			if topicErr != nil {
				sp.ErrorCode = topicErr.Code
			} else {
				tp := storage.TopicPartition{Topic: topic.Name, Partition: rp.Partition}
				if p := b.replicas.Get(tp); p == nil {
					sp.ErrorCode = b.missingPartitionCode(tp)
				} else if target, epoch, err := p.DeleteRecordsBefore(rp.Offset); err != nil {
					sp.ErrorCode = errorCode(err)
				} else {
					waits = append(waits, deleteWait{p: p, epoch: epoch, target: target, topic: len(resp.Topics) - 1, part: len(st.Partitions)})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	for _, w := range awaitDeletes(ctx, waits, timeout) {
		sp := &resp.Topics[w.topic].Partitions[w.part]
		sp.LowWatermark, sp.ErrorCode = w.low, errorCode(w.err)
	}
	return resp, nil
}

// deleteWait is one partition's deletion waiting for its low watermark,
// and where its answer goes (indexes: the answer's slices grow while the
// waits are collected).
type deleteWait struct {
	p      *replica.Partition
	epoch  int32
	target int64
	topic  int
	part   int
	low    int64 // the outcome: the low watermark, -1 on error
	err    error
}

// awaitDeletes waits until every deletion is complete or can no longer
// be, or timeout passes, and returns them with their outcome. It waits
// the broker's one way (replica.Waiter), for LowWatermark.
func awaitDeletes(ctx context.Context, waits []deleteWait, timeout time.Duration) []deleteWait {
	var done []deleteWait
	settle := func(expired bool) {
		open := waits[:0]
		for _, d := range waits {
			low, ok, err := d.p.DeleteState(d.epoch, d.target)
			switch {
			case ok:
				d.low, d.err = low, err
				if err != nil {
					d.low = -1
				}
				done = append(done, d)
			case expired:
				d.low, d.err = -1, fmt.Errorf("%w: low watermark %d below %d after %v: a live replica has not raised its log start", kerr.RequestTimedOut, low, d.target, timeout)
				done = append(done, d)
			default:
				open = append(open, d)
			}
		}
		waits = open
	}
	// Alone in its replica set (one node, RF 1) a leader is done at once.
	if settle(false); len(waits) == 0 {
		return done
	}
	w := replica.NewWaiter()
	defer w.Done()
	for _, d := range waits {
		w.Watch(d.p, replica.LowWatermark)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(waits) > 0 {
		// Checked again after Watch: a change in between is not missed.
		if settle(false); len(waits) == 0 {
			break
		}
		if !w.Wait(ctx, timer.C) {
			settle(true)
		}
	}
	return done
}
