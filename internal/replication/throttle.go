package replication

import (
	"math"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

// Reassignment throttle (replica.reassignment.throttle.bytes.per.sec).
//
// The partitions the broker marks throttled (SetThrottled: replicas a
// reassignment is adding here, not yet in the ISR) share one byte budget
// per broker, a token bucket refilled at the rate and holding at most one
// second of it. A fetch includes throttled partitions only while the
// budget is positive, each asking for at most what is left of it
// (PartitionMaxBytes); what they bring back is charged afterwards, so a
// batch larger than the budget (the leader always sends the first batch
// of a response whole) leaves a debt that later fetches wait out. Over
// any period the bytes fetched for throttled partitions are thus at most
// rate × period plus one second's budget plus one batch. Other partitions
// are never held back, so clients' own replication is not starved by a
// move. Throttled partitions go first in the request, so that their
// first batch is never left out for being larger than their share.

// throttle is the token bucket; rate <= 0 means no limit.
type throttle struct {
	mu     sync.Mutex
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newThrottle() *throttle { return &throttle{now: time.Now} }

// setRate changes the rate (bytes/s; <= 0 removes the limit). A new or
// raised limit starts with a full second's budget.
func (t *throttle) setRate(bytesPerSec int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := float64(bytesPerSec)
	if bytesPerSec <= 0 {
		r = 0
	}
	if r == t.rate {
		return
	}
	t.refillLocked()
	if r > t.rate {
		t.tokens = r
	}
	t.rate = r
	t.tokens = min(t.tokens, r)
}

func (t *throttle) refillLocked() {
	now := t.now()
	if !t.last.IsZero() && t.rate > 0 {
		t.tokens = min(t.tokens+t.rate*now.Sub(t.last).Seconds(), t.rate)
	}
	t.last = now
}

// budget returns the bytes throttled partitions may fetch now (math.MaxInt
// without a limit) or, when none, the time the budget is positive again.
func (t *throttle) budget() (int64, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 {
		return math.MaxInt64, time.Time{}
	}
	t.refillLocked()
	if t.tokens >= 1 {
		return int64(t.tokens), time.Time{}
	}
	wait := time.Duration((1 - t.tokens) / t.rate * float64(time.Second))
	return 0, t.last.Add(max(wait, time.Millisecond))
}

// charge takes n fetched bytes off the budget (it may go negative).
func (t *throttle) charge(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 || n <= 0 {
		return
	}
	t.refillLocked()
	t.tokens -= float64(n)
}

// SetReassignmentThrottle sets replica.reassignment.throttle.bytes.per.sec
// (<= 0: no limit).
func (m *Manager) SetReassignmentThrottle(bytesPerSec int64) { m.throttle.setRate(bytesPerSec) }

// SetThrottled marks tp as throttled or not (a replica a reassignment is
// adding, not yet in sync). It holds across Follow calls for tp until
// changed, and may be called before the first.
func (m *Manager) SetThrottled(tp storage.TopicPartition, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.throttled[tp] = true
	} else {
		delete(m.throttled, tp)
	}
	if p := m.parts[tp]; p != nil {
		p.throttled.Store(on)
	}
}

// throttleRound orders a round's fetching partitions for the request,
// throttled ones first, and leaves the throttled ones out while there is
// no budget, returning when to try again then (zero: nothing left out).
func (m *Manager) throttleRound(parts []*partition) ([]*partition, int64, time.Time) {
	var throttled, others []*partition
	for _, p := range parts {
		if p.throttled.Load() {
			throttled = append(throttled, p)
		} else {
			others = append(others, p)
		}
	}
	if len(throttled) == 0 {
		return parts, math.MaxInt64, time.Time{}
	}
	budget, due := m.throttle.budget()
	if budget <= 0 {
		return others, 0, due
	}
	return append(throttled, others...), budget, time.Time{}
}
