package metadata

import (
	"errors"
	"slices"
	"testing"
)

// alter sends one AlterPartition update from broker id and returns its
// result.
func (m *machine) alter(id int32, epoch int64, u ISRUpdate) AlterPartitionResult {
	m.t.Helper()
	res := m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: id, BrokerEpoch: epoch, Updates: []ISRUpdate{u}})
	if len(res.altered) != 1 {
		m.t.Fatalf("%d results for one update", len(res.altered))
	}
	return res.altered[0]
}

// update is an ISRUpdate of topic id 1 at partition p's current epochs.
func (m *machine) update(p int32, isr ...int32) ISRUpdate {
	cur := m.part("t", p)
	return ISRUpdate{TopicID: [16]byte{1}, Partition: p, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: ISRMembers(isr)}
}

func TestAlterPartitionShrinkAndExpand(t *testing.T) {
	m, epochs := threeBrokers(t)
	p := m.part("t", 0)
	r := m.alter(1, epochs[1], m.update(0, 1, 3))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	m.wantPart("t", 0, p, 1, []int32{1, 3}, 0, 1)
	if r.State.PartitionEpoch != p.PartitionEpoch+1 || !slices.Equal(r.State.ISR, []int32{1, 3}) || r.State.Leader != 1 {
		t.Fatalf("result state %+v", r.State)
	}
	// Back to all three, given in any order: kept in replica order.
	r = m.alter(1, epochs[1], m.update(0, 3, 2, 1))
	m.wantPart("t", 0, p, 1, []int32{1, 2, 3}, 0, 2)
	// The same ISR again changes nothing and still succeeds.
	before := m.im
	if r = m.alter(1, epochs[1], m.update(0, 2, 1, 3)); r.Err != nil || r.State.PartitionEpoch != p.PartitionEpoch+2 {
		t.Fatalf("no-op update: %+v", r)
	}
	if !DiffTopics(before, m.im).Empty() {
		t.Fatal("no-op AlterPartition changed the topic")
	}
	// Broker epochs in the ISR are checked when given.
	u := m.update(0, 1, 2)
	u.NewISR[1].BrokerEpoch = epochs[2] + 1
	if r = m.alter(1, epochs[1], u); !errors.Is(r.Err, ErrIneligibleReplica) {
		t.Fatalf("stale member epoch: %v", r.Err)
	}
	u.NewISR[1].BrokerEpoch = epochs[2]
	if r = m.alter(1, epochs[1], u); r.Err != nil {
		t.Fatalf("matching member epoch: %v", r.Err)
	}
}

// TestAlterPartitionHandOver: a leader that leaves the ISR (its log cannot
// take writes) hands the partition to the first remaining member in
// replica order, at a new leader epoch; the ELR takes it when the ISR
// falls below min.insync.replicas.
func TestAlterPartitionHandOver(t *testing.T) {
	m, epochs := threeBrokers(t)
	p := m.part("t", 0) // replicas 1, 2, 3; leader 1
	r := m.alter(1, epochs[1], m.update(0, 3, 2))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	m.wantPart("t", 0, p, 2, []int32{2, 3}, 1, 1)
	if r.State.Leader != 2 {
		t.Fatalf("result state %+v", r.State)
	}
	// The old leader is a follower now: it may not propose any more.
	if r = m.alter(1, epochs[1], m.update(0, 3)); !errors.Is(r.Err, ErrNotPartitionLeader) {
		t.Fatalf("old leader proposing: %v", r.Err)
	}
	// Handing over to a replica outside the ISR is refused: only ISR
	// members hold everything below the high watermark.
	if r = m.alter(2, epochs[2], m.update(0, 1, 3)); !errors.Is(r.Err, ErrInvalidRequest) {
		t.Fatalf("hand over to a replica outside the ISR: %v", r.Err)
	}
	// Down to one member: the hand-over still goes through (writes then
	// need what min.insync.replicas asks, as after any shrink).
	r = m.alter(2, epochs[2], m.update(0, 3))
	if r.Err != nil || r.State.Leader != 3 || !slices.Equal(r.State.ISR, []int32{3}) {
		t.Fatalf("hand over to the last member: %+v", r)
	}
	// The last member cannot leave: the ISR is never empty.
	if r = m.alter(3, epochs[3], m.update(0)); !errors.Is(r.Err, ErrInvalidRequest) {
		t.Fatalf("empty ISR: %v", r.Err)
	}
}

func TestAlterPartitionRejections(t *testing.T) {
	m, epochs := threeBrokers(t)
	// Make the epochs non-zero so older ones exist: 2 leads t-0 now.
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, epochs[1]}})
	e1 := m.register(1, 2, "") // broker 1 restarted: fenced, new epoch
	cur := m.part("t", 0)
	if cur.Leader != 2 || cur.LeaderEpoch != 1 || cur.PartitionEpoch != 1 {
		t.Fatalf("setup: %+v", cur)
	}
	ok := func() ISRUpdate { return m.update(0, 2, 3) }
	with := func(f func(*ISRUpdate)) ISRUpdate { u := ok(); f(&u); return u }
	cases := []struct {
		name   string
		broker int32
		u      ISRUpdate
		want   error
	}{
		{"unknown topic id", 2, with(func(u *ISRUpdate) { u.TopicID = [16]byte{77} }), ErrUnknownTopicID},
		{"unknown partition", 2, with(func(u *ISRUpdate) { u.Partition = 3 }), ErrUnknownTopic},
		{"negative partition", 2, with(func(u *ISRUpdate) { u.Partition = -1 }), ErrUnknownTopic},
		{"newer leader epoch", 2, with(func(u *ISRUpdate) { u.LeaderEpoch++ }), ErrNotController},
		{"newer partition epoch", 2, with(func(u *ISRUpdate) { u.PartitionEpoch++ }), ErrNotController},
		{"older leader epoch", 2, with(func(u *ISRUpdate) { u.LeaderEpoch-- }), ErrFencedLeaderEpoch},
		{"not the leader", 3, ok(), ErrNotPartitionLeader},
		{"older partition epoch", 2, with(func(u *ISRUpdate) { u.PartitionEpoch-- }), ErrInvalidUpdateVersion},
		{"not a replica", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{2, 4}) }), ErrInvalidRequest},
		{"duplicate member", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{2, 3, 3}) }), ErrInvalidRequest},
		{"without leader, recovering", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{3}); u.LeaderRecoveryState = LeaderRecovering }), ErrInvalidRequest},
		{"without leader, to a non-member", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{1}) }), ErrInvalidRequest},
		{"empty", 2, with(func(u *ISRUpdate) { u.NewISR = nil }), ErrInvalidRequest},
		{"fenced member", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{2, 3, 1}) }), ErrIneligibleReplica},
		{"recovering with followers", 2, with(func(u *ISRUpdate) { u.LeaderRecoveryState = LeaderRecovering }), ErrInvalidRequest},
		{"back to recovering", 2, with(func(u *ISRUpdate) { u.NewISR = ISRMembers([]int32{2}); u.LeaderRecoveryState = LeaderRecovering }), ErrInvalidRequest},
		{"unknown recovery state", 2, with(func(u *ISRUpdate) { u.LeaderRecoveryState = 5 }), ErrInvalidRequest},
	}
	brokerEpoch := map[int32]int64{1: e1, 2: epochs[2], 3: epochs[3]}
	for _, tc := range cases {
		before := stateWithoutIndex(t, m.im)
		r := m.alter(tc.broker, brokerEpoch[tc.broker], tc.u)
		if !errors.Is(r.Err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, r.Err, tc.want)
		}
		if string(stateWithoutIndex(t, m.im)) != string(before) {
			t.Errorf("%s: refused update changed the state", tc.name)
		}
	}
	// A stale broker epoch refuses the whole request.
	m.fails(ErrStaleBrokerEpoch, cmdAlterPartition, alterPartitionCmd{BrokerID: 2, BrokerEpoch: epochs[2] - 1, Updates: []ISRUpdate{ok()}})
	m.fails(ErrStaleBrokerEpoch, cmdAlterPartition, alterPartitionCmd{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{ok()}})
	// Two updates of one partition in one request: the second is stale.
	res := m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 2, BrokerEpoch: epochs[2], Updates: []ISRUpdate{m.update(0, 2), ok()}})
	if res.altered[0].Err != nil || !errors.Is(res.altered[1].Err, ErrInvalidUpdateVersion) {
		t.Fatalf("two updates of one partition: %v, %v", res.altered[0].Err, res.altered[1].Err)
	}
	m.wantPart("t", 0, cur, 2, []int32{2}, 0, 1)
}

func TestPreferredElection(t *testing.T) {
	m, epochs := threeBrokers(t)
	elect := func(p int32) ElectionResult {
		t.Helper()
		res := m.ok(cmdElectLeaders, electLeadersCmd{Type: ElectPreferred, Partitions: []partitionRef{{TopicID: [16]byte{1}, Partition: p}}})
		return res.elected[0]
	}
	if r := elect(0); !errors.Is(r.Err, ErrElectionNotNeeded) {
		t.Fatalf("preferred already leads: %v", r.Err)
	}
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	if r := elect(0); !errors.Is(r.Err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred fenced: %v", r.Err)
	}
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, epochs[1]}})
	if r := elect(0); !errors.Is(r.Err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred unfenced but out of the ISR: %v", r.Err)
	}
	p := m.part("t", 0)
	if r := m.alter(2, epochs[2], m.update(0, 2, 3, 1)); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := elect(0); r.Err != nil || r.Leader != 1 || r.Topic != "t" {
		t.Fatalf("preferred election: %+v", r)
	}
	m.wantPart("t", 0, p, 1, []int32{1, 2, 3}, 1, 2)
	res := m.ok(cmdElectLeaders, electLeadersCmd{Type: ElectPreferred, Partitions: []partitionRef{{TopicID: [16]byte{9}}, {TopicID: [16]byte{1}, Partition: 5}}})
	for _, r := range res.elected {
		if !errors.Is(r.Err, ErrUnknownTopic) {
			t.Fatalf("unknown partition: %v", r.Err)
		}
	}
	m.fails(ErrInvalidRequest, cmdElectLeaders, electLeadersCmd{Type: 7})
}

func TestUncleanElection(t *testing.T) {
	m, epochs := threeBrokers(t)
	unclean := func(topic byte, p int32) ElectionResult {
		t.Helper()
		res := m.ok(cmdElectLeaders, electLeadersCmd{Type: ElectUnclean, Partitions: []partitionRef{{TopicID: [16]byte{topic}, Partition: p}}})
		return res.elected[0]
	}
	if r := unclean(1, 0); !errors.Is(r.Err, ErrElectionNotNeeded) {
		t.Fatalf("partition with a leader: %v", r.Err)
	}
	// t-0's ISR shrinks to {1}; then 1 dies: offline.
	m.alter(1, epochs[1], m.update(0, 1))
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	p := m.part("t", 0)
	if p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("setup: %+v", p)
	}
	r := unclean(1, 0)
	if r.Err != nil || r.Leader != 2 {
		t.Fatalf("unclean election: %+v", r)
	}
	m.wantPart("t", 0, p, 2, []int32{2}, 1, 1)
	if got := m.part("t", 0); got.LeaderRecoveryState != LeaderRecovering {
		t.Fatalf("recovery state %d after unclean election", got.LeaderRecoveryState)
	}
	// While recovering the ISR cannot grow; once recovered it can.
	u := m.update(0, 2, 3)
	u.LeaderRecoveryState = LeaderRecovering
	if r := m.alter(2, epochs[2], u); !errors.Is(r.Err, ErrInvalidRequest) {
		t.Fatalf("growing while recovering: %v", r.Err)
	}
	u = m.update(0, 2)
	u.LeaderRecoveryState = LeaderRecovering
	if r := m.alter(2, epochs[2], u); r.Err != nil {
		t.Fatalf("still recovering: %v", r.Err)
	}
	if r := m.alter(2, epochs[2], m.update(0, 2, 3)); r.Err != nil || r.State.LeaderRecoveryState != LeaderRecovered {
		t.Fatalf("recovered: %+v", r)
	}
	// solo-0 has no live replica at all.
	if r := unclean(2, 0); !errors.Is(r.Err, ErrEligibleLeadersNotAvailable) {
		t.Fatalf("no live replica: %v", r.Err)
	}
}
