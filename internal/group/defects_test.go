package group

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A failed write of group state answers as Kafka's coordinator does: a
// lost leadership or a storage failure is NOT_COORDINATOR (the client
// looks the coordinator up again), anything else COORDINATOR_NOT_AVAILABLE.
// The log wraps its errors, so the mapping must look through the wrapping.
func TestStoreErrorSeesWrappedKafkaErrors(t *testing.T) {
	e := newEnv(t, 0)
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{fmt.Errorf("__consumer_offsets-0 is not hosted here: %w", kerr.NotCoordinator), kerr.NotCoordinator},
		{fmt.Errorf("append: %w (%w)", errors.New("not leader"), kerr.NotLeaderForPartition), kerr.NotCoordinator},
		{fmt.Errorf("append: %w", kerr.KafkaStorageError), kerr.NotCoordinator},
		{fmt.Errorf("append: %w", kerr.NotEnoughReplicas), kerr.CoordinatorNotAvailable},
		{errors.New("disk on fire"), kerr.CoordinatorNotAvailable},
	} {
		e.log.mu.Lock()
		e.log.failErr = tc.err
		e.log.mu.Unlock()
		errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "g", Generation: -1,
			Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 1, LeaderEpoch: -1}}})
		if !errors.Is(errs[0], tc.want) {
			t.Errorf("write failed with %q: commit answered %v, want %v", tc.err, errs[0], tc.want)
		}
	}
}

// A commit with a generation to a group that does not exist is a stale
// member: before OffsetCommit v9 Kafka answers ILLEGAL_GENERATION, from
// v9 GROUP_ID_NOT_FOUND (for both group protocols).
func TestCommitToMissingGroupByVersion(t *testing.T) {
	e := newEnv(t, 0)
	for _, tc := range []struct {
		version int16
		want    *kerr.Error
	}{{0, kerr.IllegalGeneration}, {8, kerr.IllegalGeneration}, {9, kerr.GroupIDNotFound}, {10, kerr.GroupIDNotFound}} {
		errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "missing", MemberID: "m", Generation: 3, APIVersion: tc.version,
			Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 1, LeaderEpoch: -1}}})
		if !errors.Is(errs[0], tc.want) {
			t.Errorf("v%d: commit answered %v, want %v", tc.version, errs[0], tc.want)
		}
	}
	if ls := e.c.ListGroups(nil); len(ls) != 0 {
		t.Fatalf("a refused commit created a group: %+v", ls)
	}
}

// Kafka accepts the empty group id where offsets are committed, fetched,
// described and deleted (for backwards compatibility, and so that its
// state can be seen and removed); the group-management APIs refuse it.
func TestEmptyGroupIDForOffsetAPIsOnly(t *testing.T) {
	e := newEnv(t, 0)
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{Group: "", Generation: -1,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 2, Offset: 42, LeaderEpoch: -1}}})
	wantErr(t, errs[0], nil)
	if f := fetchOne(t, e, "", "t1", 2); f.Offset != 42 {
		t.Fatalf("fetched %+v, want offset 42", f)
	}
	all, err := e.c.FetchOffsetsAs("", nil, -1, nil)
	wantErr(t, err, nil)
	if len(all) != 1 || all[0].Offset != 42 {
		t.Fatalf("fetched all %+v", all)
	}
	d, err := e.c.DescribeGroup("")
	wantErr(t, err, nil)
	if d.State != Empty {
		t.Fatalf("described %+v, want Empty", d)
	}

	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "", MemberID: "m", Generation: 1}), kerr.InvalidGroupID)
	wantKerr(t, e.syncAsync(SyncRequest{Group: "", MemberID: "m", Generation: 1}).done(t).Err, kerr.InvalidGroupID)
	_, err = e.c.Leave("", []LeavingMember{{MemberID: "m"}})
	wantErr(t, err, kerr.InvalidGroupID)
	_, err = e.c.DeleteOffsets(context.Background(), "", []TopicPartitions{{Topic: "t1", Partitions: []int32{2}}})
	wantErr(t, err, kerr.InvalidGroupID)

	wantErr(t, e.c.DeleteGroups(context.Background(), []string{""})[0], nil)
	if f := fetchOne(t, e, "", "t1", 2); f.Offset != -1 {
		t.Fatalf("offset of the deleted group still fetched: %+v", f)
	}
}

// joinTwo forms generation 1 of group "g" with members c1 (the leader)
// and c2, both answered, neither synced yet. The env needs an initial
// rebalance delay.
func joinTwo(t *testing.T, e *env) (leader, follower string) {
	t.Helper()
	j1, j2 := e.joinAsync(joinReq("g", "", "c1")), e.joinAsync(joinReq("g", "", "c2"))
	e.clock.Advance(3 * time.Second) // the delay, extended once for c2
	r1, r2 := j1.done(t), j2.done(t)
	wantKerr(t, r1.Err, nil)
	wantKerr(t, r2.Err, nil)
	if r1.Generation != 1 || r1.Leader != r1.MemberID {
		t.Fatalf("join results %+v %+v", r1, r2)
	}
	return r1.MemberID, r2.MemberID
}

// heartbeatFor keeps the given members' sessions alive while d passes,
// returning each member's last heartbeat error.
func heartbeatFor(e *env, d time.Duration, gen int32, ids ...string) []error {
	errs := make([]error, len(ids))
	for passed := time.Duration(0); passed < d; passed += 2 * time.Second {
		for i, id := range ids {
			errs[i] = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: id, Generation: gen})
		}
		e.clock.Advance(2 * time.Second)
	}
	for i, id := range ids {
		errs[i] = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: id, Generation: gen})
	}
	return errs
}

// A member that joined but never sends SyncGroup (while heartbeating) is
// removed once the rebalance timeout passes after the join completed,
// and the group rebalances without it, as Kafka's coordinator expires
// pending syncs. Without this the group keeps a member that holds no
// assignment, forever.
func TestMemberThatNeverSyncsIsRemovedAfterRebalanceTimeout(t *testing.T) {
	e := newEnv(t, time.Second)
	leader, follower := joinTwo(t, e)
	s := e.syncAsync(SyncRequest{Group: "g", MemberID: leader, Generation: 1,
		Assignments: map[string][]byte{leader: []byte("a"), follower: []byte("b")}}).done(t)
	wantKerr(t, s.Err, nil)

	errs := heartbeatFor(e, rebalance-4*time.Second, 1, leader, follower)
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], nil)
	errs = heartbeatFor(e, 6*time.Second, 1, leader, follower)
	wantErr(t, errs[0], kerr.RebalanceInProgress)
	wantErr(t, errs[1], kerr.UnknownMemberID)
	d, _ := e.c.DescribeGroup("g")
	if d.State != PreparingRebalance || len(d.Members) != 1 || d.Members[0].MemberID != leader {
		t.Fatalf("after the sync timeout: %+v", d)
	}
	// The leader rejoins and the group carries on alone.
	r := e.joinAsync(joinReq("g", leader, "c1")).done(t)
	wantKerr(t, r.Err, nil)
	if r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
}

// A leader that never syncs holds its followers in SyncGroup; after the
// rebalance timeout it is removed, the waiting followers are told to
// rejoin, and one of them leads the next generation.
func TestLeaderThatNeverSyncsIsRemoved(t *testing.T) {
	e := newEnv(t, time.Second)
	leader, follower := joinTwo(t, e)
	ps := e.syncAsync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
	heartbeatFor(e, rebalance-4*time.Second, 1, leader, follower)
	ps.waiting(t)
	errs := heartbeatFor(e, 6*time.Second, 1, leader, follower)
	wantKerr(t, ps.done(t).Err, kerr.RebalanceInProgress)
	wantErr(t, errs[0], kerr.UnknownMemberID)
	wantErr(t, errs[1], kerr.RebalanceInProgress)
	r := e.joinAsync(joinReq("g", follower, "c2")).done(t)
	wantKerr(t, r.Err, nil)
	if r.Generation != 2 || r.Leader != follower {
		t.Fatalf("rejoin %+v", r)
	}
}

// Members that all synced are not touched by the sync timeout.
func TestSyncedMembersStay(t *testing.T) {
	e := newEnv(t, time.Second)
	leader, follower := joinTwo(t, e)
	ps := e.syncAsync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
	wantKerr(t, e.syncAsync(SyncRequest{Group: "g", MemberID: leader, Generation: 1,
		Assignments: map[string][]byte{leader: []byte("a"), follower: []byte("b")}}).done(t).Err, nil)
	wantKerr(t, ps.done(t).Err, nil)
	errs := heartbeatFor(e, 3*rebalance, 1, leader, follower)
	wantErr(t, errs[0], nil)
	wantErr(t, errs[1], nil)
}
