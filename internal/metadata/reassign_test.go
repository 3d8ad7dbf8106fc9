package metadata

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fourBrokers is threeBrokers plus a live broker 4.
func fourBrokers(t *testing.T) (*machine, map[int32]int64) {
	t.Helper()
	m, epochs := threeBrokers(t)
	e4 := m.live(4)
	epochs[4] = e4[4]
	return m, epochs
}

// reassign applies one reassignment of t-p and returns its result.
func (m *machine) reassign(p int32, r reassignmentRef) error {
	m.t.Helper()
	r.TopicID, r.Partition = [16]byte{1}, p
	res := m.ok(cmdReassignPartitions, reassignPartitionsCmd{Partitions: []reassignmentRef{r}})
	if len(res.reassigned) != 1 {
		m.t.Fatalf("%d results for one reassignment", len(res.reassigned))
	}
	return res.reassigned[0]
}

// wantReassign checks a partition's replicas, adding and removing sets.
func (m *machine) wantReassign(p int32, replicas, adding, removing []int32) Partition {
	m.t.Helper()
	got := m.part("t", p)
	if !slices.Equal(got.Replicas, replicas) || !slices.Equal(got.AddingReplicas, adding) || !slices.Equal(got.RemovingReplicas, removing) {
		m.t.Fatalf("t-%d = replicas %v adding %v removing %v; want %v %v %v", p, got.Replicas, got.AddingReplicas, got.RemovingReplicas, replicas, adding, removing)
	}
	return got
}

func TestReassignMoveCompletesWhenAddingJoinsISR(t *testing.T) {
	m, epochs := fourBrokers(t)
	before := m.part("t", 0) // [1 2 3], leader 1
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{1, 2, 4}}); err != nil {
		t.Fatal(err)
	}
	// Growth: target then removing; leader and ISR unchanged.
	m.wantReassign(0, []int32{1, 2, 4, 3}, []int32{4}, []int32{3})
	m.wantPart("t", 0, before, 1, []int32{1, 2, 3}, 0, 1)
	if refs := m.im.ReassigningPartitions(); len(refs) != 1 || refs[0].Partition != 0 {
		t.Fatalf("ReassigningPartitions = %v", refs)
	}
	// The adding replica joins the ISR: the reassignment completes in the
	// same change, 3 leaves the replicas and the ISR.
	r := m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	m.wantReassign(0, []int32{1, 2, 4}, nil, nil)
	m.wantPart("t", 0, before, 1, []int32{1, 2, 4}, 0, 2)
	if !slices.Equal(r.State.ISR, []int32{1, 2, 4}) || r.State.Reassigning() {
		t.Fatalf("AlterPartition answered %+v", r.State)
	}
}

func TestReassignMovesLeaderOffRemovedBroker(t *testing.T) {
	m, epochs := fourBrokers(t)
	before := m.part("t", 0) // leader 1
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{4, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{4, 2, 3, 1}, []int32{4}, []int32{1})
	// 1 still leads meanwhile; it adds 4 to the ISR, which completes:
	// the new leader is the first target replica in the ISR (4).
	if r := m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4)); r.Err != nil {
		t.Fatal(r.Err)
	}
	m.wantReassign(0, []int32{4, 2, 3}, nil, nil)
	m.wantPart("t", 0, before, 4, []int32{4, 2, 3}, 1, 2)
}

func TestReassignWaitsForEveryAddingReplica(t *testing.T) {
	m, epochs := fourBrokers(t)
	m.live(5)
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{1, 4, 5}}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{1, 4, 5, 2, 3}, []int32{4, 5}, []int32{2, 3})
	m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4))
	m.wantReassign(0, []int32{1, 4, 5, 2, 3}, []int32{4, 5}, []int32{2, 3})
	m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4, 5))
	m.wantReassign(0, []int32{1, 4, 5}, nil, nil)
	if got := m.part("t", 0); !slices.Equal(got.ISR, []int32{1, 4, 5}) {
		t.Fatalf("ISR %v", got.ISR)
	}
}

func TestReassignWithoutAddingCompletesAtOnce(t *testing.T) {
	m, _ := fourBrokers(t)
	before := m.part("t", 0)
	// Shrink [1 2 3] to [2 1]: nothing to add, done in one change.
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{2, 1}}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{2, 1}, nil, nil)
	m.wantPart("t", 0, before, 1, []int32{2, 1}, 0, 1)
	// Only the order: done at once as well, leader kept.
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{1, 2}, nil, nil)
	// The same replicas again: success, nothing changes.
	im := m.im
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if !DiffTopics(im, m.im).Empty() {
		t.Fatal("a no-op reassignment changed the topic")
	}
}

func TestReassignShrinkWaitsForATargetInISR(t *testing.T) {
	m, epochs := fourBrokers(t)
	// ISR {1}: target [2 3] has no ISR member, so it cannot complete.
	m.alter(1, epochs[1], m.update(0, 1))
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{2, 3}}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{2, 3, 1}, nil, []int32{1})
	if got := m.part("t", 0); got.Leader != 1 {
		t.Fatalf("leader %d, want 1 until a target replica is in sync", got.Leader)
	}
	m.alter(1, epochs[1], m.update(0, 1, 3))
	m.wantReassign(0, []int32{2, 3}, nil, nil)
	if got := m.part("t", 0); got.Leader != 3 || !slices.Equal(got.ISR, []int32{3}) {
		t.Fatalf("after completion leader %d ISR %v, want 3 [3]", got.Leader, got.ISR)
	}
}

func TestReassignCancelRevertsToOriginal(t *testing.T) {
	m, epochs := fourBrokers(t)
	m.live(5)
	m.reassign(0, reassignmentRef{Replicas: []int32{1, 4, 5}})
	m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4)) // 4 in sync, 5 not yet
	before := m.part("t", 0)
	if err := m.reassign(0, reassignmentRef{Cancel: true}); err != nil {
		t.Fatal(err)
	}
	m.wantReassign(0, []int32{1, 2, 3}, nil, nil)
	m.wantPart("t", 0, before, 1, []int32{1, 2, 3}, 0, 1)
	// Nothing to cancel now.
	if err := m.reassign(0, reassignmentRef{Cancel: true}); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("cancel without a reassignment: %v", err)
	}
}

func TestReassignCancelNeedingUncleanElection(t *testing.T) {
	m, epochs := fourBrokers(t)
	m.reassign(0, reassignmentRef{Replicas: []int32{4}})
	m.wantReassign(0, []int32{4, 1, 2, 3}, []int32{4}, []int32{1, 2, 3})
	// 4 joins; the ISR then loses 1, 2, 3 in the same update? No: the
	// completion happens first. Make the ISR hold only the adding replica
	// by another route: the leader shrinks to {1}, 4 joins with 1 still
	// there, which completes. So build the state by hand instead.
	p := m.part("t", 0)
	p.ISR, p.Leader = []int32{4}, 4
	e := newPartitionEdit(m.im)
	e.put(m.im.topics["t"], p)
	err := m.reassign(0, reassignmentRef{Cancel: true})
	if !errors.Is(err, ErrInvalidReplicaAssignment) || !strings.Contains(err.Error(), "unclean") {
		t.Fatalf("cancel needing an unclean election: %v", err)
	}
	if err := m.reassign(0, reassignmentRef{Cancel: true, AllowUnclean: true}); err != nil {
		t.Fatal(err)
	}
	got := m.wantReassign(0, []int32{1, 2, 3}, nil, nil)
	if got.Leader != 1 || !slices.Equal(got.ISR, []int32{1}) || got.LeaderRecoveryState != LeaderRecovering {
		t.Fatalf("unclean revert: %+v", got)
	}
	_ = epochs
}

func TestReassignChangedMidwayStartsFromCurrentReplicas(t *testing.T) {
	m, epochs := fourBrokers(t)
	m.live(5)
	m.reassign(0, reassignmentRef{Replicas: []int32{1, 2, 4}})
	m.wantReassign(0, []int32{1, 2, 4, 3}, []int32{4}, []int32{3})
	// Now to [1 2 5]: 4 (added, not in sync) and 3 are removed, 5 added.
	m.reassign(0, reassignmentRef{Replicas: []int32{1, 2, 5}})
	m.wantReassign(0, []int32{1, 2, 5, 4, 3}, []int32{5}, []int32{4, 3})
	m.alter(1, epochs[1], m.update(0, 1, 2, 3, 5))
	m.wantReassign(0, []int32{1, 2, 5}, nil, nil)
}

func TestReassignFencedAddingReplicaStalls(t *testing.T) {
	m, epochs := fourBrokers(t)
	m.reassign(0, reassignmentRef{Replicas: []int32{1, 2, 4}})
	m.alter(1, epochs[1], m.update(0, 1, 2, 3, 4))
	m.wantReassign(0, []int32{1, 2, 4}, nil, nil)
	// Partition 1 [2 3 1]: 4 goes down while being added.
	m.reassign(1, reassignmentRef{Replicas: []int32{4, 3, 1}})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{4, epochs[4]}})
	m.wantReassign(1, []int32{4, 3, 1, 2}, []int32{4}, []int32{2})
	// A fenced adding replica cannot join the ISR: still in progress.
	u := m.update(1, 2, 3, 1, 4)
	res := m.alter(2, epochs[2], u)
	if !errors.Is(res.Err, ErrIneligibleReplica) {
		t.Fatalf("fenced adding replica joined the ISR: %v", res.Err)
	}
	m.wantReassign(1, []int32{4, 3, 1, 2}, []int32{4}, []int32{2})
}

func TestReassignRefusals(t *testing.T) {
	m, _ := fourBrokers(t)
	for _, c := range []struct {
		name string
		r    reassignmentRef
		want error
	}{
		{"empty", reassignmentRef{Replicas: []int32{}}, ErrInvalidReplicaAssignment},
		{"duplicate", reassignmentRef{Replicas: []int32{1, 1, 2}}, ErrInvalidReplicaAssignment},
		{"unknown broker", reassignmentRef{Replicas: []int32{1, 2, 9}}, ErrInvalidReplicaAssignment},
		{"rf change refused", reassignmentRef{Replicas: []int32{1, 2}, KeepReplicationFactor: true}, ErrInvalidReplicationFactor},
		{"cancel none", reassignmentRef{Cancel: true}, ErrNoReassignmentInProgress},
	} {
		before := stateWithoutIndex(t, m.im)
		if err := m.reassign(0, c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if !bytes.Equal(before, stateWithoutIndex(t, m.im)) {
			t.Errorf("%s: refused reassignment changed the state", c.name)
		}
	}
	res := m.ok(cmdReassignPartitions, reassignPartitionsCmd{Partitions: []reassignmentRef{
		{TopicID: [16]byte{1}, Partition: 7, Replicas: []int32{1}},
		{TopicID: [16]byte{9}, Partition: 0, Replicas: []int32{1}},
	}})
	for i, err := range res.reassigned {
		if !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("unknown partition %d: %v", i, err)
		}
	}
	// A fenced (registered) broker is a valid target, as in Kafka.
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{4, m.broker(4).Epoch}})
	if err := m.reassign(0, reassignmentRef{Replicas: []int32{1, 2, 4}}); err != nil {
		t.Fatalf("fenced target: %v", err)
	}
}

func TestReassignmentSurvivesSnapshot(t *testing.T) {
	m, _ := fourBrokers(t)
	m.reassign(0, reassignmentRef{Replicas: []int32{4, 2, 3}})
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, m.im); err != nil {
		t.Fatal(err)
	}
	im, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := im.Partition("t", 0)
	if !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("restored partition %+v", p)
	}
	if !bytes.Equal(stateBytes(t, im), stateBytes(t, m.im)) {
		t.Fatal("snapshot round trip differs")
	}
	// Bad reassignments in a snapshot are refused.
	for _, bad := range []string{
		`"addingReplicas":[9]`, `"removingReplicas":[4,2,3,1]`, `"addingReplicas":[1],"removingReplicas":[1]`,
	} {
		s := strings.Replace(stateString(t, m.im), `"addingReplicas":[4],"removingReplicas":[1]`, bad, 1)
		if _, err := decodeSnapshot(strings.NewReader(s)); err == nil {
			t.Errorf("snapshot with %s accepted", bad)
		}
	}
}

func stateString(t *testing.T, im *Image) string { return string(stateBytes(t, im)) }

func TestVersion3SnapshotLoadsWithoutReassignments(t *testing.T) {
	in := `{"version":3,"index":5,"clusterId":"c","brokers":[{"id":1,"host":"h","port":1}],"topics":[{"name":"a","id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"partitions":[{"partition":0,"leader":1,"replicas":[1],"isr":[1]}]}]}`
	im, err := decodeSnapshot(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := im.Partition("a", 0); !ok || p.Reassigning() {
		t.Fatalf("partition %+v", p)
	}
}

// TestControllerAlterPartitionReassignments goes through Raft: refusals
// are answered without a proposal, a move and its completion by the
// leader's AlterPartition, and a cancellation.
func TestControllerAlterPartitionReassignments(t *testing.T) {
	c := newTestController(t, 3)
	ctx := testCtx(t)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 2}}}); err != nil {
		t.Fatal(err)
	}
	errs, err := c.AlterPartitionReassignments(ctx, []Reassignment{
		{Topic: "nope", Partition: 0, Replicas: []int32{1}},
		{Topic: "t", Partition: 0, Replicas: []int32{2, 3}},
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], ErrUnknownTopic) || errs[1] != nil || !errors.Is(errs[2], ErrInvalidReplicationFactor) {
		t.Fatalf("results %v", errs)
	}
	p, _ := c.Image().Partition("t", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{3}) {
		t.Fatalf("after the move started: %+v", p)
	}
	// Cancel, then nothing left to cancel.
	errs, err = c.AlterPartitionReassignments(ctx, []Reassignment{{Topic: "t", Partition: 0}}, true)
	if err != nil || errs[0] != nil {
		t.Fatalf("cancel: %v %v", err, errs)
	}
	if p, _ = c.Image().Partition("t", 0); p.Reassigning() || !slices.Equal(p.Replicas, []int32{2, 1}) {
		t.Fatalf("after the cancel: %+v", p)
	}
	if errs, _ = c.AlterPartitionReassignments(ctx, []Reassignment{{Topic: "t", Partition: 0}}, true); !errors.Is(errs[0], ErrNoReassignmentInProgress) {
		t.Fatalf("second cancel: %v", errs)
	}
}
