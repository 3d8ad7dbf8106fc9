package replication

import (
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weir-project/weir/internal/storage"
)

// Manager runs this broker's follower fetchers: for each leader broker,
// num.replica.fetchers goroutines (one by default), each fetching its
// share of the partitions that broker leads for us in one request.
type Manager struct {
	cfg         Config
	dialer      Dialer
	log         *slog.Logger
	brokerEpoch atomic.Int64

	mu       sync.Mutex
	closed   bool
	parts    map[storage.TopicPartition]*partition
	fetchers map[fetcherKey]*fetcher
	// stopping are fetchers told to stop and not yet waited for.
	stopping []*fetcher
	// throttled are the partitions under the reassignment throttle.
	throttled map[storage.TopicPartition]bool
	throttle  *throttle
}

// New returns a manager with no partitions; Follow starts fetchers.
func New(cfg Config, d Dialer, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{
		cfg:      cfg.withDefaults(),
		dialer:   d,
		log:      logger.With("component", "replication"),
		parts:    map[storage.TopicPartition]*partition{},
		fetchers: map[fetcherKey]*fetcher{},

		throttled: map[storage.TopicPartition]bool{},
		throttle:  newThrottle(),
	}
	m.brokerEpoch.Store(cfg.BrokerEpoch)
	return m
}

// SetBrokerEpoch sets the broker epoch sent from now on (after the broker
// registered, or registered again, with the controller).
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

// Follow makes r follow leaderID at leaderEpoch: a partition new to the
// manager, or one that followed another leader or epoch, starts over with
// truncation by epoch; one already following them is left alone (so the
// broker may call Follow for every follower partition on every metadata
// change). A stopped partition starts again.
func (m *Manager) Follow(r Replica, topicID [16]byte, leaderID, leaderEpoch int32) {
	tp := r.TopicPartition()
	if leaderID < 0 || leaderID == m.cfg.LocalID {
		m.log.Warn("follow without a remote leader: unfollowing", "topic", tp.Topic, "partition", tp.Partition, "leader", leaderID)
		m.Unfollow(tp)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old := m.parts[tp]; old != nil {
		if old.r == r && old.topicID == topicID && old.leader == leaderID && old.epoch == leaderEpoch && old.status().State != Stopped {
			return
		}
		m.retireLocked(old)
		old.log.Info("stopped following: new leader or epoch", "new_leader", leaderID, "new_leader_epoch", leaderEpoch)
	}
	p := newPartition(r, topicID, leaderID, leaderEpoch, m.log)
	p.throttled.Store(m.throttled[tp])
	m.parts[tp] = p
	key := fetcherKey{leader: leaderID, index: m.fetcherIndex(tp)}
	f := m.fetchers[key]
	if f == nil {
		f = newFetcher(m, key)
		m.fetchers[key] = f
		go f.run()
	}
	p.log.Info("following", "fetcher", key.index)
	f.add(p)
}

// Unfollow stops following tp. When it returns, nothing more from this
// manager reaches the replica: a fetch in flight is answered into the
// void, and an append or truncation in progress has finished.
func (m *Manager) Unfollow(tp storage.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[tp]
	if p == nil {
		return
	}
	delete(m.parts, tp)
	delete(m.throttled, tp)
	m.retireLocked(p)
	p.log.Info("stopped following")
}

// retireLocked makes p inert and takes it off its fetcher, stopping the
// fetcher (and closing its client) if it was the last partition.
func (m *Manager) retireLocked(p *partition) {
	p.retire()
	key := fetcherKey{leader: p.leader, index: m.fetcherIndex(p.tp)}
	f := m.fetchers[key]
	if f == nil {
		return
	}
	if f.remove(p) == 0 {
		delete(m.fetchers, key)
		f.cancel()
		m.stopping = append(m.stopping, f)
		m.reapLocked()
	}
}

// reapLocked forgets stopped fetchers that have finished, so the list
// does not grow with leader changes.
func (m *Manager) reapLocked() {
	m.stopping = slices.DeleteFunc(m.stopping, func(f *fetcher) bool {
		select {
		case <-f.done:
			return true
		default:
			return false
		}
	})
}

// detachAll takes partitions that stopped by themselves (their replica
// moved on) off their fetchers; they stay listed, as stopped, until the
// broker's next Follow or Unfollow. The fetcher calls it holding no lock.
func (m *Manager) detachAll(parts []*partition) {
	if len(parts) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts {
		if m.parts[p.tp] != p {
			continue // already replaced or unfollowed
		}
		key := fetcherKey{leader: p.leader, index: m.fetcherIndex(p.tp)}
		if f := m.fetchers[key]; f != nil && f.remove(p) == 0 {
			delete(m.fetchers, key)
			f.cancel()
			m.stopping = append(m.stopping, f)
		}
	}
	m.reapLocked()
}

// fetcherIndex spreads a leader's partitions over its fetchers by a hash
// of the partition, as Kafka's getFetcherId does.
func (m *Manager) fetcherIndex(tp storage.TopicPartition) int {
	if m.cfg.Fetchers <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	h.Write([]byte{byte(tp.Partition >> 24), byte(tp.Partition >> 16), byte(tp.Partition >> 8), byte(tp.Partition)})
	return int(h.Sum32() % uint32(m.cfg.Fetchers))
}

// Close stops every fetcher, waits for them and closes their clients.
// Follow does nothing afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for _, p := range m.parts {
		p.retire()
	}
	fetchers := m.stopping
	for _, f := range m.fetchers {
		f.cancel()
		fetchers = append(fetchers, f)
	}
	m.parts, m.fetchers, m.stopping = map[storage.TopicPartition]*partition{}, map[fetcherKey]*fetcher{}, nil
	m.mu.Unlock()
	for _, f := range fetchers {
		<-f.done
	}
}

// Status returns the partition's status; ok=false if it is not followed.
func (m *Manager) Status(tp storage.TopicPartition) (Status, bool) {
	m.mu.Lock()
	p := m.parts[tp]
	m.mu.Unlock()
	if p == nil {
		return Status{}, false
	}
	return p.status(), true
}

// Statuses lists every followed partition, sorted.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	parts := make([]*partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.status())
	}
	slices.SortFunc(out, func(a, b Status) int {
		if c := strings.Compare(a.TopicPartition.Topic, b.TopicPartition.Topic); c != 0 {
			return c
		}
		return int(a.TopicPartition.Partition) - int(b.TopicPartition.Partition)
	})
	return out
}

// MaxLag is the largest lag over the followed partitions (Kafka's
// ReplicaFetcherManager MaxLag metric).
func (m *Manager) MaxLag() int64 {
	var lag int64
	for _, s := range m.Statuses() {
		lag = max(lag, s.Lag)
	}
	return lag
}

// Fetchers is the number of running fetchers (one client each).
func (m *Manager) Fetchers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fetchers)
}
