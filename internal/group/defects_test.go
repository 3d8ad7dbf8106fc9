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
