package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJoinMemberIDRequiredThenRebalance(t *testing.T) {
	e := newEnv(t, 0)
	req := joinReq("g", "", "c1")
	req.RequireKnownMemberID = true
	r := e.joinAsync(req).done(t)
	wantKerr(t, r.Err, kerr.MemberIDRequired)
	if r.MemberID == "" || r.MemberID[:3] != "c1-" {
		t.Fatalf("member id %q", r.MemberID)
	}
	req.MemberID = r.MemberID
	r = e.joinAsync(req).done(t)
	wantKerr(t, r.Err, nil)
	if r.Generation != 1 || r.Leader != req.MemberID || r.Protocol != "range" || r.ProtocolType != "consumer" || len(r.Members) != 1 {
		t.Fatalf("join result %+v", r)
	}
	if string(r.Members[0].Metadata) != "c1:range" {
		t.Fatalf("leader sees metadata %q", r.Members[0].Metadata)
	}
	s := e.syncAsync(SyncRequest{Group: "g", MemberID: req.MemberID, Generation: 1, Assignments: map[string][]byte{req.MemberID: []byte("a")}}).done(t)
	wantKerr(t, s.Err, nil)
	if string(s.Assignment) != "a" || s.Protocol != "range" {
		t.Fatalf("sync %+v", s)
	}
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: req.MemberID, Generation: 1}), nil)
	d, _ := e.c.DescribeGroup("g")
	if d.State != Stable || len(d.Members) != 1 || string(d.Members[0].Assignment) != "a" {
		t.Fatalf("describe %+v", d)
	}
}

func TestPendingMemberIDExpires(t *testing.T) {
	e := newEnv(t, 0)
	req := joinReq("g", "", "c1")
	req.RequireKnownMemberID = true
	r := e.joinAsync(req).done(t)
	e.clock.Advance(session + time.Second)
	req.MemberID = r.MemberID
	wantKerr(t, e.joinAsync(req).done(t).Err, kerr.UnknownMemberID)
	if ls := e.c.ListGroups(nil); len(ls) != 0 {
		t.Fatalf("groups left behind: %+v", ls)
	}
}

func TestInitialRebalanceDelayGathersMembers(t *testing.T) {
	e := newEnv(t, 3*time.Second)
	j1 := e.joinAsync(joinReq("g", "", "c1"))
	e.clock.Advance(2 * time.Second)
	j2 := e.joinAsync(joinReq("g", "", "c2"))
	e.clock.Advance(1 * time.Second) // first delay over; a member arrived: extend
	j1.waiting(t)
	j2.waiting(t)
	e.clock.Advance(3 * time.Second)
	r1, r2 := j1.done(t), j2.done(t)
	if r1.Generation != 1 || r2.Generation != 1 || r1.Leader != r1.MemberID || r2.Leader != r1.MemberID {
		t.Fatalf("results %+v %+v", r1, r2)
	}
	if len(r1.Members) != 2 || len(r2.Members) != 0 {
		t.Fatalf("members: leader %d follower %d", len(r1.Members), len(r2.Members))
	}
}

func TestInitialDelayBoundedByRebalanceTimeout(t *testing.T) {
	e := newEnv(t, 3*time.Second)
	req := joinReq("g", "", "c0")
	req.RebalanceTimeout = 7 * time.Second
	first := e.joinAsync(req)
	for i := 0; i < 5; i++ {
		e.joinAsync(joinReq("g", "", "c"))
		e.clock.Advance(2 * time.Second)
	}
	// Members kept arriving, but the delays stop at the rebalance timeout.
	if r := first.done(t); r.Err != nil || r.Generation != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestProtocolSelectionAndInconsistentProtocol(t *testing.T) {
	e := newEnv(t, time.Second)
	j1 := e.joinAsync(joinReq("g", "", "c1", "roundrobin", "range"))
	j2 := e.joinAsync(joinReq("g", "", "c2", "range", "sticky"))
	j3 := e.joinAsync(joinReq("g", "", "c3", "range", "roundrobin"))
	bad := e.joinAsync(joinReq("g", "", "c4", "sticky-only"))
	wantKerr(t, bad.done(t).Err, kerr.InconsistentGroupProtocol)
	wrongType := joinReq("g", "", "c5")
	wrongType.ProtocolType = "connect"
	wantKerr(t, e.joinAsync(wrongType).done(t).Err, kerr.InconsistentGroupProtocol)
	e.clock.Advance(3 * time.Second)
	// Common protocols: range (c2, c3, c1 second choice); votes: range 2, roundrobin 1.
	for _, j := range []*pendingJoin{j1, j2, j3} {
		if r := j.done(t); r.Protocol != "range" {
			t.Fatalf("protocol %q", r.Protocol)
		}
	}
}

func TestInvalidSessionTimeoutAndGroupID(t *testing.T) {
	e := newEnv(t, 0)
	req := joinReq("g", "", "c")
	req.SessionTimeout = time.Second
	wantKerr(t, e.joinAsync(req).done(t).Err, kerr.InvalidSessionTimeout)
	req.SessionTimeout = time.Hour
	wantKerr(t, e.joinAsync(req).done(t).Err, kerr.InvalidSessionTimeout)
	wantKerr(t, e.joinAsync(joinReq("", "", "c")).done(t).Err, kerr.InvalidGroupID)
	wantKerr(t, e.joinAsync(joinReq("g", "nobody", "c")).done(t).Err, kerr.UnknownMemberID)
}

func TestSessionTimeoutRemovesMemberAndRebalances(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2")
	// c1 keeps heartbeating, c2 goes silent.
	for i := 0; i < 3; i++ {
		e.clock.Advance(3 * time.Second)
		wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), nil)
	}
	e.clock.Advance(2 * time.Second) // 11 s after its sync: c2's 10 s session is over
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), kerr.RebalanceInProgress)
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[1], Generation: gen}), kerr.UnknownMemberID)
	r := e.joinAsync(joinReq("g", ids[0], "c1")).done(t)
	if r.Generation != gen+1 || len(r.Members) != 1 || r.Leader != ids[0] {
		t.Fatalf("rejoin %+v", r)
	}
	// The old generation is fenced everywhere.
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), kerr.IllegalGeneration)
	wantKerr(t, e.syncAsync(SyncRequest{Group: "g", MemberID: ids[0], Generation: gen}).done(t).Err, kerr.IllegalGeneration)
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2", "c3")
	// c3 triggers a rebalance by rejoining with new metadata (as a
	// cooperative consumer does after revoking partitions).
	req := joinReq("g", ids[2], "c3", "range", "cooperative-sticky")
	j3 := e.joinAsync(req)
	j3.waiting(t)
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), kerr.RebalanceInProgress)
	j1 := e.joinAsync(joinReq("g", ids[0], "c1"))
	// c2 never rejoins but keeps heartbeating; heartbeats do not save it.
	for i := 0; i < 10; i++ {
		e.clock.Advance(3 * time.Second)
		_ = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[1], Generation: gen})
		_ = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen})
	}
	r1, r3 := j1.done(t), j3.done(t)
	if r1.Generation != gen+1 || r3.Generation != gen+1 || len(r1.Members) != 2 {
		t.Fatalf("after timeout: %+v %+v", r1, r3)
	}
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[1], Generation: gen}), kerr.UnknownMemberID)
}

func TestLeaderRejoinWhenStableRebalancesFollowerRejoinDoesNot(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2")
	r := e.joinAsync(joinReq("g", ids[1], "c2")).done(t)
	if r.Err != nil || r.Generation != gen || r.Leader != ids[0] {
		t.Fatalf("follower rejoin %+v", r)
	}
	d, _ := e.c.DescribeGroup("g")
	if d.State != Stable {
		t.Fatalf("state %v", d.State)
	}
	j := e.joinAsync(joinReq("g", ids[0], "c1"))
	j.waiting(t)
	if d, _ := e.c.DescribeGroup("g"); d.State != PreparingRebalance {
		t.Fatalf("state %v", d.State)
	}
}

func TestSyncWaitsForLeaderAndRebalanceCancelsIt(t *testing.T) {
	e := newEnv(t, time.Second)
	j1 := e.joinAsync(joinReq("g", "", "c1"))
	j2 := e.joinAsync(joinReq("g", "", "c2"))
	e.clock.Advance(3 * time.Second)
	r1, r2 := j1.done(t), j2.done(t)
	s2 := e.syncAsync(SyncRequest{Group: "g", MemberID: r2.MemberID, Generation: r2.Generation})
	s2.waiting(t)
	// A commit now is refused: the generation's assignment is not out yet.
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", MemberID: r2.MemberID, Generation: r2.Generation,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 1}}})
	wantErr(t, errs[0], kerr.RebalanceInProgress)
	// A third member arrives before the leader syncs.
	j3 := e.joinAsync(joinReq("g", "", "c3"))
	wantKerr(t, s2.done(t).Err, kerr.RebalanceInProgress)
	j3.waiting(t)
	wantKerr(t, e.syncAsync(SyncRequest{Group: "g", MemberID: r1.MemberID, Generation: r1.Generation}).done(t).Err, kerr.RebalanceInProgress)
}

func TestLeaveGroup(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2", "c3")
	errs, err := e.c.Leave("g", []LeavingMember{{MemberID: ids[0]}, {MemberID: "ghost"}})
	wantErr(t, err, nil)
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], kerr.UnknownMemberID)
	// The leader left: the rebalance elects a new one among the rejoined.
	j2 := e.joinAsync(joinReq("g", ids[1], "c2"))
	j3 := e.joinAsync(joinReq("g", ids[2], "c3"))
	r2, r3 := j2.done(t), j3.done(t)
	if r2.Generation != gen+1 || r2.Leader != ids[1] || r3.Leader != ids[1] {
		t.Fatalf("after leave %+v %+v", r2, r3)
	}
	errs, _ = e.c.Leave("g", []LeavingMember{{MemberID: ids[1]}, {MemberID: ids[2]}})
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], nil)
	d, _ := e.c.DescribeGroup("g")
	if d.State != Empty || len(d.Members) != 0 {
		t.Fatalf("describe %+v", d)
	}
	errs, err = e.c.Leave("nosuch", []LeavingMember{{MemberID: "x"}})
	wantErr(t, err, nil)
	wantErr(t, errs[0], kerr.UnknownMemberID)
}

func TestStaticMemberRejoinKeepsAssignmentAndFencesOldID(t *testing.T) {
	e := newEnv(t, time.Second)
	a := joinReq("g", "", "c1")
	a.InstanceID = "inst-1"
	b := joinReq("g", "", "c2")
	b.InstanceID = "inst-2"
	b.RequireKnownMemberID = true // static members skip MEMBER_ID_REQUIRED
	ja, jb := e.joinAsync(a), e.joinAsync(b)
	e.clock.Advance(3 * time.Second)
	ra, rb := ja.done(t), jb.done(t)
	wantKerr(t, rb.Err, nil)
	gen := ra.Generation
	sb := e.syncAsync(SyncRequest{Group: "g", MemberID: rb.MemberID, InstanceID: "inst-2", Generation: gen})
	e.syncAsync(SyncRequest{Group: "g", MemberID: ra.MemberID, InstanceID: "inst-1", Generation: gen,
		Assignments: map[string][]byte{ra.MemberID: []byte("A"), rb.MemberID: []byte("B")}}).done(t)
	sb.done(t)

	// inst-2 restarts: a new member id, same instance id; no rebalance.
	nb := e.joinAsync(b).done(t)
	wantKerr(t, nb.Err, nil)
	if nb.MemberID == rb.MemberID || nb.Generation != gen || nb.SkipAssignment {
		t.Fatalf("static rejoin %+v", nb)
	}
	if d, _ := e.c.DescribeGroup("g"); d.State != Stable {
		t.Fatalf("state %v after static rejoin", d.State)
	}
	s := e.syncAsync(SyncRequest{Group: "g", MemberID: nb.MemberID, InstanceID: "inst-2", Generation: gen}).done(t)
	if string(s.Assignment) != "B" {
		t.Fatalf("assignment %q", s.Assignment)
	}
	// The old incarnation is fenced.
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: rb.MemberID, InstanceID: "inst-2", Generation: gen}), kerr.FencedInstanceID)
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", MemberID: rb.MemberID, InstanceID: "inst-2", Generation: gen,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5}}})
	wantErr(t, errs[0], kerr.FencedInstanceID)
	errs2, _ := e.c.Leave("g", []LeavingMember{{MemberID: rb.MemberID, InstanceID: "inst-2"}})
	wantErr(t, errs2[0], kerr.FencedInstanceID)
	// The restarted static leader is told to skip the assignment.
	na := e.joinAsync(a).done(t)
	if !na.SkipAssignment || na.Leader != na.MemberID || len(na.Members) != 2 || na.Generation != gen {
		t.Fatalf("static leader rejoin %+v", na)
	}
	// Leaving by instance id alone works.
	errs2, _ = e.c.Leave("g", []LeavingMember{{InstanceID: "inst-2"}})
	wantErr(t, errs2[0], nil)
}

func TestStaticMemberSurvivesRebalanceWithoutRejoining(t *testing.T) {
	e := newEnv(t, time.Second)
	a := joinReq("g", "", "c1")
	a.InstanceID = "i1"
	ja, jb := e.joinAsync(a), e.joinAsync(joinReq("g", "", "c2"))
	e.clock.Advance(3 * time.Second)
	ra, rb := ja.done(t), jb.done(t)
	// b rejoins with new metadata; static a does not rejoin before the
	// rebalance timeout and is kept (KIP-345), the join waits for it.
	jb2 := e.joinAsync(joinReq("g", rb.MemberID, "c2", "range", "other"))
	for i := 0; i < 11; i++ {
		e.clock.Advance(3 * time.Second)
		_ = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ra.MemberID, InstanceID: "i1", Generation: ra.Generation})
	}
	r := jb2.done(t)
	if r.Generation != ra.Generation+1 {
		t.Fatalf("%+v", r)
	}
	if d, _ := e.c.DescribeGroup("g"); len(d.Members) != 2 {
		t.Fatalf("static member dropped: %+v", d.Members)
	}
}

func TestResignAnswersWaitersNotCoordinator(t *testing.T) {
	e := newEnv(t, 3*time.Second)
	j := e.joinAsync(joinReq("g", "", "c1"))
	e.c.Resign(0)
	wantKerr(t, j.done(t).Err, kerr.NotCoordinator)
	wantKerr(t, e.joinAsync(joinReq("g", "", "c1")).done(t).Err, kerr.NotCoordinator)
	wantErr(t, e.c.CheckGroup("g"), kerr.NotCoordinator)
}
