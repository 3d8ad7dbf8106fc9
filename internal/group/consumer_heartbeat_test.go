package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestConsumerJoinAndShare(t *testing.T) {
	e := newCEnv(t)
	a, r := e.join("g", "a", "t1")
	ok(t, r)
	if r.MemberEpoch != 1 || a.count() != 4 {
		t.Fatalf("first member: epoch %d, %d partitions; want epoch 1, 4", r.MemberEpoch, a.count())
	}
	if r.HeartbeatInterval != cgHeartbeat || r.MemberID != "a" {
		t.Fatalf("answer %+v", r)
	}

	// A second member: the group epoch moves to 2, but b gets nothing a
	// still owns.
	b, r := e.join("g", "b", "t1")
	ok(t, r)
	if r.MemberEpoch != 2 || b.count() != 0 {
		t.Fatalf("second member: epoch %d, %d partitions; want epoch 2, 0", r.MemberEpoch, b.count())
	}
	if d := e.describe("g"); d.State != cgReconciling || d.Epoch != 2 || d.AssignmentEpoch != 2 {
		t.Fatalf("group %+v", d)
	}
	// a is asked to revoke two partitions and stays at epoch 1 until it
	// no longer reports them.
	r = ok(t, a.beat())
	if r.MemberEpoch != 1 || a.count() != 2 {
		t.Fatalf("a after target change: epoch %d, %d partitions", r.MemberEpoch, a.count())
	}
	// b still cannot have them: a has not confirmed.
	ok(t, b.beat())
	if b.count() != 0 {
		t.Fatalf("b got %v before a released it", b.owned)
	}
	r = ok(t, a.beat()) // reports only the two it kept: revocation done
	if r.MemberEpoch != 2 || a.count() != 2 {
		t.Fatalf("a after revoking: epoch %d, %d partitions", r.MemberEpoch, a.count())
	}
	r = ok(t, b.beat())
	if r.MemberEpoch != 2 || b.count() != 2 {
		t.Fatalf("b after release: epoch %d, %d partitions", r.MemberEpoch, b.count())
	}
	noDoubleOwnership(t, a, b)
	if d := e.describe("g"); d.State != cgStable || len(d.Members) != 2 {
		t.Fatalf("group %+v", d)
	}

	// A third member and a settle: 4 partitions over 3 members.
	c, _ := e.join("g", "c", "t1")
	settle(t, a, b, c)
	counts := []int{a.count(), b.count(), c.count()}
	total := counts[0] + counts[1] + counts[2]
	if total != 4 || min(counts[0], counts[1], counts[2]) != 1 || max(counts[0], counts[1], counts[2]) != 2 {
		t.Fatalf("counts %v", counts)
	}
}

func TestConsumerKeepaliveDoesNotConfirmRevocation(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	b, _ := e.join("g", "b", "t1")
	ok(t, a.beat()) // told to revoke
	before := a.epoch
	// A heartbeat that does not report partitions says nothing about
	// the revocation: a stays where it is and b waits.
	r := ok(t, a.keepalive())
	if r.MemberEpoch != before || r.Assignment != nil {
		t.Fatalf("keepalive answer %+v", r)
	}
	ok(t, b.beat())
	if b.count() != 0 {
		t.Fatalf("b got %v while a had not confirmed", b.owned)
	}
}

func TestConsumerLeaveAndSessionExpiry(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	b, _ := e.join("g", "b", "t1")
	c, _ := e.join("g", "c", "t1")
	settle(t, a, b, c)
	epoch := e.describe("g").Epoch

	// c leaves: its partitions go to a and b.
	r := c.leave()
	ok(t, r)
	if r.MemberEpoch != leaveEpoch {
		t.Fatalf("leave answer epoch %d", r.MemberEpoch)
	}
	c.owned = nil
	if d := e.describe("g"); d.Epoch != epoch+1 || len(d.Members) != 2 {
		t.Fatalf("after leave: %+v", d)
	}
	settle(t, a, b)
	if a.count()+b.count() != 4 || a.count() != 2 {
		t.Fatalf("after leave: a %v b %v", a.owned, b.owned)
	}
	// A heartbeat from the member that left is unknown.
	wantCode(t, c.beat(), kerr.UnknownMemberID)

	// b goes silent: after the session timeout it is removed and a gets
	// everything.
	for i := 0; i < 10; i++ {
		e.clock.Advance(cgSession / 8)
		ok(t, a.beat())
	}
	if d := e.describe("g"); len(d.Members) != 1 {
		t.Fatalf("b not expired: %+v", d)
	}
	settle(t, a)
	if a.count() != 4 {
		t.Fatalf("a owns %v after b expired", a.owned)
	}
	wantCode(t, b.beat(), kerr.UnknownMemberID)
}

func TestConsumerRevocationTimeoutFencesMember(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1") // rebalance timeout 30 s
	b, _ := e.join("g", "b", "t1")
	ok(t, a.beat()) // told to revoke two partitions
	// a keeps heartbeating but never lets go.
	stubborn := func() { ok(t, a.keepalive()) }
	for i := 0; i < 3; i++ {
		e.clock.Advance(9 * time.Second)
		stubborn()
		ok(t, b.beat())
	}
	e.clock.Advance(9 * time.Second) // 36 s > 30 s rebalance timeout
	if r := a.keepalive(); r.Err != kerr.UnknownMemberID {
		t.Fatalf("a not fenced after the rebalance timeout: %+v", r)
	}
	settle(t, b)
	if b.count() != 4 {
		t.Fatalf("b owns %v after a was fenced", b.owned)
	}
}

func TestConsumerFencing(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	b, _ := e.join("g", "b", "t1")
	c, _ := e.join("g", "c", "t1")
	settle(t, a, b, c)
	ok(t, c.leave())
	settle(t, a, b)
	if a.epoch < 3 {
		t.Fatalf("a at epoch %d; the test needs 3 or more", a.epoch)
	}

	req := func(epoch int32) ConsumerHeartbeatRequest {
		return ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "a", MemberEpoch: epoch, RebalanceTimeoutMs: -1}
	}
	// A newer epoch than the coordinator's, or an older one that is not
	// the previous: fenced.
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), req(a.epoch+1)), kerr.FencedMemberEpoch)
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), req(a.epoch-2)), kerr.FencedMemberEpoch)
	// The previous epoch with owned partitions within the assignment is
	// a lost response: accepted, and the member learns its epoch.
	r := req(a.epoch - 1)
	for id, ps := range a.owned {
		r.Owned = append(r.Owned, TopicPartitionsByID{TopicID: id, Partitions: ps})
	}
	got := e.c.ConsumerHeartbeat(context.Background(), r)
	ok(t, got)
	if got.MemberEpoch != a.epoch {
		t.Fatalf("lost-response heartbeat answered epoch %d, want %d", got.MemberEpoch, a.epoch)
	}
	// ... but not when it claims partitions it is not assigned.
	r.Owned = append(r.Owned, TopicPartitionsByID{TopicID: tid("t1"), Partitions: []int32{0, 1, 2, 3}})
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), r), kerr.FencedMemberEpoch)

	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "zz", MemberEpoch: 3, RebalanceTimeoutMs: -1}), kerr.UnknownMemberID)
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "nope", MemberID: "zz", MemberEpoch: 3, RebalanceTimeoutMs: -1}), kerr.GroupIDNotFound)
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "zz", MemberEpoch: leaveEpoch, RebalanceTimeoutMs: -1}), kerr.UnknownMemberID)
}

func TestConsumerRequestValidation(t *testing.T) {
	e := newCEnv(t)
	assignor := func(s string) *string { return &s }
	join := func(mod func(*ConsumerHeartbeatRequest)) ConsumerHeartbeatResult {
		r := ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "m", RebalanceTimeoutMs: 30000,
			SubscribedTopics: []string{"t1"}, Owned: []TopicPartitionsByID{}}
		mod(&r)
		return e.c.ConsumerHeartbeat(context.Background(), r)
	}
	cases := []struct {
		name string
		mod  func(*ConsumerHeartbeatRequest)
		want *kerr.Error
	}{
		{"unknown assignor", func(r *ConsumerHeartbeatRequest) { r.ServerAssignor = assignor("roundrobin") }, kerr.UnsupportedAssignor},
		{"v1 without member id", func(r *ConsumerHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"no group", func(r *ConsumerHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *ConsumerHeartbeatRequest) { r.RebalanceTimeoutMs = -1 }, kerr.InvalidRequest},
		{"join owning partitions", func(r *ConsumerHeartbeatRequest) {
			r.Owned = []TopicPartitionsByID{{TopicID: tid("t1"), Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"join with null owned", func(r *ConsumerHeartbeatRequest) { r.Owned = nil }, kerr.InvalidRequest},
		{"join without subscription", func(r *ConsumerHeartbeatRequest) { r.SubscribedTopics = nil }, kerr.InvalidRequest},
		{"epoch below -2", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance", func(r *ConsumerHeartbeatRequest) { r.MemberEpoch = staticLeaveEpoch }, kerr.InvalidRequest},
		{"bad regex", func(r *ConsumerHeartbeatRequest) { r.SubscribedTopics, r.SubscribedRegex = nil, assignor("t(") }, kerr.InvalidRegularExpression},
		{"empty rack", func(r *ConsumerHeartbeatRequest) { r.RackID = assignor("") }, kerr.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, join(tc.mod), tc.want) })
	}
	if _, err := e.c.DescribeConsumerGroup("g"); err != kerr.GroupIDNotFound {
		t.Fatalf("refused joins created the group: %v", err)
	}
	// v0 lets the coordinator name the member.
	r := join(func(r *ConsumerHeartbeatRequest) { r.Version, r.MemberID = 0, "" })
	ok(t, r)
	if len(r.MemberID) != 36 {
		t.Fatalf("generated member id %q", r.MemberID)
	}
	// A known assignor is accepted and becomes the group's.
	ok(t, join(func(r *ConsumerHeartbeatRequest) { r.MemberID, r.ServerAssignor = "m2", assignor("range") }))
	ok(t, join(func(r *ConsumerHeartbeatRequest) { r.MemberID, r.ServerAssignor = "m3", assignor("range") }))
	if d := e.describe("g"); d.AssignorName != AssignorRange {
		t.Fatalf("assignor %q", d.AssignorName)
	}
}

func TestConsumerStaticMembership(t *testing.T) {
	e := newCEnv(t)
	inst := "i1"
	a, _ := e.join("g", "a", "t1")
	s := &cmemberSim{e: e, group: "g", id: "s1", inst: &inst}
	s.apply(ok(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "s1", InstanceID: &inst,
		RebalanceTimeoutMs: 30000, SubscribedTopics: []string{"t1"}, Owned: []TopicPartitionsByID{}})))
	settle(t, a, s)
	owned, epoch := s.owned, e.describe("g").Epoch

	// Another process with the same instance id while s is active.
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "s2", InstanceID: &inst,
		RebalanceTimeoutMs: 30000, SubscribedTopics: []string{"t1"}, Owned: []TopicPartitionsByID{}}), kerr.UnreleasedInstanceID)
	// The instance id under another member id, not joining: fenced.
	wantCode(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "s2", InstanceID: &inst,
		MemberEpoch: s.epoch, RebalanceTimeoutMs: -1}), kerr.FencedInstanceID)

	// s leaves for a restart (-2): it keeps its partitions meanwhile.
	r := ok(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "s1", InstanceID: &inst,
		MemberEpoch: staticLeaveEpoch, RebalanceTimeoutMs: -1}))
	if r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave answered epoch %d", r.MemberEpoch)
	}
	settle(t, a)
	if a.count() != 2 {
		t.Fatalf("a took the partitions of a static member that left for a restart: %v", a.owned)
	}
	// It comes back under a new member id: same partitions, same epoch.
	s2 := &cmemberSim{e: e, group: "g", id: "s2", inst: &inst}
	s2.apply(ok(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "s2", InstanceID: &inst,
		RebalanceTimeoutMs: 30000, SubscribedTopics: []string{"t1"}, Owned: []TopicPartitionsByID{}})))
	if d := e.describe("g"); d.Epoch != epoch || len(d.Members) != 2 {
		t.Fatalf("static rejoin changed the group: %+v", d)
	}
	if s2.count() != len(owned[tid("t1")]) || s2.owned[tid("t1")][0] != owned[tid("t1")][0] {
		t.Fatalf("static member came back with %v, had %v", s2.owned, owned)
	}
	wantCode(t, s.keepalive(), kerr.FencedInstanceID)
}

func TestConsumerNewPartitionsAndTopics(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1", "t3")
	b, _ := e.join("g", "b", "t1", "t3")
	settle(t, a, b)
	if a.count()+b.count() != 4 {
		t.Fatalf("owned %v %v", a.owned, b.owned)
	}
	epoch := e.describe("g").Epoch
	// t3 appears and t1 grows: the next heartbeat notices and the
	// group gets a new target.
	e.meta.set("t3", 2)
	e.meta.set("t1", 6)
	settle(t, a, b)
	if d := e.describe("g"); d.Epoch <= epoch {
		t.Fatalf("group epoch %d did not move past %d", d.Epoch, epoch)
	}
	if a.count() != 4 || b.count() != 4 {
		t.Fatalf("after growth: a %v b %v", a.owned, b.owned)
	}
	// t3 goes away: its partitions are revoked.
	e.meta.set("t3", 0)
	settle(t, a, b)
	if len(a.owned[tid("t3")])+len(b.owned[tid("t3")]) != 0 || a.count()+b.count() != 6 {
		t.Fatalf("after delete: a %v b %v", a.owned, b.owned)
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	e := newCEnv(t)
	re := "t[12]"
	m := &cmemberSim{e: e, group: "g", id: "m"}
	m.apply(ok(t, e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{Version: 1, Group: "g", MemberID: "m",
		RebalanceTimeoutMs: 30000, SubscribedRegex: &re, Owned: []TopicPartitionsByID{}})))
	if m.count() != 6 {
		t.Fatalf("regex member owns %v, want t1 and t2 (6 partitions)", m.owned)
	}
	e.meta.set("t2x", 3) // does not match as a whole name
	settle(t, m)
	if m.count() != 6 {
		t.Fatalf("regex matched a partial name: %v", m.owned)
	}
}
