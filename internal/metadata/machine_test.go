package metadata

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// machine applies commands to an image the way the FSM does, with
// consecutive Raft indexes, without Raft: the state machine's rules are
// tested on their own.
type machine struct {
	t   testing.TB
	im  *Image
	idx uint64
}

func newMachine(t testing.TB) *machine {
	t.Helper()
	m := &machine{t: t, im: emptyImage()}
	m.ok(cmdBootstrap, bootstrapCmd{ClusterID: "AAAAAAAAAAAAAAAAAAAAAA"})
	return m
}

func (m *machine) apply(typ cmdType, payload any) applyResult {
	m.t.Helper()
	m.idx++
	next, res := applyCommand(m.im, m.idx, mustCommand(m.t, typ, payload))
	m.im = next
	return res
}

func (m *machine) ok(typ cmdType, payload any) applyResult {
	m.t.Helper()
	res := m.apply(typ, payload)
	if res.err != nil {
		m.t.Fatalf("%s %+v: %v", typ, payload, res.err)
	}
	return res
}

// fails applies a command that must be refused with want (nil: any error)
// and change nothing but the index.
func (m *machine) fails(want error, typ cmdType, payload any) {
	m.t.Helper()
	before := stateWithoutIndex(m.t, m.im)
	res := m.apply(typ, payload)
	if res.err == nil || (want != nil && !errors.Is(res.err, want)) {
		m.t.Fatalf("%s %+v: err %v, want %v", typ, payload, res.err, want)
	}
	if !bytes.Equal(stateWithoutIndex(m.t, m.im), before) {
		m.t.Fatalf("refused %s changed the state", typ)
	}
}

// stateWithoutIndex is the serialised state minus the index line.
func stateWithoutIndex(t testing.TB, im *Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, im); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return b[bytes.Index(b, []byte(`"clusterId"`)):]
}

func incarnation(id int32, run byte) [16]byte { return [16]byte{1, byte(id), run} }

// register registers broker id's run-th incarnation and returns its epoch.
func (m *machine) register(id int32, run byte, rack string) int64 {
	m.t.Helper()
	b := Broker{ID: id, Host: "h", Port: 9000 + id, Rack: rack, Incarnation: incarnation(id, run)}
	return m.ok(cmdRegisterBroker, registerBrokerCmd{Broker: b}).brokerEpoch
}

// live registers and unfences brokers ids and returns their epochs.
func (m *machine) live(ids ...int32) map[int32]int64 {
	m.t.Helper()
	epochs := map[int32]int64{}
	for _, id := range ids {
		epochs[id] = m.register(id, 1, "")
		m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{id, epochs[id]}})
	}
	return epochs
}

func (m *machine) topic(name string, id byte, assignments ...[]int32) {
	m.t.Helper()
	m.ok(cmdCreateTopic, createTopicCmd{Name: name, ID: [16]byte{id}, Assignments: assignments})
}

func (m *machine) part(topic string, p int32) Partition {
	m.t.Helper()
	t := m.im.topics[topic]
	if t == nil || int(p) >= len(t.Partitions) {
		m.t.Fatalf("no partition %s-%d", topic, p)
	}
	return t.Partitions[p]
}

func (m *machine) broker(id int32) Broker {
	m.t.Helper()
	b, ok := m.im.Broker(id)
	if !ok {
		m.t.Fatalf("broker %d not registered", id)
	}
	return b
}

// wantPart checks a partition's leader and ISR and its epochs' moves from
// before.
func (m *machine) wantPart(topic string, p int32, before Partition, leader int32, isr []int32, leaderBump, partBump int32) {
	m.t.Helper()
	got := m.part(topic, p)
	if got.Leader != leader || !slices.Equal(got.ISR, isr) ||
		got.LeaderEpoch != before.LeaderEpoch+leaderBump || got.PartitionEpoch != before.PartitionEpoch+partBump {
		m.t.Fatalf("%s-%d = leader %d isr %v epochs %d/%d; want leader %d isr %v epochs %d/%d (from %+v)",
			topic, p, got.Leader, got.ISR, got.LeaderEpoch, got.PartitionEpoch,
			leader, isr, before.LeaderEpoch+leaderBump, before.PartitionEpoch+partBump, before)
	}
}
