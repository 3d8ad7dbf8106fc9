package metadata

import (
	"slices"
	"testing"
)

// restart registers broker id's run-th incarnation naming prevEpoch as its
// last (-1: its logs may have lost unflushed records) and returns its
// epoch.
func (m *machine) restart(id int32, run byte, prevEpoch int64) int64 {
	m.t.Helper()
	b := Broker{ID: id, Host: "h", Port: 9000 + id, Incarnation: incarnation(id, run)}
	return m.ok(cmdRegisterBroker, registerBrokerCmd{Broker: b, PreviousEpoch: &prevEpoch}).brokerEpoch
}

func (m *machine) wantELR(topic string, p int32, elr ...int32) {
	m.t.Helper()
	if got := m.part(topic, p).ELR; !slices.Equal(got, elr) {
		m.t.Fatalf("%s-%d ELR = %v, want %v", topic, p, got, elr)
	}
}

// elrMachine: brokers 1-3 live, topic "t" on replicas {1,2,3} led by 1
// with min.insync.replicas 2, and broker 3 already fenced out of its ISR.
func elrMachine(t *testing.T) (*machine, map[int32]int64) {
	m := newMachine(t)
	epochs := m.live(1, 2, 3)
	m.ok(cmdCreateTopic, createTopicCmd{Name: "t", ID: [16]byte{1}, Assignments: [][]int32{{1, 2, 3}},
		Configs: map[string]string{"min.insync.replicas": "2"}})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{3, epochs[3]}})
	m.wantELR("t", 0) // the ISR {1,2} still has two members
	return m, epochs
}

// The scenario eligible leader replicas exist for: the follower is killed
// and fenced while the ISR is at its minimum, then the leader, the last
// ISR member, loses power and comes back first. It must not lead: the
// follower holds every committed record and it may not.
func TestELRLastISRMemberBackFromPowerLoss(t *testing.T) {
	m, epochs := elrMachine(t)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}}) // killed -9
	m.wantPart("t", 0, m.part("t", 0), 1, []int32{1}, 0, 0)
	m.wantELR("t", 0, 2)
	before := m.part("t", 0)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}}) // power lost
	m.wantPart("t", 0, before, -1, []int32{1}, 1, 1)
	m.wantELR("t", 0, 2)

	// Broker 1 comes back, saying its logs may have lost records: broker
	// 2 takes its place in the ISR, and it leaves the ELR.
	before = m.part("t", 0)
	e1 := m.restart(1, 2, -1)
	m.wantPart("t", 0, before, -1, []int32{2}, 0, 1)
	m.wantELR("t", 0)
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1}})
	m.wantPart("t", 0, before, -1, []int32{2}, 0, 1) // still not its leader

	// Broker 2 comes back after its kill -9: the machine kept its page
	// cache, so it names its last epoch, and leads.
	e2 := m.restart(2, 2, epochs[2])
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{2, e2}})
	m.wantPart("t", 0, before, 2, []int32{2}, 1, 2)
	m.wantELR("t", 0)
}

// Without ELR members nothing is known to hold more than the last ISR
// member, so it keeps its place even after a power loss (as in Kafka).
func TestELRUncleanRestartOfLastMemberWithoutELR(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2)
	m.topic("t", 1, []int32{1, 2}) // min.insync.replicas 1: no ELR ever
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.wantELR("t", 0)
	before := m.part("t", 0)
	e1 := m.restart(1, 2, -1)
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e1}})
	m.wantPart("t", 0, before, 1, []int32{1}, 1, 1)
}

// An eligible ELR member leads at once when the last ISR member is fenced,
// and the fenced leader joins the ELR in its place.
func TestELRElectsEligibleMember(t *testing.T) {
	m, epochs := elrMachine(t)
	// The leader drops its follower from the ISR (lagging): the ISR falls
	// below its minimum, so the follower is eligible.
	p := m.part("t", 0)
	m.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{{
		TopicID: [16]byte{1}, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: ISRMembers([]int32{1})}}})
	m.wantELR("t", 0, 2)
	before := m.part("t", 0)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.wantPart("t", 0, before, 2, []int32{2}, 1, 1)
	m.wantELR("t", 0, 1)
	// Broker 1 back after a power loss leaves the ELR; back with its
	// epoch it would stay.
	m.restart(1, 2, -1)
	m.wantELR("t", 0)
}

// The ELR empties once the ISR reaches the minimum again, and when the
// minimum is lowered to what the ISR already has.
func TestELRClearedWhenISRSuffices(t *testing.T) {
	m, epochs := elrMachine(t)
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}})
	m.wantELR("t", 0, 2)
	one := "1"
	m.ok(cmdAlterConfigs, alterConfigsCmd{Name: "t", ID: [16]byte{1}, Set: map[string]*string{"min.insync.replicas": &one}})
	m.wantELR("t", 0)

	m2, epochs2 := elrMachine(t)
	m2.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs2[2]}})
	m2.wantELR("t", 0, 2)
	e2 := m2.restart(2, 2, epochs2[2])
	m2.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{2, e2}})
	p := m2.part("t", 0)
	m2.ok(cmdAlterPartition, alterPartitionCmd{BrokerID: 1, BrokerEpoch: epochs2[1], Updates: []ISRUpdate{{
		TopicID: [16]byte{1}, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: ISRMembers([]int32{1, 2})}}})
	m2.wantELR("t", 0)
}

// bootstrapMinISR2 is a cluster bootstrapped with min.insync.replicas 2
// and topic t (replicas 1, 2, no override) after broker 2 was fenced: its
// ELR is {2}.
func bootstrapMinISR2(t *testing.T) *machine {
	m := &machine{t: t, im: emptyImage()}
	m.ok(cmdBootstrap, bootstrapCmd{ClusterID: "AAAAAAAAAAAAAAAAAAAAAA", MinISR: 2})
	epochs := m.live(1, 2)
	m.topic("t", 1, []int32{1, 2})
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{2, epochs[2]}})
	m.wantELR("t", 0, 2)
	return m
}

// The bootstrap's min.insync.replicas applies to topics that set none.
func TestELRUsesBootstrapMinISR(t *testing.T) {
	m := bootstrapMinISR2(t)
	if got := m.im.MinISR(m.im.topics["t"]); got != 2 {
		t.Fatalf("MinISR = %d, want 2", got)
	}
}

// A new static default (a controller restarted with another
// min.insync.replicas) applies to topics that set none; lowering it to
// what an ISR has empties that partition's ELR.
func TestELRStaticDefaultChanged(t *testing.T) {
	m := bootstrapMinISR2(t)
	m.ok(cmdStaticDefaults, staticDefaultsCmd{MinISR: 3})
	m.wantELR("t", 0, 2)
	m.ok(cmdStaticDefaults, staticDefaultsCmd{MinISR: 1})
	m.wantELR("t", 0)
	if got := m.im.MinISR(m.im.topics["t"]); got != 1 {
		t.Fatalf("MinISR = %d, want 1", got)
	}
	m.fails(ErrInvalidConfig, cmdStaticDefaults, staticDefaultsCmd{MinISR: 0})
}
