package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// describeEqual compares what two coordinators say of a group.
func describeEqual(t *testing.T, a, b ConsumerGroupDescription) {
	t.Helper()
	if a.State != b.State || a.Epoch != b.Epoch || a.AssignmentEpoch != b.AssignmentEpoch ||
		a.AssignorName != b.AssignorName || len(a.Members) != len(b.Members) {
		t.Fatalf("group differs:\n%+v\n%+v", a, b)
	}
	for i := range a.Members {
		x, y := a.Members[i], b.Members[i]
		if x.MemberID != y.MemberID || x.MemberEpoch != y.MemberEpoch || x.InstanceID != y.InstanceID ||
			x.ClientID != y.ClientID || len(x.Assignment) != len(y.Assignment) || len(x.TargetAssignment) != len(y.TargetAssignment) {
			t.Fatalf("member differs:\n%+v\n%+v", x, y)
		}
		for j := range x.Assignment {
			if x.Assignment[j].Topic != y.Assignment[j].Topic || len(x.Assignment[j].Partitions) != len(y.Assignment[j].Partitions) {
				t.Fatalf("assignment differs:\n%+v\n%+v", x, y)
			}
		}
	}
}

func TestConsumerGroupSurvivesRestart(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1", "t2")
	b, _ := e.join("g", "b", "t1")
	ok(t, a.beat()) // a is mid-revocation when the coordinator restarts
	before := e.describe("g")
	if before.State != cgReconciling {
		t.Fatalf("state %s before restart", before.State)
	}
	ne := e.reopen()
	describeEqual(t, before, ne.describe("g"))
	// The members carry on with the new coordinator, at their epochs.
	a.e, b.e = ne, ne
	settle(t, a, b)
	if d := ne.describe("g"); d.State != cgStable || a.count()+b.count() != 6 {
		t.Fatalf("after restart: %+v a %v b %v", d, a.owned, b.owned)
	}
	// A member that left stays gone after another restart; one that
	// expires while the coordinator is down is removed after its session
	// timeout on the new one.
	ok(t, b.leave())
	ne2 := ne.reopen()
	if d := ne2.describe("g"); len(d.Members) != 1 {
		t.Fatalf("after leave and restart: %+v", d)
	}
	ne2.clock.Advance(cgSession + 1)
	if d := ne2.describe("g"); len(d.Members) != 0 || d.State != cgEmpty {
		t.Fatalf("silent member not expired after restart: %+v", d)
	}
	// The empty group is still there (with its epoch), until deleted.
	ne3 := ne2.reopen()
	if d := ne3.describe("g"); d.State != cgEmpty || d.Epoch == 0 {
		t.Fatalf("empty group after restart: %+v", d)
	}
	errs := ne3.c.DeleteGroups(context.Background(), []string{"g"})
	wantErr(t, errs[0], nil)
	ne4 := ne3.reopen()
	if _, err := ne4.c.DescribeConsumerGroup("g"); err != kerr.GroupIDNotFound {
		t.Fatalf("deleted group after restart: %v", err)
	}
}

func TestConsumerOffsetCommits(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	commit := func(version int16, member string, epoch int32, parts ...int32) []error {
		req := CommitRequest{Group: "g", MemberID: member, Generation: epoch, APIVersion: version}
		for _, p := range parts {
			req.Offsets = append(req.Offsets, CommitOffset{Topic: "t1", Partition: p, Offset: 10, LeaderEpoch: -1})
		}
		return e.c.CommitOffsets(context.Background(), req)
	}
	wantAll := func(errs []error, want *kerr.Error) {
		t.Helper()
		for i, err := range errs {
			if want == nil && err != nil || want != nil && err != want {
				t.Fatalf("commit entry %d: %v, want %v", i, err, want)
			}
		}
	}
	wantAll(commit(9, "a", a.epoch, 0, 1, 2, 3), nil)
	wantAll(commit(8, "a", a.epoch, 0), kerr.UnsupportedVersion)
	wantAll(commit(9, "zz", a.epoch, 0), kerr.UnknownMemberID)
	wantAll(commit(9, "", -1, 0), kerr.UnknownMemberID) // from outside while it has members
	wantAll(commit(9, "a", a.epoch+1, 0), kerr.StaleMemberEpoch)

	// b joins: a moves to a new epoch but keeps partitions it has owned
	// since epoch 1, so a commit still carrying epoch 1 is good for them
	// (KIP-1251) and stale for the partitions a no longer owns.
	b, _ := e.join("g", "b", "t1")
	settle(t, a, b)
	old := int32(1)
	kept := a.owned[tid("t1")]
	var lost []int32
	for _, p := range b.owned[tid("t1")] {
		lost = append(lost, p)
	}
	wantAll(commit(9, "a", old, kept...), nil)
	wantAll(commit(9, "a", old, lost...), kerr.StaleMemberEpoch)
	// b's partitions were given at b's first epoch: an older one is stale.
	wantAll(commit(9, "b", b.epoch-1, b.owned[tid("t1")]...), kerr.StaleMemberEpoch)

	// Offsets survive a restart, and an empty group accepts commits from
	// outside again.
	ok(t, a.leave())
	ok(t, b.leave())
	wantAll(commit(2, "", -1, 0), nil)
	ne := e.reopen()
	got, err := ne.c.FetchOffsetsAs("g", nil, -1, nil)
	if err != nil || len(got) != 4 {
		t.Fatalf("offsets after restart: %v %v", got, err)
	}
}

func TestConsumerOffsetFetchChecksMember(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	id := "a"
	if _, err := e.c.FetchOffsetsAs("g", &id, a.epoch, nil); err != nil {
		t.Fatalf("current epoch: %v", err)
	}
	if _, err := e.c.FetchOffsetsAs("g", &id, a.epoch+1, nil); err != kerr.StaleMemberEpoch {
		t.Fatalf("wrong epoch: %v", err)
	}
	other := "zz"
	if _, err := e.c.FetchOffsetsAs("g", &other, 1, nil); err != kerr.UnknownMemberID {
		t.Fatalf("unknown member: %v", err)
	}
	if _, err := e.c.FetchOffsetsAs("g", nil, -1, nil); err != nil {
		t.Fatalf("admin fetch: %v", err)
	}
}

func TestClassicAndConsumerGroupsDoNotMix(t *testing.T) {
	e := newCEnv(t)
	// A consumer group with a member refuses classic joins ...
	a, _ := e.join("cg", "a", "t1")
	jr := e.joinAsync(joinReq("cg", "", "classic"))
	if r := jr.done(t); r.Err != kerr.GroupIDNotFound {
		t.Fatalf("classic join to a consumer group: %v", r.Err)
	}
	// ... and a classic group with members refuses consumer joins.
	e.env.stableGroup("classic", "c1")
	_, r := e.join("classic", "x", "t1")
	wantCode(t, r, kerr.GroupIDNotFound)
	if ls := e.c.ListGroups(nil); len(ls) != 2 || ls[0].Type != "consumer" || ls[1].Type != "classic" ||
		ls[0].StateName != cgStable || ls[0].ProtocolType != "consumer" {
		t.Fatalf("listing %+v", ls)
	}
	if ls := e.c.ListGroups([]string{"stable"}); len(ls) != 2 {
		t.Fatalf("stable filter %+v", ls)
	}

	// Once the consumer group is empty, a classic member converts it,
	// keeping its offsets.
	e.c.CommitOffsets(context.Background(), CommitRequest{Group: "cg", MemberID: "a", Generation: a.epoch, APIVersion: 9,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5, LeaderEpoch: -1}}})
	ok(t, a.leave())
	jr = e.joinAsync(joinReq("cg", "", "classic"))
	if r := jr.done(t); r.Err != nil {
		t.Fatalf("classic join to an empty consumer group: %v", r.Err)
	}
	if _, err := e.c.DescribeConsumerGroup("cg"); err != kerr.GroupIDNotFound {
		t.Fatalf("converted group still described as consumer group: %v", err)
	}
	ne := e.reopen()
	if d, err := ne.c.DescribeGroup("cg"); err != nil || d.State == Dead {
		t.Fatalf("converted group after restart: %+v %v", d, err)
	}
	if _, err := ne.c.DescribeConsumerGroup("cg"); err != kerr.GroupIDNotFound {
		t.Fatalf("converted group replayed as consumer group: %v", err)
	}
	offs, _ := ne.c.FetchOffsets("cg", nil)
	if len(offs) != 1 || offs[0].Offset != 5 {
		t.Fatalf("offsets after conversion: %+v", offs)
	}
}

func TestConsumerGroupDescribedAsClassic(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	b, _ := e.join("g", "b", "t1")
	settle(t, a, b)
	d, err := e.c.DescribeGroup("g")
	if err != nil {
		t.Fatal(err)
	}
	if d.StateName != cgStable || d.ProtocolType != "consumer" || d.Protocol != AssignorUniform || len(d.Members) != 2 {
		t.Fatalf("described %+v", d)
	}
	for _, m := range d.Members {
		if len(m.Assignment) == 0 || len(m.Metadata) == 0 {
			t.Fatalf("member %+v without consumer protocol metadata/assignment", m)
		}
	}
}

func TestEmptyClassicGroupBecomesConsumerGroup(t *testing.T) {
	e := newCEnv(t)
	// A classic group that had a generation and offsets, now empty.
	ids, gen := e.env.stableGroup("g", "c1")
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", MemberID: ids[0], Generation: gen,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 1, Offset: 42, LeaderEpoch: -1}}})
	wantErr(t, errs[0], nil)
	lerrs, err := e.c.Leave("g", []LeavingMember{{MemberID: ids[0]}})
	wantErr(t, err, nil)
	wantErr(t, lerrs[0], nil)
	if d, _ := e.c.DescribeGroup("g"); d.State != Empty || d.ProtocolType != "consumer" {
		t.Fatalf("classic group before conversion: %+v", d)
	}
	a, r := e.join("g", "a", "t1")
	ok(t, r)
	if a.count() != 4 {
		t.Fatalf("member of the converted group owns %v", a.owned)
	}
	// After a restart the group is a consumer group (the classic record
	// was deleted by a tombstone) and the offsets are still there.
	ne := e.reopen()
	if d := ne.describe("g"); len(d.Members) != 1 || d.Members[0].MemberID != "a" {
		t.Fatalf("after restart: %+v", d)
	}
	offs, err := ne.c.FetchOffsets("g", nil)
	if err != nil || len(offs) != 1 || offs[0].Offset != 42 {
		t.Fatalf("offsets after conversion and restart: %+v %v", offs, err)
	}
	if ls := ne.c.ListGroups(nil); len(ls) != 1 || ls[0].Type != "consumer" {
		t.Fatalf("listing %+v", ls)
	}
}
