package group

import (
	"errors"
	"fmt"
	"testing"

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
		errs := e.c.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
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
		errs := e.c.CommitOffsets(CommitRequest{Group: "missing", MemberID: "m", Generation: 3, APIVersion: tc.version,
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
	errs := e.c.CommitOffsets(CommitRequest{Group: "", Generation: -1,
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
	_, err = e.c.DeleteOffsets("", []TopicPartitions{{Topic: "t1", Partitions: []int32{2}}})
	wantErr(t, err, kerr.InvalidGroupID)

	wantErr(t, e.c.DeleteGroups([]string{""})[0], nil)
	if f := fetchOne(t, e, "", "t1", 2); f.Offset != -1 {
		t.Fatalf("offset of the deleted group still fetched: %+v", f)
	}
}
