package controller

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/errcode"
	"github.com/weir-project/weir/internal/metadata"
)

// alterPartition applies a leader's ISR changes: a compare-and-set on each
// partition's leader and partition epochs, decided by the metadata state
// machine. Each partition's answer carries its state afterwards. A leader
// may leave the ISR to hand the partition over (a storage error: see
// metadata's alterOne), weir's extension; Kafka refuses that.
func (s *Service) alterPartition(ctx context.Context, r *kmsg.AlterPartitionRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !s.leader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	img := s.q.Image()
	req := metadata.AlterPartitionRequest{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch}
	type slot struct{ topic, part int }
	var slots []slot // where each update's answer goes
	for ti, rt := range r.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		id := rt.TopicID
		if r.Version < 2 {
			if t := img.TopicByName(rt.Topic); t != nil {
				id = t.ID
			}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
			u := metadata.ISRUpdate{
				TopicID: id, Partition: rp.Partition,
				LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch,
				LeaderRecoveryState: rp.LeaderRecoveryState,
			}
			if r.Version >= 3 {
				for _, m := range rp.NewEpochISR {
					u.NewISR = append(u.NewISR, metadata.ISRMember{BrokerID: m.BrokerID, BrokerEpoch: m.BrokerEpoch})
				}
			} else {
				u.NewISR = metadata.ISRMembers(rp.NewISR)
			}
			req.Updates = append(req.Updates, u)
			slots = append(slots, slot{ti, len(st.Partitions) - 1})
		}
		resp.Topics = append(resp.Topics, st)
	}
	results, err := s.q.AlterPartition(ctx, req)
	if err != nil {
		resp.ErrorCode = errcode.Code(err)
		return resp
	}
	for i, res := range results {
		sp := &resp.Topics[slots[i].topic].Partitions[slots[i].part]
		if res.Err != nil {
			sp.ErrorCode = errcode.Code(res.Err)
			if r.Version < 2 && errors.Is(res.Err, metadata.ErrIneligibleReplica) {
				// v0-1 clients do not know INELIGIBLE_REPLICA.
				sp.ErrorCode = kerr.OperationNotAttempted.Code
			}
			continue
		}
		p := res.State
		sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
		sp.ISR = append([]int32(nil), p.ISR...)
		sp.LeaderRecoveryState = p.LeaderRecoveryState
	}
	return resp
}
