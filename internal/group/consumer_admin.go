package group

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicAssignment is a topic's partitions, with the topic's id and name.
type TopicAssignment struct {
	TopicID    TopicID
	Topic      string
	Partitions []int32
}

// ConsumerGroupDescription is a consumer group in ConsumerGroupDescribe.
type ConsumerGroupDescription struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

// ConsumerMemberDescription is one member in ConsumerGroupDescribe.
type ConsumerMemberDescription struct {
	MemberID         string
	InstanceID       string
	RackID           string
	ClientID         string
	ClientHost       string
	MemberEpoch      int32
	SubscribedTopics []string
	SubscribedRegex  string
	Assignment       []TopicAssignment
	TargetAssignment []TopicAssignment
}

// DescribeConsumerGroup describes a consumer group; a group that does not
// exist or is a classic group is GROUP_ID_NOT_FOUND, as in Kafka.
func (c *Coordinator) DescribeConsumerGroup(id string) (ConsumerGroupDescription, error) {
	d := ConsumerGroupDescription{Group: id, State: "Dead"}
	g, err := c.lockGroup(id, false)
	if err != nil {
		return d, err
	}
	if g == nil {
		return d, kerr.GroupIDNotFound
	}
	defer g.mu.Unlock()
	cg := g.consumer
	if cg == nil {
		return d, kerr.GroupIDNotFound
	}
	d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = cg.state(), cg.epoch, cg.targetEpoch, cg.preferredAssignor()
	for _, mid := range cg.sortedMemberIDs() {
		m := cg.members[mid]
		d.Members = append(d.Members, ConsumerMemberDescription{
			MemberID: m.id, InstanceID: m.sub.instanceID, RackID: m.sub.rackID,
			ClientID: m.sub.clientID, ClientHost: m.sub.clientHost, MemberEpoch: m.epoch,
			SubscribedTopics: slices.Clone(m.sub.topics), SubscribedRegex: m.sub.regex,
			Assignment:       c.named(m.assigned),
			TargetAssignment: c.named(cg.target[m.id]),
		})
	}
	return d, nil
}

// named resolves topic ids to names; topics that no longer exist are left
// out, as Kafka does.
func (c *Coordinator) named(s partSet) []TopicAssignment {
	out := []TopicAssignment{}
	if c.cfg.TopicMeta == nil {
		return out
	}
	for _, id := range sortedKeys(s) {
		if name, _, ok := c.cfg.TopicMeta.TopicByID(id); ok {
			out = append(out, TopicAssignment{TopicID: id, Topic: name, Partitions: slices.Clone(s[id])})
		}
	}
	slices.SortFunc(out, func(a, b TopicAssignment) int {
		switch {
		case a.Topic < b.Topic:
			return -1
		case a.Topic > b.Topic:
			return 1
		}
		return 0
	})
	return out
}

// describeConsumerAsClassic fills a DescribeGroups answer for a consumer
// group: protocol type "consumer", the assignor as protocol, and each
// member's subscription and assignment in the classic consumer protocol's
// encoding, so that tools speaking only DescribeGroups (kadm's Lag,
// kafka-consumer-groups.sh before 4.0) show its members and partitions.
func (c *Coordinator) describeConsumerAsClassic(g *group, d *Description) {
	cg := g.consumer
	d.StateName, d.ProtocolType, d.Protocol = cg.state(), "consumer", cg.preferredAssignor()
	for _, mid := range cg.sortedMemberIDs() {
		m := cg.members[mid]
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = slices.Clone(m.sub.topics)
		asg := kmsg.NewConsumerMemberAssignment()
		for _, t := range c.named(m.assigned) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = t.Topic, t.Partitions
			asg.Topics = append(asg.Topics, at)
		}
		d.Members = append(d.Members, MemberDescription{
			MemberID: m.id, InstanceID: m.sub.instanceID, ClientID: m.sub.clientID, ClientHost: m.sub.clientHost,
			Metadata: meta.AppendTo(nil), Assignment: asg.AppendTo(nil),
		})
	}
}

// deletionRecords delete a consumer group and every member record.
func (cg *consumerGroup) deletionRecords(group string) []cgRecord {
	var recs []cgRecord
	for _, id := range cg.sortedMemberIDs() {
		recs = append(recs, removalRecords(group, id)...)
	}
	for _, id := range sortedMapKeys(cg.target) {
		if cg.members[id] == nil {
			recs = append(recs, cgRecord{kind: keyConsumerGroupTargetMember, group: group, member: id, tombstone: true})
		}
	}
	return append(recs,
		cgRecord{kind: keyConsumerGroupTargetMetadata, group: group, tombstone: true},
		cgRecord{kind: keyConsumerGroupPartitionMeta, group: group, tombstone: true},
		cgRecord{kind: keyConsumerGroupMetadata, group: group, tombstone: true},
	)
}

// consumerToClassic turns an empty consumer group into a classic one for
// a JoinGroup (Kafka 4.0 converts empty groups either way). A consumer
// group with members refuses classic members: GROUP_ID_NOT_FOUND, as
// Kafka answers with group.consumer.migration.policy=disabled. The
// conversion is a barrier write: it waits (g unlocked meanwhile) until
// the records are committed, and returns with g locked again.
func (c *Coordinator) consumerToClassic(ctx context.Context, g *group) *kerr.Error {
	cg := g.consumer
	if len(cg.members) > 0 {
		return kerr.GroupIDNotFound
	}
	recs := cg.deletionRecords(g.id)
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = r.encode()
	}
	var result error
	w, err := c.write(g, out, barrierWrite, func(err error) {
		result = err
		if err == nil && g.state != Dead && g.consumer == cg {
			g.consumer = nil
			g.clearMetadata(c.clock.Now())
		}
	})
	if err != nil {
		return storeError(err)
	}
	c.wait(ctx, g, w)
	if result != nil {
		return storeError(result)
	}
	return nil
}

// consumerSubscribed is the union of a consumer group's subscribed topic
// names (regex matches included).
func (c *Coordinator) consumerSubscribed(cg *consumerGroup) map[string]bool {
	out := map[string]bool{}
	_, topics := c.resolveSubscriptions(cg.subs())
	for n := range topics {
		out[n] = true
	}
	for n := range cg.subscribedNames() {
		out[n] = true
	}
	return out
}
