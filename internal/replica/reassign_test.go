package replica

import (
	"errors"
	"slices"
	"testing"
)

// TestReassignedReplicasJoinAndLeave: a replica added by a reassignment
// (same leader epoch) is fetched for and proposed for the ISR once caught
// up; one removed is forgotten: its fetches are refused and, added back
// later, it starts from nothing known.
func TestReassignedReplicasJoinAndLeave(t *testing.T) {
	p, _, props := leaderOf(t, []int32{1, 2, 3}, 2)
	if _, err := p.AppendAsLeader(batch(t, 5), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 5)
	fetch(t, p, 3, 5)
	// The move [1 2 3] -> [1 2 4] starts: 4 is added.
	s := p.State()
	s.Replicas, s.PartitionEpoch = []int32{1, 2, 4, 3}, s.PartitionEpoch+1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 4, 0)
	if len(props.got) != 0 {
		t.Fatalf("a replica that has not caught up proposed: %v", props.got)
	}
	fetch(t, p, 4, 5)
	c := props.take(t)
	if !slices.Equal(c.ISR, []int32{1, 2, 3, 4}) {
		t.Fatalf("proposed ISR %v", c.ISR)
	}
	// The move completes: 3 leaves replicas and ISR.
	s = p.State()
	s.Replicas, s.ISR, s.PartitionEpoch = []int32{1, 2, 4}, []int32{1, 2, 4}, c.PartitionEpoch+1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.ReadForFollower(FollowerFetch{ReplicaID: 3, CurrentLeaderEpoch: -1, FetchOffset: 5, MaxBytes: 1 << 20})
	if !errors.Is(err, ErrNotReplica) {
		t.Fatalf("fetch by the removed replica: %v", err)
	}
	for _, f := range p.Followers() {
		if f.ID == 3 {
			t.Fatalf("removed replica still known: %+v", p.Followers())
		}
	}
	// Added back: unknown progress until it fetches.
	s.Replicas, s.PartitionEpoch = []int32{1, 2, 4, 3}, s.PartitionEpoch+1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Followers() {
		if f.ID == 3 && f.LogEnd != -1 {
			t.Fatalf("re-added replica starts at %d, want unknown", f.LogEnd)
		}
	}
}
