package group

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memTopicMeta is a mutable set of topics for the consumer protocol.
type memTopicMeta struct {
	mu     sync.Mutex
	topics map[string]int32
}

func tid(name string) TopicID {
	var id TopicID
	copy(id[:], name)
	id[15] = 0xEE
	return id
}

func newMemTopicMeta() *memTopicMeta {
	return &memTopicMeta{topics: map[string]int32{"t1": 4, "t2": 2}}
}

func (m *memTopicMeta) set(name string, partitions int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if partitions == 0 {
		delete(m.topics, name)
		return
	}
	m.topics[name] = partitions
}

func (m *memTopicMeta) TopicByName(name string) (TopicID, int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.topics[name]
	return tid(name), n, ok
}

func (m *memTopicMeta) TopicByID(id TopicID) (string, int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, n := range m.topics {
		if tid(name) == id {
			return name, n, true
		}
	}
	return "", 0, false
}

func (m *memTopicMeta) TopicNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.topics {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (m *memTopicMeta) PartitionExists(topic string, p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return p >= 0 && p < m.topics[topic]
}

// cenv is a coordinator with consumer-protocol topics.
type cenv struct {
	*env
	meta *memTopicMeta
}

const (
	cgSession   = 45 * time.Second
	cgHeartbeat = 5 * time.Second
)

func newCEnv(t testing.TB) *cenv {
	t.Helper()
	clock, log := newFakeClock(), newMemLog()
	meta := newMemTopicMeta()
	e := &env{t: t, c: New(cconfig(clock, log, meta)), clock: clock, log: log}
	t.Cleanup(e.c.Close)
	e.elect(0, 1)
	return &cenv{env: e, meta: meta}
}

func cconfig(clock *fakeClock, log *memLog, meta *memTopicMeta) Config {
	cfg := testConfig(clock, log)
	cfg.Topics, cfg.TopicMeta = meta, meta
	cfg.ConsumerHeartbeatInterval, cfg.ConsumerSessionTimeout = cgHeartbeat, cgSession
	return cfg
}

// reopen is a new coordinator replaying the same log (a restart).
func (e *cenv) reopen() *cenv {
	e.t.Helper()
	e.c.Close()
	ne := &env{t: e.t, c: New(cconfig(e.clock, e.log, e.meta)), clock: e.clock, log: e.log}
	e.t.Cleanup(ne.c.Close)
	ne.elect(0, 1)
	return &cenv{env: ne, meta: e.meta}
}

// cmemberSim is a simulated KIP-848 client: it owns what it was last
// assigned and reports it in full heartbeats.
type cmemberSim struct {
	e     *cenv
	group string
	id    string
	epoch int32
	inst  *string
	owned map[TopicID][]int32
}

func (e *cenv) join(group, id string, topics ...string) (*cmemberSim, ConsumerHeartbeatResult) {
	e.t.Helper()
	m := &cmemberSim{e: e, group: group, id: id}
	r := e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{
		Version: 1, Group: group, MemberID: id, MemberEpoch: 0, RebalanceTimeoutMs: 30000,
		SubscribedTopics: topics, Owned: []TopicPartitionsByID{}, ClientID: id, ClientHost: "/127.0.0.1",
	})
	m.apply(r)
	return m, r
}

func (m *cmemberSim) apply(r ConsumerHeartbeatResult) {
	if r.Err != nil {
		return
	}
	m.epoch = r.MemberEpoch
	if r.Assignment != nil {
		m.owned = map[TopicID][]int32{}
		for _, t := range r.Assignment {
			m.owned[t.TopicID] = slices.Clone(t.Partitions)
		}
	}
}

// beat sends a full heartbeat reporting what the member owns.
func (m *cmemberSim) beat() ConsumerHeartbeatResult {
	m.e.t.Helper()
	owned := []TopicPartitionsByID{}
	for id, ps := range m.owned {
		owned = append(owned, TopicPartitionsByID{TopicID: id, Partitions: ps})
	}
	r := m.e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{
		Version: 1, Group: m.group, MemberID: m.id, MemberEpoch: m.epoch, InstanceID: m.inst,
		RebalanceTimeoutMs: -1, Owned: owned, ClientID: m.id,
	})
	m.apply(r)
	return r
}

// keepalive sends a heartbeat that reports nothing (all fields null).
func (m *cmemberSim) keepalive() ConsumerHeartbeatResult {
	m.e.t.Helper()
	r := m.e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{
		Version: 1, Group: m.group, MemberID: m.id, MemberEpoch: m.epoch, InstanceID: m.inst, RebalanceTimeoutMs: -1, ClientID: m.id,
	})
	m.apply(r)
	return r
}

func (m *cmemberSim) leave() ConsumerHeartbeatResult {
	return m.e.c.ConsumerHeartbeat(context.Background(), ConsumerHeartbeatRequest{
		Version: 1, Group: m.group, MemberID: m.id, MemberEpoch: leaveEpoch, RebalanceTimeoutMs: -1,
	})
}

func (m *cmemberSim) count() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func ok(t testing.TB, r ConsumerHeartbeatResult) ConsumerHeartbeatResult {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("heartbeat: %v (%s)", r.Err, r.ErrMessage)
	}
	return r
}

func wantCode(t testing.TB, r ConsumerHeartbeatResult, want *kerr.Error) {
	t.Helper()
	if r.Err != want {
		t.Fatalf("heartbeat error %v (%s), want %v", r.Err, r.ErrMessage, want)
	}
}

// noDoubleOwnership checks, from the client side, that no partition is
// owned by two simulated members at once.
func noDoubleOwnership(t testing.TB, ms ...*cmemberSim) {
	t.Helper()
	seen := map[tidp]string{}
	for _, m := range ms {
		for id, ps := range m.owned {
			for _, p := range ps {
				if o, dup := seen[tidp{id, p}]; dup {
					t.Fatalf("partition %x-%d owned by %s and %s", id[:2], p, o, m.id)
				}
				seen[tidp{id, p}] = m.id
			}
		}
	}
}

// settle heartbeats every member in turn until nothing changes, checking
// after each heartbeat that ownership stays disjoint.
func settle(t testing.TB, ms ...*cmemberSim) {
	t.Helper()
	for round := 0; round < 20; round++ {
		changed := false
		for _, m := range ms {
			before := m.epoch
			prev := m.count()
			ok(t, m.beat())
			noDoubleOwnership(t, ms...)
			if m.epoch != before || m.count() != prev {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
	t.Fatal("group did not settle in 20 rounds")
}

func (e *cenv) describe(group string) ConsumerGroupDescription {
	e.t.Helper()
	d, err := e.c.DescribeConsumerGroup(group)
	if err != nil {
		e.t.Fatalf("describe %s: %v", group, err)
	}
	return d
}
