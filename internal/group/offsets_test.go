package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func commit(e *env, req CommitRequest) []error { return e.c.CommitOffsets(context.Background(), req) }

func fetchOne(t *testing.T, e *env, group, topic string, p int32) FetchedOffset {
	t.Helper()
	out, err := e.c.FetchOffsets(group, []TopicPartitions{{Topic: topic, Partitions: []int32{p}}})
	if err != nil || len(out) != 1 {
		t.Fatalf("fetch: %v %v", out, err)
	}
	return out[0]
}

func TestSimpleCommitsWithoutMembership(t *testing.T) {
	e := newEnv(t, 0)
	errs := commit(e, CommitRequest{Group: "simple", Generation: -1, Offsets: []CommitOffset{
		{Topic: "t1", Partition: 0, Offset: 10, LeaderEpoch: 2, Metadata: "m"},
		{Topic: "nope", Partition: 0, Offset: 1},
		{Topic: "t1", Partition: 9, Offset: 1},
	}})
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], kerr.UnknownTopicOrPartition)
	wantErr(t, errs[2], kerr.UnknownTopicOrPartition)
	f := fetchOne(t, e, "simple", "t1", 0)
	if f.Offset != 10 || f.LeaderEpoch != 2 || f.Metadata != "m" {
		t.Fatalf("fetched %+v", f)
	}
	if f := fetchOne(t, e, "simple", "nope", 0); f.Offset != -1 {
		t.Fatalf("unknown topic fetched %+v", f)
	}
	if f := fetchOne(t, e, "other", "t1", 0); f.Offset != -1 {
		t.Fatalf("unknown group fetched %+v", f)
	}
	all, _ := e.c.FetchOffsets("simple", nil)
	if len(all) != 1 {
		t.Fatalf("all offsets %+v", all)
	}
	ls := e.c.ListGroups(nil)
	if len(ls) != 1 || ls[0].Group != "simple" || ls[0].State != Empty || ls[0].ProtocolType != "" {
		t.Fatalf("list %+v", ls)
	}
	// Too much metadata.
	big := make([]byte, 5000)
	errs = commit(e, CommitRequest{Group: "simple", Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 1, Offset: 1, Metadata: string(big)}}})
	wantErr(t, errs[0], kerr.OffsetMetadataTooLarge)
}

func TestCommitRulesForGroupMembers(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2")
	off := func(o int64) []CommitOffset { return []CommitOffset{{Topic: "t1", Partition: 1, Offset: o}} }
	records := e.log.count(0)

	cases := []struct {
		name string
		req  CommitRequest
		want *kerr.Error
	}{
		{"outsider into a group with members", CommitRequest{Group: "g", Generation: -1, Offsets: off(1)}, kerr.UnknownMemberID},
		{"unknown member", CommitRequest{Group: "g", MemberID: "ghost", Generation: gen, Offsets: off(2)}, kerr.UnknownMemberID},
		{"old generation", CommitRequest{Group: "g", MemberID: ids[1], Generation: gen - 1, Offsets: off(3)}, kerr.IllegalGeneration},
		{"generation of a missing group", CommitRequest{Group: "missing", MemberID: "m", Generation: 3, Offsets: off(4)}, kerr.IllegalGeneration},
	}
	for _, tc := range cases {
		errs := commit(e, tc.req)
		if !errors.Is(errs[0], tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, errs[0], tc.want)
		}
	}
	if f := fetchOne(t, e, "g", "t1", 1); f.Offset != -1 {
		t.Fatalf("refused commit stored: %+v", f)
	}
	if n := e.log.count(0); n != records {
		t.Fatalf("refused commits wrote %d records", n-records)
	}
	if ls := e.c.ListGroups(nil); len(ls) != 1 {
		t.Fatalf("a refused commit created a group: %+v", ls)
	}
	wantErr(t, commit(e, CommitRequest{Group: "g", MemberID: ids[1], Generation: gen, Offsets: off(7)})[0], nil)
	if f := fetchOne(t, e, "g", "t1", 1); f.Offset != 7 {
		t.Fatalf("fetched %+v", f)
	}

	// During PreparingRebalance the current generation may still commit
	// (cooperative consumers keep their partitions across the rebalance).
	j := e.joinAsync(joinReq("g", ids[0], "c1", "cooperative-sticky", "range"))
	j.waiting(t)
	wantErr(t, commit(e, CommitRequest{Group: "g", MemberID: ids[1], Generation: gen, Offsets: off(8)})[0], nil)

	// A failed write stores nothing.
	e.log.mu.Lock()
	e.log.failErr = errors.New("disk on fire")
	e.log.mu.Unlock()
	wantErr(t, commit(e, CommitRequest{Group: "g", MemberID: ids[1], Generation: gen, Offsets: off(9)})[0], kerr.CoordinatorNotAvailable)
	if f := fetchOne(t, e, "g", "t1", 1); f.Offset != 8 {
		t.Fatalf("failed commit visible: %+v", f)
	}
}

func TestEmptyGroupAcceptsSimpleCommits(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, _ := e.stableGroup("g", "c1")
	e.c.Leave("g", []LeavingMember{{MemberID: ids[0]}})
	wantErr(t, commit(e, CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{{Topic: "t2", Partition: 1, Offset: 3}}})[0], nil)
	// But not from the member that left.
	wantErr(t, commit(e, CommitRequest{Group: "g", MemberID: ids[0], Generation: 1, Offsets: []CommitOffset{{Topic: "t2", Partition: 1, Offset: 4}}})[0], kerr.UnknownMemberID)
}

func TestDeleteGroupsAndOffsets(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1")
	commit(e, CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5}, {Topic: "t2", Partition: 0, Offset: 6}}})
	errs := e.c.DeleteGroups(context.Background(), []string{"g", "missing"})
	wantErr(t, errs[0], kerr.NonEmptyGroup)
	wantErr(t, errs[1], kerr.GroupIDNotFound)

	// OffsetDelete: topic t1 is subscribed (consumer protocol metadata).
	e2 := newEnv(t, time.Second)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t1"}
	req := joinReq("cg", "", "c1")
	req.Protocols = []Protocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	j := e2.joinAsync(req)
	e2.clock.Advance(2 * time.Second)
	r := j.done(t)
	e2.syncAsync(SyncRequest{Group: "cg", MemberID: r.MemberID, Generation: r.Generation, Assignments: map[string][]byte{}}).done(t)
	commit(e2, CommitRequest{Group: "cg", MemberID: r.MemberID, Generation: r.Generation, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5}, {Topic: "t2", Partition: 0, Offset: 6}}})
	perr, err := e2.c.DeleteOffsets(context.Background(), "cg", []TopicPartitions{{Topic: "t1", Partitions: []int32{0}}, {Topic: "t2", Partitions: []int32{0}}})
	wantErr(t, err, nil)
	wantErr(t, perr[0][0], kerr.GroupSubscribedToTopic)
	wantErr(t, perr[1][0], nil)
	if f := fetchOne(t, e2, "cg", "t2", 0); f.Offset != -1 {
		t.Fatalf("deleted offset still there: %+v", f)
	}
	if f := fetchOne(t, e2, "cg", "t1", 0); f.Offset != 5 {
		t.Fatalf("subscribed offset deleted: %+v", f)
	}
	_, err = e2.c.DeleteOffsets(context.Background(), "nosuch", []TopicPartitions{{Topic: "t1", Partitions: []int32{0}}})
	wantErr(t, err, kerr.GroupIDNotFound)

	// Once empty, the group can be deleted, and stays deleted after reload.
	e.c.Leave("g", []LeavingMember{{MemberID: ids[0]}})
	wantErr(t, e.c.DeleteGroups(context.Background(), []string{"g"})[0], nil)
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != -1 {
		t.Fatalf("offset survived delete: %+v", f)
	}
	e = e.reopen()
	if ls := e.c.ListGroups(nil); len(ls) != 0 {
		t.Fatalf("deleted group back after reload: %+v", ls)
	}
}

func TestOffsetExpiry(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("active", "c1")
	commit(e, CommitRequest{Group: "active", MemberID: ids[0], Generation: gen, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 1}}})
	commit(e, CommitRequest{Group: "simple", Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 2}}})
	withRetention := CommitRequest{Group: "short", Generation: -1, Retention: time.Hour, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 3}}}
	commit(e, withRetention)

	heartbeat := func() {
		wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "active", MemberID: ids[0], Generation: gen}), nil)
	}
	for i := 0; i < 400; i++ { // a bit over an hour, heartbeating
		e.clock.Advance(9 * time.Second)
		heartbeat()
	}
	if n := e.c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d, want 1 (the commit with its own retention)", n)
	}
	if f := fetchOne(t, e, "short", "t1", 0); f.Offset != -1 {
		t.Fatalf("%+v", f)
	}
	// A week later the simple group's commit expires; the stable group's stays.
	for i := 0; i < 7*24*400; i++ {
		e.clock.Advance(9 * time.Second)
		heartbeat()
	}
	if n := e.c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if f := fetchOne(t, e, "active", "t1", 0); f.Offset != 1 {
		t.Fatalf("stable group's offset expired: %+v", f)
	}
	for _, l := range e.c.ListGroups(nil) {
		if l.Group == "simple" || l.Group == "short" {
			t.Fatalf("group %s should be gone", l.Group)
		}
	}
	// Once the group empties, its offsets live for the retention from then.
	e.c.Leave("active", []LeavingMember{{MemberID: ids[0]}})
	e.clock.Advance(6 * 24 * time.Hour)
	if n := e.c.ExpireOffsets(); n != 0 {
		t.Fatalf("expired %d too early", n)
	}
	e.clock.Advance(24 * time.Hour)
	if n := e.c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if ls := e.c.ListGroups(nil); len(ls) != 0 {
		t.Fatalf("groups left: %+v", ls)
	}
}
