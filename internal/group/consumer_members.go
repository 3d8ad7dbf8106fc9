package group

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// resolveSubscriptions turns the members' subscriptions (names and
// regexes) into the topics each member subscribes to and the group's
// subscription metadata: every subscribed topic that exists, with its id
// and partition count. A topic created, deleted or grown changes the
// metadata, which bumps the group epoch and so the target assignment.
func (c *Coordinator) resolveSubscriptions(subs map[string]memberSub) (map[string]map[TopicID]bool, map[string]topicMeta) {
	topics := map[string]topicMeta{}
	perMember := make(map[string]map[TopicID]bool, len(subs))
	tm := c.cfg.TopicMeta
	var all []string
	lookup := func(name string) (topicMeta, bool) {
		if t, ok := topics[name]; ok {
			return t, true
		}
		if tm == nil {
			return topicMeta{}, false
		}
		id, n, ok := tm.TopicByName(name)
		if !ok {
			return topicMeta{}, false
		}
		t := topicMeta{name: name, id: id, partitions: n}
		topics[name] = t
		return t, true
	}
	for id, s := range subs {
		mine := map[TopicID]bool{}
		names := s.topics
		if s.regex != "" && tm != nil {
			re, err := regexp.Compile("^(?:" + s.regex + ")$") // Kafka matches the whole name
			if err == nil {
				if all == nil {
					all = tm.TopicNames()
				}
				for _, n := range all {
					if re.MatchString(n) {
						names = append(slices.Clip(names), n)
					}
				}
			}
		}
		for _, n := range names {
			if t, ok := lookup(n); ok {
				mine[t.id] = true
			}
		}
		perMember[id] = mine
	}
	return perMember, topics
}

func topicsEqual(a, b map[string]topicMeta) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		if b[n] != t {
			return false
		}
	}
	return true
}

// computeTarget runs the group's assignor: the one most members asked
// for, else the default (Kafka's preferred server assignor).
func computeTarget(subs map[string]memberSub, memberTopics map[string]map[TopicID]bool, topics map[string]topicMeta, current map[string]partSet) map[string]partSet {
	votes := map[string]int{}
	for _, s := range subs {
		if s.assignor != "" {
			votes[s.assignor]++
		}
	}
	name := Assignors[0]
	for _, a := range Assignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	byID := make(map[TopicID]topicMeta, len(topics))
	for _, t := range topics {
		byID[t.id] = t
	}
	members := make([]assignMember, 0, len(subs))
	for id := range subs {
		members = append(members, assignMember{id: id, topics: memberTopics[id], current: current[id]})
	}
	return assign(name, members, byID)
}

// preferredAssignor is the assignor computeTarget uses, for describing.
func (cg *consumerGroup) preferredAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.sub.assignor != "" {
			votes[m.sub.assignor]++
		}
	}
	name := Assignors[0]
	for _, a := range Assignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	return name
}

func orEmptySet(s partSet) partSet {
	if s == nil {
		return partSet{}
	}
	return s
}

// removalRecords take a member out of the group, in Kafka's order.
func removalRecords(group, member string) []cgRecord {
	return []cgRecord{
		{kind: keyConsumerGroupCurrentMember, group: group, member: member, tombstone: true},
		{kind: keyConsumerGroupTargetMember, group: group, member: member, tombstone: true},
		{kind: keyConsumerGroupMemberMetadata, group: group, member: member, tombstone: true},
	}
}

// classicEmpty: a classic group without members, which may become a
// consumer group.
func (g *group) classicEmpty() bool {
	return len(g.members) == 0 && len(g.pending) == 0 && (g.state == Empty || g.state == Dead)
}

// hasClassicMetadata: the group has a classic metadata record to delete.
func (g *group) hasClassicMetadata() bool {
	return g.generation > 0 || g.protocolType != ""
}

// syncConsumerState keeps the classic state field meaningful for a
// consumer group (Empty or Stable), for the code shared by both kinds:
// deletion, expiry, offset commits from outside the group.
func (g *group) syncConsumerState(now time.Time) {
	if g.consumer == nil {
		return
	}
	s := Empty
	if len(g.consumer.members) > 0 {
		s = Stable
	}
	if g.state != s {
		g.transition(s, now)
	}
}

// scheduleConsumerSession (re)arms m's session timer.
func (c *Coordinator) scheduleConsumerSession(g *group, m *cmember) {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
	}
	m.sessionSeq++
	seq, id := m.sessionSeq, m.id
	m.sessionTimer = c.clock.AfterFunc(c.cfg.ConsumerSessionTimeout, func() {
		c.onConsumerTimeout(g, id, seq, false, "session timeout")
	})
}

// scheduleRevocation gives m its rebalance timeout to revoke partitions.
func (c *Coordinator) scheduleRevocation(g *group, m *cmember) {
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
	}
	m.revokeSeq++
	seq, id := m.revokeSeq, m.id
	d := m.sub.rebalanceTimeout
	if d <= 0 {
		d = c.cfg.ConsumerSessionTimeout
	}
	m.revokeTimer = c.clock.AfterFunc(d, func() {
		c.onConsumerTimeout(g, id, seq, true, "did not revoke partitions within the rebalance timeout")
	})
}

// onConsumerTimeout fences a member whose session or revocation timer
// fired and is still current. While another change of the group is being
// written it looks again once that is done (the member may have
// heartbeated meanwhile).
func (c *Coordinator) onConsumerTimeout(g *group, id string, seq uint64, revoke bool, reason string) {
	g.mu.Lock()
	defer c.unlockMaybeForget(g)
	if g.state == Dead || g.consumer == nil {
		return
	}
	m := g.consumer.members[id]
	if m == nil {
		return
	}
	if revoke && (m.revokeSeq != seq || m.state != memberUnrevoked) || !revoke && m.sessionSeq != seq {
		return
	}
	if busy := g.consumerWrite; busy != nil {
		go func() {
			<-busy.done
			c.onConsumerTimeout(g, id, seq, revoke, reason)
		}()
		return
	}
	retry := func(err error) {
		// Try again later rather than keep a dead member forever.
		if err != nil && g.state != Dead && g.consumer != nil && g.consumer.members[id] == m {
			c.scheduleConsumerSession(g, m)
		}
	}
	w, err := c.fenceMember(g, m, reason, retry)
	if err != nil {
		retry(err)
		return
	}
	c.waitAsync(g, w)
}

// fenceMember removes m from the group and bumps the group epoch, so
// its partitions are reassigned at the next heartbeat of the others.
// done is called as writeConsumer's is. No other consumer group write of
// g may be in flight.
func (c *Coordinator) fenceMember(g *group, m *cmember, reason string, done func(error)) (*pendingWrite, error) {
	cg := g.consumer
	recs := removalRecords(g.id, m.id)
	subs := cg.subs()
	delete(subs, m.id)
	_, topics := c.resolveSubscriptions(subs)
	if !topicsEqual(topics, cg.topics) {
		recs = append(recs, cgRecord{kind: keyConsumerGroupPartitionMeta, group: g.id, topics: topics})
	}
	recs = append(recs, cgRecord{kind: keyConsumerGroupMetadata, group: g.id, epoch: cg.epoch + 1})
	id := m.id
	w, err := c.writeConsumer(g, recs, func(err error) {
		if err != nil {
			c.log.Warn("remove consumer group member", slog.String("group", g.id), slog.String("member", id), slog.Any("err", err))
		} else if g.state != Dead {
			c.log.Info("member removed from consumer group", slog.String("group", g.id), slog.String("member", id),
				slog.String("reason", reason), slog.Int("group.epoch", int(cg.epoch)))
		}
		done(err)
	})
	if err != nil {
		c.log.Warn("remove consumer group member", slog.String("group", g.id), slog.String("member", id), slog.Any("err", err))
	}
	return w, err
}

// writeConsumer appends consumer group records and, once they are
// committed, applies them; then done gets the write's outcome (see
// write). No other consumer group write of g may be in flight: the
// records are computed from the state as it is.
func (c *Coordinator) writeConsumer(g *group, recs []cgRecord, done func(error)) (*pendingWrite, error) {
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = r.encode()
	}
	cg := g.consumer
	return c.write(g, out, consumerWrite, func(err error) {
		if err == nil && g.state != Dead && g.consumer == cg {
			for _, r := range recs {
				cg.apply(r)
			}
			g.syncConsumerState(c.clock.Now())
		}
		done(err)
	})
}

// consumerLeave handles a heartbeat with epoch -1 (leave) or -2 (a
// static member leaving for a while: it keeps its partitions until its
// session expires or its successor joins).
func (c *Coordinator) consumerLeave(ctx context.Context, req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	// A leave always writes: it waits for the group's state to settle.
	g, err := c.lockGroupIdle(ctx, req.Group, false, false, true)
	if err != nil {
		return hbFail(asKerr(err), "%v", err)
	}
	if g == nil {
		return hbFail(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
	}
	defer c.unlockMaybeForget(g)
	cg := g.consumer
	if cg == nil {
		return hbFail(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	var m *cmember
	if inst := deref(req.InstanceID); inst != "" {
		id, ok := cg.static[inst]
		switch {
		case !ok:
			return hbFail(kerr.UnknownMemberID, "Instance id %s is unknown.", inst)
		case id != req.MemberID:
			return hbFail(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, inst, id)
		}
		m = cg.members[id]
	} else if m = cg.members[req.MemberID]; m == nil {
		return hbFail(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)
	}
	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: req.MemberEpoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
	var result error
	done := func(err error) { result = err }
	var w *pendingWrite
	if req.MemberEpoch == staticLeaveEpoch {
		a := m.memberAssignment.clone()
		a.prevEpoch, a.epoch = a.epoch, staticLeaveEpoch
		rec := cgRecord{kind: keyConsumerGroupCurrentMember, group: g.id, member: m.id, current: a}
		id := m.id
		w, err = c.writeConsumer(g, []cgRecord{rec}, func(err error) {
			if err == nil {
				c.log.Info("static member left consumer group for now", slog.String("group", g.id), slog.String("member", id))
			}
			done(err)
		})
	} else {
		w, err = c.fenceMember(g, m, "left the group", done)
	}
	if err != nil {
		return hbFail(storeError(err), "%v", err)
	}
	c.wait(ctx, g, w)
	if result != nil {
		return hbFail(storeError(result), "%v", result)
	}
	return res
}
