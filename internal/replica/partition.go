// Package replica is one partition's replica on this broker: its log, its
// role (leader or follower) and epochs as the metadata says, and, while it
// leads, what it knows of its followers: their log end offsets, when each
// was last caught up, the ISR changes it proposes, and the high watermark
// that follows from them. Followers' fetching lives in package replication;
// this package only answers to it.
//
// Locking: appendMu serialises writers (appends, truncation, role
// changes) and may be held across disk I/O; mu guards the in-memory state
// and is never held across I/O, so readers (fetches, offsets, waiters)
// never wait for a disk.
package replica

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/producerstate"
)

// Errors the broker maps to Kafka codes.
var (
	ErrNotLeader          = errors.New("not leader for partition") // NOT_LEADER_OR_FOLLOWER
	ErrNotFollower        = errors.New("not a follower of this leader epoch")
	ErrNotEnoughReplicas  = errors.New("not enough in-sync replicas")
	ErrNotEnoughAfter     = errors.New("in-sync replicas fell below min.insync.replicas after the append") // NOT_ENOUGH_REPLICAS_AFTER_APPEND
	ErrFencedLeaderEpoch  = errors.New("fenced leader epoch")                                              // FENCED_LEADER_EPOCH
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")                                             // UNKNOWN_LEADER_EPOCH
	ErrNotReplica         = errors.New("broker is not a replica of the partition")                         // NOT_LEADER_OR_FOLLOWER to the fetcher
	ErrRemoved            = errors.New("partition removed from this broker")
	// ErrHandingOver wraps the storage error of an append that made this
	// leader hand the partition over (or found it doing so): the producer
	// may wait for the move and be sent to the new leader.
	ErrHandingOver = errors.New("handing the leadership over after a storage error")
)

// DefaultLagMax is Kafka's replica.lag.time.max.ms default.
const DefaultLagMax = 30 * time.Second

// Partition is the local replica of one partition.
type Partition struct {
	tp      storage.TopicPartition
	log     *storage.Log
	localID int32
	// producers is the idempotent-producer state (see Open); nil with New.
	producers *producerstate.State
	// isr proposes ISR changes to the controller; nil means changes are
	// never proposed (a replica used without a cluster, in tests).
	isr    ISRChanger
	lagMax time.Duration
	now    func() time.Time
	logger *slog.Logger

	// appendMu serialises appends, truncations and role changes, so that
	// mu, which readers take, is never held across disk I/O.
	appendMu sync.Mutex

	mu     sync.Mutex
	st     State // the metadata state last applied
	leader bool  // st.LeaderID == localID
	// epochStart is the log end offset at which this broker's current
	// leader epoch began: a follower rejoins the ISR only once it has
	// fetched past it (it then holds everything of earlier epochs).
	epochStart int64
	followers  map[int32]*follower
	// pendingISR is the maximal ISR while a proposed change is in flight
	// (the union of the committed ISR and the proposal), nil otherwise.
	// The high watermark is computed over it: a follower being added may
	// be elected as soon as the change commits, so it must already hold
	// everything below the HW; one being removed still counts until then.
	pendingISR []int32
	// handingOver: the change in flight is handOverLocked's, which
	// takes this broker out of the ISR and the lead.
	handingOver bool
	hw          int64
	watchers    map[*Waiter]Event
	removed     bool
}

// State is what the metadata says about this partition.
type State struct {
	LeaderID       int32 // the leading broker; -1 when none
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// ELR is the eligible leader replicas (KIP-966): replicas that may
	// be elected without fetching first, so DeleteRecords waits for them
	// as for the ISR.
	ELR     []int32
	MinISR  int
	TopicID [16]byte
}

// New wraps an open log as the replica on broker localID. The replica
// starts as a follower with no epoch; Update applies the metadata.
func New(tp storage.TopicPartition, log *storage.Log, localID int32) *Partition {
	return &Partition{
		tp:        tp,
		log:       log,
		localID:   localID,
		lagMax:    DefaultLagMax,
		now:       time.Now,
		logger:    slog.New(slog.DiscardHandler),
		st:        State{LeaderID: -1, LeaderEpoch: -1, MinISR: 1},
		followers: map[int32]*follower{},
		watchers:  map[*Waiter]Event{},
		hw:        min(log.HighWatermark(), log.LogEndOffset()),
	}
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() storage.TopicPartition { return p.tp }

// Log is the partition's log.
func (p *Partition) Log() *storage.Log { return p.log }

// SetISRChanger sets where ISR changes are proposed and the lag after
// which a follower leaves the ISR (replica.lag.time.max.ms).
func (p *Partition) SetISRChanger(c ISRChanger, lagMax time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isr = c
	if lagMax > 0 {
		p.lagMax = lagMax
	}
}

// Transition says how an Update changed the replica's role.
type Transition int

const (
	// Unchanged: same role, leader and leader epoch.
	Unchanged Transition = iota
	// BecameLeader: this broker leads a new leader epoch.
	BecameLeader
	// BecameFollower: this broker follows a new leader or leader epoch
	// (or lost leadership with no new leader): fetchers must restart,
	// truncating by epoch first.
	BecameFollower
)

// Update applies the partition's metadata and reports the role change. On
// becoming leader for a new epoch, the epoch's start offset is recorded in
// the leader epoch cache and every follower gets a fresh lag allowance.
// Waiters are woken on any change, so long polls and acks=-1 waits answer
// NOT_LEADER_OR_FOLLOWER or re-check at once.
func (p *Partition) Update(s State) (Transition, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if s.MinISR < 1 {
		s.MinISR = 1
	}
	s.Replicas, s.ISR, s.ELR = slices.Clone(s.Replicas), slices.Clone(s.ISR), slices.Clone(s.ELR)
	leader := s.LeaderID == p.localID && s.LeaderID >= 0

	p.mu.Lock()
	prev, wasLeader := p.st, p.leader
	p.mu.Unlock()
	newEpoch := s.LeaderEpoch != prev.LeaderEpoch || s.LeaderID != prev.LeaderID
	tr := Unchanged
	switch {
	case leader && (newEpoch || !wasLeader):
		tr = BecameLeader
	case !leader && (newEpoch || wasLeader):
		tr = BecameFollower
	}
	leo := p.log.LogEndOffset()
	if tr == BecameLeader {
		// In memory only, under appendMu so no append slips in between:
		// the log writes leader-epoch-checkpoint before its recovery
		// point passes the epoch's start (storage/doc.go, Leader
		// epochs), so taking the lead of thousands of partitions, and
		// the first Produce to each after that, cost no disk write.
		if err := p.log.LeaderEpochs().Begin(s.LeaderEpoch, leo); err != nil {
			p.logger.Warn("leader epoch not recorded", "leader_epoch", s.LeaderEpoch, "start_offset", leo, "err", err)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	p.st, p.leader = s, leader
	if p.pendingISR != nil && s.PartitionEpoch != prev.PartitionEpoch {
		// The controller answered our proposal (or overrode it): the
		// committed ISR is authoritative again.
		p.clearPendingLocked()
	}
	switch tr {
	case BecameLeader:
		p.epochStart = leo
		p.clearPendingLocked()
		p.followers = map[int32]*follower{}
		now := p.now()
		for _, id := range s.Replicas {
			if id != p.localID {
				p.followers[id] = newFollower(id, now)
			}
		}
	case BecameFollower:
		p.followers = map[int32]*follower{}
		p.clearPendingLocked()
	}
	if leader {
		// Replicas added by a reassignment get a follower entry; those it
		// removed are forgotten, so that their fetches are refused and a
		// replica added back later starts from nothing known.
		for _, id := range s.Replicas {
			if _, ok := p.followers[id]; !ok && id != p.localID {
				p.followers[id] = newFollower(id, p.now())
			}
		}
		for id := range p.followers {
			if !slices.Contains(s.Replicas, id) {
				delete(p.followers, id)
			}
		}
		p.advanceHWLocked()
	}
	if tr != Unchanged || !slices.Equal(prev.ISR, s.ISR) || !slices.Equal(prev.ELR, s.ELR) || prev.PartitionEpoch != s.PartitionEpoch {
		p.notifyAllLocked()
	}
	return tr, nil
}

// remove marks the replica as gone and wakes its waiters, which answer
// at once (the topic was deleted or moved away).
func (p *Partition) remove() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removed = true
	p.leader = false
	p.notifyAllLocked()
}

// topicID is the id of the topic incarnation its last Update named;
// zero before the first, or for no partition (nil).
func (p *Partition) topicID() [16]byte {
	if p == nil {
		return [16]byte{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.TopicID
}

// State returns the metadata state last applied.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Replicas, s.ISR, s.ELR = slices.Clone(s.Replicas), slices.Clone(s.ISR), slices.Clone(s.ELR)
	return s
}

// CheckLeaderEpoch validates a client's current leader epoch (-1 = none)
// on the leader (KIP-320).
func (p *Partition) CheckLeaderEpoch(epoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkLeaderLocked(epoch)
}

func (p *Partition) checkLeaderLocked(epoch int32) error {
	if !p.leader {
		return ErrNotLeader
	}
	return checkEpoch(epoch, p.st.LeaderEpoch)
}

func checkEpoch(given, current int32) error {
	switch {
	case given < 0 || given == current:
		return nil
	case given < current:
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
	return p.offsetsLocked()
}

func (p *Partition) offsetsLocked() Offsets {
	return Offsets{LogStart: p.log.LogStartOffset(), HighWater: p.hw, LogEnd: p.log.LogEndOffset(), LeaderEpoch: p.st.LeaderEpoch}
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

// EndOffsetForEpoch answers OffsetsForLeaderEpoch from the leader epoch
// cache: the largest epoch <= epoch this replica knows and the offset
// where it ended (the log end for the latest epoch), or -1, -1. The log
// end is read under appendMu so that it matches the cache.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.log.LeaderEpochs().EndOffsetFor(epoch, p.log.LogEndOffset())
}
