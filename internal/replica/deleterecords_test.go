package replica

import (
	"errors"
	"slices"
	"testing"
)

// leaderOfTen is broker 1's replica leading replicas 1,2,3 with ISR {1, 2}
// and 10 records, and fetchFrom(id, logStart), a fetch by follower id at
// offset 10 that reports logStart.
func leaderOfTen(t *testing.T) (*Partition, *proposals, func(id int32, logStart int64)) {
	t.Helper()
	p, _, props := leaderOf(t, []int32{1, 2}, 1)
	if _, err := p.AppendAsLeader(batch(t, 10), 1); err != nil {
		t.Fatal(err)
	}
	return p, props, func(id int32, logStart int64) {
		t.Helper()
		if _, _, err := p.ReadForFollower(FollowerFetch{ReplicaID: id, CurrentLeaderEpoch: -1, FetchOffset: 10, LogStartOffset: logStart, MaxBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteRecordsWaitsForLiveReplicas: a deletion is complete once the
// leader and every follower on a live broker, or in the ISR or the ELR,
// report a log start at or past its offset; a fenced broker's replica
// outside both is not waited for; a follower's report wakes the waiters;
// a lost leadership ends the wait.
func TestDeleteRecordsWaitsForLiveReplicas(t *testing.T) {
	p, props, fetchFrom := leaderOfTen(t)
	fetchFrom(2, 0)
	fetchFrom(3, -1) // an old fetch version: says nothing of its log start
	target, epoch, err := p.DeleteRecordsBefore(6)
	if err != nil || target != 6 {
		t.Fatalf("DeleteRecordsBefore(6): %d, %v", target, err)
	}
	if got := p.Offsets().LogStart; got != 6 {
		t.Fatalf("the leader's log start %d, want 6 at once", got)
	}
	state := func(want bool, wantLow int64) {
		t.Helper()
		low, done, err := p.DeleteState(epoch, target)
		if err != nil || done != want || low != wantLow {
			t.Fatalf("DeleteState: low %d done %v err %v; want low %d done %v", low, done, err, wantLow, want)
		}
	}
	state(false, -1) // 3 never said
	w := NewWaiter()
	defer w.Done()
	w.Watch(p, LowWatermark)
	fetchFrom(2, 6)
	select {
	case <-w.C():
	default:
		t.Fatal("a follower's new log start did not wake the waiter")
	}
	state(false, -1)
	fetchFrom(3, 4)
	state(false, 4)
	w2 := NewWaiter()
	defer w2.Done()
	w2.Watch(p, LowWatermark)
	props.dead = map[int32]bool{3: true}
	p.BrokersChanged()
	select {
	case <-w2.C():
	default:
		t.Fatal("a change of the alive brokers did not wake the waiter")
	}
	state(true, 6) // a fenced broker's replica is not waited for
	// ... unless it may be elected as it is: in the ELR, or in the ISR.
	for _, in := range []func(*State){
		func(s *State) { s.ELR = []int32{3} },
		func(s *State) { s.ISR = []int32{1, 2, 3} },
	} {
		s := p.State()
		in(&s)
		s.PartitionEpoch++
		if _, err := p.Update(s); err != nil {
			t.Fatal(err)
		}
		state(false, 4)
	}
	props.dead = nil
	fetchFrom(3, 6)
	state(true, 6)

	// -1 deletes up to the high watermark.
	if target, _, err := p.DeleteRecordsBefore(-1); err != nil || target != 10 {
		t.Fatalf("DeleteRecordsBefore(-1): %d, %v; want the high watermark 10", target, err)
	}
	s := p.State()
	s.LeaderID, s.LeaderEpoch = 2, s.LeaderEpoch+1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	if _, done, err := p.DeleteState(epoch, 10); !done || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("after losing the leadership: done %v err %v, want ErrNotLeader", done, err)
	}
}

// TestISRJoinWaitsForLogStart: a caught-up follower joins the ISR only
// once its log start has reached the leader's. A follower back from a
// fence was not waited for by DeleteRecords; elected before it took the
// leader's start, it would serve deleted records again.
func TestISRJoinWaitsForLogStart(t *testing.T) {
	p, props, fetchFrom := leaderOfTen(t)
	fetchFrom(2, 0) // the high watermark reaches 10
	if _, _, err := p.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	props.got = nil
	fetchFrom(3, 0)
	if len(props.got) != 0 {
		t.Fatalf("follower 3, caught up with log start 0 against the leader's 6, proposed for the ISR: %v", props.got)
	}
	fetchFrom(3, 6)
	if c := props.take(t); !slices.Equal(c.ISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal %v, want ISR [1 2 3]", c.ISR)
	}
}
