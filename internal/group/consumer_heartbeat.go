package group

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicMetadata is the cluster's topics as the consumer protocol needs
// them: members name topics, assignments carry topic ids.
type TopicMetadata interface {
	TopicByName(name string) (id TopicID, partitions int32, ok bool)
	TopicByID(id TopicID) (name string, partitions int32, ok bool)
	// TopicNames lists every topic, for regex subscriptions.
	TopicNames() []string
}

// TopicPartitionsByID is a topic's partitions, the topic named by id.
type TopicPartitionsByID struct {
	TopicID    TopicID
	Partitions []int32
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat (KIP-848). Nil
// fields mean "unchanged since the last heartbeat".
type ConsumerHeartbeatRequest struct {
	Version            int16
	Group              string
	MemberID           string
	MemberEpoch        int32
	InstanceID         *string
	RackID             *string
	RebalanceTimeoutMs int32 // -1 = unchanged
	SubscribedTopics   []string
	SubscribedRegex    *string
	ServerAssignor     *string
	Owned              []TopicPartitionsByID
	ClientID           string
	ClientHost         string
}

// ConsumerHeartbeatResult answers a ConsumerGroupHeartbeat.
type ConsumerHeartbeatResult struct {
	Err               *kerr.Error
	ErrMessage        string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set (non-nil) when the member must be told its
	// assignment: on a full request or when it changed.
	Assignment []TopicPartitionsByID
}

func hbFail(err *kerr.Error, format string, args ...any) ConsumerHeartbeatResult {
	return ConsumerHeartbeatResult{Err: err, ErrMessage: fmt.Sprintf(format, args...)}
}

// validateHeartbeat applies Kafka's request checks, before any state is
// looked at.
func validateHeartbeat(req *ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	bad := func(err *kerr.Error, format string, args ...any) *ConsumerHeartbeatResult {
		r := hbFail(err, format, args...)
		return &r
	}
	switch {
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0):
		return bad(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.Group == "":
		return bad(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad(kerr.InvalidRequest, "RackId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad(kerr.InvalidRequest, "InstanceId can't be empty.")
	case req.MemberEpoch < staticLeaveEpoch:
		return bad(kerr.InvalidRequest, "MemberEpoch is invalid.")
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return bad(kerr.InvalidRequest, "InstanceId can't be null.")
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.RebalanceTimeoutMs == -1:
			return bad(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		case req.Owned == nil || len(req.Owned) > 0:
			return bad(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopics == nil && req.SubscribedRegex == nil:
			return bad(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	}
	if req.RebalanceTimeoutMs < -1 {
		return bad(kerr.InvalidRequest, "RebalanceTimeoutMs is invalid.")
	}
	if req.ServerAssignor != nil && !knownAssignor(*req.ServerAssignor) {
		return bad(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, Assignors)
	}
	if req.SubscribedRegex != nil && *req.SubscribedRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedRegex); err != nil {
			return bad(kerr.InvalidRegularExpression, "SubscribedTopicRegex %q is not a valid regular expression: %v", *req.SubscribedRegex, err)
		}
	}
	return nil
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat: joins (epoch 0),
// heartbeats that report owned partitions and receive the assignment,
// and leaves (epoch -1, or -2 for a static member that will return).
// ctx is the request's: its waits for the group's writes take its wait
// clock, not its end.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	if r := validateHeartbeat(&req); r != nil {
		return *r
	}
	if req.MemberEpoch == 0 && req.MemberID == "" {
		req.MemberID = newUUID() // v0: the coordinator names the member
	}
	if req.MemberEpoch < 0 {
		return c.consumerLeave(ctx, req)
	}
	for {
		g, err := c.lockGroupIdle(ctx, req.Group, req.MemberEpoch == 0, false, false)
		if err != nil {
			return hbFail(asKerr(err), "%v", err)
		}
		if g == nil {
			return hbFail(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
		}
		res, busy := c.consumerHeartbeatLocked(ctx, g, req)
		c.unlockMaybeForget(g)
		if busy == nil {
			return res
		}
		// This heartbeat changes the group, and another change is being
		// written: compute it again from the state that one leaves.
		awaitDone(ctx, busy)
	}
}

// consumerHeartbeatLocked serves a heartbeat on g (locked). A heartbeat
// that changes nothing is answered from the committed state at once,
// even while another member's change is being written; one that changes
// the group while another change is in flight returns that write, to be
// waited for before trying again (its records would be computed from a
// state about to change).
func (c *Coordinator) consumerHeartbeatLocked(ctx context.Context, g *group, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, *pendingWrite) {
	var recs []cgRecord
	var classicTombstone bool
	cg := g.consumer
	if cg == nil {
		// An empty classic group (or one just created) becomes a
		// consumer group; one with members stays what it is.
		if req.MemberEpoch != 0 || !g.classicEmpty() {
			return hbFail(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id), nil
		}
		classicTombstone = g.hasClassicMetadata()
		cg = newConsumerGroup()
	}
	old, isNew, replaced, res := c.resolveMember(cg, req)
	if res != nil {
		return *res, nil
	}
	currentTarget := maps.Clone(cg.target)
	subs := cg.subs() // the members as they will be, for metadata and assignment
	if replaced != nil && replaced.id != old.id {
		recs = append(recs, removalRecords(g.id, replaced.id)...)
		currentTarget[old.id] = currentTarget[replaced.id]
		delete(currentTarget, replaced.id)
		delete(subs, replaced.id)
		recs = append(recs, cgRecord{kind: keyConsumerGroupTargetMember, group: g.id, member: old.id, target: orEmptySet(currentTarget[old.id])})
	}
	sub := updatedSub(old, req)
	if isNew || !sub.equal(old.sub) {
		recs = append(recs, cgRecord{kind: keyConsumerGroupMemberMetadata, group: g.id, member: old.id, sub: sub})
	}
	bump := (isNew && replaced == nil) || !slices.Equal(sub.topics, old.sub.topics) || sub.regex != old.sub.regex
	subs[old.id] = sub
	memberTopics, topics := c.resolveSubscriptions(subs)
	if !topicsEqual(topics, cg.topics) {
		recs = append(recs, cgRecord{kind: keyConsumerGroupPartitionMeta, group: g.id, topics: topics})
		bump = true
	}
	epoch := cg.epoch
	if bump {
		epoch++
		recs = append(recs, cgRecord{kind: keyConsumerGroupMetadata, group: g.id, epoch: epoch})
	}
	targetEpoch, target := cg.targetEpoch, currentTarget[old.id]
	if epoch > cg.targetEpoch {
		all := computeTarget(subs, memberTopics, topics, currentTarget)
		for _, id := range sortedMapKeys(all) {
			if prev, ok := currentTarget[id]; !ok || !prev.equal(all[id]) {
				recs = append(recs, cgRecord{kind: keyConsumerGroupTargetMember, group: g.id, member: id, target: all[id]})
			}
		}
		targetEpoch, target = epoch, all[old.id]
		recs = append(recs, cgRecord{kind: keyConsumerGroupTargetMetadata, group: g.id, epoch: targetEpoch})
	}
	target = orEmptySet(target)

	var owned partSet
	if req.Owned != nil {
		owned = partSet{}
		for _, t := range req.Owned {
			owned[t.TopicID] = append(owned[t.TopicID], t.Partitions...)
		}
		owned.normalize()
	}
	owners := cg.partitionOwners()
	next := old.memberAssignment
	if !old.reconciledTo(targetEpoch) {
		next = reconcile(old.memberAssignment, targetEpoch, target, owned, func(k tidp) bool {
			o, ok := owners[k]
			return ok && o != old.id
		})
	}
	if isNew || !next.equal(old.memberAssignment) {
		recs = append(recs, cgRecord{kind: keyConsumerGroupCurrentMember, group: g.id, member: old.id, current: next})
	}

	// What the member is answered, once the records (if any) are applied.
	answer := func() ConsumerHeartbeatResult {
		m := cg.members[old.id]
		if len(recs) > 0 {
			c.log.Debug("consumer group heartbeat", slog.String("group", g.id), slog.String("member", m.id),
				slog.Int("group.epoch", int(cg.epoch)), slog.Int("member.epoch", int(m.epoch)), slog.String("state", m.state.String()))
		}
		c.scheduleConsumerSession(g, m)
		if m.state == memberUnrevoked && (old.state != memberUnrevoked || old.epoch != m.epoch || isNew) {
			c.scheduleRevocation(g, m)
		} else if m.state != memberUnrevoked && m.revokeTimer != nil {
			m.revokeTimer.Stop()
			m.revokeSeq++
		}
		out := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
		full := req.MemberEpoch == 0 ||
			(req.RebalanceTimeoutMs != -1 && (req.SubscribedTopics != nil || req.SubscribedRegex != nil) && req.Owned != nil)
		if full || !m.assigned.equal(old.assigned) {
			out.Assignment = []TopicPartitionsByID{}
			for _, id := range sortedKeys(m.assigned) {
				out.Assignment = append(out.Assignment, TopicPartitionsByID{TopicID: id, Partitions: slices.Clone(m.assigned[id])})
			}
		}
		return out
	}
	if len(recs) == 0 && !classicTombstone {
		return answer(), nil
	}
	if g.consumerWrite != nil {
		return ConsumerHeartbeatResult{}, g.consumerWrite
	}
	out := make([]Record, 0, len(recs)+1)
	if classicTombstone {
		out = append(out, groupTombstone(g.id))
	}
	for _, r := range recs {
		out = append(out, r.encode())
	}
	kind := consumerWrite
	if g.consumer == nil {
		kind = barrierWrite // the group becomes a consumer group
	}
	var result ConsumerHeartbeatResult
	w, err := c.write(g, out, kind, func(err error) {
		switch {
		case err != nil:
			c.log.Warn("store consumer group heartbeat", slog.String("group", g.id), slog.String("member", old.id), slog.Any("err", err))
			result = hbFail(storeError(err), "%v", err)
			return
		case g.state == Dead:
			result = hbFail(kerr.NotCoordinator, "The coordinator of group %s moved.", g.id)
			return
		}
		if g.consumer == nil {
			g.clearMetadata(c.clock.Now())
			g.consumer = cg
		}
		for _, r := range recs {
			cg.apply(r)
		}
		g.syncConsumerState(c.clock.Now())
		result = answer()
	})
	if err != nil {
		c.log.Warn("store consumer group heartbeat", slog.String("group", g.id), slog.String("member", old.id), slog.Any("err", err))
		return hbFail(storeError(err), "%v", err), nil
	}
	c.wait(ctx, g, w)
	return result, nil
}

// resolveMember finds (or, joining, makes) the member a heartbeat is
// from, applying Kafka's fencing rules. The member returned is a copy:
// nothing changes before the records are written.
//
// It returns the member, whether it is new, and the static member it
// replaces (if any).
func (c *Coordinator) resolveMember(cg *consumerGroup, req ConsumerHeartbeatRequest) (cmember, bool, *cmember, *ConsumerHeartbeatResult) {
	fail := func(err *kerr.Error, format string, args ...any) (cmember, bool, *cmember, *ConsumerHeartbeatResult) {
		r := hbFail(err, format, args...)
		return cmember{}, false, nil, &r
	}
	fresh := cmember{id: req.MemberID, memberAssignment: newMemberAssignment()}
	instance := deref(req.InstanceID)
	if instance == "" {
		m := cg.members[req.MemberID]
		switch {
		case m == nil && req.MemberEpoch == 0:
			return fresh, true, nil, nil
		case m == nil:
			return fail(kerr.UnknownMemberID, "Member %s is not a member of group.", req.MemberID)
		case req.MemberEpoch == 0:
			// A rejoin under the same id (it lost a response): the
			// member is taken back in place and told its assignment.
			return copyMember(m), false, nil, nil
		}
		if r := checkMemberEpoch(m, req); r != nil {
			return cmember{}, false, nil, r
		}
		return copyMember(m), false, nil, nil
	}
	existing := cg.members[cg.static[instance]]
	if req.MemberEpoch == 0 {
		switch {
		case existing == nil:
			return fresh, true, nil, nil
		case existing.epoch != staticLeaveEpoch:
			return fail(kerr.UnreleasedInstanceID, "Static member %s with instance id %s is not released yet.", existing.id, instance)
		}
		// A restarted static member takes over its predecessor's place
		// and assignment under its new member id.
		fresh.memberAssignment = existing.memberAssignment.clone()
		fresh.epoch, fresh.prevEpoch = 0, 0
		fresh.sub = existing.sub
		return fresh, true, existing, nil
	}
	switch {
	case existing == nil:
		return fail(kerr.UnknownMemberID, "Instance id %s is unknown.", instance)
	case existing.id != req.MemberID:
		return fail(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, instance, existing.id)
	}
	if r := checkMemberEpoch(existing, req); r != nil {
		return cmember{}, false, nil, r
	}
	return copyMember(existing), false, nil, nil
}

// checkMemberEpoch: a member must send its current epoch, or its
// previous one if it lost the response that bumped it (and then owns no
// more than it is assigned).
func checkMemberEpoch(m *cmember, req ConsumerHeartbeatRequest) *ConsumerHeartbeatResult {
	fenced := func() *ConsumerHeartbeatResult {
		r := hbFail(kerr.FencedMemberEpoch, "The consumer group member has a member epoch (%d) other than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
		return &r
	}
	switch {
	case req.MemberEpoch > m.epoch:
		return fenced()
	case req.MemberEpoch < m.epoch:
		if req.MemberEpoch != m.prevEpoch || req.Owned == nil {
			return fenced()
		}
		for _, t := range req.Owned {
			for _, p := range t.Partitions {
				if !m.assigned.has(t.TopicID, p) {
					return fenced()
				}
			}
		}
	}
	return nil
}

func copyMember(m *cmember) cmember {
	return cmember{id: m.id, sub: m.sub, memberAssignment: m.memberAssignment.clone()}
}

// updatedSub applies a heartbeat's non-null fields to the subscription.
func updatedSub(m cmember, req ConsumerHeartbeatRequest) memberSub {
	s := m.sub
	s.clientID, s.clientHost = req.ClientID, req.ClientHost
	if req.InstanceID != nil {
		s.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		s.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMs >= 0 {
		s.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMs) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		s.assignor = *req.ServerAssignor
	}
	if req.SubscribedTopics != nil {
		s.topics = slices.Clone(req.SubscribedTopics)
		slices.Sort(s.topics)
		s.topics = slices.Compact(s.topics)
		if s.topics == nil {
			s.topics = []string{}
		}
	}
	if req.SubscribedRegex != nil {
		s.regex = *req.SubscribedRegex
	}
	return s
}

// subs is every member's subscription, keyed by member id.
func (cg *consumerGroup) subs() map[string]memberSub {
	out := make(map[string]memberSub, len(cg.members)+1)
	for id, m := range cg.members {
		out[id] = m.sub
	}
	return out
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
