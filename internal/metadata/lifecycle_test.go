package metadata

import (
	"errors"
	"slices"
	"testing"
)

// threeBrokers is a machine with brokers 1-3 live and topic "t" of three
// partitions over all of them, plus "solo" on broker 1 alone.
func threeBrokers(t *testing.T) (*machine, map[int32]int64) {
	t.Helper()
	m := newMachine(t)
	epochs := m.live(1, 2, 3)
	m.topic("t", 1, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2})
	m.topic("solo", 2, []int32{1})
	return m, epochs
}

func TestRegisterStartsFencedWithIndexEpoch(t *testing.T) {
	m := newMachine(t)
	e := m.register(1, 1, "r1")
	b := m.broker(1)
	if e != int64(m.idx) || b.Epoch != e || !b.Fenced || b.InControlledShutdown || b.Incarnation != incarnation(1, 1) || b.Rack != "r1" {
		t.Fatalf("after registration at index %d: epoch %d, broker %+v", m.idx, e, b)
	}
	// A retried registration (same incarnation) keeps the epoch.
	before := m.im
	if again := m.register(1, 1, "r1"); again != e {
		t.Fatalf("retried registration got epoch %d, want %d", again, e)
	}
	if d := DiffBrokers(before, m.im); !d.Empty() {
		t.Fatalf("retried registration changed brokers: %+v", d)
	}
	// Fenced brokers get no replicas: no placement, and a manual
	// assignment needs an eligible replica.
	m.fails(ErrInvalidReplicaAssignment, cmdCreateTopic, createTopicCmd{Name: "x", ID: [16]byte{9}, Assignments: [][]int32{{1}}})
	if got := m.im.placementBrokers(); len(got) != 0 {
		t.Fatalf("placement brokers %v with only a fenced broker", got)
	}
	m.fails(nil, cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: -1, Incarnation: incarnation(1, 1)}})
	m.fails(nil, cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 2, Port: 70000, Incarnation: incarnation(2, 1)}})
}

func TestRestartFencesOldIncarnationFirst(t *testing.T) {
	m, epochs := threeBrokers(t)
	t0, t1, t2, solo := m.part("t", 0), m.part("t", 1), m.part("t", 2), m.part("solo", 0)
	e := m.register(1, 2, "") // broker 1 restarted
	if e <= epochs[1] {
		t.Fatalf("new epoch %d not above old %d", e, epochs[1])
	}
	if b := m.broker(1); !b.Fenced || b.Epoch != e || b.Incarnation != incarnation(1, 2) {
		t.Fatalf("restarted broker %+v", b)
	}
	m.wantPart("t", 0, t0, 2, []int32{2, 3}, 1, 1) // it led: next in replica order
	m.wantPart("t", 1, t1, 2, []int32{2, 3}, 0, 1) // it followed
	m.wantPart("t", 2, t2, 3, []int32{3, 2}, 0, 1)
	m.wantPart("solo", 0, solo, -1, []int32{1}, 1, 1) // last ISR member stays; offline
	// The old epoch is dead for every command.
	m.fails(ErrStaleBrokerEpoch, cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.fails(ErrStaleBrokerEpoch, cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.fails(ErrStaleBrokerEpoch, cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, epochs[1]}})
	// Unfencing the new incarnation elects it where it is the ISR.
	solo = m.part("solo", 0)
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e}})
	m.wantPart("solo", 0, solo, 1, []int32{1}, 1, 1)
	if p := m.part("t", 0); p.Leader != 2 {
		t.Fatalf("unfence moved a healthy leader: %+v", p)
	}
}

func TestLegacyRegistration(t *testing.T) {
	m := newMachine(t)
	m.ok(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 1, Host: "h", Port: 1}})
	if b := m.broker(1); b.Fenced || b.Epoch != 0 || b.Incarnation != ([16]byte{}) {
		t.Fatalf("legacy broker %+v", b)
	}
	m.topic("t", 1, []int32{1})
	p := m.part("t", 0)
	// The legacy broker re-registering (today's restart) changes nothing.
	m.ok(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 1, Host: "h2", Port: 2}})
	m.wantPart("t", 0, p, 1, []int32{1}, 0, 0)
	if b := m.broker(1); b.Host != "h2" || b.Fenced {
		t.Fatalf("legacy re-registration: %+v", b)
	}
	// Upgrading: the broker now registers an incarnation; the legacy one
	// is fenced first, then the new one is unfenced.
	e := m.register(1, 1, "")
	m.wantPart("t", 0, p, -1, []int32{1}, 1, 1)
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e}})
	m.wantPart("t", 0, p, 1, []int32{1}, 2, 2)
	// A legacy registration over an incarnation fences that one and is
	// live at once.
	m.ok(cmdRegisterBroker, registerBrokerCmd{Broker: Broker{ID: 1, Host: "h", Port: 1}})
	m.wantPart("t", 0, p, 1, []int32{1}, 4, 4)
	if b := m.broker(1); b.Fenced || b.Epoch != 0 {
		t.Fatalf("legacy after incarnation: %+v", b)
	}
}

func TestFenceBroker(t *testing.T) {
	m, epochs := threeBrokers(t)
	m.fails(ErrStaleBrokerEpoch, cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1] + 1}})
	m.fails(ErrStaleBrokerEpoch, cmdFenceBroker, fenceBrokerCmd{brokerRef{9, 0}})
	t0, t1, solo := m.part("t", 0), m.part("t", 1), m.part("solo", 0)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	if b := m.broker(1); !b.Fenced || b.Epoch != epochs[1] {
		t.Fatalf("fenced broker %+v", b)
	}
	m.wantPart("t", 0, t0, 2, []int32{2, 3}, 1, 1)
	m.wantPart("t", 1, t1, 2, []int32{2, 3}, 0, 1)
	m.wantPart("solo", 0, solo, -1, []int32{1}, 1, 1)
	// Again: nothing changes, not even the broker's pointer.
	before := m.im
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	if !DiffBrokers(before, m.im).Empty() || !DiffTopics(before, m.im).Empty() {
		t.Fatal("fencing a fenced broker changed something")
	}
	// Fence 2 and 3: partitions go offline with their last ISR member.
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}})
	t0 = m.part("t", 0)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{3, epochs[3]}})
	m.wantPart("t", 0, t0, -1, []int32{3}, 1, 1)
	if got := m.im.OfflinePartitions(); len(got) != 4 {
		t.Fatalf("offline partitions %v, want all 4", got)
	}
	// Broker 1 comes back: it is in no ISR but solo's, so only solo leads.
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, epochs[1]}})
	if got := m.im.OfflinePartitions(); len(got) != 3 || m.part("solo", 0).Leader != 1 {
		t.Fatalf("after unfencing 1: offline %v solo %+v", got, m.part("solo", 0))
	}
}

func TestUnfenceBroker(t *testing.T) {
	m := newMachine(t)
	e1 := m.register(1, 1, "")
	m.fails(ErrStaleBrokerEpoch, cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1 - 1}})
	m.fails(ErrStaleBrokerEpoch, cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{2, e1}})
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1}})
	if b := m.broker(1); b.Fenced {
		t.Fatalf("still fenced: %+v", b)
	}
	before := m.im
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1}})
	if !DiffBrokers(before, m.im).Empty() {
		t.Fatal("unfencing an unfenced broker changed it")
	}
	// A broker in controlled shutdown stays fenced.
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, e1}})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, e1}})
	m.fails(ErrInvalidRequest, cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1}})
	// Its next incarnation starts afresh.
	e2 := m.register(1, 2, "")
	if b := m.broker(1); b.InControlledShutdown || !b.Fenced {
		t.Fatalf("new incarnation %+v", b)
	}
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e2}})
}

func TestControlledShutdown(t *testing.T) {
	m, epochs := threeBrokers(t)
	if m.im.ShouldShutDown(1) {
		t.Fatal("ShouldShutDown before asking")
	}
	m.fails(ErrStaleBrokerEpoch, cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, 0}})
	t0, t1, solo := m.part("t", 0), m.part("t", 1), m.part("solo", 0)
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, epochs[1]}})
	if b := m.broker(1); !b.InControlledShutdown || b.Fenced {
		t.Fatalf("broker after begin: %+v", b)
	}
	m.wantPart("t", 0, t0, 2, []int32{2, 3}, 1, 1)   // leadership moved
	m.wantPart("t", 1, t1, 2, []int32{2, 3}, 0, 1)   // left the ISR
	m.wantPart("solo", 0, solo, 1, []int32{1}, 0, 0) // unmovable: keeps it
	if !m.im.ShouldShutDown(1) || m.im.BrokerEligible(1) {
		t.Fatalf("ShouldShutDown %v eligible %v", m.im.ShouldShutDown(1), m.im.BrokerEligible(1))
	}
	// It joins no ISR and gets no new replicas.
	t1 = m.part("t", 1)
	m.fails(nil, cmdAlterPartition, alterPartitionCmd{}) // unknown broker 0
	res := m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 2, BrokerEpoch: epochs[2], Updates: []ISRUpdate{
		{TopicID: [16]byte{1}, Partition: 1, LeaderEpoch: t1.LeaderEpoch, PartitionEpoch: t1.PartitionEpoch, NewISR: ISRMembers([]int32{2, 3, 1})}}})
	if !errors.Is(res.altered[0].Err, ErrIneligibleReplica) {
		t.Fatalf("adding a shutting-down broker: %v", res.altered[0].Err)
	}
	if got := m.im.placementBrokers(); len(got) != 2 {
		t.Fatalf("placement over %v", got)
	}
	// Its own unmovable partition cannot change ISR either (Kafka checks
	// every member, the leader too).
	solo = m.part("solo", 0)
	res = m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{
		{TopicID: [16]byte{2}, Partition: 0, LeaderEpoch: solo.LeaderEpoch, PartitionEpoch: solo.PartitionEpoch, NewISR: ISRMembers([]int32{1})}}})
	if !errors.Is(res.altered[0].Err, ErrIneligibleReplica) {
		t.Fatalf("shutting-down leader's AlterPartition: %v", res.altered[0].Err)
	}
	// Repeating changes nothing; fencing (SHUTDOWN_NOW) takes solo offline.
	before := m.im
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, epochs[1]}})
	if !DiffTopics(before, m.im).Empty() || !DiffBrokers(before, m.im).Empty() {
		t.Fatal("second begin changed something")
	}
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.wantPart("solo", 0, solo, -1, []int32{1}, 1, 1)
	if !m.im.ShouldShutDown(1) {
		t.Fatal("fenced broker in controlled shutdown should shut down")
	}
}

func TestControlledShutdownKeepsOnlyUnmovableLeaders(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2)
	m.topic("t", 1, []int32{1, 2})
	p := m.part("t", 0)
	// 2 leaves the ISR, so 1's leadership cannot move.
	m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{
		{TopicID: [16]byte{1}, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: ISRMembers([]int32{1})}}})
	m.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, epochs[1]}})
	if got := m.part("t", 0); got.Leader != 1 || !m.im.ShouldShutDown(1) {
		t.Fatalf("partition %+v, ShouldShutDown %v", got, m.im.ShouldShutDown(1))
	}
	// Had 2 been in the ISR at the same time as a shutdown, leadership
	// would be movable: ShouldShutDown is false until it moves.
	m2 := newMachine(t)
	e2 := m2.live(1, 2)
	m2.topic("t", 1, []int32{1, 2})
	if !m2.im.movableLeaderships(1) {
		t.Fatal("leadership of {1,2} with 2 live not movable")
	}
	m2.ok(cmdBeginControlledShutdown, controlledShutdownCmd{brokerRef{1, e2[1]}})
	if got := m2.part("t", 0); got.Leader != 2 || !m2.im.ShouldShutDown(1) {
		t.Fatalf("partition %+v after shutdown", got)
	}
}

func TestNewPartitionsTakeEligibleReplicas(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2, 3)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	// Manual assignments may name a fenced (registered) broker.
	m.topic("t", 1, []int32{1, 2, 3}, []int32{3, 1, 2})
	for i, want := range []struct {
		leader int32
		isr    []int32
	}{{2, []int32{2, 3}}, {3, []int32{3, 2}}} {
		p := m.part("t", int32(i))
		if p.Leader != want.leader || !slices.Equal(p.ISR, want.isr) || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d = %+v, want leader %d isr %v", i, p, want.leader, want.isr)
		}
	}
	m.ok(cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 3, Assignments: [][]int32{{1, 3, 2}}})
	if p := m.part("t", 2); p.Leader != 3 || !slices.Equal(p.ISR, []int32{3, 2}) {
		t.Fatalf("added partition %+v", p)
	}
	m.fails(ErrInvalidReplicaAssignment, cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 4, Assignments: [][]int32{{1, 4, 5}}})
	if got := m.im.UnderReplicatedPartitions(); len(got) != 3 {
		t.Fatalf("under-replicated %v", got)
	}
}
