package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

// Manager holds this broker's partition replicas, keyed by partition.
type Manager struct {
	logs    *storage.Manager
	localID int32
	logger  *slog.Logger // nil: slog.Default(); see SetLogger

	isr    ISRChanger
	lagMax time.Duration

	mu    sync.RWMutex
	parts map[storage.TopicPartition]*Partition
	// opening holds the replicas Ensure is opening, outside mu: another
	// Ensure or Remove of the same partition waits on the channel, while
	// other partitions open at the same time.
	opening map[storage.TopicPartition]chan struct{}
}

// NewManager serves the replicas of broker localID out of the given log
// manager.
func NewManager(logs *storage.Manager, localID int32) *Manager {
	return &Manager{logs: logs, localID: localID, lagMax: DefaultLagMax, parts: make(map[storage.TopicPartition]*Partition),
		opening: make(map[storage.TopicPartition]chan struct{})}
}

// SetISRChanger sets, for replicas opened from now on, where ISR changes
// are proposed and replica.lag.time.max.ms. Call it before the first
// Ensure.
func (m *Manager) SetISRChanger(c ISRChanger, lagMax time.Duration) {
	m.isr = c
	if lagMax > 0 {
		m.lagMax = lagMax
	}
}

// Get returns the local replica, or nil if this broker hosts none.
func (m *Manager) Get(tp storage.TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[tp]
}

// Ensure makes sure a replica exists for tp with the given log config and
// metadata state, opening or creating its log, and reports how its role
// changed. Calls for different partitions may run at once.
//
// A replica of another incarnation of the topic (another topic id: it
// was deleted and created again, and this broker never acted on the
// deletion, e.g. its removal failed and the retry found the topic back)
// is dropped first, with its log: its records are not the new topic's,
// though they sit at the same offsets and leader epochs.
func (m *Manager) Ensure(tp storage.TopicPartition, cfg storage.Config, s State) (*Partition, Transition, error) {
	m.mu.Lock()
	m.awaitOpeningLocked(tp)
	p := m.parts[tp]
	if id := p.topicID(); id != s.TopicID && id != ([16]byte{}) && s.TopicID != ([16]byte{}) {
		m.log().Warn("dropping the replica of an earlier incarnation of the topic",
			slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)))
		delete(m.parts, tp)
		m.mu.Unlock()
		p.remove() // its log goes in open, which finds the old topic id
		m.mu.Lock()
		m.awaitOpeningLocked(tp)
		p = m.parts[tp]
	}
	if p == nil {
		done := make(chan struct{})
		m.opening[tp] = done
		m.mu.Unlock()
		var err error
		p, err = m.open(tp, cfg, s.TopicID)
		m.mu.Lock()
		delete(m.opening, tp)
		close(done)
		if err != nil {
			m.mu.Unlock()
			return nil, Unchanged, err
		}
		m.parts[tp] = p
	}
	m.mu.Unlock()
	p.Log().SetConfig(cfg)
	tr, err := p.Update(s)
	if err != nil {
		return nil, Unchanged, err
	}
	return p, tr, nil
}

// awaitOpeningLocked waits (releasing mu meanwhile) until no Ensure is
// opening tp.
func (m *Manager) awaitOpeningLocked(tp storage.TopicPartition) {
	for {
		wait, busy := m.opening[tp]
		if !busy {
			return
		}
		m.mu.Unlock()
		<-wait
		m.mu.Lock()
	}
}

// open opens tp's log, first deleting a directory left by an earlier
// incarnation of the topic (a different topic id).
func (m *Manager) open(tp storage.TopicPartition, cfg storage.Config, topicID [16]byte) (*Partition, error) {
	if stale, ok := m.StoredTopicID(tp); ok && stale != topicID {
		if err := m.logs.Delete(tp); err != nil {
			return nil, fmt.Errorf("delete stale log %s-%d: %w", tp.Topic, tp.Partition, err)
		}
	}
	log, err := m.logs.GetOrCreate(tp, cfg)
	if err != nil {
		return nil, fmt.Errorf("open log %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	if _, ok, _ := readTopicID(log.Dir()); !ok {
		if err := writeTopicID(log.Dir(), topicID); err != nil {
			return nil, err
		}
	}
	p, err := Open(tp, log, m.localID, m.logger)
	if err != nil {
		return nil, err
	}
	if m.isr != nil {
		p.SetISRChanger(m.isr, m.lagMax)
	}
	return p, nil
}

// StoredTopicID returns the topic id recorded in tp's log directory.
func (m *Manager) StoredTopicID(tp storage.TopicPartition) ([16]byte, bool) {
	log := m.logs.Get(tp)
	if log == nil {
		return [16]byte{}, false
	}
	id, ok, err := readTopicID(log.Dir())
	if err != nil {
		return [16]byte{}, false
	}
	return id, ok
}

// Remove drops the replica and deletes its log (topic deleted or the
// partition moved away).
func (m *Manager) Remove(tp storage.TopicPartition) error {
	m.mu.Lock()
	m.awaitOpeningLocked(tp)
	p := m.parts[tp]
	delete(m.parts, tp)
	m.mu.Unlock()
	if p != nil {
		// Fetches long-polling it answer now (the topic is gone) instead
		// of at their max wait, as Kafka completes delayed fetches; so do
		// produces waiting for acks.
		p.remove()
	}
	if m.logs.Get(tp) == nil {
		return nil
	}
	if err := m.logs.Delete(tp); err != nil {
		return fmt.Errorf("delete log %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return nil
}

// Partitions lists the hosted replicas.
func (m *Manager) Partitions() []storage.TopicPartition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]storage.TopicPartition, 0, len(m.parts))
	for tp := range m.parts {
		out = append(out, tp)
	}
	return out
}

// Leading returns the replicas this broker currently leads.
func (m *Manager) Leading() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Partition
	for _, p := range m.parts {
		if p.IsLeader() {
			out = append(out, p)
		}
	}
	return out
}

// MoveLog moves tp's log to log dir dest of this broker
// (AlterReplicaLogDirs): the replica stops serving first (waiting fetches
// and produces answer at once, as on removal; clients retry), its log is
// copied and swapped (storage.Manager.MoveLog), and the caller opens the
// replica again (Ensure) from the metadata. Meanwhile Ensure fails with
// storage.ErrMoving.
func (m *Manager) MoveLog(tp storage.TopicPartition, dest int) error {
	m.mu.Lock()
	p := m.parts[tp]
	delete(m.parts, tp)
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("move log of %s-%d: %w", tp.Topic, tp.Partition, ErrNotReplica)
	}
	p.remove()
	return m.logs.MoveLog(tp, dest, p.Offsets().HighWater)
}
