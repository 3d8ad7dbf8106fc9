package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/server"
)

// The next-generation consumer group protocol (KIP-848):
// ConsumerGroupHeartbeat and ConsumerGroupDescribe. The coordinator
// (internal/group) assigns partitions itself; these handlers translate.

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, rc *server.RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	hr := group.ConsumerHeartbeatRequest{
		Version: req.Version, Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		SubscribedTopics: req.SubscribedTopicNames, SubscribedRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: rc.ClientID, ClientHost: clientHost(rc),
	}
	if req.Topics != nil {
		hr.Owned = make([]group.TopicPartitionsByID, 0, len(req.Topics))
		for _, t := range req.Topics {
			hr.Owned = append(hr.Owned, group.TopicPartitionsByID{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	r := b.groups.ConsumerHeartbeat(ctx, hr)
	if r.Err != nil {
		resp.ErrorCode = r.Err.Code
		if r.ErrMessage != "" {
			resp.ErrorMessage = ptr(r.ErrMessage)
		}
		return resp, nil
	}
	resp.MemberID = ptr(r.MemberID)
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	if r.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range r.Assignment {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t.TopicID, t.Partitions
			a.Topics = append(a.Topics, at)
		}
		if a.Topics == nil {
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// handleConsumerGroupDescribe describes KIP-848 groups, each once however
// often it is named, as handleDescribeGroups (Kafka describes every copy).
func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	idx, _ := distinct(req.Groups, identity)
	for _, i := range idx {
		id := req.Groups[i]
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		d, err := b.groups.DescribeConsumerGroup(id)
		if err != nil {
			rg.ErrorCode = kcode(err)
			rg.State = d.State
			if errors.Is(err, kerr.GroupIDNotFound) {
				rg.ErrorMessage = ptr(fmt.Sprintf("Group %s not found or not a consumer group.", id))
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost
			if m.InstanceID != "" {
				rm.InstanceID = ptr(m.InstanceID)
			}
			if m.RackID != "" {
				rm.RackID = ptr(m.RackID)
			}
			rm.SubscribedTopics = m.SubscribedTopics
			if rm.SubscribedTopics == nil {
				rm.SubscribedTopics = []string{}
			}
			if m.SubscribedRegex != "" {
				rm.SubscribedTopicRegex = ptr(m.SubscribedRegex)
			}
			rm.Assignment, rm.TargetAssignment = describedAssignment(m.Assignment), describedAssignment(m.TargetAssignment)
			rm.MemberType = 1 // the consumer protocol (0 would be classic)
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func describedAssignment(ts []group.TopicAssignment) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, t.Topic, t.Partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// TopicByName implements group.TopicMetadata on the metadata image.
func (v topicsView) TopicByName(name string) (group.TopicID, int32, bool) {
	t := v.b.meta.Image().TopicByName(name)
	if t == nil {
		return group.TopicID{}, 0, false
	}
	return t.ID, int32(len(t.Partitions)), true
}

// TopicByID implements group.TopicMetadata.
func (v topicsView) TopicByID(id group.TopicID) (string, int32, bool) {
	t := v.b.meta.Image().TopicByID(id)
	if t == nil {
		return "", 0, false
	}
	return t.Name, int32(len(t.Partitions)), true
}

// TopicNames implements group.TopicMetadata.
func (v topicsView) TopicNames() []string { return v.b.meta.Image().SortedTopicNames() }
