// Package replica is one partition's replica on this broker: its log, its
// role (leader or follower), leader epoch, high watermark, and the signal
// that wakes long-polling fetches. Replication (followers, ISR changes)
// builds on it; with one replica per partition the leader's high watermark
// is simply its log end offset.
package replica

import (
	"errors"
	"fmt"
	"sync"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/producerstate"
)

// Errors the broker maps to Kafka codes.
var (
	ErrNotLeader          = errors.New("not leader for partition") // NOT_LEADER_OR_FOLLOWER
	ErrNotEnoughReplicas  = errors.New("not enough in-sync replicas")
	ErrFencedLeaderEpoch  = errors.New("fenced leader epoch")  // FENCED_LEADER_EPOCH
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch") // UNKNOWN_LEADER_EPOCH
)

// Partition is the local replica of one partition.
type Partition struct {
	tp  storage.TopicPartition
	log *storage.Log
	// producers is the idempotent-producer state (see Open); nil with New.
	producers *producerstate.State

	// appendMu serialises appends (and the HW moves that follow them), so
	// that mu, which readers take, is never held across disk I/O.
	appendMu sync.Mutex

	mu          sync.Mutex
	leader      bool
	leaderEpoch int32
	isr         []int32
	minISR      int
	hw          int64
	// changed is closed (and replaced) whenever data becomes visible to
	// fetchers, waking long polls.
	changed chan struct{}
}

// New wraps an open log. The replica starts as a follower with no epoch.
func New(tp storage.TopicPartition, log *storage.Log) *Partition {
	return &Partition{tp: tp, log: log, changed: make(chan struct{}), leaderEpoch: -1, minISR: 1}
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() storage.TopicPartition { return p.tp }

// Log is the partition's log.
func (p *Partition) Log() *storage.Log { return p.log }

// State is what the metadata says about this partition.
type State struct {
	Leader      bool
	LeaderEpoch int32
	ISR         []int32
	MinISR      int
	TopicID     [16]byte
}

// Update applies the partition's metadata. On becoming leader for a new
// epoch the epoch's start offset is recorded in the leader epoch cache.
func (p *Partition) Update(s State) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	newEpoch := s.LeaderEpoch != p.leaderEpoch || s.Leader != p.leader
	p.leader, p.leaderEpoch, p.isr, p.minISR = s.Leader, s.LeaderEpoch, append([]int32(nil), s.ISR...), s.MinISR
	if p.minISR < 1 {
		p.minISR = 1
	}
	if s.Leader && newEpoch {
		if err := p.log.LeaderEpochs().Assign(s.LeaderEpoch, p.log.LogEndOffset()); err != nil {
			return fmt.Errorf("partition %s-%d: record leader epoch %d: %w", p.tp.Topic, p.tp.Partition, s.LeaderEpoch, err)
		}
	}
	if s.Leader {
		p.advanceHWLocked()
	}
	if newEpoch {
		// Long polls re-check: they answer NOT_LEADER_OR_FOLLOWER or
		// FENCED_LEADER_EPOCH now rather than at their max wait.
		p.signalLocked()
	}
	return nil
}

// wake wakes long polls waiting on the partition, which is going away.
func (p *Partition) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signalLocked()
}

// advanceHWLocked recomputes the high watermark. With the leader as the
// only in-sync replica it is the log end offset; it never moves while the
// ISR is below min.insync.replicas (KIP-966). Callers hold p.mu.
func (p *Partition) advanceHWLocked() {
	if len(p.isr) > 1 {
		// Followers' LEOs are tracked by the replication layer (not yet
		// built); until then a multi-replica ISR keeps HW where it is.
		return
	}
	leo := p.log.LogEndOffset()
	if leo != p.hw {
		p.hw = leo
		p.log.SetCleanableLimit(leo) // the cleaner compacts only committed records
		p.signalLocked()
	}
}

func (p *Partition) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Changed returns a channel closed at the next visible change.
func (p *Partition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// AppendAsLeader appends a producer's batches. acks=-1 needs the ISR to
// reach min.insync.replicas before anything is written.
func (p *Partition) AppendAsLeader(records []byte, acks int16) (storage.AppendInfo, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	leader, epoch, isr, minISR := p.leader, p.leaderEpoch, len(p.isr), p.minISR
	p.mu.Unlock()
	if !leader {
		return storage.AppendInfo{}, ErrNotLeader
	}
	if acks == -1 && isr < minISR {
		return storage.AppendInfo{}, fmt.Errorf("%w: isr %d below min.insync.replicas %d", ErrNotEnoughReplicas, isr, minISR)
	}
	if info, dup, err := p.checkProducers(records); err != nil || dup {
		return info, err
	}
	info, err := p.log.Append(records, epoch)
	if err != nil {
		return info, err
	}
	p.mu.Lock()
	p.advanceHWLocked()
	p.mu.Unlock()
	return info, nil
}

// CheckLeaderEpoch validates a client's current leader epoch (-1 = none).
func (p *Partition) CheckLeaderEpoch(epoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return ErrNotLeader
	}
	switch {
	case epoch < 0 || epoch == p.leaderEpoch:
		return nil
	case epoch < p.leaderEpoch:
		return ErrFencedLeaderEpoch
	default:
		return ErrUnknownLeaderEpoch
	}
}

// Offsets is a consistent view of the partition's offsets.
type Offsets struct {
	LogStart    int64
	HighWater   int64
	LogEnd      int64
	LeaderEpoch int32
}

// Offsets returns the current offsets.
func (p *Partition) Offsets() Offsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Offsets{LogStart: p.log.LogStartOffset(), HighWater: p.hw, LogEnd: p.log.LogEndOffset(), LeaderEpoch: p.leaderEpoch}
}

// IsLeader reports the role.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// ReadForConsumer reads committed data: up to the high watermark.
func (p *Partition) ReadForConsumer(offset int64, maxBytes int) (storage.ReadResult, Offsets, error) {
	o := p.Offsets()
	if offset > o.HighWater && offset <= o.LogEnd {
		// Between HW and LEO: valid but not yet visible.
		return storage.ReadResult{}, o, nil
	}
	r, err := p.log.Read(offset, maxBytes, o.HighWater)
	return r, o, err
}

// DeleteRecordsBefore raises the log start offset (DeleteRecords). Only
// offsets up to the high watermark may be deleted; -1 means the HW.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return 0, ErrNotLeader
	}
	if offset == -1 {
		offset = p.hw
	}
	if offset < 0 || offset > p.hw {
		return 0, fmt.Errorf("%w: %d beyond high watermark %d", storage.ErrOffsetOutOfRange, offset, p.hw)
	}
	start, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return 0, err
	}
	p.signalLocked()
	return start, nil
}
