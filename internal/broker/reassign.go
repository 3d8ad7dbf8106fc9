package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
)

// Partition reassignment (KIP-455): AlterPartitionReassignments is a
// metadata change, answered by the active controller (other brokers
// forward it, cluster.go); ListPartitionReassignments is answered from the
// local image, which every broker holds. The moves themselves happen in
// reconcile (replicas opened and deleted as the assignment changes), the
// fetchers (adding replicas throttled, throttle.go) and the leaders' ISR
// changes, which complete a reassignment at the controller.

// handleAlterPartitionReassignments starts, changes or cancels
// reassignments (null replicas: cancel). Per partition the errors are
// Kafka's: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
// INVALID_REPLICATION_FACTOR (v1 with AllowReplicationFactorChange false,
// KIP-860), NO_REASSIGNMENT_IN_PROGRESS; a failure to commit is the
// request's top-level error.
func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var rs []metadata.Reassignment
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
			rs = append(rs, metadata.Reassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
		resp.Topics = append(resp.Topics, st)
	}
	errs, err := b.meta.AlterPartitionReassignments(ctx, rs, allowRF)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			sp.ErrorCode, sp.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
			i++
		}
	}
	return resp, nil
}

// handleListPartitionReassignments lists the reassignments in progress:
// of every topic (null topics) or of the partitions named; unknown topics
// and partitions not being reassigned are left out, as in Kafka.
func (b *Broker) handleListPartitionReassignments(_ context.Context, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	img := b.meta.Image()
	add := func(t *metadata.Topic, parts []int32) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = t.Name
		for _, p := range parts {
			if p < 0 || int(p) >= len(t.Partitions) || !t.Partitions[p].Reassigning() {
				continue
			}
			tp := t.Partitions[p]
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = p
			sp.Replicas = slices.Clone(tp.Replicas)
			sp.AddingReplicas = nonNil(tp.AddingReplicas)
			sp.RemovingReplicas = nonNil(tp.RemovingReplicas)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	if req.Topics == nil {
		for _, ref := range img.ReassigningPartitions() {
			t := img.TopicByName(ref.Topic)
			if n := len(resp.Topics); n > 0 && resp.Topics[n-1].Topic == ref.Topic {
				continue // added whole below
			}
			var parts []int32
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
			}
			add(t, parts)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if t := img.TopicByName(rt.Topic); t != nil {
			add(t, rt.Partitions)
		}
	}
	return resp, nil
}

// nonNil makes an empty list encode as [] rather than null (the fields
// are not nullable).
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// reassignmentsVisible reports whether img shows the effect of the
// successful part of a forwarded AlterPartitionReassignments: each target
// is in the replicas (a move that completed at once included), and each
// cancelled partition is no longer being reassigned.
func reassignmentsVisible(img *metadata.Image, req *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse) bool {
	for ti, rt := range req.Topics {
		for pi, rp := range rt.Partitions {
			if ti >= len(resp.Topics) || pi >= len(resp.Topics[ti].Partitions) || resp.Topics[ti].Partitions[pi].ErrorCode != 0 {
				continue
			}
			p, ok := img.Partition(rt.Topic, rp.Partition)
			if !ok {
				return false
			}
			if rp.Replicas == nil {
				if p.Reassigning() {
					return false
				}
				continue
			}
			for _, r := range rp.Replicas {
				if !slices.Contains(p.Replicas, r) {
					return false
				}
			}
		}
	}
	return true
}
